"""The wire schema: every request and response body of the referee API, defined once.

The server uses these classes as its request and response models (so the OpenAPI document is
generated from them) and the SDK returns them. This module imports only pydantic.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from referee.client.code_models import (
    AssertTestSpec,
    CodeGrader,
    CodeGradeRequest,
    CodeGradeResponse,
    CodeTest,
    ExecutionResult,
    FunctionCallTestSpec,
    LanguageInfo,
    RunCodeRequest,
    RunCodeResponse,
    RunCodeResult,
    RunLimits,
    SandboxLanguages,
    SandboxRunRequest,
    SandboxRunResponse,
    StdioTestSpec,
)
from referee.client.exec_grader_models import (
    LabelModelGrader,
    PythonGrader,
    ScoreModelGrader,
    SQLGrader,
    ToolCallGrader,
    ToolCallSpec,
    check_formula,
)
from referee.client.text_grader_models import (
    Instruction,
    InstructionFollowingGrader,
    JsonSchemaGrader,
    OpenAITextGrader,
    TextSimilarityGrader,
)

__all__ = [
    "INVALID_OUTCOMES",
    "AssertTestSpec",
    "CodeGradeRequest",
    "CodeGradeResponse",
    "CodeGrader",
    "CodeTest",
    "ExecutionResult",
    "FormatGrader",
    "FunctionCallTestSpec",
    "GenRMGrader",
    "Grader",
    "GradersResponse",
    "GroupStats",
    "Instruction",
    "InstructionFollowingGrader",
    "JsonSchemaGrader",
    "JudgeRequest",
    "JudgeResponse",
    "JudgeResult",
    "LabelModelGrader",
    "LanguageInfo",
    "LengthPenaltyGrader",
    "MajorityVoteGrader",
    "MathGrader",
    "MathVerifyRequest",
    "MathVerifyResponse",
    "MultiGrader",
    "MultipleChoiceGrader",
    "NamedGrader",
    "PRMGrader",
    "Problem",
    "ProceduralGrader",
    "PythonGrader",
    "RewardItem",
    "RewardResult",
    "RewardsRequest",
    "RewardsResponse",
    "RubricCriterion",
    "RubricGrader",
    "RunCodeRequest",
    "RunCodeResponse",
    "RunCodeResult",
    "RunLimits",
    "SQLGrader",
    "SandboxLanguages",
    "SandboxRunRequest",
    "SandboxRunResponse",
    "ScoreModelGrader",
    "StdioTestSpec",
    "StringCheckGrader",
    "TextSimilarityGrader",
    "ToolCallGrader",
    "ToolCallSpec",
    "WeightedGrader",
    "WeightedPart",
    "reward_is_valid",
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


_FORMAT_PATTERNS = ("think_answer", "answer_tag", "boxed", "think")


class FormatGrader(_Model):
    """Does the response follow a format: think_answer, answer_tag, boxed, think, or regex:..."""

    type: Literal["format"] = "format"
    pattern: str = Field(
        "think_answer",
        max_length=2_000,
        examples=["think_answer", "regex:<think>.*</think>\\s*<answer>.+</answer>"],
        description="A named pattern (think_answer, answer_tag, boxed, think) or `regex:` and a "
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


class WeightedPart(_Model):
    weight: float = Field(..., ge=-100, le=100)
    grader: Grader


class WeightedGrader(_Model):
    """A weighted sum of other graders (divided by the sum of |weights| when `normalize`)."""

    type: Literal["weighted"] = "weighted"
    graders: list[WeightedPart] = Field(..., min_length=1, max_length=16)
    normalize: bool = True


class RubricCriterion(_Model):
    text: str = Field(..., min_length=1, max_length=2_000, examples=["cites the theorem"])
    weight: float = Field(1.0, ge=-100, le=100, description="Negative for a pitfall.")


class RubricGrader(_Model):
    """A model judge checks weighted criteria (explicit: each met or not, Σ w·met / Σ|w|) or
    rates the response against the whole rubric (implicit: one 1-10 rating)."""

    type: Literal["rubric"] = "rubric"
    criteria: list[RubricCriterion] = Field(..., min_length=1, max_length=32)
    mode: Literal["explicit", "implicit"] = "explicit"
    reference: str | None = Field(None, max_length=20_000)
    structured_verdict: bool = Field(
        False,
        description="Constrain the judge's output to a rationale ending in the `[RESULT] ...` "
        "line with structured outputs (vllm backend; OpenAI-compatible servers that accept "
        "`structured_outputs`); the transformers backend ignores it.",
    )


class GenRMGrader(_Model):
    """A generative reward model: pointwise (a verdict after a rationale, or P(Yes) from label
    probabilities) or pairwise (every pair of a group judged in both orders)."""

    type: Literal["genrm"] = "genrm"
    mode: Literal["pointwise", "pairwise"] = "pointwise"
    reference: str | None = Field(None, max_length=20_000)
    verdict: Literal["binary", "score"] = Field(
        "binary", description="Pointwise: yes/no (1 or 0) or a 1-10 score normalised to [0, 1]."
    )
    samples: int = Field(1, ge=1, le=16, description="Pointwise: verdicts sampled per response.")
    aggregate: Literal["mean", "majority"] = "mean"
    label_probs: bool = Field(
        False, description="Pointwise binary: the score is P(Yes)/(P(Yes)+P(No)) of the judge."
    )
    pairwise_score: Literal["win_rate", "bradley_terry"] = "win_rate"
    structured_verdict: bool = Field(
        False,
        description="Constrain the judge's output to a rationale ending in the `[RESULT] ...` "
        "line with structured outputs (vllm backend; OpenAI-compatible servers that accept "
        "`structured_outputs`); the transformers backend ignores it.",
    )


class PRMGrader(_Model):
    """Monte Carlo process reward: each step of the response is valued by sampling completions
    from its prefix with the server's policy model and checking their final answers against
    ``reference`` (the score aggregates the step values). Costly: through ``POST /v1/jobs``,
    or in ``/v1/rewards`` within the server's rollout budget."""

    type: Literal["prm_mc"] = "prm_mc"
    reference: str = Field(..., min_length=1, max_length=20_000, examples=["\\frac{1}{2}"])
    problem: str | None = Field(
        None, max_length=100_000, description="The problem text; default: the item's prompt."
    )
    n_rollouts: int = Field(8, ge=1, le=256, description="Completions sampled per step prefix.")
    mode: Literal["per_step", "binary_search"] = Field(
        "per_step",
        description="per_step: every prefix, N·(S-1) rollouts; binary_search (OmegaPRM): the "
        "first wrong step by bisection, N·⌈log2 S⌉ rollouts, hard labels only.",
    )
    split: Literal["auto", "step_markers", "blank_lines", "lines", "delimiter"] = "auto"
    delimiter: str | None = Field(None, min_length=1, max_length=64)
    max_tokens: int = Field(512, ge=1, le=32_768)
    temperature: float = Field(0.8, ge=0, le=2)
    top_p: float = Field(1.0, gt=0, le=1)
    seed: int | None = None
    aggregate: Literal["min", "mean", "last"] = Field(
        "min", description="The item's score from its step values (hard labels in binary_search)."
    )

    @model_validator(mode="after")
    def _delimiter_for_its_split(self) -> PRMGrader:
        if self.split == "delimiter" and not self.delimiter:
            raise ValueError("split 'delimiter' needs a non-empty delimiter")
        return self


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


class LengthPenaltyGrader(_Model):
    """Adaptive length penalty (ALP): the inner grader's score minus a length penalty whose
    strength follows the group's pass rate (easy prompts: full `beta`; hard ones: little).
    `alp`: score - beta·min(len/max_length, 1)·max(pass_rate, 1/G). `budget`: a length budget
    growing with the failure rate, score - beta·min(max(len - budget, 0)/max_budget, 1).
    Needs `group`."""

    type: Literal["length_penalty"] = "length_penalty"
    grader: Grader = Field(..., description="The grader whose score is penalised (correctness).")
    mode: Literal["alp", "budget"] = "alp"
    beta: float = Field(0.05, ge=0, le=10, description="The largest penalty.")
    max_length: int = Field(4096, ge=1, le=10_000_000, description="alp: length of full penalty.")
    unit: Literal["chars", "words"] = "chars"
    min_budget: int | None = Field(
        None, ge=0, description="budget: the budget of a prompt the group always solves."
    )
    max_budget: int | None = Field(
        None, ge=1, description="budget: the budget of a prompt it never solves (max_length)."
    )
    pass_threshold: float | None = Field(
        None,
        ge=-100,
        le=100,
        description="An inner score at or above this is a pass (default: the request's).",
    )


class NamedGrader(_Model):
    """A grader the server has registered under a name (``REFEREE_GRADERS``, ``GET
    /v1/graders``): the team's standard rewards kept in one place, referred to by name."""

    type: Literal["named"] = "named"
    name: str = Field(..., min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
    reference: str | None = Field(
        None,
        max_length=100_000,
        description="This item's reference, put into every part of the registered grader that "
        "takes one and has none (math, multiple_choice, string_check, prm_mc, judges).",
    )
    tests: list[dict[str, Any]] | None = Field(
        None,
        max_length=1_000,
        description="This item's tests, for a registered code grader without tests.",
    )


class ProceduralGrader(_Model):
    """A generated problem (reasoning-gym, ``GET /v1/environments``) scored by its task's own
    scorer, after extracting the answer from the response; partial credit where the task gives
    it. ``POST /v1/environments/{task}/problems`` returns this grader for each problem."""

    type: Literal["procedural"] = "procedural"
    task: str = Field(..., pattern=r"^[A-Za-z0-9_]{1,64}$", examples=["basic_arithmetic"])
    entry: dict[str, Any] = Field(
        ...,
        description="The problem's entry as generated: `answer` (null for tasks whose scorer "
        "checks a proposed solution) and `metadata`.",
    )
    config: dict[str, Any] = Field(
        default_factory=dict,
        description="The task config the problem was generated with (scorers may read it).",
    )
    extract: Literal["auto", "answer_tag", "boxed", "none"] = Field(
        "auto",
        description="Where the answer is read: `auto` (the last <answer> tag, else the last "
        "\\boxed{}), only the tag, only \\boxed{}, or the whole response (after </think>).",
    )
    tag: str = Field("answer", pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
    level: int | None = Field(
        None, ge=0, le=1000, description="The curriculum level the problem was drawn at."
    )


# --- sql, tool_call, python and OpenAI's model and multi graders (exec_grader_models) ---
class MultiGrader(_Model):
    """OpenAI's multi grader: named graders combined by the `calculate_output` formula
    (numbers, the graders' names, + - * / ^ and min, max, abs, floor, ceil, exp, sqrt, log;
    evaluated by referee's own arithmetic evaluator, never by eval)."""

    type: Literal["multi"] = "multi"
    name: str | None = Field(None, max_length=256)
    graders: dict[str, Grader] = Field(..., min_length=1, max_length=16)
    calculate_output: str = Field(..., min_length=1, max_length=2_000, examples=["0.5 * a + b"])

    @field_validator("graders")
    @classmethod
    def _names(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name in value:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", name):
                raise ValueError(f"grader name {name!r} is not an identifier the formula can use")
        return value

    @model_validator(mode="after")
    def _formula(self) -> MultiGrader:
        check_formula(self.calculate_output, set(self.graders))
        return self


Grader = Annotated[
    MathGrader
    | MultipleChoiceGrader
    | StringCheckGrader
    | FormatGrader
    | CodeGrader
    | RubricGrader
    | GenRMGrader
    | PRMGrader
    | ProceduralGrader
    | NamedGrader
    | MajorityVoteGrader
    | LengthPenaltyGrader
    | WeightedGrader
    # text graders (issue 19): IFEval instructions, OpenAI's text similarity
    | InstructionFollowingGrader
    | TextSimilarityGrader
    # sql, tool_call, python, OpenAI's objects
    | SQLGrader
    | ToolCallGrader
    | PythonGrader
    | ScoreModelGrader
    | LabelModelGrader
    | MultiGrader
    | JsonSchemaGrader,
    Field(discriminator="type"),
]
WeightedPart.model_rebuild()
WeightedGrader.model_rebuild()
LengthPenaltyGrader.model_rebuild()
MultiGrader.model_rebuild()


class RewardItem(_Model):
    id: str = Field(..., min_length=1, max_length=256)
    prompt: str | list[dict[str, Any]] = Field(
        "", description="The prompt, as text or as a list of chat messages."
    )
    response: str = Field(..., max_length=4_000_000, description="The model's response.")
    grader: Grader
    group: str | None = Field(
        None, max_length=256, description="Items sharing a group are the G rollouts of one prompt."
    )


class GradersResponse(_Model):
    graders: dict[str, dict[str, Any]] = Field(
        ..., description='The registered graders by name, as `{"type": "named"}` expands.'
    )


class RewardsRequest(_Model):
    items: list[RewardItem] = Field(..., min_length=1)
    pass_threshold: float = Field(
        1.0,
        ge=-100,
        le=100,
        description="A score at or above this counts as a pass in group stats.",
    )


INVALID_OUTCOMES = frozenset(
    {
        "timeout",
        "error",
        "judge_error",
        "invalid",
        "bad_reference",
        "sandbox_error",
        "language_unavailable",
        "group_too_small",
        "grader_error",  # a python grader or a multi formula failed, not the response
    }
)
"""Outcomes that are referee's failure (or the data's), not the model's: such a reward is not
``valid`` and a trainer should mask the sample instead of learning from its 0."""


def reward_is_valid(score: float | None, details: Mapping[str, Any]) -> bool:
    """False when the score says nothing about the response: no score, an outcome of
    :data:`INVALID_OUTCOMES`, or such an outcome in a part of a weighted grader or in a
    program's test (a sandbox fault on one test)."""
    if score is None or details.get("outcome") in INVALID_OUTCOMES:
        return False
    parts = details.get("parts")
    if isinstance(parts, list):
        for part in parts:
            if isinstance(part, dict) and not reward_is_valid(part.get("score", 0.0), part):
                return False
    tests = details.get("tests")
    if isinstance(tests, list):
        if any(isinstance(t, dict) and t.get("outcome") == "sandbox_error" for t in tests):
            return False
    inner = details.get("inner")  # length_penalty: the inner grader's details
    return not (isinstance(inner, dict) and inner.get("outcome") in INVALID_OUTCOMES)


class RewardResult(_Model):
    id: str
    score: float | None = Field(
        ...,
        description="None when a model judge's verdict could not be read or the judge failed: "
        "the trainer should skip the sample (TRL's convention).",
    )
    valid: bool = Field(
        True,
        description="False when referee, not the model, failed: a timeout, a worker or sandbox "
        "error, an unreadable judge verdict, a bad reference, a group grader without its group. "
        "The score (0 or None) then says nothing about the response: mask the sample. Filled "
        "from score and details when not given.",
    )
    details: dict[str, Any] = Field(
        default_factory=dict,
        description="outcome, reason and what the grader read (extracted answer, method, ...); "
        "a per-item failure has outcome `timeout` or `error`, a score of 0 and `valid` false.",
    )

    @model_validator(mode="before")
    @classmethod
    def _fill_valid(cls, data: Any) -> Any:
        if isinstance(data, dict) and "valid" not in data:
            details = data.get("details") or {}
            score = data.get("score")
            if isinstance(details, Mapping):
                return {**data, "valid": reward_is_valid(score, details)}
        return data


class GroupStats(_Model):
    group: str
    n: int = Field(..., description="The group's valid rewards, which the statistics count.")
    invalid: int = Field(0, description="The group's rewards left out as not `valid`.")
    mean: float
    std: float
    pass_rate: float
    all_pass: bool
    all_fail: bool
    """all_pass or all_fail: every rollout scored alike, so the group carries no GRPO signal."""


class RewardsResponse(_Model):
    rewards: list[RewardResult]
    groups: list[GroupStats] = Field(default_factory=list)
    mean: float
    elapsed_ms: float


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


JudgeGrader = Annotated[RubricGrader | GenRMGrader, Field(discriminator="type")]


class JudgeRequest(_Model):
    """Judge the responses to one prompt directly (pairwise compares them with each other)."""

    prompt: str | list[dict[str, Any]] = Field(..., description="The prompt, text or messages.")
    responses: list[str] = Field(..., min_length=1, max_length=256)
    grader: JudgeGrader


class JudgeResult(_Model):
    score: float | None
    details: dict[str, Any] = Field(default_factory=dict)


class JudgeResponse(_Model):
    results: list[JudgeResult]
    elapsed_ms: float


class Problem(_Model):
    """An error body (RFC 9457 application/problem+json)."""

    type: str
    title: str
    status: int
    detail: str
    errors: list[dict[str, Any]] | None = None
