"""Running one job: its reward batch in chunks, saved as it goes, stoppable, resumable.

The same coroutine runs a job inside the API process (embedded mode, no broker) and inside a
Celery worker. Items are cut into chunks (groups kept whole, the same cut on every attempt);
each chunk is scored by the process's
:class:`~referee.services.scoring.scorer.Scorer` (every grader,
``prm_mc`` with no rollout budget, the curriculum fed) and saved with the progress counter in
one step, so a worker that dies loses at most the chunk it was on, and the next attempt skips
what was saved. Between chunks, and after each batch of PRM rollouts, the job's state is read:
a cancelled job stops there. The whole job is bounded by ``REFEREE_JOB_TIME_LIMIT_S``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from typing import Any

from referee.client.errors import APIError
from referee.client.job_models import JobProgress, JobRequest, JobState, JobStatus
from referee.client.models import RewardItem, RewardResult, RewardsResponse
from referee.client.sdk_base import group_chunks
from referee.services.jobs.store import JobRecord, JobStore
from referee.services.scoring.batch import group_stats, mean_score
from referee.services.scoring.scorer import Scorer
from referee.verifiers import Lane, current_lane

__all__ = ["Cancelled", "execute_job", "request_digest", "to_status"]

log = logging.getLogger("referee.jobs")


class Cancelled(Exception):
    """The job was cancelled while it ran."""


def request_digest(request: dict[str, Any]) -> str:
    body = {k: v for k, v in request.items() if k != "id"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32]


def _chunk_size(request: JobRequest) -> int:
    if request.chunk_size is not None:
        return request.chunk_size
    prm = any('"prm_mc"' in item.grader.model_dump_json() for item in request.items)
    return 8 if prm else 256


def to_status(rec: JobRecord) -> JobStatus:
    from datetime import UTC, datetime

    return JobStatus(
        id=rec.id,
        state=JobState(rec.state),
        progress=JobProgress(done=rec.done, total=rec.total, rollouts=rec.rollouts),
        created_at=datetime.fromtimestamp(rec.created, UTC),
        updated_at=datetime.fromtimestamp(rec.updated, UTC),
        attempts=rec.attempts,
        worker=rec.worker,
        error=rec.error,
        result=RewardsResponse.model_validate(rec.result) if rec.result else None,
    )


def _assemble(
    items: list[RewardItem],
    parts: list[tuple[list[RewardItem], list[dict[str, Any]]]],
    pass_threshold: float,
    elapsed_ms: float,
) -> RewardsResponse:
    by_id: dict[int, RewardResult] = {}
    for chunk, results in parts:
        for item, raw in zip(chunk, results, strict=True):
            by_id[id(item)] = RewardResult.model_validate(raw)
    rewards = [by_id[id(item)] for item in items]
    return RewardsResponse(
        rewards=rewards,
        groups=group_stats(items, rewards, pass_threshold),
        mean=mean_score(rewards),
        elapsed_ms=elapsed_ms,
    )


async def _run(job_id: str, store: JobStore, scorer: Scorer, worker: str) -> str:
    # the job's checks are a lane of their own in the pool (not the lane of the request that
    # submitted it, whose client may hang up long before the job ends)
    current_lane.set(Lane(f"job {job_id}"))
    raw = await asyncio.to_thread(store.request, job_id)
    if raw is None:
        return "gone"
    request = JobRequest.model_validate(raw)
    if not await asyncio.to_thread(store.start, job_id, worker):
        return "finished"
    start = time.perf_counter()
    saved = await asyncio.to_thread(store.chunks, job_id)
    chunks = list(group_chunks(list(request.items), _chunk_size(request)))
    last_look = 0.0

    async def stop_if_cancelled() -> None:
        rec = await asyncio.to_thread(store.get, job_id, False)
        if rec is None or rec.state != "running":
            raise Cancelled(job_id)

    def on_rollouts(n: int) -> None:
        # runs on the event loop between PRM batches: quick store calls, no blocking wait. The
        # state is read before the batch is counted, so a cancelled job's counter stops with
        # the first batch that sees the cancel.
        nonlocal last_look
        if time.monotonic() - last_look > 0.5:
            last_look = time.monotonic()
            rec = store.get(job_id, with_result=False)
            if rec is None or rec.state != "running":
                raise Cancelled(job_id)
        store.add_rollouts(job_id, n)

    parts = []
    for index, chunk in enumerate(chunks):
        if index in saved:
            parts.append((chunk, saved[index]))
            continue
        await stop_if_cancelled()
        # the scorer feeds the curriculum: only chunks scored now, so a resumed job counts once
        response = await scorer.score_job_chunk(chunk, request.pass_threshold, on_rollouts)
        results = [r.model_dump(mode="json") for r in response.rewards]
        await asyncio.to_thread(store.save_chunk, job_id, index, results)
        parts.append((chunk, results))
    elapsed = (time.perf_counter() - start) * 1000
    result = _assemble(list(request.items), parts, request.pass_threshold, elapsed)
    await asyncio.to_thread(store.finish, job_id, "succeeded", None, result.model_dump(mode="json"))
    return "succeeded"


async def execute_job(job_id: str, store: JobStore, scorer: Scorer, worker: str) -> str:
    """Run (or resume) a job to its end; returns what became of it. Transient failures (the
    store or a backend unreachable) raise, so the caller can retry; other failures mark the job
    failed with the reason."""
    try:
        return await asyncio.wait_for(
            _run(job_id, store, scorer, worker), scorer.settings.job_time_limit_s
        )
    except Cancelled:
        log.info("job %s cancelled; stopped", job_id)
        return "cancelled"
    except TimeoutError:
        limit = scorer.settings.job_time_limit_s
        await asyncio.to_thread(
            store.finish, job_id, "failed", f"the job ran past its time limit of {limit:g} s"
        )
        return "failed"
    except Exception as exc:
        if is_transient(exc):
            raise
        if isinstance(exc, APIError):  # a fault of the request or the setup: said in the job
            log.warning("job %s failed: %s", job_id, exc)
        else:
            log.exception("job %s failed", job_id)
        reason = f"{type(exc).__name__}: {exc}"[:500]
        await asyncio.to_thread(store.finish, job_id, "failed", reason)
        return "failed"


def is_transient(exc: BaseException) -> bool:
    """A failure worth retrying: a connection to Redis or to an LLM server failed."""
    import httpx

    if getattr(exc, "transient", False):  # e.g. OpenAIBackendError after its own retries
        return True

    try:
        import redis
    except ImportError:  # pragma: no cover - redis is a server dependency
        return isinstance(exc, httpx.TransportError)
    return isinstance(exc, httpx.TransportError | redis.ConnectionError | redis.TimeoutError)
