"""``string_check`` with OpenAI grader semantics: eq, ne, like, ilike."""

from __future__ import annotations

from typing import Any

import pytest

from referee.verifiers.string_check import StringOperation, string_check

CASES: list[tuple[str, str, StringOperation, float]] = [
    ("Paris", "Paris", "eq", 1.0),
    ("  Paris\n", "Paris", "eq", 1.0),
    ("paris", "Paris", "eq", 0.0),
    ("Paris.", "Paris", "eq", 0.0),
    ("", "", "eq", 1.0),
    ("Paris", "London", "ne", 1.0),
    ("Paris ", "Paris", "ne", 0.0),
    ("paris", "Paris", "ne", 1.0),
    ("The capital is Paris.", "Paris", "like", 1.0),
    ("The capital is paris.", "Paris", "like", 0.0),
    ("Paris", "The capital is Paris", "like", 0.0),
    ("The capital is PARIS.", "paris", "ilike", 1.0),
    ("STRASSE", "straße", "ilike", 1.0),
    ("The capital is Lyon.", "paris", "ilike", 0.0),
    ("x = 42", " 42", "like", 1.0),
    ("x =42", " 42", "like", 0.0),
    ('{"label": "positive"}', '"label": "positive"', "like", 1.0),
    ("naïve", "NAÏVE", "ilike", 1.0),
]


@pytest.mark.parametrize(("response", "reference", "operation", "score"), CASES)
def test_string_check(
    response: str, reference: str, operation: StringOperation, score: float
) -> None:
    result = string_check(response, reference, operation)
    assert result.score == score
    assert result.outcome == ("correct" if score else "wrong")
    assert (result.reason is None) == bool(score)


def test_strip_off() -> None:
    assert string_check(" Paris", "Paris", "eq", strip=False).score == 0.0
    assert string_check(" Paris", "Paris", "ne", strip=False).score == 1.0
    assert string_check(" Paris", "Paris", "eq", strip=True).score == 1.0


@pytest.mark.parametrize("operation", ["like", "ilike"])
def test_empty_reference_is_bad(operation: StringOperation) -> None:
    result = string_check("anything", "", operation)
    assert (result.score, result.outcome) == (0.0, "bad_reference")


def test_unknown_operation() -> None:
    bad: Any = "contains"
    with pytest.raises(ValueError, match="unknown string_check operation 'contains'"):
        string_check("a", "a", bad)


def test_hostile_inputs() -> None:
    big = "(" * 1_000_000 + "\x00" * 1000
    assert string_check(big, "\x00", "like").score == 1.0
    assert string_check(big, "((((x", "ilike").score == 0.0
    assert string_check(big, big, "eq").score == 1.0
    assert string_check("a\x00b", "a\x00b", "eq").to_dict()["outcome"] == "correct"
