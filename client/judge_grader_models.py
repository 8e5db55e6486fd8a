"""Wire models of the model-judged graders: ``rubric`` and ``genrm`` (a judge model reads the
response; also the ``POST /v1/judge`` bodies) and ``prm_mc`` (Monte Carlo process reward from the
server's policy model). Imports only pydantic.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "GenRMGrader",
    "JudgeGrader",
    "JudgeRequest",
    "JudgeResponse",
    "JudgeResult",
    "PRMGrader",
    "RubricCriterion",
    "RubricGrader",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


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
