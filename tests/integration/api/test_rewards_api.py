"""The HTTP API on a real uvicorn server: rewards, math verify, health, errors."""

from __future__ import annotations

import json
from typing import Any as Server

import httpx
import pytest
from grader_cases import weighted

BOXED = "Let me think.\n\nSo the answer is $\\boxed{%s}$."


def post(server: Server, path: str, body: object, **kw: object) -> httpx.Response:
    return httpx.post(server.url + path, json=body, timeout=60, **kw)  # type: ignore[arg-type]


def math_item(i: int, answer: str, reference: str, group: str | None = None) -> dict[str, object]:
    item: dict[str, object] = {
        "id": f"i{i}",
        "prompt": "q",
        "response": BOXED % answer,
        "grader": {"type": "math", "reference": reference},
    }
    if group is not None:
        item["group"] = group
    return item


def test_health_ready_metrics_docs(server: Server) -> None:
    assert httpx.get(server.url + "/healthz").json() == {"status": "ok"}
    ready = httpx.get(server.url + "/readyz").json()
    assert ready["status"] == "ready" and ready["math_workers"] == 2
    spec = httpx.get(server.url + "/openapi.json").json()
    assert {"/v1/rewards", "/v1/math/verify"} <= set(spec["paths"])
    grader_refs = json.dumps(spec["components"]["schemas"]["RewardItem"])
    assert "MathGrader" in grader_refs and "WeightedGrader" in grader_refs
    assert httpx.get(server.url + "/docs").status_code == 200
    post(server, "/v1/rewards", {"items": [math_item(0, "1", "1")]})
    metrics = httpx.get(server.url + "/metrics").text
    assert 'referee_http_requests_total{method="POST",route="/v1/rewards",status="200"}' in metrics
    assert 'referee_reward_items_total{grader="math",outcome="correct"}' in metrics


def test_rewards_keep_order_and_report_groups(server: Server) -> None:
    items = [
        math_item(0, "\\frac{1}{2}", "0.5", "g1"),
        math_item(1, "0.4", "0.5", "g1"),
        math_item(2, "x^2+2x+1", "(x+1)^2", "g2"),
        math_item(3, "(x+1)^2", "(x+1)^2", "g2"),
        math_item(4, "7", "8"),
    ]
    body = post(server, "/v1/rewards", {"items": items}).json()
    assert [r["id"] for r in body["rewards"]] == ["i0", "i1", "i2", "i3", "i4"]
    assert [r["score"] for r in body["rewards"]] == [1.0, 0.0, 1.0, 1.0, 0.0]
    assert body["rewards"][0]["details"]["outcome"] == "correct"
    assert body["rewards"][1]["details"]["outcome"] == "wrong"
    groups = {g["group"]: g for g in body["groups"]}
    assert groups["g1"]["pass_rate"] == 0.5 and not groups["g1"]["all_pass"]
    assert groups["g2"]["all_pass"] and groups["g2"]["std"] == 0.0
    assert body["mean"] == pytest.approx(3 / 5)


def test_every_grader_type_and_weighted(server: Server) -> None:
    think = "<think>2+2 is 4</think>\n<answer>4</answer>"
    items = [
        {
            "id": "mc",
            "response": "The answer is (C).",
            "grader": {"type": "multiple_choice", "reference": "C"},
        },
        {
            "id": "str",
            "response": "Paris",
            "grader": {"type": "string_check", "reference": "paris", "operation": "ilike"},
        },
        {"id": "fmt", "response": think, "grader": {"type": "format", "pattern": "think_answer"}},
        {"id": "fmt-bad", "response": "4", "grader": {"type": "format"}},
        {
            "id": "w",
            "response": think,
            "grader": weighted(
                (1.0, {"type": "math", "reference": "4"}),
                (0.25, {"type": "format", "pattern": "think_answer"}),
            ),
        },
        {
            "id": "w-half",
            "response": "<answer>5</answer>",
            "grader": weighted(
                (1.0, {"type": "math", "reference": "5"}),
                (1.0, {"type": "format", "pattern": "think_answer"}),
            ),
        },
    ]
    scores = {r["id"]: r for r in post(server, "/v1/rewards", {"items": items}).json()["rewards"]}
    assert scores["mc"]["score"] == 1.0
    assert scores["str"]["score"] == 1.0
    assert scores["fmt"]["score"] == 1.0 and scores["fmt-bad"]["score"] == 0.0
    assert scores["w"]["score"] == pytest.approx(1.0)
    assert scores["w-half"]["score"] == pytest.approx(0.5)
    assert [p["type"] for p in scores["w-half"]["details"]["parts"]] == ["math", "format"]


# Hostile answers and the guard that refuses each (a phrase of its reason).
HOSTILE_MATH = [
    ("9^{9^{9^{9^{9}}}}", "power tower"),
    ("(10^{10})!", "factorial"),
    ("{" * 5000 + "1" + "}" * 5000, "characters (limit"),
    ("1" * 300_000, "characters (limit"),
    ("\\sum_{k=1}^{10^{12}} k", "more than 10^4 terms"),
    ("e^{e^{e^{e^{e}}}}", "power tower"),
]


def test_hostile_items_fail_alone_and_the_server_stays_healthy(server: Server) -> None:
    hostile = [answer for answer, _ in HOSTILE_MATH]
    items = [math_item(i, h, "3") for i, h in enumerate(hostile)]
    items.append(math_item(99, "3", "3"))
    body = post(server, "/v1/rewards", {"items": items}).json()
    assert [r["score"] for r in body["rewards"]] == [0.0] * len(hostile) + [1.0]
    # each is refused by a guard before any evaluation: one right outcome, with its reason
    for r, (_, reason) in zip(body["rewards"][:-1], HOSTILE_MATH, strict=True):
        assert r["details"]["outcome"] == "rejected", r["details"]
        assert reason in r["details"]["reason"], r["details"]
    assert httpx.get(server.url + "/readyz").status_code == 200


def test_a_check_that_overruns_is_killed_and_scored_timeout(server: Server) -> None:
    # Passes every guard, but sympy tries to integrate it symbolically for minutes.
    slow = "\\int_0^1 \\frac{\\ln(1+x^{5})}{1+x^{3}} dx"
    items = [math_item(0, slow, "1"), math_item(1, "2", "2"), math_item(2, slow, "1", "g")]
    body = post(server, "/v1/rewards", {"items": items}).json()
    first, second, third = body["rewards"]
    assert second["score"] == 1.0
    for r in (first, third):
        assert r["score"] == 0.0
        assert r["details"]["outcome"] == "timeout"
        assert "did not finish within 2 s" in r["details"]["error"]
        assert r["valid"] is False  # referee failed, not the model: mask it
    assert second["valid"] is True
    assert body["groups"] == []  # group g's one item is not valid: no statistics from it
    assert body["mean"] == 1.0  # nor in the batch mean
    metrics = httpx.get(server.url + "/metrics").text
    [line] = [x for x in metrics.splitlines() if x.startswith("referee_check_timeouts_total")]
    assert float(line.split()[-1]) >= 2
    assert httpx.get(server.url + "/readyz").status_code == 200


def test_math_verify(server: Server) -> None:
    out = post(
        server,
        "/v1/math/verify",
        {"response": "so x = \\boxed{\\dfrac{3}{4}}", "reference": "0.75"},
    ).json()
    assert out["score"] == 1.0 and out["outcome"] == "correct"
    assert out["extracted"] == "\\dfrac{3}{4}" and out["method"] == "exact"
    out = post(
        server, "/v1/math/verify", {"response": "\\boxed{7} or \\boxed{8}", "reference": "7"}
    ).json()
    assert out["score"] == 0.0 and out["outcome"] == "hedged"
    out = post(
        server,
        "/v1/math/verify",
        {"response": "I could not finish this one, sorry about that.", "reference": "7"},
    ).json()
    assert out["outcome"] == "no_answer"


@pytest.mark.parametrize(
    ("body", "where", "message"),
    [
        (
            {"items": [{"id": "1", "response": "x", "grader": {"type": "nope", "reference": "1"}}]},
            "items.0.grader",
            "does not match any of the expected tags",
        ),
        (
            {"items": [{"id": "1", "response": 5, "grader": {"type": "math", "reference": "1"}}]},
            "items.0.response",
            "Input should be a valid string",
        ),
        (
            {"items": [{"id": "1", "response": "x", "grader": {"type": "math"}}]},
            "items.0.grader.math.reference",
            "Field required",
        ),
        ({"items": []}, "items", "at least 1 item"),
        (
            {
                "items": [
                    {
                        "id": "1",
                        "response": "x",
                        "grader": {"type": "math", "reference": "1"},
                        "extra": 1,
                    }
                ]
            },
            "items.0.extra",
            "Extra inputs are not permitted",
        ),
        (
            {
                "items": [
                    {
                        "id": "1",
                        "response": "x",
                        "grader": {"type": "string_check", "reference": "a", "operation": "regex"},
                    }
                ]
            },
            "items.0.grader.string_check",
            "Input should be 'eq', 'ne', 'like' or 'ilike'",
        ),
        (
            {
                "items": [
                    {
                        "id": "1",
                        "response": "x",
                        "grader": {"type": "format", "pattern": "regex:(unclosed"},
                    }
                ]
            },
            "items.0.grader.format.pattern",
            "the regex does not compile",
        ),
        (
            {
                "items": [
                    {"id": "1", "response": "x", "grader": {"type": "format", "pattern": "xml"}}
                ]
            },
            "items.0.grader.format.pattern",
            "unknown pattern 'xml'",
        ),
        (  # found by schemathesis: once a 500 from the step splitter
            {
                "items": [
                    {
                        "id": "1",
                        "response": "x",
                        "grader": {"type": "prm_mc", "reference": "1", "split": "delimiter"},
                    }
                ]
            },
            "items.0.grader.prm_mc",
            "split 'delimiter' needs a non-empty delimiter",
        ),
    ],
)
def test_invalid_bodies_are_422_problems(
    server: Server, body: object, where: str, message: str
) -> None:
    r = post(server, "/v1/rewards", body)
    assert r.status_code == 422
    assert r.headers["content-type"] == "application/problem+json"
    problem = r.json()
    assert problem["type"] == "invalid-request" and problem["status"] == 422
    assert any(".".join(e["loc"]).startswith("body." + where) for e in problem["errors"]), problem
    # the detail names the place and says what is wrong there
    assert problem["detail"].startswith("body." + where), problem["detail"]
    assert message in problem["detail"], problem["detail"]


def test_malformed_json_is_a_422_problem(server: Server) -> None:
    r = httpx.post(
        server.url + "/v1/rewards",
        content=b'{"items": [',
        timeout=30,
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 422
    assert r.json()["type"] == "invalid-request"
    assert "not valid JSON" in r.json()["detail"]


def test_oversized_batch_is_413(server: Server) -> None:
    items = [math_item(i, "1", "1") for i in range(2001)]
    r = post(server, "/v1/rewards", {"items": items})
    assert r.status_code == 413
    assert r.json()["type"] == "payload-too-large"
    assert "2001 items" in r.json()["detail"] and "2000" in r.json()["detail"]
    assert httpx.get(server.url + "/readyz").status_code == 200


def test_unknown_route_and_method(server: Server) -> None:
    r = httpx.get(server.url + "/v1/nothing")
    assert r.status_code == 404 and r.json()["type"] == "not-found"
    r = httpx.get(server.url + "/v1/rewards")
    assert r.status_code == 405 and "GET is not allowed" in r.json()["detail"]
    assert r.json()["type"] == "method-not-allowed" and r.headers["allow"] == "POST"
