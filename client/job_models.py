"""Wire schema of the job API (``/v1/jobs``): long reward batches and Monte Carlo PRM work.

A job is a reward batch (any grader, ``prm_mc`` included, with no synchronous budget) that runs
on a worker: ``queued`` → ``running`` → ``succeeded`` | ``failed`` | ``cancelled``, with progress
(items done of total) while it runs. Submitting again with the same ``id`` returns the job
already there, so a client that retries a submit never starts the work twice.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from referee.client.models import RewardItem, RewardsResponse

__all__ = ["JobProgress", "JobRequest", "JobState", "JobStatus"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class JobState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


class JobRequest(_Model):
    id: str | None = Field(
        None,
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9_.:-]+$",
        description="Your id for the job (idempotency key); default: a new random id.",
    )
    items: list[RewardItem] = Field(..., min_length=1)
    pass_threshold: float = Field(1.0, ge=-100, le=100)
    chunk_size: int | None = Field(
        None,
        ge=1,
        le=10_000,
        description="Items scored (and saved) together; progress moves a chunk at a time. "
        "Default: 8 for PRM items, 256 otherwise.",
    )


class JobProgress(_Model):
    done: int = 0
    total: int = 0
    rollouts: int = Field(0, description="PRM rollouts sampled so far.")


class JobStatus(_Model):
    id: str
    state: JobState
    progress: JobProgress
    created_at: datetime
    updated_at: datetime
    attempts: int = Field(0, description="Times a worker started the job (>1: resumed).")
    worker: str | None = Field(None, description="The worker running (or that ran) the job.")
    error: str | None = None
    result: RewardsResponse | None = Field(None, description="Set once the job succeeded.")
    extra: dict[str, Any] = Field(default_factory=dict)
