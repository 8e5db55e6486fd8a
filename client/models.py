"""The wire schema: every request and response body of the referee API, defined once.

The server uses these classes as its request and response models (so the OpenAPI document is
generated from them) and the SDK returns them. This module imports only pydantic.

Here: the :data:`Grader` union, the graders made of other graders (``weighted``,
``length_penalty``, OpenAI's ``multi``), ``named`` and ``procedural``, and the
``POST /v1/rewards`` request. The other models live by topic and are re-exported here:
``answer_grader_models`` (math, multiple_choice, string_check, format, majority_vote, math
verify), ``judge_grader_models`` (rubric, genrm, prm_mc, ``POST /v1/judge``), ``reward_models``
(results, group stats, validity), ``code_models``, ``exec_grader_models`` and
``text_grader_models``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from referee.client.answer_grader_models import (
    AnswerMatchGrader,
    FormatGrader,
    MajorityVoteGrader,
    MathGrader,
    MathVerifyRequest,
    MathVerifyResponse,
    MultipleChoiceGrader,
    StringCheckGrader,
)
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
from referee.client.judge_grader_models import (
    GenRMGrader,
    JudgeRequest,
    JudgeResponse,
    JudgeResult,
    PRMGrader,
    RubricCriterion,
    RubricGrader,
)
from referee.client.reward_models import (
    INVALID_OUTCOMES,
    GroupStats,
    RewardResult,
    RewardsResponse,
    reward_is_valid,
)
from referee.client.text_grader_models import (
    Instruction,
    InstructionFollowingGrader,
    JsonSchemaGrader,
    TextSimilarityGrader,
)

__all__ = [
    "INVALID_OUTCOMES",
    "AnswerMatchGrader",
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


class WeightedPart(_Model):
    weight: float = Field(..., ge=-100, le=100)
    grader: Grader


class WeightedGrader(_Model):
    """A weighted sum of other graders (divided by the sum of |weights| when `normalize`)."""

    type: Literal["weighted"] = "weighted"
    graders: list[WeightedPart] = Field(..., min_length=1, max_length=16)
    normalize: bool = True


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


# --- sql, tool_call, python and OpenAI's model and multi graders (exec_grader_models) ---
class MultiGrader(_Model):
    """OpenAI's multi grader: named graders combined by the `calculate_output` formula
    (numbers, the graders' names, + - * / ^ and min, max, abs, floor, ceil, exp, sqrt, log;
    evaluated by referee's own arithmetic evaluator, never by eval)."""

    type: Literal["multi"] = "multi"
    name: str | None = Field(None, max_length=256)
    graders: dict[str, Grader] = Field(..., min_length=1, max_length=16)
    calculate_output: str = Field(..., min_length=1, max_length=2_000, examples=["0.5 * a + b"])

    @field_validator("graders", mode="before")
    @classmethod
    def _one_grader(cls, value: Any) -> Any:
        """The ``openai`` SDK types ``graders`` as one grader object: it is named by its
        ``name`` (OpenAI's documents give a dict of named graders: taken as it is)."""
        if isinstance(value, dict) and isinstance(value.get("type"), str):
            return {str(value.get("name") or "grader"): value}
        return value

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
    | JsonSchemaGrader
    | AnswerMatchGrader,
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


class Problem(_Model):
    """An error body (RFC 9457 application/problem+json)."""

    type: str
    title: str
    status: int
    detail: str
    errors: list[dict[str, Any]] | None = None
