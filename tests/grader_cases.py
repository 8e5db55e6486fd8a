"""Grader specs that tests of several layers write: a ``weighted`` sum of graders, and a
``length_penalty`` case scored both below HTTP (tests/unit/services/scoring) and through
``/v1/rewards`` (tests/integration). A module of its own, not ``conftest``: a test that imports
``conftest`` gets whichever conftest of the run came first on ``sys.path``."""

from __future__ import annotations

from typing import Any

__all__ = [
    "ALL_RIGHT",
    "ALL_RIGHT_SCORES",
    "LENGTH_PENALTY",
    "LONG",
    "SHORT",
    "penalised_group",
    "weighted",
]


def weighted(*parts: tuple[float, dict[str, Any]]) -> dict[str, Any]:
    """A ``weighted`` grader over ``(weight, grader)`` parts, in their order."""
    return {"type": "weighted", "graders": [{"weight": w, "grader": g} for w, g in parts]}


# The adaptive length penalty (beta 0.5, lengths up to 100 characters) over a math grader.
LENGTH_PENALTY: dict[str, Any] = {
    "type": "length_penalty",
    "grader": {"type": "math", "reference": "4"},
    "beta": 0.5,
    "max_length": 100,
}
SHORT, LONG = "\\boxed{4}", "x" * 91 + "\\boxed{4}"  # right, in 9 and 100 characters
ALL_RIGHT = [SHORT, LONG, SHORT, LONG]
# All right: the group's pass rate is 1, so the penalty's weight is beta (0.5).
ALL_RIGHT_SCORES = [1 - 0.5 * 0.09, 0.5, 1 - 0.5 * 0.09, 0.5]


def penalised_group(
    group: str, responses: list[str], grader: dict[str, Any] = LENGTH_PENALTY
) -> list[dict[str, Any]]:
    """Reward items of ``group`` (ids ``{group}0``, ``{group}1``, ...), one a response, each
    graded by ``grader``."""
    return [
        {"id": f"{group}{k}", "response": r, "grader": grader, "group": group}
        for k, r in enumerate(responses)
    ]
