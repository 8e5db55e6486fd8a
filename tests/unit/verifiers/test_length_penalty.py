"""Adaptive length penalty (ALP): the penalty's strength follows the group's pass rate."""

from __future__ import annotations

import pytest

from referee.verifiers.length_penalty import apply_length_penalty, length_of, pass_rate


def test_alp_by_hand() -> None:
    # pass rate 3/4 -> weight 0.5 * 0.75 = 0.375; penalty = weight * len/400
    got = apply_length_penalty([1.0, 1.0, 0.0, 1.0], [100, 400, 50, 200], beta=0.5, max_length=400)
    assert got == pytest.approx([1 - 0.09375, 1 - 0.375, -0.046875, 1 - 0.1875])


def test_easy_prompts_pay_more_than_hard_ones() -> None:
    easy = apply_length_penalty([1.0] * 4, [800] * 4, beta=0.2, max_length=1000)
    hard = apply_length_penalty([1.0, 0, 0, 0], [800] * 4, beta=0.2, max_length=1000)
    assert easy[0] == pytest.approx(1 - 0.2 * 0.8)  # pass rate 1: full beta
    assert hard[0] == pytest.approx(1 - 0.2 * 0.25 * 0.8)  # pass rate 1/4
    never = apply_length_penalty([0.0] * 4, [800] * 4, beta=0.2, max_length=1000)
    assert never[0] == pytest.approx(-0.2 * 0.25 * 0.8)  # floor 1/G


def test_length_beyond_max_is_capped() -> None:
    assert apply_length_penalty([1.0], [10_000], beta=0.1, max_length=100) == pytest.approx([0.9])


def test_budget_mode_by_hand() -> None:
    # pass rate 1/2: budget = 100 + (400 - 100) * 0.5 = 250; over = (len - 250)/400
    got = apply_length_penalty(
        [1.0, 0.0],
        [200, 450],
        beta=0.4,
        mode="budget",
        min_budget=100,
        max_budget=400,
    )
    assert got == pytest.approx([1.0, -0.4 * 200 / 400])


def test_none_scores_stay_none_and_do_not_count() -> None:
    got = apply_length_penalty([1.0, None], [100, 100], beta=1.0, max_length=100)
    assert got == pytest.approx([0.0, None])
    assert pass_rate([1.0, None, 0.0]) == 0.5


def test_length_units() -> None:
    assert length_of("a bb  ccc") == 9
    assert length_of("a bb  ccc", "words") == 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"beta": -1.0}, "beta"),
        ({"max_length": 0}, "max_length"),
        ({"mode": "budget", "min_budget": 50, "max_budget": 10}, "budgets"),
    ],
)
def test_bad_options(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        apply_length_penalty([1.0], [1], **kwargs)  # type: ignore[arg-type]


def test_one_length_per_score() -> None:
    with pytest.raises(ValueError, match="one length per score"):
        apply_length_penalty([1.0, 0.0], [1])
