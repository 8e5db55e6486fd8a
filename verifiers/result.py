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

__all__ = ["OUTCOMES", "CheckResult", "result_dict"]

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
        return result_dict(self)


def result_dict(result: Any) -> dict[str, Any]:
    """The fields of a result dataclass as a dict, every one kept (``None`` too), with its
    ``outcome`` as a plain string (a StrEnum member becomes its value)."""
    data = asdict(result)
    data["outcome"] = str(result.outcome)
    return data
