"""Bodies of the trainer compatibility routes: OpenRLHF's and slime's remote reward models.

These are other projects' wire formats, so unknown fields are ignored rather than refused (a
newer trainer may send more), unlike referee's own schema.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["OpenRLHFRewardRequest", "OpenRLHFRewardResponse", "SlimeRewardRequest"]


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
