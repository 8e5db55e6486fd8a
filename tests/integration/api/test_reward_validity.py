"""``valid`` on every reward of ``POST /v1/rewards`` (real server): false when referee or the data
failed rather than the model, left out of the group statistics; a group grader given a group of
one sample is such a failure, never a silent score."""

from __future__ import annotations

from typing import Any
from typing import Any as Server

import httpx
import pytest

from referee.client.models import RewardResult, reward_is_valid


def rewards(server: Server, items: list[dict[str, Any]]) -> dict[str, Any]:
    response = httpx.post(server.url + "/v1/rewards", json={"items": items}, timeout=60)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def item(n: int, response: str, grader: dict[str, Any], group: str | None = "g") -> dict[str, Any]:
    return {"id": str(n), "response": response, "grader": grader, "group": group}


def test_wrong_answers_are_valid_and_failures_are_not(server: Server) -> None:
    math = {"type": "math", "reference": "7"}
    items = [
        item(0, "\\boxed{7}", math),
        item(1, "\\boxed{8}", math),  # wrong: a valid 0
        item(2, "", math),  # no answer: still the model's fault
        item(3, "\\boxed{7}", {"type": "math", "reference": "\\frac{"}),  # bad reference
        item(4, "(E)", {"type": "multiple_choice", "reference": "Z"}),  # bad reference
        item(
            5,
            "\\boxed{7}",
            {
                "type": "weighted",
                "graders": [
                    {"weight": 1.0, "grader": math},
                    {"weight": 1.0, "grader": {"type": "math", "reference": "\\frac{"}},
                ],
            },
        ),
    ]
    body = rewards(server, items)
    got = [(r["score"], r["valid"], r["details"]["outcome"]) for r in body["rewards"]]
    assert got == [
        (1.0, True, "correct"),
        (0.0, True, "wrong"),
        (0.0, True, "no_answer"),
        (0.0, False, "bad_reference"),
        (0.0, False, "bad_reference"),
        (0.5, False, "weighted"),  # a part failed: the total says nothing
    ]
    [group] = body["groups"]
    assert (group["n"], group["invalid"]) == (3, 3)
    assert group["mean"] == pytest.approx(1 / 3)
    assert group["pass_rate"] == pytest.approx(1 / 3)
    assert body["mean"] == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    "grader",
    [
        {"type": "majority_vote"},
        {"type": "length_penalty", "grader": {"type": "math", "reference": "7"}},
    ],
)
def test_a_group_grader_on_a_group_of_one_fails_saying_why(
    server: Server, grader: dict[str, Any]
) -> None:
    body = rewards(server, [item(0, "\\boxed{7}", grader, "alone")])
    [result] = body["rewards"]
    assert result["valid"] is False
    assert result["score"] in (None, 0.0)
    details = result["details"]
    assert details["outcome"] == "group_too_small", details
    assert "group has one" in details["error"]
    assert body["groups"] == []
    # the same grader on a whole group scores
    two = rewards(
        server, [item(0, "\\boxed{7}", grader, "g2"), item(1, "\\boxed{7}", grader, "g2")]
    )
    assert [r["valid"] for r in two["rewards"]] == [True, True]
    assert [r["score"] for r in two["rewards"]] == pytest.approx([1.0, 1.0], abs=1e-3)


@pytest.mark.parametrize(
    ("score", "details", "valid"),
    [
        (1.0, {"outcome": "correct"}, True),
        (0.0, {"outcome": "wrong"}, True),
        (0.0, {"outcome": "time_limit"}, True),  # the program was too slow: the model's fault
        (0.0, {"outcome": "timeout"}, False),
        (0.0, {"outcome": "error"}, False),
        (0.0, {"outcome": "sandbox_error"}, False),
        (0.5, {"outcome": "passed", "tests": [{"outcome": "sandbox_error"}]}, False),
        (None, {"outcome": "parse_error"}, False),  # a judge verdict that could not be read
        (0.0, {"outcome": "judge_error"}, False),
        (0.2, {"outcome": "penalised", "inner": {"outcome": "timeout"}}, False),
    ],
)
def test_reward_is_valid_table(score: float | None, details: dict[str, Any], valid: bool) -> None:
    assert reward_is_valid(score, details) is valid
    result = RewardResult.model_validate({"id": "x", "score": score, "details": details})
    assert result.valid is valid
    # a server's explicit value is kept as sent
    sent = RewardResult.model_validate(
        {"id": "x", "score": score, "details": details, "valid": not valid}
    )
    assert sent.valid is (not valid)
