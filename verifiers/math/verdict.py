"""The structured result of one math check."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from referee.verifiers.result import result_dict

__all__ = ["MathVerdict", "Outcome"]


class Outcome(StrEnum):
    """Why a check scored what it scored. Every one of these is a *result*, not a fault."""

    CORRECT = "correct"
    WRONG = "wrong"
    NO_ANSWER = "no_answer"  # nothing that looks like a final answer
    HEDGED = "hedged"  # several different final answers
    UNPARSEABLE = "unparseable"  # the extracted answer could not be read as math
    REJECTED = "rejected"  # a guard refused to evaluate it (too long, too deep, too large)
    BAD_REFERENCE = "bad_reference"  # the reference itself could not be read
    TIMEOUT = "timeout"  # the check overran its deadline and was killed
    ERROR = "error"  # the check's worker failed (memory cap, crash)


@dataclass(frozen=True, slots=True)
class MathVerdict:
    score: float
    outcome: Outcome
    extracted: str | None = None
    """The final answer as read from the response."""
    extraction: str | None = None
    """Where it was read from: boxed, answer_tag, final_answer, gsm8k, last_number, whole."""
    parsed_response: str | None = None
    parsed_reference: str | None = None
    method: str | None = None
    """How the two were compared: exact, rational, numeric, approx_decimal, symbolic, ..."""
    reason: str | None = None

    @property
    def correct(self) -> bool:
        return self.outcome is Outcome.CORRECT

    def to_dict(self) -> dict[str, Any]:
        return result_dict(self)
