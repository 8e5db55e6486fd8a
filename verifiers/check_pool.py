"""A pool of worker processes that runs CPU-bound checks with a hard deadline per check, and
shares its workers fairly between callers.

Why not ``concurrent.futures.ProcessPoolExecutor``: it cannot stop one task that hangs (sympy on
a hostile power tower can run for hours), and ``signal.alarm`` only works in a process's main
thread, so a server thread gets no protection from it. Here every worker is owned by one manager
thread in the parent. The manager sends its worker a chunk of tasks and reads the results back
in groups; the worker tells it through shared memory which task runs and since when, so each
task has its own deadline from its own start. A task that overruns gets its worker killed
(SIGKILL) and replaced, is answered with :class:`TimedOut`, and the rest of the chunk (with
any results the worker had not sent yet) is queued again, so a hang costs one check, not the
server. Workers
run under an address-space cap (RLIMIT_AS), so a memory bomb fails one check with an error.

Fairness (:mod:`~referee.verifiers.check_lanes`): tasks are queued per caller (a lane: one HTTP
request, one job, one ``map`` call) and managers take from the lanes in rotation, a lane with
nothing running first. Chunks are sized by how long the lane's checks take (about 50 ms of work
each), so slow items go one at a time. When every worker is held (say by a batch of checks that
each run to the deadline) and a lane has waited ``starve_s`` with nothing running, one of the
``extra_workers`` spare managers starts a process for it: a one-item request behind a hostile
batch waits about ``starve_s``, not for the batch. A dropped lane (its client hung up) loses
its queued tasks and its running one.

Usage::

    pool = CheckPool(workers=2, timeout_s=5)
    futures = pool.map(verify, [(response, reference) for ...])
    results = [f.result() for f in futures]   # value, TimedOut or WorkerFailed
    pool.close()

Functions and arguments must be picklable (top-level functions).
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from referee.verifiers.check_lanes import Lane, LaneQueue, current_lane, pick, starve_wait
from referee.verifiers.check_tasks import Gather, PoolHealth, Slot, Task
from referee.verifiers.check_worker import (
    TimedOut,
    Worker,
    WorkerFailed,
    run_chunk,
    start_worker,
)

__all__ = ["CheckPool", "Lane", "PoolHealth", "TimedOut", "WorkerFailed", "current_lane"]

_PRELOAD = ["referee.verifiers.registry"]  # imports the math verifier
_FIRST_CHUNK = 4  # the largest first chunk of a lane whose checks were never timed
_RESTART_S = 0.1  # after a worker could not start (its chunk failed), before the next try


class CheckPool:
    """Worker processes with a per-task wall-clock deadline, shared fairly between lanes.
    Thread-safe; asyncio-friendly."""

    def __init__(
        self,
        workers: int | None = None,
        timeout_s: float = 5.0,
        memory_mb: int = 2048,
        chunk: int = 256,
        start_method: str = "forkserver",
        extra_workers: int | None = None,
        starve_s: float = 0.1,
        extra_idle_s: float = 30.0,
    ) -> None:
        if workers is not None and workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers or max(1, os.cpu_count() or 1)
        self.extra_workers = self.workers if extra_workers is None else max(0, extra_workers)
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.chunk = max(1, chunk)
        self.chunk_time_s = 0.05
        self.starve_s = starve_s
        self.extra_idle_s = extra_idle_s
        self._ctx = mp.get_context(start_method)
        if start_method == "forkserver":
            self._ctx.set_forkserver_preload(_PRELOAD)
        self._lanes: dict[Lane, LaneQueue] = {}
        self._queued = 0
        self._cost_s = 0.005  # a running mean over every lane: a new lane's first guess
        self._running: dict[int, tuple[float, float]] = {}  # manager -> (started, deadline)
        self._last_result: float | None = None
        self._cond = threading.Condition()
        self._closed = False
        self.replaced = 0
        """How many workers were killed and replaced (overruns, crashes, dropped lanes)."""
        self.dropped = 0
        """How many checks were dropped with their lane, never run or stopped."""
        self._answers = [_Answers(self, i) for i in range(self.workers + self.extra_workers)]
        self._threads = [
            threading.Thread(target=self._manage, args=(i, i >= self.workers), daemon=True)
            for i in range(self.workers + self.extra_workers)
        ]
        for i, t in enumerate(self._threads):
            t.name = f"check-pool-{'extra-' if i >= self.workers else ''}{i}"
            t.start()

    # -- submission ---------------------------------------------------------------------
    def submit(
        self, fn: Callable[..., Any], *args: Any, timeout_s: float | None = None
    ) -> Future[Any]:
        return self.map(fn, [args], timeout_s=timeout_s)[0]

    def map(
        self,
        fn: Callable[..., Any],
        arg_tuples: Iterable[Sequence[Any]],
        timeout_s: float | Sequence[float] | None = None,
    ) -> list[Future[Any]]:
        """Queue ``fn(*args)`` per args into the current lane (:data:`current_lane`, or a new
        one); futures resolve to the value, TimedOut or WorkerFailed.

        ``timeout_s`` is one deadline for all, or one per task (default: the pool's)."""
        args_list = [tuple(a) for a in arg_tuples]
        futures: list[Future[Any]] = [Future() for _ in args_list]
        self._enqueue(fn, args_list, timeout_s, futures)
        return futures

    async def amap(
        self,
        fn: Callable[..., Any],
        arg_tuples: Iterable[Sequence[Any]],
        timeout_s: float | Sequence[float] | None = None,
    ) -> list[Any]:
        """:meth:`map` for asyncio, without a Future per check: the values, TimedOut or
        WorkerFailed, in order; wakes the event loop once, when the last result is in."""
        args_list = [tuple(a) for a in arg_tuples]
        if not args_list:
            return []
        gather = Gather(len(args_list), asyncio.get_running_loop())
        self._enqueue(fn, args_list, timeout_s, [Slot(gather, k) for k in range(len(args_list))])
        return await gather.wait()

    def _enqueue(
        self,
        fn: Callable[..., Any],
        args_list: list[tuple[Any, ...]],
        timeout_s: float | Sequence[float] | None,
        results: Sequence[Future[Any] | Slot],
    ) -> None:
        if timeout_s is None or isinstance(timeout_s, int | float):
            deadlines = [float(timeout_s or self.timeout_s)] * len(args_list)
        else:
            deadlines = [float(t) for t in timeout_s]
            if len(deadlines) != len(args_list):
                raise ValueError("one timeout per task, or a single timeout")
        lane = current_lane.get() or Lane()
        lane.attach(self)
        now = time.monotonic()
        tasks = [
            Task(fn, a, d, r, lane, now)
            for a, d, r in zip(args_list, deadlines, results, strict=True)
        ]
        with self._cond:
            if self._closed:
                raise RuntimeError("the check pool is closed")
            if lane.dropped is None:
                queue = self._lanes.setdefault(lane, LaneQueue(served_at=now))
                queue.tasks.extend(tasks)
                self._queued += len(tasks)
                self._cond.notify_all()
        if lane.dropped is not None:
            for t in tasks:
                t.future.set_result(WorkerFailed(f"dropped: {lane.dropped}"))

    @property
    def pending(self) -> int:
        """Checks queued, not yet sent to a worker."""
        return self._queued

    def health(self, grace_s: float = 5.0) -> PoolHealth:
        """The pool's state from its own counters: nothing is queued to find it out."""
        now = time.monotonic()
        with self._cond:
            running = list(self._running.values())
            last = self._last_result
            queued = self._queued
        return PoolHealth(
            workers=self.workers,
            managers_alive=not self._closed and all(t.is_alive() for t in self._threads),
            queued=queued,
            running=len(running),
            overdue=sum(1 for started, limit in running if now - started > limit + grace_s),
            since_last_result_s=None if last is None else now - last,
            dropped=self.dropped,
        )

    def close(self) -> None:
        with self._cond:
            self._closed = True
            left = [t for q in self._lanes.values() for t in q.tasks]
            self._lanes.clear()
            self._queued = 0
            self._cond.notify_all()
        for t in left:
            t.future.set_result(WorkerFailed("the check pool was closed"))
        for thread in self._threads:
            thread.join(timeout=10)

    def __enter__(self) -> CheckPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- lanes ------------------------------------------------------------------------------
    def _drop_lane(self, lane: Lane) -> None:
        with self._cond:
            queue = self._lanes.get(lane)
            if queue is None:
                return
            left = list(queue.tasks)
            queue.tasks.clear()
            self._queued -= len(left)
            self.dropped += len(left)
            if queue.running == 0:
                del self._lanes[lane]
        for t in left:
            t.future.set_result(WorkerFailed(f"dropped: {lane.dropped}"))

    def _share(self, lane: Lane, queue: LaneQueue) -> int:
        """How many tasks of the lane go in one chunk: about ``chunk_time_s`` of work by the
        lane's measured cost, spread over the workers; a lane not measured yet gets a small
        first chunk (its checks may be slow: a chunk sent cannot be taken back)."""
        if lane.cost_s is None:
            by_time = min(_FIRST_CHUNK, int(self.chunk_time_s / max(self._cost_s, 1e-4)))
        else:
            by_time = int(self.chunk_time_s / max(lane.cost_s, 1e-4))
        spread = -(-len(queue.tasks) // self.workers)
        return max(1, min(self.chunk, by_time, spread, len(queue.tasks)))

    def _take(self, extra: bool, has_worker: bool) -> list[Task] | None:
        """The next chunk for a manager; None when the pool closed; [] when a spare manager has
        been idle ``extra_idle_s`` (it stops its process)."""
        idle_since = time.monotonic()
        with self._cond:
            while True:
                if self._closed:
                    return None
                now = time.monotonic()
                lane = pick(self._lanes, now, extra, self.starve_s)
                if lane is not None:
                    break
                timeout = starve_wait(self._lanes, now, self.starve_s) if extra else None
                if extra and has_worker:
                    left = self.extra_idle_s - (now - idle_since)
                    if left <= 0:
                        return []
                    timeout = left if timeout is None else min(timeout, left)
                self._cond.wait(timeout)
            queue = self._lanes.pop(lane)
            self._lanes[lane] = queue  # to the end of the rotation
            n = self._share(lane, queue)
            tasks = [queue.tasks.popleft() for _ in range(n)]
            queue.running += n
            queue.served_at = now
            self._queued -= n
            return tasks

    def _settle(self, task: Task, value: Any, took_s: float | None) -> None:
        self._settle_all([(task, value, took_s)])

    def _settle_all(self, settled: list[tuple[Task, Any, float | None]]) -> None:
        """Answer checks (a group of one worker's results: under one hold of the lock)."""
        with self._cond:
            now = time.monotonic()
            for task, _, took_s in settled:
                queue = self._lanes.get(task.lane)
                if queue is not None:
                    queue.running -= 1
                    queue.served_at = now
                    if queue.running == 0:
                        if not queue.tasks:
                            del self._lanes[task.lane]
                        else:
                            self._cond.notify_all()  # it may starve now: the spares look
                if took_s is not None:
                    lane = task.lane
                    cost = lane.cost_s
                    lane.cost_s = took_s if cost is None else 0.7 * cost + 0.3 * took_s
                    self._cost_s = 0.95 * self._cost_s + 0.05 * took_s
            self._last_result = now
        for task, value, _ in settled:
            if not task.future.done():
                task.future.set_result(value)

    def _requeue(self, tasks: list[Task]) -> None:
        dropped: list[Task] = []
        with self._cond:
            for t in reversed(tasks):
                queue = self._lanes.get(t.lane)
                if queue is not None:
                    queue.running -= 1
                    queue.served_at = time.monotonic()
                if self._closed or t.lane.dropped is not None or queue is None:
                    dropped.append(t)
                    self.dropped += t.lane.dropped is not None
                    if queue is not None and queue.running == 0 and not queue.tasks:
                        del self._lanes[t.lane]
                    continue
                queue.tasks.appendleft(t)
                self._queued += 1
            self._cond.notify_all()
        for t in dropped:
            reason = t.lane.dropped or "the check pool was closed"
            t.future.set_result(WorkerFailed(f"dropped: {reason}" if t.lane.dropped else reason))

    # -- the manager of one worker ---------------------------------------------------------
    def _manage(self, index: int, extra: bool) -> None:
        worker: Worker | None = None
        try:
            while True:
                batch = self._take(extra, worker is not None)
                if batch is None:
                    break
                if not batch:  # a spare manager idle for long: its process goes
                    if worker is not None:
                        worker.stop()
                        worker = None
                    continue
                if worker is None or not worker.proc.is_alive():
                    if worker is not None:
                        worker.kill()
                    started = start_worker(self._ctx, self.memory_mb)
                    if isinstance(started, WorkerFailed):  # no process, pipe or memory left
                        self._settle_all([(t, started, None) for t in batch])
                        worker = None
                        time.sleep(_RESTART_S)
                        continue
                    worker = started
                if not self._run_batch(index, worker, batch):
                    worker.kill()
                    self.replaced += 1
                    worker = None
        finally:
            if worker is not None:
                worker.stop()

    def _run_batch(self, index: int, worker: Worker, batch: list[Task]) -> bool:
        """Run a chunk on ``worker``; False when the worker had to be killed."""
        live = []
        for t in batch:
            if t.future.running() or t.future.set_running_or_notify_cancel():
                live.append(t)
            else:  # cancelled by its caller before it started
                self._settle(t, None, None)
        if not live:
            return True
        if not worker.wait_ready():
            for t in live:
                self._settle(t, WorkerFailed("the worker process did not start"), None)
            return False
        try:
            return run_chunk(worker, live, self._answers[index])
        finally:
            with self._cond:
                self._running.pop(index, None)

    # -- what a manager reports (run_chunk's Answers) ----------------------------------------
    def _show_running(self, index: int, began: float, timeout_s: float) -> None:
        with self._cond:
            self._running[index] = (began, timeout_s)


@dataclass(frozen=True, slots=True)
class _Answers:
    """One manager's :class:`~referee.verifiers.check_worker.Answers` to its pool."""

    pool: CheckPool
    index: int

    def settle(self, settled: list[tuple[Task, Any, float | None]]) -> None:
        self.pool._settle_all(settled)

    def requeue(self, tasks: list[Task]) -> None:
        self.pool._requeue(tasks)

    def running(self, began: float, timeout_s: float) -> None:
        self.pool._show_running(self.index, began, timeout_s)
