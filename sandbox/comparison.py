"""Comparing a program's output with the expected output.

Modes: ``exact`` (byte-for-byte after decoding), ``trailing_whitespace`` (the default: line
endings normalised, trailing spaces of each line and trailing blank lines ignored), ``tokens``
(any whitespace between tokens), ``float`` (tokens, numbers equal within ``abs_tol`` or
``rel_tol``), ``apps`` (as APPS's ``testing_util`` compares a stdin test, the evaluator of
APPS, TACO and CodeContests rows that veRL's ``prime_code`` runs: the whole output or each line
stripped, blank lines dropped, and a line-per-number output numerically, ``np.allclose``'s
tolerances) and ``lcb`` (as LiveCodeBench's ``grade_stdio`` compares: the texts stripped, as
many lines, each line equal stripped or its tokens equal as ``Decimal`` numbers).
``values_match`` compares returned values of function-call tests (JSON-shaped: tuples equal
lists, floats within tolerance; under ``apps`` as APPS compares them, under ``lcb`` by
Python's ``==``, as LiveCodeBench does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from enum import StrEnum

__all__ = ["CompareMode", "Comparison", "outputs_match", "values_match"]


class CompareMode(StrEnum):
    EXACT = "exact"
    TRAILING_WHITESPACE = "trailing_whitespace"
    TOKENS = "tokens"
    FLOAT = "float"
    APPS = "apps"
    LCB = "lcb"


@dataclass(frozen=True, slots=True)
class Comparison:
    mode: CompareMode = CompareMode.TRAILING_WHITESPACE
    abs_tol: float = 1e-6
    rel_tol: float = 1e-6


def _normalise_lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _parse_float(token: str) -> float | None:
    try:
        return float(token)
    except ValueError:
        return None


def _floats_close(a: float, b: float, cmp: Comparison) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=cmp.rel_tol, abs_tol=cmp.abs_tol)


def _tokens_match_float(actual: str, expected: str, cmp: Comparison) -> bool:
    got, want = actual.split(), expected.split()
    if len(got) != len(want):
        return False
    for g, w in zip(got, want, strict=True):
        if g == w:
            continue
        gf, wf = _parse_float(g), _parse_float(w)
        if gf is None or wf is None or not _floats_close(gf, wf, cmp):
            return False
    return True


def _apps_close(got: list[str], want: list[str]) -> bool:
    """testing_util's numeric check: as many lines, not all digit strings, each line one float,
    ``np.allclose`` (``|a - b| <= 1e-8 + 1e-5 * |b|``, infinities equal, NaN never)."""
    if len(got) != len(want) or all(
        a.isdigit() and b.isdigit() for a, b in zip(got, want, strict=True)
    ):
        return False
    try:
        pairs = [(float(a), float(b)) for a, b in zip(got, want, strict=True)]
    except ValueError:
        return False
    for a, b in pairs:
        if math.isinf(a) or math.isinf(b):
            if a != b:
                return False
        elif math.isnan(a) or math.isnan(b) or abs(a - b) > 1e-8 + 1e-5 * abs(b):
            return False
    return True


def _apps_match(actual: str, expected: str) -> bool:
    """A stdin test's verdict as APPS's ``testing_util.run_test`` gives it (the copy veRL 0.9.1
    ships in ``prime_code``), in its order of tries."""
    lines = actual.splitlines()
    want = expected.strip()
    if "\n".join(lines).strip() == want:
        return True
    if "\n".join(line.strip() for line in lines).strip() == want:
        return True
    if lines == [expected]:
        return True
    wanted = [line.strip() for line in expected.split("\n") if line]
    if lines == wanted:
        return True
    kept = [line for line in lines if line]
    return kept == wanted or _apps_close(kept, wanted)


def _lcb_lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().split("\n")]


def _decimals(line: str) -> list[Decimal] | None:
    try:
        return [Decimal(token) for token in line.split()]
    except (InvalidOperation, ValueError):
        return None


def _lcb_match(actual: str, expected: str) -> bool:
    """A stdin test's verdict as LiveCodeBench's ``grade_stdio`` gives it: the texts stripped,
    as many lines, each line equal stripped or, token by token, equal as ``Decimal`` numbers
    (``2.50`` is ``2.5``; no tolerance)."""
    got, want = _lcb_lines(actual), _lcb_lines(expected)
    if len(got) != len(want):
        return False
    for g, w in zip(got, want, strict=True):
        if g == w:
            continue
        gd, wd = _decimals(g), _decimals(w)
        if gd is None or wd is None or gd != wd:
            return False
    return True


def outputs_match(actual: str, expected: str, comparison: Comparison | None = None) -> bool:
    """Whether ``actual`` stdout matches ``expected`` under ``comparison``."""
    cmp = comparison or Comparison()
    if cmp.mode is CompareMode.EXACT:
        return actual == expected
    if cmp.mode is CompareMode.TRAILING_WHITESPACE:
        return _normalise_lines(actual) == _normalise_lines(expected)
    if cmp.mode is CompareMode.TOKENS:
        return actual.split() == expected.split()
    if cmp.mode is CompareMode.APPS:
        return _apps_match(actual, expected)
    if cmp.mode is CompareMode.LCB:
        return _lcb_match(actual, expected)
    return _tokens_match_float(actual, expected, cmp)


def _apps_values_match(actual: object, expected: object, wrapped: bool) -> bool:
    """A call-based test as APPS's ``testing_util`` decides it: Python's ``==`` (no tolerance;
    ``True == 1``) with the expected value as APPS's row holds it or, where that is a non-empty
    list, its first item. ``wrapped``: ``expected`` was taken out of the one-item list APPS's
    rows wrap a return value in, so the row's value is ``[expected]``."""
    if wrapped:
        return actual == expected or actual == [expected]
    if actual == expected:
        return True
    return isinstance(expected, list) and bool(expected) and actual == expected[0]


def values_match(
    actual: object,
    expected: object,
    comparison: Comparison | None = None,
    *,
    wrapped: bool = False,
) -> bool:
    """Deep equality of JSON-shaped values; floats within tolerance, tuples equal lists. Under
    ``apps``, as APPS's ``testing_util`` compares a returned value (``wrapped``: see
    ``FunctionCallTestSpec.expected_wrapped``)."""
    cmp = comparison or Comparison(mode=CompareMode.FLOAT)
    if cmp.mode is CompareMode.APPS:
        return _apps_values_match(actual, expected, wrapped)
    if cmp.mode is CompareMode.LCB:  # LiveCodeBench's grade_call_based: Python's ==
        return actual == expected
    if isinstance(actual, bool) or isinstance(expected, bool):
        return actual is expected or (actual == expected and type(actual) is type(expected))
    if isinstance(actual, int | float) and isinstance(expected, int | float):
        if isinstance(actual, int) and isinstance(expected, int):
            return actual == expected
        return _floats_close(float(actual), float(expected), cmp)
    if isinstance(actual, list | tuple) and isinstance(expected, list | tuple):
        return len(actual) == len(expected) and all(
            values_match(a, e, cmp) for a, e in zip(actual, expected, strict=True)
        )
    if isinstance(actual, dict) and isinstance(expected, dict):
        return actual.keys() == expected.keys() and all(
            values_match(actual[k], expected[k], cmp) for k in actual
        )
    return actual == expected
