"""The labeled table (tests/data/math_cases.jsonl): every case, through the deadline pool."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.verifiers import CheckPool, TimedOut, WorkerFailed
from referee.verifiers.math import MathVerdict, Outcome, verify

DATA = Path(__file__).resolve().parents[3] / "data"
# The development table and the once held-out one, now a regression table too (its first-run
# misses were fixed); accuracy on data no one here wrote: test_math_verify_suite.py.
TABLES = {"dev": DATA / "math_cases.jsonl", "holdout": DATA / "math_holdout.jsonl"}
CASES = [
    {**json.loads(line), "table": name}
    for name, path in TABLES.items()
    for line in path.read_text().splitlines()
    if line.strip()
]
CATEGORIES = sorted({f"{c['table']}:{c['category']}" for c in CASES})


@pytest.fixture(scope="module")
def verdicts() -> Iterator[list[Any]]:
    with CheckPool(workers=2, timeout_s=5.0) as pool:
        futures = pool.map(verify, [(c["response"], c["reference"]) for c in CASES])
        yield [f.result() for f in futures]


def test_the_table_is_large_and_covers_every_category() -> None:
    dev = [c for c in CASES if c["table"] == "dev"]
    assert len(dev) >= 300
    dev_categories = {c["category"] for c in dev}
    assert len(dev_categories) >= 20
    for cat in dev_categories:
        assert sum(1 for c in dev if c["category"] == cat) >= 20, cat


@pytest.mark.slow  # about 2 s: the whole case table
@pytest.mark.parametrize("category", CATEGORIES)
def test_category(category: str, verdicts: list[Any]) -> None:
    misses = []
    for case, verdict in zip(CASES, verdicts, strict=True):
        if f"{case['table']}:{case['category']}" != category:
            continue
        got = isinstance(verdict, MathVerdict) and verdict.score == 1.0
        if got != case["expected"]:
            misses.append((case["note"], case["response"][-80:], case["reference"], verdict))
    assert not misses, "\n".join(map(repr, misses))


def test_hostile_cases_are_refused_not_timed_out(verdicts: list[Any]) -> None:
    hostile = [v for c, v in zip(CASES, verdicts, strict=True) if c["category"] == "hostile"]
    assert not any(isinstance(v, TimedOut | WorkerFailed) for v in hostile)
    assert all(v.score == 0.0 for v in hostile)
    assert sum(1 for v in hostile if v.outcome is Outcome.REJECTED) >= 20
