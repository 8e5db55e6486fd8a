"""``json_schema`` through ``/v1/rewards`` on a real server: in a ``weighted`` grader beside a
format check, a catastrophic ``pattern`` stopped at the item's deadline with the server healthy,
and a bad schema reported as the grader's fault (not valid), not the model's."""

from __future__ import annotations

from typing import Any as Server

import httpx

SCHEMA = {
    "type": "object",
    "required": ["answer"],
    "properties": {"answer": {"type": "integer"}, "steps": {"type": "array"}},
}


def _rewards(server: Server, items: list[dict[str, object]]) -> list[dict[str, object]]:
    res = httpx.post(server.url + "/v1/rewards", json={"items": items}, timeout=120)
    assert res.status_code == 200, res.text
    rewards: list[dict[str, object]] = res.json()["rewards"]
    return rewards


def test_scores_and_details(server: Server) -> None:
    grader = {"type": "json_schema", "schema": SCHEMA}
    out = _rewards(
        server,
        [
            {"id": "ok", "response": '```json\n{"answer": 42, "steps": []}\n```', "grader": grader},
            {"id": "bad", "response": '{"answer": "42"}', "grader": grader},
            {"id": "none", "response": "42", "grader": grader},
            {
                "id": "mixed",
                "response": '<think>x</think><answer>{"answer": 1}</answer>',
                "grader": {
                    "type": "weighted",
                    "graders": [
                        {"weight": 1, "grader": grader},
                        {"weight": 1, "grader": {"type": "format", "pattern": "think_answer"}},
                    ],
                },
            },
        ],
    )
    by_id = {r["id"]: r for r in out}
    assert by_id["ok"]["score"] == 1.0 and by_id["ok"]["details"]["source"] == "fence"
    assert by_id["bad"]["score"] == 0.0 and by_id["bad"]["valid"] is True
    assert by_id["bad"]["details"]["errors"][0]["path"] == "/answer"
    assert by_id["none"]["details"]["outcome"] == "wrong"  # "42" is JSON, not an object
    assert by_id["mixed"]["score"] == 1.0


def test_hostile_pattern_is_stopped_and_a_bad_schema_is_not_valid(server: Server) -> None:
    backtracks = {"type": "json_schema", "schema": {"type": "string", "pattern": "^(a+)+$"}}
    not_a_schema = {"type": "json_schema", "schema": {"type": 3}}
    out = _rewards(
        server,
        [
            {"id": "bomb", "response": '"' + "a" * 40 + '!"', "grader": backtracks},
            {"id": "bad", "response": "{}", "grader": not_a_schema},
        ],
    )
    bomb, bad = out
    assert bomb["details"]["outcome"] == "timeout" and bomb["valid"] is False
    assert bad["details"]["outcome"] == "grader_error" and bad["valid"] is False
    assert bad["score"] is None
    grader = {"type": "json_schema", "schema": SCHEMA}
    after = _rewards(server, [{"id": "x", "response": '{"answer": 1}', "grader": grader}])
    assert after[0]["score"] == 1.0
    assert httpx.get(server.url + "/readyz", timeout=30).status_code == 200
