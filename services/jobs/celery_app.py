"""The Celery app: jobs run on ``referee worker`` processes, Redis is broker and result store.

    REFEREE_BROKER_URL=redis://127.0.0.1:6379/0 referee worker --concurrency 2

Reliability, task by task:

* acknowledged late (``acks_late``); one message at a time per thread (prefetch 1); jobs run as
  threads of the worker process (``--pool threads``), sharing its check pool, sandbox and models;
* the first thing a task does is take the job's lease in Redis (before the worker builds its
  check pool and models), and a heartbeat thread renews it every third of
  ``REFEREE_JOB_LEASE_S``. A worker killed outright (SIGKILL, a lost machine) stops renewing;
  every worker runs a reaper thread (:mod:`~referee.services.jobs.recovery`) that queues again
  the running jobs whose lease lapsed, and the queued jobs whose message a dead worker took
  before it held their lease. The next attempt resumes from the job's saved chunks, so nothing
  is lost, and a second delivery of a job whose lease is alive, or that runs in this very
  process, is dropped (the job is idempotent by its id);
* transient failures (Redis or an LLM server unreachable) are retried with exponential backoff,
  in the task, with the lease held; the store's client itself reconnects through a Redis
  restart;
* each job is bounded by ``REFEREE_JOB_TIME_LIMIT_S`` (and Celery's hard time limit above it).

Nothing happens at import: :func:`make_celery` builds the app from settings.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

from celery import Celery
from celery.signals import worker_ready, worker_shutdown

from referee.services.jobs.recovery import reap_once
from referee.services.settings import Settings

__all__ = ["WorkerRuntime", "make_celery", "reap_once", "worker_name"]

log = logging.getLogger("referee.worker")
T = TypeVar("T")


class WorkerRuntime:
    """What one worker process keeps between tasks: an event loop thread, the scorer (check
    pool, sandbox, LLM backends) and the job store (built at its first task, after the fork)."""

    _current: WorkerRuntime | None = None
    _lock = threading.Lock()

    def __init__(self, settings: Settings) -> None:
        from referee.genrm.prm import RedisRolloutCache
        from referee.services.jobs.store import RedisJobStore
        from referee.services.scoring.scorer import Scorer

        assert settings.broker_url
        self.settings = settings
        self.store = RedisJobStore.from_url(settings.broker_url, ttl_s=settings.job_ttl_s)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        # the worker's jobs score as the API's do; rollouts are shared through Redis
        self.scorer = Scorer.from_settings(settings, prm_cache=RedisRolloutCache(self.store._r))
        assert self.scorer.sandbox is not None
        self.scorer.sandbox.start()
        self.name = worker_name(settings)

    @classmethod
    def get(cls, settings: Settings) -> WorkerRuntime:
        with cls._lock:
            if cls._current is None or cls._current._pid != os.getpid():
                cls._current = cls(settings)
                cls._current._pid = os.getpid()
            return cls._current

    _pid: int = 0

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()


def worker_name(settings: Settings) -> str:
    """This process's name in a job's status and its lease: ``host:pid``."""
    return f"{settings.worker_name or socket.gethostname()}:{os.getpid()}"


class _ProcessStore:
    """The job store of this process, made at its first task (after the fork): light, so a
    task takes its job's lease before the worker's runtime (check pool, models) is built."""

    _stores: dict[int, Any] = {}  # noqa: RUF012 - one per process id
    _lock = threading.Lock()

    @classmethod
    def get(cls, settings: Settings) -> Any:
        from referee.services.jobs.store import RedisJobStore

        assert settings.broker_url
        with cls._lock:
            store = cls._stores.get(os.getpid())
            if store is None:
                store = RedisJobStore.from_url(settings.broker_url, ttl_s=settings.job_ttl_s)
                cls._stores = {os.getpid(): store}
            return store


class _Heartbeat(threading.Thread):
    def __init__(self, store: Any, job_id: str, worker: str, lease_s: float) -> None:
        super().__init__(daemon=True, name=f"lease-{job_id}")
        self.store, self.job_id, self.worker, self.lease_s = store, job_id, worker, lease_s
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.lease_s / 3):
            try:
                if not self.store.renew_lease(self.job_id, self.worker, self.lease_s):
                    self.store.acquire_lease(self.job_id, self.worker, self.lease_s)
            except Exception as exc:  # Redis away: keep trying; the lease may lapse meanwhile
                log.warning("lease renewal of job %s failed: %s", self.job_id, exc)


def make_celery(settings: Settings) -> Celery:
    if not settings.broker_url:
        raise ValueError("REFEREE_BROKER_URL is required for queued jobs (e.g. redis://h:6379/0)")
    app = Celery("referee", broker=settings.broker_url, backend=settings.broker_url)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_default_queue=settings.job_queue,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_expires=settings.job_ttl_s,
        task_time_limit=settings.job_time_limit_s + 120,
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,
        worker_cancel_long_running_tasks_on_connection_loss=False,
        # Redelivery of unacknowledged messages is the lease reaper's job, not the broker's.
        broker_transport_options={"visibility_timeout": max(3600, settings.job_time_limit_s)},
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
    )

    running_here: set[str] = set()  # jobs this process runs now (a redelivery is dropped)
    running_lock = threading.Lock()

    @app.task(name="referee.run_job", bind=True, max_retries=8)  # type: ignore[untyped-decorator]
    def run_job(self: Any, job_id: str) -> str:
        # The lease first, before anything slow: from here on a death of this worker is seen
        # by the running-job sweep; before it, by the sweep of queued jobs (job_recovery).
        store, name, lease_s = (
            _ProcessStore.get(settings),
            worker_name(settings),
            settings.job_lease_s,
        )
        with running_lock:
            if job_id in running_here:
                return "running here already"
            if not store.acquire_lease(job_id, name, lease_s):
                return "running elsewhere"
            running_here.add(job_id)
        beat = _Heartbeat(store, job_id, name, lease_s)
        beat.start()
        try:
            return _run_with_retries(job_id, store, self.max_retries)
        finally:
            beat.stopped.set()
            with running_lock:
                running_here.discard(job_id)
            try:
                store.release_lease(job_id, name)
            except Exception:  # the lease lapses by itself
                log.warning("could not release the lease of job %s", job_id)

    def _run_with_retries(job_id: str, store: Any, retries: int) -> str:
        from referee.services.jobs.runner import execute_job, is_transient

        for attempt in range(retries + 1):
            try:
                runtime = WorkerRuntime.get(settings)
                return runtime.run(execute_job(job_id, store, runtime.scorer, runtime.name))
            except Exception as exc:
                if not is_transient(exc):
                    raise
                if attempt == retries:
                    store.finish(job_id, "failed", f"gave up after {retries} retries: {exc}")
                    return "failed"
                delay = min(60, 2 ** (attempt + 1))
                log.warning("job %s: transient failure, retry in %d s: %s", job_id, delay, exc)
                time.sleep(delay)  # the heartbeat keeps the lease meanwhile
        return "failed"  # pragma: no cover - the loop returns

    stop = threading.Event()

    def reaper() -> None:
        from referee.services.jobs.store import RedisJobStore

        assert settings.broker_url
        store = RedisJobStore.from_url(settings.broker_url, ttl_s=settings.job_ttl_s)
        while not stop.wait(max(0.5, settings.job_lease_s / 2)):
            try:
                reap_once(store, app, settings.job_lease_s, queue=settings.job_queue)
            except Exception as exc:
                log.warning("reaper: %s", exc)

    @worker_ready.connect(weak=False)  # type: ignore[untyped-decorator]
    def _start_reaper(**_: Any) -> None:
        threading.Thread(target=reaper, daemon=True, name="referee-reaper").start()

    @worker_shutdown.connect(weak=False)  # type: ignore[untyped-decorator]
    def _stop_reaper(**_: Any) -> None:
        stop.set()

    return app
