"""Group utilities for trainers: pass rates, dynamic-sampling flags and group-relative advantages.

Rollouts come in groups of G responses to one prompt, laid out as a flat list of rewards with
the group's members next to each other (``[g0r0, g0r1, ..., g1r0, ...]``), as TRL, veRL and
OpenRLHF lay them out. Pure Python, no I/O.

Advantages (``Â_i`` of rollout i in a group with rewards r_1..r_G, mean r̄):

- ``grpo`` (DeepSeekMath): ``(r_i - r̄) / (std + eps)``.
- ``dr_grpo`` (Dr. GRPO, Liu et al. 2025): ``r_i - r̄``: no division by the std, which biases
  toward too-easy and too-hard questions.
- ``rloo`` (REINFORCE leave-one-out): ``r_i - mean of the other G-1 rewards``
  ``= G/(G-1) · (r_i - r̄)``.

The std convention: ``ddof=0`` (the default) is the *population* std, sqrt(Σ(r - r̄)² / G), as
referee's group statistics report it; ``ddof=1`` is the *sample* std, sqrt(Σ(r - r̄)² / (G-1)),
which TRL (``nanstd``, with ``eps=1e-4``) and veRL (``torch.std``, with ``eps=1e-6``) use. For
rewards [0, 0, 1, 0, 1, 1, 0, 0] (r̄ = 0.375): population std 0.4841, advantages -0.7746 and
+1.2910; sample std 0.5175, advantages -0.7246 and +1.2076.

None rewards (a judge with no verdict, a failed item) are left out of the group's mean and std
and get advantage 0, as TRL does.

Dynamic sampling (DAPO): a group whose rollouts all pass or all fail has zero advantage
everywhere and carries no gradient; :func:`informative_groups` says which groups to keep.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "AdvantageEstimator",
    "GroupSummary",
    "advantages",
    "group_summaries",
    "informative_groups",
    "split_groups",
]

AdvantageEstimator = Literal["grpo", "dr_grpo", "rloo"]
Reward = float | None


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """One group's statistics (None rewards left out)."""

    n: int
    """Rollouts with a reward."""
    mean: float
    pass_rate: float
    all_correct: bool
    all_wrong: bool

    @property
    def informative(self) -> bool:
        """Neither all correct nor all wrong: the group has a non-zero advantage somewhere."""
        return self.n > 0 and not (self.all_correct or self.all_wrong)


def split_groups(rewards: Sequence[Reward], group_size: int) -> list[list[Reward]]:
    """The flat reward list cut into consecutive groups of ``group_size``."""
    if group_size < 1:
        raise ValueError("group_size must be at least 1")
    if len(rewards) % group_size:
        raise ValueError(f"{len(rewards)} rewards do not split into groups of {group_size}")
    return [list(rewards[i : i + group_size]) for i in range(0, len(rewards), group_size)]


def group_summaries(
    rewards: Sequence[Reward], group_size: int, threshold: float = 1.0
) -> list[GroupSummary]:
    """Per group: mean, pass rate (reward >= ``threshold``), all-correct and all-wrong flags."""
    out = []
    for group in split_groups(rewards, group_size):
        scored = [r for r in group if r is not None]
        passes = sum(1 for r in scored if r >= threshold)
        n = len(scored)
        out.append(
            GroupSummary(
                n=n,
                mean=math.fsum(scored) / n if n else 0.0,
                pass_rate=passes / n if n else 0.0,
                all_correct=n > 0 and passes == n,
                all_wrong=n > 0 and passes == 0,
            )
        )
    return out


def informative_groups(
    rewards: Sequence[Reward], group_size: int, threshold: float = 1.0
) -> list[bool]:
    """DAPO's dynamic-sampling filter: per group, True when it is neither all correct nor all
    wrong (keep it), False when every rollout scored alike (resample or drop it)."""
    return [g.informative for g in group_summaries(rewards, group_size, threshold)]


def _std(values: Sequence[float], mean: float, ddof: int) -> float:
    if len(values) - ddof <= 0:
        return 0.0
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - ddof))


def advantages(
    rewards: Sequence[Reward],
    group_size: int,
    estimator: AdvantageEstimator = "grpo",
    *,
    ddof: int = 0,
    eps: float = 1e-6,
) -> list[float]:
    """Group-relative advantages, one per reward (see the module docstring for the formulas
    and the std convention: ``ddof=0`` population std, ``ddof=1`` sample std as TRL/veRL)."""
    if ddof not in (0, 1):
        raise ValueError("ddof must be 0 (population std) or 1 (sample std)")
    out: list[float] = []
    for group in split_groups(rewards, group_size):
        scored = [r for r in group if r is not None]
        n = len(scored)
        mean = math.fsum(scored) / n if n else 0.0
        if estimator == "grpo":
            scale = 1.0 / (_std(scored, mean, ddof) + eps)
        elif estimator == "dr_grpo":
            scale = 1.0
        elif estimator == "rloo":
            scale = n / (n - 1) if n > 1 else 0.0
        else:
            raise ValueError(f"unknown estimator {estimator!r}: use grpo, dr_grpo or rloo")
        out.extend(0.0 if r is None else (r - mean) * scale for r in group)
    return out
