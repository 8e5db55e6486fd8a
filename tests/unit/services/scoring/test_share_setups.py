"""A batch's equal sql ``setup`` strings become one object before the pool (scoring/batch.py
``share_setups``): pickled once a chunk, hashed once in the worker; nothing else changes."""

from __future__ import annotations

import json
import pickle

from referee.services.scoring.batch import share_setups

SETUP = "CREATE TABLE t(x INT);" + "".join(f"INSERT INTO t VALUES ({i});" for i in range(500))
OTHER = SETUP.replace("(499)", "(-1)")  # same length and ends' lengths, other text


def _graders() -> list[dict[str, object]]:
    # as a request's JSON makes them: every setup its own copy of the text
    body = {
        "graders": [
            {"type": "sql", "setup": SETUP, "reference": "SELECT 1"},
            {"type": "sql", "setup": SETUP, "reference": "SELECT 2"},
            {"type": "sql", "setup": OTHER, "reference": "SELECT 3"},
            {"type": "sql", "setup": SETUP, "reference": "SELECT 4"},
            {"type": "string_check", "setup": SETUP, "reference": "x"},
            {"type": "sql", "database": "singers", "reference": "SELECT 5"},
        ]
    }
    graders: list[dict[str, object]] = json.loads(json.dumps(body))["graders"]
    return graders


def test_equal_setups_become_one_object_and_the_rest_is_untouched() -> None:
    graders = _graders()
    assert graders[0]["setup"] is not graders[1]["setup"]
    before = json.dumps(graders)
    share_setups(graders)
    assert json.dumps(graders) == before
    assert graders[0]["setup"] is graders[1]["setup"] is graders[3]["setup"]
    assert graders[2]["setup"] == OTHER and graders[2]["setup"] is not graders[0]["setup"]
    assert graders[4]["setup"] is not graders[0]["setup"]  # not an sql grader: left as it is


def test_a_chunk_pickles_one_copy() -> None:
    graders = [g for g in _graders() if g["type"] == "sql" and g.get("setup") == SETUP]
    copies = len(pickle.dumps(graders))
    share_setups(graders)
    assert len(pickle.dumps(graders)) < copies / 2
