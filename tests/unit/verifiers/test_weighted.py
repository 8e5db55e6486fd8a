"""``combine``: weighted sums of reward parts, normalised by the total absolute weight."""

from __future__ import annotations

import math

import pytest

from referee.verifiers.weighted import combine

CASES: list[tuple[list[tuple[float, float]], bool, float]] = [
    ([(1.0, 1.0)], True, 1.0),
    ([(2.0, 0.5)], True, 0.5),
    ([(1.0, 1.0), (1.0, 0.0)], True, 0.5),
    ([(3.0, 1.0), (1.0, 0.0)], True, 0.75),
    ([(1.0, 1.0), (0.5, 0.0), (-0.5, 1.0)], True, 0.25),
    ([(-1.0, 1.0)], True, -1.0),
    ([(1.0, 0.0), (-1.0, 1.0)], True, -0.5),
    ([(1.0, 1.0), (0.0, 1.0)], True, 1.0),
    ([(2.0, 1.0), (3.0, 0.5)], False, 3.5),
    ([(1.0, 1.0), (-0.5, 1.0)], False, 0.5),
    ([(0.1, 1.0)] * 10, True, 1.0),
]


@pytest.mark.parametrize(("parts", "normalize", "expected"), CASES)
def test_combine(parts: list[tuple[float, float]], normalize: bool, expected: float) -> None:
    assert combine(parts, normalize=normalize) == pytest.approx(expected)


def test_normalised_stays_in_range() -> None:
    parts = [(0.7, 1.0), (-0.2, 0.0), (1.3, 1.0), (-2.0, 1.0)]
    assert -1.0 <= combine(parts) <= 1.0
    assert 0.0 <= combine([(w, 1.0) for w in (0.3, 2.0, 5.0)]) <= 1.0


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        ([], "at least one"),
        ([(0.0, 1.0), (0.0, 0.0)], "non-zero weight"),
        ([(math.nan, 1.0)], "finite"),
        ([(1.0, math.inf)], "finite"),
    ],
)
def test_combine_rejects(parts: list[tuple[float, float]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        combine(parts)
    with pytest.raises(ValueError, match=message):
        combine(parts, normalize=False)
