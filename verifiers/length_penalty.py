"""Adaptive length penalty (ALP): shorter answers where the prompt is easy, room where it is hard.

ALP ("Just Enough Thinking", Xiang et al., 2025) estimates a prompt's difficulty online from its
group of G rollouts and scales a per-length penalty by how often the group solved it:

    reward = score - beta * min(length / max_length, 1) * max(pass_rate, 1 / G)     (mode "alp")

An easy prompt (every rollout right) pays the full ``beta`` per ``max_length`` of text; a hard
one (pass rate near 0) pays at most ``beta / G``, so the model keeps its long reasoning where it
needs it. The ``budget`` mode states the same idea as a length budget that grows with the
prompt's failure rate:

    budget = min_budget + (max_budget - min_budget) * (1 - pass_rate)
    reward = score - beta * min(max(length - budget, 0) / max_budget, 1)           (mode "budget")

Lengths are counted in characters or whitespace-separated words (the server has no tokenizer).
Pure: no I/O.

    >>> apply_length_penalty([1.0, 1.0, 0.0, 1.0], [100, 400, 50, 200], beta=0.5, max_length=400)
    [0.90625, 0.625, -0.046875, 0.8125]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

__all__ = ["LengthUnit", "PenaltyMode", "apply_length_penalty", "length_of", "pass_rate"]

LengthUnit = Literal["chars", "words"]
PenaltyMode = Literal["alp", "budget"]


def length_of(text: str, unit: LengthUnit = "chars") -> int:
    """The length of a response in characters or in whitespace-separated words."""
    return len(text.split()) if unit == "words" else len(text)


def pass_rate(scores: Sequence[float | None], threshold: float = 1.0) -> float:
    """Share of the scored rollouts at or above ``threshold`` (None scores are left out)."""
    scored = [s for s in scores if s is not None]
    if not scored:
        return 0.0
    return sum(1 for s in scored if s >= threshold) / len(scored)


def apply_length_penalty(
    scores: Sequence[float | None],
    lengths: Sequence[int],
    *,
    beta: float = 0.05,
    max_length: int = 4096,
    mode: PenaltyMode = "alp",
    threshold: float = 1.0,
    min_budget: int | None = None,
    max_budget: int | None = None,
) -> list[float | None]:
    """The group's scores with the adaptive length penalty subtracted (None stays None).

    ``scores`` and ``lengths`` are the G rollouts of one prompt; the group's pass rate (scores
    at or above ``threshold``) sets the strength of the penalty as described above."""
    if len(scores) != len(lengths):
        raise ValueError("one length per score")
    if beta < 0 or max_length < 1:
        raise ValueError("beta must be >= 0 and max_length >= 1")
    rate = pass_rate(scores, threshold)
    scored = sum(1 for s in scores if s is not None)
    out: list[float | None] = []
    if mode == "alp":
        weight = beta * max(rate, 1.0 / max(scored, 1))
        for score, n in zip(scores, lengths, strict=True):
            out.append(None if score is None else score - weight * min(n / max_length, 1.0))
        return out
    hi = max_budget if max_budget is not None else max_length
    lo = min_budget if min_budget is not None else hi // 4
    if not 0 <= lo <= hi or hi < 1:
        raise ValueError("budgets need 0 <= min_budget <= max_budget and max_budget >= 1")
    budget = lo + (hi - lo) * (1.0 - rate)
    for score, n in zip(scores, lengths, strict=True):
        over = min(max(n - budget, 0.0) / hi, 1.0)
        out.append(None if score is None else score - beta * over)
    return out
