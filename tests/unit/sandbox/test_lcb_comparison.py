"""``comparison: "lcb"`` gives a stdin test LiveCodeBench's own verdict.

LiveCodeBench's evaluator (``lcb_runner/evaluation/testing_util.py`` ``grade_stdio``, not on
PyPI) compares a program's output with the expected output line by line after stripping both,
each line equal as text or, token by token, as ``Decimal`` numbers. Its verdicts on a corpus of
expected outputs and the ways a program might print them (spaces, tabs, blank lines, CRLF,
case, a line missing or added, numbers in other notations and digits) are recorded from its
code (tests/lcb_verdicts.py, tests/data/lcb_stdio_verdicts.jsonl, the header names the commit);
each must be referee's ``outputs_match`` under ``lcb``.
"""

from __future__ import annotations

import json
from pathlib import Path

from referee.sandbox.comparison import CompareMode, Comparison, outputs_match, values_match

DATA = Path(__file__).parents[2] / "data" / "lcb_stdio_verdicts.jsonl"
LCB = Comparison(mode=CompareMode.LCB)


def test_stdin_verdicts_equal_livecodebench() -> None:
    header, *lines = DATA.read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    assert json.loads(header)["rows"] == len(rows) > 200
    wrong = [r for r in rows if outputs_match(r["printed"], r["expected"], LCB) != r["passed"]]
    assert not wrong, f"{len(wrong)} of {len(rows)} differ: {wrong[:10]}"
    passed = sum(r["passed"] for r in rows)
    assert 0.3 * len(rows) < passed < 0.9 * len(rows)  # both verdicts are common


def test_calls_compare_by_pythons_equality() -> None:
    """LiveCodeBench's ``grade_call_based``: ``prediction == expected`` (a tuple as a list),
    no tolerance and no unwrapping."""
    assert values_match([1, 2], [1, 2], LCB) and values_match(True, 1, LCB)
    assert not values_match(0.30000000000000004, 0.3, LCB)
    assert not values_match(5, [5], LCB) and not values_match([5], 5, LCB)
