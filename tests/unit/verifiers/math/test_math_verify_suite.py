"""math-verify 0.9.0's own test suite, run through referee's ``math`` grader.

The cases come from math-verify's sdist (downloaded once into ``~/.cache/referee-tests/`` by
tests/unit/verifiers/math/math_verify_suite.py, pinned by sha256), not from this project. Each
case is graded as ``/v1/rewards`` grades it: a ``math`` grader spec validated by the wire model
(``reference`` = math-verify's gold, the response = its prediction), scored by the function the
server's check pool runs, in a CheckPool with its hard deadline.

Every case gives math-verify's expected result, or is listed with its reason in
tests/data/math_verify_disagreements.jsonl (a policy disagreement: decimal commas, switches of
math-verify that referee does not have, a case whose expected value is itself wrong). A listed
case must still disagree (so the list cannot go stale), and where the list names options under
which referee agrees, it must agree with them.

A case run with a non-default ``precision`` (math-verify's ``float_rounding``) is graded with
``abs_tol = 10**-precision``, referee's numeric tolerance.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from math_verify_suite import SuiteCase, load_suite

from referee.client.models import MathGrader
from referee.verifiers import CheckPool, TimedOut, WorkerFailed
from referee.verifiers.registry import score_item

DISAGREEMENTS = Path(__file__).resolve().parents[3] / "data" / "math_verify_disagreements.jsonl"
POLICY = {
    row["case"]: row
    for row in (json.loads(line) for line in DISAGREEMENTS.read_text().splitlines() if line)
}
CASES = load_suite()
BY_KEY = {c.key: c for c in CASES}


def grader_for(case: SuiteCase, **extra: Any) -> dict[str, Any]:
    """The ``math`` grader spec for a case, through the wire model (as a client sends it)."""
    options: dict[str, Any] = dict(extra)
    if "precision" in case.options:
        options["abs_tol"] = 10.0 ** -case.options["precision"]
    spec = MathGrader(reference=case.gold, **options)
    return spec.model_dump()


def _scored(value: Any) -> bool:
    assert not isinstance(value, TimedOut | WorkerFailed), value
    score, _details = value
    return bool(score == 1.0)


@pytest.fixture(scope="module")
def results() -> Iterator[dict[str, Any]]:
    jobs = [(grader_for(c), c.pred) for c in CASES]
    extra = [
        (key, grader_for(BY_KEY[key], **row["passes_with"]), BY_KEY[key].pred)
        for key, row in POLICY.items()
        if "passes_with" in row
    ]
    with CheckPool(workers=2, timeout_s=10.0) as pool:
        futures = pool.map(score_item, jobs + [(g, p) for _, g, p in extra])
        values = [f.result() for f in futures]
    by_case = dict(zip((c.key for c in CASES), values[: len(CASES)], strict=True))
    with_options = dict(zip((k for k, _, _ in extra), values[len(CASES) :], strict=True))
    yield {"default": by_case, "with_options": with_options}


def test_the_suite_is_math_verify_s_own() -> None:
    assert len(CASES) == 275  # 269 at compare_strings' defaults, 6 with strict/set switches
    files = {c.file for c in CASES}
    assert files == {
        "test_all.py",
        "test_boxed.py",
        "test_numina_cases.py",
        "test_open_thoughts.py",
        "test_strict.py",
        "test_yujianll.py",
    }
    assert sum(1 for c in CASES if c.expected) > sum(1 for c in CASES if not c.expected) > 20


def test_the_policy_file_names_real_cases_and_is_short() -> None:
    assert len(POLICY) <= 8
    for key, row in POLICY.items():
        case = BY_KEY[key]
        assert (row["gold"], row["pred"], row["expected"]) == (case.gold, case.pred, case.expected)
        assert row["referee"] != row["expected"] and len(row["reason"]) > 40


@pytest.mark.parametrize("key", [c.key for c in CASES])
def test_case(key: str, results: dict[str, Any]) -> None:
    case = BY_KEY[key]
    got = _scored(results["default"][key])
    if key in POLICY:
        assert got == POLICY[key]["referee"], f"{key} now agrees with math-verify: unlist it"
        if "passes_with" in POLICY[key]:
            assert _scored(results["with_options"][key]) == case.expected
    else:
        assert got == case.expected, (case.gold[-200:], case.pred[-300:], results["default"][key])


def test_targets(results: dict[str, Any]) -> None:
    """At least 98% of the cases at math-verify's default settings, at most 2 false positives."""
    switches = {"test_set_rel_assymetry", "test_strict_variable_comparison"}
    default = [c for c in CASES if c.test not in switches]
    assert len(default) == 269
    got = {c.key: _scored(results["default"][c.key]) for c in default}
    right = sum(got[c.key] == c.expected for c in default)
    false_positives = sum(got[c.key] and not c.expected for c in default)
    assert right / len(default) >= 0.98, right
    assert false_positives <= 2
