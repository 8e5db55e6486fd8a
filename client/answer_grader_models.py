"""Wire models of the graders that read a final answer or check a format: ``math`` (and the
``POST /v1/math/verify`` bodies, which take the same options), ``multiple_choice``,
``string_check``, ``answer_match`` (short answers, SQuAD-normalised), ``format`` and
``majority_vote`` (label-free: the group's majority answer, by math equivalence). Imports only
pydantic.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from referee.client.text_grader_models import OpenAITextGrader

__all__ = [
    "AnswerMatchGrader",
    "FormatGrader",
    "MajorityVoteGrader",
    "MathGrader",
    "MathVerifyRequest",
    "MathVerifyResponse",
    "MultipleChoiceGrader",
    "StringCheckGrader",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


ExtractMode = Literal["auto", "boxed", "answer_tag", "final_answer", "gsm8k", "none"]


class _MathOptions(_Model):
    extract: ExtractMode = Field(
        "auto",
        description="Where the final answer is read from. `auto`: last \\boxed{}, <answer> tags, "
        "a final-answer cue ('The final answer is ...', 'Answer: ...'), GSM8K '####', a one-line "
        "bare answer, the last display math, the last inline math of the final sentence, then "
        "the last number. `none`: the whole response.",
    )
    last_number_fallback: bool = Field(True, description="In `auto`, fall back to the last number.")
    hedging_is_wrong: bool = Field(True, description="Several different final answers score 0.")
    percent: Literal["either", "fraction", "number"] = Field(
        "either", description="`50%` equals 50 and 0.5 (`either`), only 0.5, or only 50."
    )
    rel_tol: float = Field(1e-12, ge=0, le=0.1, description="Relative tolerance for irrationals.")
    approx_min_sig_digits: int = Field(
        5,
        ge=0,
        le=30,
        description="A decimal with at least this many significant digits matches an irrational "
        "or non-terminating reference it rounds or truncates to (0 disables).",
    )
    decimal_comma: bool = Field(
        False,
        description="Read a comma between digits as a decimal point (`1,22` = 1.22). Off by "
        "default: it clashes with thousands separators (`1,000`) and lists (`1,2`).",
    )
    ordered_lists: bool = Field(
        False,
        description="Compare a bare comma list in the reference (`1, -2`) in order. Off by "
        "default: such a list is a set of answers (MATH's 'separated by commas'). Tuples "
        "`(1, 2)` are always ordered, sets `\\{1, 2\\}` never.",
    )
    abs_tol: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Numbers within this absolute difference are equal. 0 (default): exact "
        "values, plus the decimal rule of `approx_min_sig_digits`; a tolerance accepts near "
        "misses, and for RL a false positive is worse than a false negative.",
    )


class MathGrader(_MathOptions):
    """Is the final answer mathematically equal to the reference?"""

    type: Literal["math"] = "math"
    reference: str = Field(..., max_length=10_000, examples=["\\frac{1}{2}"])


class MultipleChoiceGrader(_Model):
    """Is the chosen letter the reference letter? Several different letters score 0."""

    type: Literal["multiple_choice"] = "multiple_choice"
    reference: str = Field(..., max_length=16, examples=["C"])
    choices: str = Field("ABCD", min_length=2, max_length=26, pattern="^[A-Z]+$")


class StringCheckGrader(OpenAITextGrader):
    """String comparison: eq, ne, like (substring), ilike (case-insensitive substring). OpenAI's
    `string_check` object is accepted as it is (`name`, `input: "{{sample.output_text}}"`)."""

    type: Literal["string_check"] = "string_check"
    operation: Literal["eq", "ne", "like", "ilike"] = "eq"


class AnswerMatchGrader(_Model):
    """A short answer against reference answers, as question-answering rewards score it
    (Search-R1's exact match, open-instruct's string matcher and string F1): both sides
    normalised as SQuAD's evaluation does (lower case, no punctuation, no a/an/the, single
    spaces); the best over the references."""

    type: Literal["answer_match"] = "answer_match"
    reference: str | Annotated[list[str], Field(min_length=1, max_length=1_000)] = Field(
        ...,
        examples=[["Paris", "City of Paris"]],
        description="The accepted answers: a list, one text, or JSON text of a list or of "
        '`{"target": [...]}` (Search-R1\'s ground truth).',
    )
    metric: Literal["em", "subem", "f1"] = Field(
        "em",
        description="`em`: the answer equals a reference; `subem`: a reference is inside the "
        "answer; `f1`: SQuAD's token F1 (partial credit).",
    )
    extract: Literal["answer_tag", "after_thinking", "none"] = Field(
        "answer_tag",
        description="`answer_tag`: the last <answer>...</answer> block (none: no_answer, 0); "
        "`after_thinking`: the text after </think>, its <answer> tags removed; `none`: the "
        "whole response.",
    )
    max_answer_tags: int | None = Field(
        None,
        ge=0,
        le=1_000_000,
        description="More opening or closing <answer> tags than this: a quarter of the score "
        "(Search-R1's guard against a flood of answers; veRL's searchR1 rows get 10).",
    )
    marker: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        examples=["The answer is: "],
        description="The answer is what follows the marker's last occurrence in the extracted "
        "text (all of it when the marker is absent; open-instruct's flan rows: "
        "`The answer is: `).",
    )

    @field_validator("reference")
    @classmethod
    def _short_enough(cls, value: str | list[str]) -> str | list[str]:
        texts = value if isinstance(value, list) else [value]
        if sum(len(t) for t in texts) > 100_000:
            raise ValueError("the reference answers are longer than 100,000 characters in all")
        return value


_FORMAT_PATTERNS = ("think_answer", "answer_tag", "boxed", "think", "think_closed", "think_boxed")


class FormatGrader(_Model):
    """Does the response follow a format: think_answer, answer_tag, boxed, think, think_closed
    (TRL's think_format_reward), think_boxed (veRL's geometry3k format), or regex:..."""

    type: Literal["format"] = "format"
    pattern: str = Field(
        "think_answer",
        max_length=2_000,
        examples=["think_answer", "regex:<think>.*</think>\\s*<answer>.+</answer>"],
        description="A named pattern (think_answer, answer_tag, boxed, think, think_closed, "
        "think_boxed) or "
        "`regex:` and a "
        "Python regular expression the whole response must match.",
    )

    @field_validator("pattern")
    @classmethod
    def _known_or_compiles(cls, value: str) -> str:
        if value.startswith("regex:"):
            try:
                re.compile(value[len("regex:") :])
            except re.error as exc:
                raise ValueError(f"the regex does not compile: {exc}") from exc
        elif value not in _FORMAT_PATTERNS:
            raise ValueError(
                f"unknown pattern {value!r}: use one of "
                f"{', '.join(_FORMAT_PATTERNS)} or 'regex:...'"
            )
        return value


class MajorityVoteGrader(_MathOptions):
    """Label-free (TTRL): the final answer most of the item's group agrees on, by math
    equivalence, becomes the pseudo-reference; a response scores 1 when its answer is in that
    majority, else 0. Needs `group` (the G rollouts of one prompt); ties go to the answer seen
    first."""

    type: Literal["majority_vote"] = "majority_vote"
    min_share: float = Field(
        0.0,
        ge=0,
        le=1,
        description="When the majority holds less than this share of the group, every item of "
        "the group scores None (no consensus: skipped by the trainer).",
    )


class MathVerifyRequest(_MathOptions):
    response: str = Field(
        ..., max_length=4_000_000, examples=["... so the answer is \\boxed{0.5}."]
    )
    reference: str = Field(..., max_length=10_000, examples=["\\frac{1}{2}"])


class MathVerifyResponse(_Model):
    score: float
    outcome: str
    extracted: str | None = None
    extraction: str | None = None
    parsed_response: str | None = None
    parsed_reference: str | None = None
    method: str | None = None
    reason: str | None = None
    elapsed_ms: float
