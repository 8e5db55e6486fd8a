"""What a job is to its store: :class:`JobRecord`, the finished states, and :class:`JobStore`,
the interface the manager and the runner program against.

The two stores that keep it are in :mod:`~referee.services.jobs.store`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["FINISHED", "JobRecord", "JobStore"]

FINISHED = ("succeeded", "failed", "cancelled")


@dataclass(slots=True)
class JobRecord:
    id: str
    state: str
    total: int
    done: int = 0
    rollouts: int = 0
    attempts: int = 0
    worker: str | None = None
    error: str | None = None
    created: float = 0.0
    updated: float = 0.0
    digest: str = ""
    """Fingerprint of the request (a second submit with the same id must match it)."""
    cancel: bool = False
    result: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class JobStore(Protocol):
    def create(self, job_id: str, request: dict[str, Any], total: int, digest: str) -> bool:
        """A new queued job; False when ``job_id`` exists already."""
        ...

    def get(self, job_id: str, with_result: bool = True) -> JobRecord | None: ...

    def request(self, job_id: str) -> dict[str, Any] | None: ...

    def start(self, job_id: str, worker: str) -> bool:
        """queued/running → running (attempts + 1); False when the job is finished or gone."""
        ...

    def finish(
        self,
        job_id: str,
        state: str,
        error: str | None = None,
        result: dict[str, Any] | None = None,
    ) -> bool:
        """queued/running → ``state``; False (nothing changed) when it had finished already."""
        ...

    def cancel(self, job_id: str) -> bool:
        """Cancel an unfinished job (its worker stops at its next check); False otherwise."""
        ...

    def save_chunk(self, job_id: str, index: int, results: list[dict[str, Any]]) -> None:
        """Keep one chunk's results and count its items as done, atomically."""
        ...

    def chunks(self, job_id: str) -> dict[int, list[dict[str, Any]]]: ...

    def add_rollouts(self, job_id: str, n: int) -> None: ...

    def acquire_lease(self, job_id: str, worker: str, ttl_s: float) -> bool: ...

    def renew_lease(self, job_id: str, worker: str, ttl_s: float) -> bool: ...

    def release_lease(self, job_id: str, worker: str) -> None: ...

    def orphans(self, older_than_s: float) -> list[str]:
        """Running jobs with no live lease, last touched more than ``older_than_s`` ago."""
        ...

    def queued_without_lease(self, older_than_s: float) -> list[str]:
        """Queued jobs no worker holds a lease for, stored more than ``older_than_s`` ago (the
        reaper then asks the broker whether their message still exists)."""
        ...

    def claim_requeue(self, job_id: str, ttl_s: float) -> bool:
        """One claimant (of many reapers) gets to queue an orphan again."""
        ...
