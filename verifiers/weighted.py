"""Weighted combination of reward parts: ``Σ wᵢ·sᵢ``, by default divided by ``Σ |wᵢ|``.

    >>> from referee.verifiers.weighted import combine
    >>> combine([(1.0, 1.0), (0.5, 0.0), (-0.5, 1.0)])
    0.25

Normalised, scores in [0, 1] give a total in [-1, 1] (in [0, 1] when no weight is negative).
Negative weights are penalties, as in the explicit "Rubrics as Rewards" aggregation
``Σ w·met / Σ |w|``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["combine"]


def combine(parts: Sequence[tuple[float, float]], normalize: bool = True) -> float:
    """Weighted sum of ``(weight, score)`` pairs; with ``normalize``, divided by ``Σ |weight|``.

    Raises :class:`ValueError` for no parts, all-zero weights, or a non-finite number.
    """
    if not parts:
        raise ValueError("combine needs at least one (weight, score) part")
    if not all(math.isfinite(w) and math.isfinite(s) for w, s in parts):
        raise ValueError(f"combine needs finite weights and scores, got {list(parts)!r}")
    total_weight = math.fsum(abs(w) for w, _ in parts)
    if total_weight == 0:
        raise ValueError("combine needs at least one non-zero weight; all weights are 0")
    total = math.fsum(w * s for w, s in parts)
    return total / total_weight if normalize else total
