"""Wire models of the ``POST /v1/rewards`` answer: each item's :class:`RewardResult` (its
``valid`` flag filled by :func:`reward_is_valid` from the outcomes of :data:`INVALID_OUTCOMES`),
the groups' :class:`GroupStats`, and :class:`RewardsResponse`. Imports only pydantic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["INVALID_OUTCOMES", "GroupStats", "RewardResult", "RewardsResponse", "reward_is_valid"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


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
