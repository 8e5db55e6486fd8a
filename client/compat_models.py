"""Bodies of the compatibility routes: OpenRLHF's and slime's remote reward models, OpenAI's
grader run and validate.

These are other projects' wire formats, so unknown fields are ignored rather than refused (a
newer trainer may send more), unlike referee's own schema.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "OpenAIGraderRunRequest",
    "OpenAIGraderRunResponse",
    "OpenAIGraderValidateRequest",
    "OpenAIGraderValidateResponse",
    "OpenRLHFRewardRequest",
    "OpenRLHFRewardResponse",
    "SlimeRewardRequest",
]


class _Foreign(BaseModel):
    model_config = ConfigDict(extra="ignore")


class OpenRLHFRewardRequest(_Foreign):
    """OpenRLHF ``--reward.remote_url`` (formerly ``--remote_rm_url``): the queries are prompt +
    response as the policy's tokenizer decoded them (special tokens kept)."""

    query: list[str] = Field(..., max_length=100_000, description="Prompt + response texts.")
    prompts: list[str] | None = Field(None, description="The prompts (stripped from queries).")
    labels: list[Any] | None = Field(None, description="The references (the dataset's labels).")


class OpenRLHFRewardResponse(BaseModel):
    rewards: list[float] = Field(..., description="One reward per query (advantages use it).")
    scores: list[float] = Field(..., description="The rewards clipped to [0, 1] (filtering).")
    extra_logs: dict[str, list[float]] = Field(
        default_factory=dict, description="Per-query values OpenRLHF logs (mean per step)."
    )


class SlimeRewardRequest(_Foreign):
    """slime ``--rm-type remote_rm --rm-url URL``: one sample per request."""

    prompt: str | list[dict[str, Any]] = Field("", description="The prompt, text or messages.")
    response: str = Field(..., max_length=4_000_000)
    label: Any = Field(
        ...,
        description="The reference answer (null when the grader needs none). slime always "
        "sends it; the default grader (math) needs it.",
    )


class OpenAIGraderRunRequest(_Foreign):
    """OpenAI's ``POST /v1/fine_tuning/alpha/graders/run`` (the ``openai`` SDK's
    ``client.fine_tuning.alpha.graders.run``): one grader object, the model's sample, the row."""

    grader: dict[str, Any] = Field(
        ...,
        description="An OpenAI grader object: string_check, text_similarity, python, "
        "score_model, label_model or multi (referee's own graders are accepted too).",
    )
    model_sample: str = Field(
        ..., max_length=1_000_000, description="The model's output: `{{sample.output_text}}`."
    )
    item: Any = Field(None, description="The dataset row: `{{item.*}}`, the python grader's item.")


class OpenAIGraderValidateRequest(_Foreign):
    """OpenAI's ``POST /v1/fine_tuning/alpha/graders/validate``."""

    grader: dict[str, Any]


class OpenAIGraderValidateResponse(BaseModel):
    grader: dict[str, Any] = Field(..., description="The grader, as it was given.")


class OpenAIGraderRunErrors(BaseModel):
    """OpenAI's ``metadata.errors``: which kind of failure there was (all false: none)."""

    formula_parse_error: bool = False
    invalid_variable_error: bool = False
    model_grader_parse_error: bool = False
    model_grader_refusal_error: bool = False
    model_grader_server_error: bool = False
    model_grader_server_error_details: str | None = None
    other_error: bool = False
    python_grader_runtime_error: bool = False
    python_grader_runtime_error_details: str | None = None
    python_grader_server_error: bool = False
    python_grader_server_error_type: str | None = None
    sample_parse_error: bool = False
    truncated_observation_error: bool = False
    unresponsive_reward_error: bool = False


class OpenAIGraderRunMetadata(BaseModel):
    errors: OpenAIGraderRunErrors = Field(default_factory=OpenAIGraderRunErrors)
    execution_time: float = Field(..., description="Seconds the grading took.")
    name: str = ""
    sampled_model_name: str | None = None
    scores: dict[str, Any] = Field(default_factory=dict, description="A multi grader's parts.")
    token_usage: int | None = None
    type: str
    details: dict[str, Any] = Field(
        default_factory=dict, description="referee's details of the verdict (outcome, reason...)."
    )


class OpenAIGraderRunResponse(BaseModel):
    """OpenAI's grader run result, as its SDK reads it (``GraderRunResponse``)."""

    reward: float
    metadata: OpenAIGraderRunMetadata
    sub_rewards: dict[str, Any] = Field(default_factory=dict)
    model_grader_token_usage_per_model: dict[str, Any] = Field(default_factory=dict)
