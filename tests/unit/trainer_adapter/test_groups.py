"""Group utilities: pass rates, DAPO's dynamic-sampling flags and group-relative advantages,
checked against values computed by hand."""

from __future__ import annotations

import math

import pytest

from referee.trainer_adapter.groups import (
    advantages,
    group_summaries,
    informative_groups,
    split_groups,
)

# One group of G = 8: three right, five wrong. Mean 3/8 = 0.375; Σ(r - r̄)² = 3·0.625² + 5·0.375²
# = 1.875. Population std (ddof=0) = sqrt(1.875/8) = 0.484123; sample std (ddof=1) =
# sqrt(1.875/7) = 0.517549.
REWARDS: list[float | None] = [0, 0, 1, 0, 1, 1, 0, 0]
POP_STD = math.sqrt(1.875 / 8)
SAMPLE_STD = math.sqrt(1.875 / 7)


def test_hand_computed_std() -> None:
    assert POP_STD == pytest.approx(0.4841229)
    assert SAMPLE_STD == pytest.approx(0.5175492)


def test_grpo_population_std() -> None:
    """ddof=0 (referee's default): wrong -0.375/0.4841 = -0.7746, right 0.625/0.4841 = 1.2910."""
    got = advantages(REWARDS, 8, "grpo", eps=0.0)
    wrong, right = -0.7745967, 1.2909944
    assert got == pytest.approx([wrong, wrong, right, wrong, right, right, wrong, wrong])
    assert math.fsum(got) == pytest.approx(0.0, abs=1e-12)


def test_grpo_sample_std_as_trl_and_verl() -> None:
    """ddof=1 (TRL's nanstd, veRL's torch.std): -0.375/0.5175 = -0.7246, 0.625/0.5175 = 1.2076."""
    got = advantages(REWARDS, 8, "grpo", ddof=1, eps=0.0)
    assert got[0] == pytest.approx(-0.7245688)
    assert got[2] == pytest.approx(1.2076147)


def test_eps_is_added_to_the_std() -> None:
    got = advantages(REWARDS, 8, "grpo", eps=1e-4)
    assert got[2] == pytest.approx(0.625 / (POP_STD + 1e-4))


def test_dr_grpo_is_centred_not_scaled() -> None:
    assert advantages(REWARDS, 8, "dr_grpo") == pytest.approx(
        [-0.375, -0.375, 0.625, -0.375, 0.625, 0.625, -0.375, -0.375]
    )


def test_rloo_leaves_one_out() -> None:
    """Right: 1 - 2/7 = 0.7143 (the other seven hold two right); wrong: 0 - 3/7 = -0.4286."""
    got = advantages(REWARDS, 8, "rloo")
    assert got[2] == pytest.approx(1 - 2 / 7)
    assert got[0] == pytest.approx(-3 / 7)
    assert got == pytest.approx([8 / 7 * a for a in advantages(REWARDS, 8, "dr_grpo")])


def test_groups_are_independent() -> None:
    rewards: list[float | None] = [1, 0, 1, 1, 0.5, 0.5, 0, 1]
    got = advantages(rewards, 4, "dr_grpo")
    assert got == pytest.approx([0.25, -0.75, 0.25, 0.25, 0.0, 0.0, -0.5, 0.5])


def test_uniform_group_has_zero_advantage() -> None:
    assert advantages([1, 1, 1, 1, 0, 0, 0, 0], 4, "grpo") == [0.0] * 8


def test_none_rewards_are_left_out_and_get_zero() -> None:
    # scored: [1, 0, 1] -> mean 2/3; None -> 0
    got = advantages([1, None, 0, 1], 4, "dr_grpo")
    assert got == pytest.approx([1 / 3, 0.0, -2 / 3, 1 / 3])
    assert advantages([None, None], 2, "grpo") == [0.0, 0.0]


def test_group_summaries_and_dynamic_sampling() -> None:
    rewards: list[float | None] = [1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, None, None, None, None, None]
    got = group_summaries(rewards, 4)
    assert [g.pass_rate for g in got] == pytest.approx([1.0, 0.0, 1 / 3, 0.0])
    assert [g.all_correct for g in got] == [True, False, False, False]
    assert [g.all_wrong for g in got] == [False, True, False, False]
    assert [g.n for g in got] == [4, 4, 3, 0]
    assert informative_groups(rewards, 4) == [False, False, True, False]


def test_threshold_sets_what_passes() -> None:
    rewards: list[float | None] = [0.9, 0.6, 0.2, 0.7]
    assert group_summaries(rewards, 4)[0].pass_rate == 0.0
    assert group_summaries(rewards, 4, threshold=0.5)[0].pass_rate == 0.75


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: split_groups([1, 0, 1], 2), "do not split into groups of 2"),
        (lambda: split_groups([1], 0), "at least 1"),
        (lambda: advantages([1, 0], 2, "ppo"), "unknown estimator"),  # type: ignore[arg-type]
        (lambda: advantages([1, 0], 2, ddof=2), "ddof"),
    ],
)
def test_bad_arguments_say_what_is_wrong(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]
