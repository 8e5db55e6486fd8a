"""Label-free group graders through POST /v1/rewards on a real server: majority vote (TTRL)
and the adaptive length penalty (ALP)."""

from __future__ import annotations

from typing import Any
from typing import Any as Server

import httpx
import pytest
from grader_cases import ALL_RIGHT, ALL_RIGHT_SCORES, LONG, SHORT, penalised_group, weighted


def rewards(server: Server, items: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    response = httpx.post(server.url + "/v1/rewards", json={"items": items, **extra}, timeout=60)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def vote_items(group: str, answers: list[str], **options: Any) -> list[dict[str, Any]]:
    return [
        {
            "id": f"{group}-{k}",
            "prompt": "What is 1/2 as a decimal?",
            "response": text,
            "grader": {"type": "majority_vote", **options},
            "group": group,
        }
        for k, text in enumerate(answers)
    ]


def test_majority_vote_rewards_the_consensus(server: Server) -> None:
    items = vote_items(
        "a",
        [
            "\\boxed{0.5}",
            "so it is \\boxed{\\frac12}",
            "\\boxed{1/2}",
            "\\boxed{2}",
            "no answer at all here.",
        ],
    ) + vote_items("b", ["\\boxed{3}", "\\boxed{4}", "\\boxed{4}"])
    body = rewards(server, items)
    scores = [r["score"] for r in body["rewards"]]
    assert scores == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    first = body["rewards"][0]["details"]
    assert first["outcome"] == "majority"
    assert first["pseudo_reference"] == "0.5"
    assert first["votes"] == 3 and first["share"] == pytest.approx(0.6)
    assert body["rewards"][3]["details"]["outcome"] == "minority"
    assert body["rewards"][4]["details"]["outcome"] == "no_answer"
    assert body["rewards"][5]["details"]["pseudo_reference"] == "4"
    groups = {g["group"]: g for g in body["groups"]}
    assert groups["a"]["pass_rate"] == pytest.approx(0.6)


def test_majority_vote_without_consensus_is_skipped(server: Server) -> None:
    body = rewards(
        server, vote_items("c", ["\\boxed{1}", "\\boxed{2}", "\\boxed{3}"], min_share=0.5)
    )
    assert [r["score"] for r in body["rewards"]] == [None, None, None]
    assert {r["details"]["outcome"] for r in body["rewards"]} == {"no_consensus"}


def test_majority_vote_needs_a_group(server: Server) -> None:
    item = {"id": "x", "response": "\\boxed{1}", "grader": {"type": "majority_vote"}}
    body = rewards(server, [item])
    result = body["rewards"][0]
    assert result["score"] is None
    assert "group" in result["details"]["error"]


def test_majority_vote_inside_weighted(server: Server) -> None:
    grader = weighted(
        (1.0, {"type": "majority_vote"}), (1.0, {"type": "format", "pattern": "boxed"})
    )
    items = [
        {"id": str(k), "response": text, "grader": grader, "group": "w"}
        for k, text in enumerate(["\\boxed{5}", "\\boxed{5}", "the answer is 6"])
    ]
    body = rewards(server, items)
    assert [r["score"] for r in body["rewards"]] == pytest.approx([1.0, 1.0, 0.0])


def test_length_penalty_follows_the_group_pass_rate(server: Server) -> None:
    hard = [SHORT, LONG, "\\boxed{5}", "\\boxed{6}"]  # half right: weight 0.25
    items = penalised_group("easy", ALL_RIGHT) + penalised_group("hard", hard)
    body = rewards(server, items)
    scores = [r["score"] for r in body["rewards"]]
    assert scores == pytest.approx(
        [*ALL_RIGHT_SCORES, *(1 - 0.25 * 0.09, 0.75, -0.25 * 0.09, -0.25 * 0.09)]
    )
    details = body["rewards"][1]["details"]
    assert details["outcome"] == "penalised"
    assert details["base_score"] == 1.0 and details["length"] == 100
    assert details["group_pass_rate"] == 1.0
    assert details["inner"]["outcome"] == "correct"


def test_length_penalty_budget_mode(server: Server) -> None:
    penalty = {
        "type": "length_penalty",
        "grader": {"type": "math", "reference": "4"},
        "mode": "budget",
        "beta": 1.0,
        "min_budget": 10,
        "max_budget": 100,
    }
    # pass rate 1/2: budget 10 + 90 * 0.5 = 55; 100 chars -> (100 - 55)/100 over
    items = penalised_group("g", [SHORT, LONG, "\\boxed{5}", "\\boxed{5}"], penalty)
    scores = [r["score"] for r in rewards(server, items)["rewards"]]
    assert scores == pytest.approx([1.0, 1 - 0.45, 0.0, 0.0])


def test_length_penalty_rejects_bad_options(server: Server) -> None:
    item = {
        "id": "x",
        "response": "4",
        "grader": {
            "type": "length_penalty",
            "grader": {"type": "math", "reference": "4"},
            "beta": -1,
        },
        "group": "g",
    }
    response = httpx.post(server.url + "/v1/rewards", json={"items": [item]}, timeout=30)
    assert response.status_code == 422
    assert "beta" in response.text
