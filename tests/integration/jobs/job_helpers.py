"""Helpers shared by the job tests."""

from __future__ import annotations

import time
from typing import Any

from referee.client import RefereeClient


def settle(client: RefereeClient, job_id: str, quiet_s: float = 1.5) -> Any:
    """The job's status once its progress has stopped moving for ``quiet_s``."""
    last = client.job(job_id)
    for _ in range(60):
        time.sleep(quiet_s)
        now = client.job(job_id)
        if (now.progress.done, now.progress.rollouts) == (
            last.progress.done,
            last.progress.rollouts,
        ):
            return now
        last = now
    raise AssertionError(f"job {job_id} kept working after it was cancelled")
