"""Judge graders through the API: no judge configured (503), a tiny transformers judge in the
server, and the openai backend against a real OpenAI-compatible server of the same tiny model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.genrm.openai_server import start_tiny_server

Server = Any
GENRM = {"type": "genrm", "label_probs": True, "reference": "4"}


def item(i: int, response: str, grader: dict[str, Any], group: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": str(i),
        "prompt": "What is 2 + 2?",
        "response": response,
        "grader": grader,
    }
    if group:
        out["group"] = group
    return out


def rewards(server: Server, items: list[dict[str, Any]]) -> httpx.Response:
    return httpx.post(server.url + "/v1/rewards", json={"items": items}, timeout=120)


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory, referee_server_factory: Any) -> Server:
    return referee_server_factory(
        Path(tmp_path_factory.mktemp("judged")),
        {
            "REFEREE_JUDGE_BACKEND": "transformers",
            "REFEREE_JUDGE_MODEL": "tiny-random",
            "REFEREE_MATH_WORKERS": "1",
        },
        "judged",
    )


@pytest.fixture(scope="module")
def llm_server() -> Iterator[str]:
    proc, url = start_tiny_server()
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_no_judge_configured_is_a_503_that_says_how(server: Server) -> None:
    r = rewards(server, [item(0, "4", GENRM)])
    assert r.status_code == 503 and r.json()["type"] == "service-unavailable"
    assert "REFEREE_JUDGE_BACKEND" in r.json()["detail"]
    math = rewards(server, [item(0, "\\boxed{4}", {"type": "math", "reference": "4"})])
    assert math.status_code == 200 and math.json()["rewards"][0]["score"] == 1.0
    direct = httpx.post(
        server.url + "/v1/judge", json={"prompt": "q", "responses": ["a"], "grader": GENRM}
    )
    assert direct.status_code == 503


def test_genrm_label_probabilities_and_weighted_with_math(judged: Server) -> None:
    weighted = {
        "type": "weighted",
        "graders": [
            {"weight": 1.0, "grader": {"type": "math", "reference": "4"}},
            {"weight": 1.0, "grader": GENRM},
        ],
    }
    body = rewards(
        judged,
        [
            item(0, "The answer is 4.", GENRM),
            item(1, "It is 5.", GENRM),
            item(2, "\\boxed{4}", weighted),
            item(3, ":", GENRM),
        ],
    ).json()
    s0, s1, s2, s3 = (r["score"] for r in body["rewards"])
    assert 0.0 < s0 < 1.0 and 0.0 < s1 < 1.0 and s0 != s1
    p_yes = body["rewards"][2]["details"]["parts"][1]["p_yes"]
    assert s2 == pytest.approx((1.0 + p_yes) / 2)
    assert s3 == 0.0 and body["rewards"][3]["details"]["outcome"] == "guard"


def test_unreadable_verdicts_are_null_scores_and_left_out_of_group_stats(judged: Server) -> None:
    rubric = {"type": "rubric", "criteria": [{"text": "says 4", "weight": 1}]}
    items = [
        item(0, "4", rubric, "g"),
        item(1, "\\boxed{4}", {"type": "math", "reference": "4"}, "g"),
    ]
    body = rewards(judged, items).json()
    first, second = body["rewards"]
    if first["score"] is None:  # an untrained model rarely writes a readable verdict
        assert first["details"]["outcome"] == "parse_error" and first["details"]["reason"]
        assert body["groups"][0]["n"] == 1
    assert second["score"] == 1.0


def test_pairwise_needs_a_group_and_scores_the_group(judged: Server) -> None:
    pair = {"type": "genrm", "mode": "pairwise"}
    body = rewards(
        judged, [item(0, "4", pair, "g"), item(1, "5", pair, "g"), item(2, "6", pair)]
    ).json()
    a, b, lone = body["rewards"]
    assert lone["score"] is None and "group" in lone["details"]["reason"]
    for r in (a, b):
        assert r["details"]["outcome"] in ("judged", "parse_error")


def test_judge_endpoint(judged: Server) -> None:
    r = httpx.post(
        judged.url + "/v1/judge",
        timeout=120,
        json={
            "prompt": "What is 2+2?",
            "responses": ["4", "five", "Thought process:"],
            "grader": GENRM,
        },
    )
    assert r.status_code == 200
    results = r.json()["results"]
    assert all(0 < x["score"] < 1 for x in results[:2]) and results[2]["score"] == 0.0


def test_openai_backend_serves_the_same_judge(
    llm_server: str,
    judged: Server,
    tmp_path_factory: pytest.TempPathFactory,
    referee_server_factory: Any,
) -> None:
    remote = referee_server_factory(
        Path(tmp_path_factory.mktemp("remote-judge")),
        {
            "REFEREE_JUDGE_BACKEND": "openai",
            "REFEREE_JUDGE_MODEL": "tiny-llama",
            "REFEREE_JUDGE_BASE_URL": llm_server,
            "REFEREE_MATH_WORKERS": "1",
            # the tiny random model spreads its mass over all 384 byte tokens: ask for all
            "REFEREE_JUDGE_TOP_LOGPROBS": "400",
        },
        "remote-judge",
    )
    items = [item(0, "The answer is 4.", GENRM)]
    local = rewards(judged, items).json()["rewards"][0]["score"]
    over_http = rewards(remote, items).json()["rewards"][0]["score"]
    assert over_http is not None and 0 < over_http < 1, rewards(remote, items).json()
    # the same seeded model behind both: the judge's own probabilities agree
    assert over_http == pytest.approx(local, abs=1e-3)
