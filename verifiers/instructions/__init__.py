"""Instruction following (IFEval's verifiable instructions) as a reward.

    >>> from referee.verifiers.instructions import check_instructions
    >>> r = check_instructions("hello world", [{"id": "change_case:english_lowercase"},
    ...                                        {"id": "punctuation:no_comma"}])
    >>> r.score, [v["followed"] for v in r.verdicts]
    (1.0, [True, True])

Instructions are addressed by IFEval's ids with IFEval's kwargs (``checkers.KWARGS``). ``strict``
checks the response as it is; ``loose`` (IFEval's upper bound) also accepts it when one of its
variants follows the instruction: without the first line, the last line or both, and each of
those with every ``*`` removed. The score is the fraction of instructions followed, or 1/0 for
``aggregate="all"``. An empty (or all-whitespace) response follows nothing, as in IFEval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from referee.verifiers.instructions.checkers import CHECKS, INSTRUCTION_IDS, KWARGS, validate
from referee.verifiers.instructions.text_tools import sentence_model

__all__ = [
    "INSTRUCTION_IDS",
    "KWARGS",
    "InstructionResult",
    "check_instructions",
    "loose_variants",
    "validate",
]

Mode = Literal["strict", "loose"]
Aggregate = Literal["fraction", "all"]
_USES_SENTENCES = frozenset(
    {"length_constraints:number_sentences", "change_case:capital_word_frequency"}
)


@dataclass(frozen=True, slots=True)
class InstructionResult:
    score: float
    outcome: str
    """``followed`` (all), ``partly`` (some) or ``not_followed`` (none)."""
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    """One ``{"id", "followed"}`` per instruction, in order."""
    mode: str = "strict"
    sentence_model: str | None = None
    """Which Punkt parameters counted sentences, when an instruction counted them."""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "outcome": self.outcome,
            "mode": self.mode,
            "followed": sum(1 for v in self.verdicts if v["followed"]),
            "total": len(self.verdicts),
            "instructions": [dict(v) for v in self.verdicts],
        }
        if self.sentence_model is not None:
            data["sentence_model"] = self.sentence_model
        return data


def loose_variants(response: str) -> list[str]:
    """IFEval's loose-mode variants of a response, the response itself first."""
    lines = response.split("\n")
    first = "\n".join(lines[1:]).strip()
    last = "\n".join(lines[:-1]).strip()
    both = "\n".join(lines[1:-1]).strip()
    return [
        response,
        response.replace("*", ""),
        first,
        last,
        both,
        first.replace("*", ""),
        last.replace("*", ""),
        both.replace("*", ""),
    ]


def check_instructions(
    response: str,
    instructions: Sequence[Mapping[str, Any]],
    mode: Mode = "strict",
    aggregate: Aggregate = "fraction",
) -> InstructionResult:
    """Check each ``{"id", "kwargs"}`` instruction; :class:`ValueError` for an unknown id or
    bad kwargs (the caller's fault, found before anything is scored)."""
    if mode not in ("strict", "loose"):
        raise ValueError(f"mode must be 'strict' or 'loose', not {mode!r}")
    if aggregate not in ("fraction", "all"):
        raise ValueError(f"aggregate must be 'fraction' or 'all', not {aggregate!r}")
    if not instructions:
        raise ValueError("at least one instruction is needed")
    checked = [(i["id"], validate(i["id"], i.get("kwargs") or {})) for i in instructions]
    variants = [response] if mode == "strict" else loose_variants(response)
    verdicts = []
    for instruction_id, kwargs in checked:
        check = CHECKS[instruction_id]
        followed = any(v.strip() and check(v, **kwargs) for v in variants)
        verdicts.append({"id": instruction_id, "followed": bool(followed)})
    n = sum(1 for v in verdicts if v["followed"])
    if n == len(verdicts):
        outcome = "followed"
    else:
        outcome = "partly" if n else "not_followed"
    if aggregate == "all":
        score = 1.0 if n == len(verdicts) else 0.0
    else:
        score = n / len(verdicts)
    uses_sentences = any(i in _USES_SENTENCES for i, _ in checked)
    return InstructionResult(
        score=score,
        outcome=outcome,
        verdicts=verdicts,
        mode=mode,
        sentence_model=sentence_model() if uses_sentences else None,
    )
