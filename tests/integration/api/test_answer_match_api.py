"""``answer_match`` through ``/v1/rewards`` on a real server: its scores and details, the
references as a list, as Search-R1's ``{"target": [...]}`` JSON text and as one text; in a
``weighted`` grader beside a format check; a reference that is no answer list is a 422 that says
so; a flood of tags is read at once."""

from __future__ import annotations

from typing import Any as Server

import httpx


def _post(server: Server, items: list[dict[str, object]]) -> httpx.Response:
    return httpx.post(server.url + "/v1/rewards", json={"items": items}, timeout=120)


def test_scores_and_details(server: Server) -> None:
    em = {"type": "answer_match", "reference": ["Eiffel Tower", "la tour Eiffel"]}
    f1 = {"type": "answer_match", "reference": '{"target": ["city of Paris"]}', "metric": "f1"}
    items = [
        {
            "id": "em",
            "response": "<think>hm</think><answer>the eiffel tower.</answer>",
            "grader": em,
        },
        {"id": "miss", "response": "<answer>Louvre</answer>", "grader": em},
        {"id": "none", "response": "Eiffel Tower", "grader": em},
        {"id": "f1", "response": "<answer>Paris</answer>", "grader": f1},
        {
            "id": "flood",
            "response": "<answer>Eiffel Tower</answer>" * 20 + "<answer>" * 100_000,
            "grader": {**em, "max_answer_tags": 10},
        },
        {
            "id": "weighted",
            "response": "<think>x</think><answer>Eiffel Tower</answer>",
            "grader": {
                "type": "weighted",
                "graders": [
                    {"weight": 3, "grader": em},
                    {"weight": 1, "grader": {"type": "format", "pattern": "think_answer"}},
                ],
            },
        },
    ]
    res = _post(server, items)
    assert res.status_code == 200, res.text
    by_id = {r["id"]: r for r in res.json()["rewards"]}
    assert by_id["em"]["score"] == 1.0 and by_id["em"]["details"]["matched"] == "Eiffel Tower"
    assert by_id["miss"]["score"] == 0.0 and by_id["miss"]["valid"] is True
    assert by_id["none"]["details"]["outcome"] == "no_answer"
    assert by_id["f1"]["score"] == 0.5 and by_id["f1"]["details"]["outcome"] == "partial"
    assert by_id["flood"]["score"] == 0.25
    assert by_id["weighted"]["score"] == 1.0


def test_bad_references_are_422s_that_say_why(server: Server) -> None:
    cases = (
        ([], "at least 1 item"),
        ([1, 2], "valid string"),
        (None, "valid"),
        (["x" * 60_000, "y" * 50_000], "longer than 100,000 characters in all"),
    )
    for reference, words in cases:
        grader = {"type": "answer_match", "reference": reference}
        res = _post(server, [{"id": "x", "response": "<answer>a</answer>", "grader": grader}])
        assert res.status_code == 422, res.text
        assert words in res.text and "reference" in res.text
    assert httpx.get(server.url + "/readyz", timeout=30).status_code == 200
