"""The job API's engine: submit, look up and cancel jobs, in-process or through Celery.

* :class:`EmbeddedJobs` (no ``REFEREE_BROKER_URL``): jobs live in memory and run as asyncio
  tasks of the API process (``REFEREE_JOB_CONCURRENCY`` at once) on the server's own scorer
  (``scorer.Scorer``), with the same states and progress as queued jobs.
* :class:`QueuedJobs` (``REFEREE_BROKER_URL=redis://...``): jobs live in Redis and run on
  ``referee worker`` processes (Celery, Redis as broker and result store).

Submitting is idempotent: a job id given twice with the same request returns the job already
there; the same id with a different request is a 409.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any, Protocol

from referee.client.errors import Conflict, NotFound, ServiceUnavailable
from referee.client.job_models import JobRequest, JobStatus
from referee.services.jobs.runner import execute_job, request_digest, to_status
from referee.services.jobs.store import JobStore, MemoryJobStore, RedisJobStore
from referee.services.scoring.scorer import Scorer

__all__ = ["EmbeddedJobs", "JobService", "QueuedJobs", "build_jobs"]

log = logging.getLogger("referee.jobs")


class JobService(Protocol):
    async def submit(self, request: JobRequest) -> tuple[JobStatus, bool]:
        """The job's status, and whether this call created it."""
        ...

    async def get(self, job_id: str) -> JobStatus: ...

    async def cancel(self, job_id: str) -> JobStatus: ...

    async def close(self) -> None: ...


class _Base:
    store: JobStore
    ttl_s: int

    def _lost_data(self) -> str | None:
        return None

    def _missing(self, job_id: str) -> NotFound:
        lost = self._lost_data()
        if lost:
            return NotFound(f"no job {job_id!r}: {lost}")
        return NotFound(
            f"no job {job_id!r}: it was never submitted here, or it finished more than "
            f"{self.ttl_s} s ago and was removed"
        )

    async def _create(self, request: JobRequest) -> tuple[str, bool]:
        job_id = request.id or uuid.uuid4().hex
        raw = request.model_dump(mode="json")
        raw["id"] = job_id
        digest = request_digest(raw)
        created = await asyncio.to_thread(
            self.store.create, job_id, raw, len(request.items), digest
        )
        if not created:
            rec = await asyncio.to_thread(self.store.get, job_id, False)
            if rec is not None and rec.digest != digest:
                raise Conflict(f"job {job_id!r} exists with a different request; use another id")
        return job_id, created

    async def get(self, job_id: str) -> JobStatus:
        try:
            rec = await asyncio.to_thread(self.store.get, job_id)
        except Exception as exc:
            if type(exc).__module__.startswith("redis"):
                raise ServiceUnavailable(f"the job store (Redis) is unreachable: {exc}") from exc
            raise
        if rec is None:
            raise self._missing(job_id)
        return to_status(rec)

    async def cancel(self, job_id: str) -> JobStatus:
        await asyncio.to_thread(self.store.cancel, job_id)
        return await self.get(job_id)


class EmbeddedJobs(_Base):
    def __init__(self, scorer: Scorer) -> None:
        self.store = MemoryJobStore()
        self.scorer = scorer
        self.ttl_s = scorer.settings.job_ttl_s
        self._slots = asyncio.Semaphore(scorer.settings.job_concurrency)
        self._tasks: set[asyncio.Task[Any]] = set()

    async def submit(self, request: JobRequest) -> tuple[JobStatus, bool]:
        job_id, created = await self._create(request)
        if created:
            task = asyncio.create_task(self._run(job_id))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return await self.get(job_id), created

    async def _run(self, job_id: str) -> None:
        async with self._slots:
            try:
                await execute_job(job_id, self.store, self.scorer, "embedded")
            except Exception as exc:  # transient errors have no retry loop here
                log.exception("job %s failed", job_id)
                self.store.finish(job_id, "failed", f"{type(exc).__name__}: {exc}"[:500])

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


class QueuedJobs(_Base):
    def __init__(self, settings: Any) -> None:
        from referee.services.jobs.celery_app import make_celery

        self.store = RedisJobStore.from_url(settings.broker_url, ttl_s=settings.job_ttl_s)
        self.ttl_s = settings.job_ttl_s
        self.celery = make_celery(settings)
        self._store_id: str | None = None

    def _lost_data(self) -> str | None:
        assert isinstance(self.store, RedisJobStore)
        now = self.store.store_id()
        if self._store_id is None:
            self._store_id = now
        elif now != self._store_id:
            return (
                "the job store (Redis) lost its data since this server started (restarted "
                "without persistence, or flushed): jobs submitted before are gone; submit again"
            )
        return None

    async def submit(self, request: JobRequest) -> tuple[JobStatus, bool]:
        import redis

        try:
            # new jobs go into the data set Redis holds now (see _lost_data)
            self._store_id = await asyncio.to_thread(self.store.store_id)  # type: ignore[attr-defined]
            job_id, created = await self._create(request)
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"the job store (Redis) is unreachable: {exc}") from exc
        if created:
            try:
                await asyncio.to_thread(enqueue, self.celery, job_id)
            except Exception as exc:
                reason = f"the job could not be queued: {exc}"[:300]
                await asyncio.to_thread(self.store.finish, job_id, "failed", reason)
                raise ServiceUnavailable(reason) from exc
        return await self.get(job_id), created

    async def close(self) -> None:
        await asyncio.to_thread(self.celery.close)


def enqueue(celery: Any, job_id: str) -> None:
    celery.send_task("referee.run_job", args=[job_id], task_id=f"{job_id}:{uuid.uuid4().hex[:8]}")


def build_jobs(settings: Any, scorer: Scorer) -> JobService:
    if settings.broker_url:
        return QueuedJobs(settings)
    return EmbeddedJobs(scorer)
