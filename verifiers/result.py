"""The result of one non-math check: multiple choice, string check, format check.

A wrong, missing or hedged answer is a *result* (score 0 and an outcome that says why), never an
exception. Outcomes used by these checks:

- ``"correct"``: the check passed (score 1.0).
- ``"wrong"``: an answer was found, or the text was checked, and it did not pass.
- ``"no_answer"``: nothing that reads as a final answer.
- ``"hedged"``: several different final answers were given ("A or B").
- ``"bad_reference"``: the reference itself is unusable (a letter outside the choices, an empty
  substring); score 0, so a broken data set row never rewards anything.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Final

__all__ = ["OUTCOMES", "CheckResult"]

OUTCOMES: Final = ("correct", "wrong", "no_answer", "hedged", "bad_reference")
"""The outcome names these checks produce."""


@dataclass(frozen=True, slots=True)
class CheckResult:
    score: float
    outcome: str
    """One of :data:`OUTCOMES`."""
    extracted: str | None = None
    """What was read from the response (a choice letter, ``"A, B"`` when hedged), if anything."""
    reason: str | None = None
    """Why it failed, in words (``"no </think> closing tag"``); ``None`` when it passed."""

    @property
    def correct(self) -> bool:
        return self.outcome == "correct"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["outcome"] = str(self.outcome)  # a StrEnum member becomes its plain value
        return data
