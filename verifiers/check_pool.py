"""A pool of worker processes that runs CPU-bound checks with a hard deadline per check, and
shares its workers fairly between callers.

Why not ``concurrent.futures.ProcessPoolExecutor``: it cannot stop one task that hangs (sympy on
a hostile power tower can run for hours), and ``signal.alarm`` only works in a process's main
thread, so a server thread gets no protection from it. Here every worker is owned by one manager
thread in the parent. The manager sends its worker a chunk of tasks, reads the results back one
by one, and gives each task its own deadline from the moment the previous result arrived. A task
that overruns gets its worker killed (SIGKILL) and replaced, is answered with :class:`TimedOut`,
and the rest of the chunk is queued again, so a hang costs one check, not the server. Workers
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
import collections
import multiprocessing as mp
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from referee.verifiers.check_lanes import Lane, current_lane
from referee.verifiers.check_worker import TimedOut, Worker, WorkerFailed

__all__ = ["CheckPool", "Lane", "PoolHealth", "TimedOut", "WorkerFailed", "current_lane"]

_PRELOAD = ["referee.verifiers.registry"]  # imports the math verifier
_POLL_S = 0.1
_FIRST_CHUNK = 4  # how often a manager waiting on a long check looks whether its lane was dropped


def _resolve(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)


@dataclass(frozen=True, slots=True)
class PoolHealth:
    """What the pool is doing now, read without queueing anything (``/readyz``)."""

    workers: int
    managers_alive: bool
    queued: int
    running: int
    overdue: int
    """Checks running past their deadline plus a grace: their manager should have killed them."""
    since_last_result_s: float | None
    dropped: int = 0
    """Checks dropped with their lane (their client hung up) since the pool started."""

    @property
    def ok(self) -> bool:
        return self.managers_alive and self.overdue == 0


@dataclass(slots=True)
class _Task:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    timeout_s: float
    future: Future[Any]
    lane: Lane
    queued_at: float


@dataclass(slots=True)
class _LaneQueue:
    tasks: collections.deque[_Task] = field(default_factory=collections.deque)
    running: int = 0
    served_at: float = 0.0
    """When a chunk of the lane was last taken or a result of it came back."""


class CheckPool:
    """Worker processes with a per-task wall-clock deadline, shared fairly between lanes.
    Thread-safe; asyncio-friendly."""

    def __init__(
        self,
        workers: int | None = None,
        timeout_s: float = 5.0,
        memory_mb: int = 2048,
        chunk: int = 32,
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
        self._lanes: dict[Lane, _LaneQueue] = {}
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
            _Task(fn, a, d, Future(), lane, now) for a, d in zip(args_list, deadlines, strict=True)
        ]
        with self._cond:
            if self._closed:
                raise RuntimeError("the check pool is closed")
            if lane.dropped is None:
                queue = self._lanes.setdefault(lane, _LaneQueue(served_at=now))
                queue.tasks.extend(tasks)
                self._queued += len(tasks)
                self._cond.notify_all()
        if lane.dropped is not None:
            for t in tasks:
                t.future.set_result(WorkerFailed(f"dropped: {lane.dropped}"))
        return [t.future for t in tasks]

    async def amap(
        self,
        fn: Callable[..., Any],
        arg_tuples: Iterable[Sequence[Any]],
        timeout_s: float | Sequence[float] | None = None,
    ) -> list[Any]:
        """:meth:`map` for asyncio: wakes the event loop once, when the last result is in."""
        futures = self.map(fn, arg_tuples, timeout_s)
        if not futures:
            return []
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        remaining = [len(futures)]
        lock = threading.Lock()

        def finished(_: Future[Any]) -> None:
            with lock:
                remaining[0] -= 1
                last = remaining[0] == 0
            if last:
                try:
                    loop.call_soon_threadsafe(_resolve, done)
                except RuntimeError:  # the loop closed while the checks ran
                    pass

        for f in futures:
            f.add_done_callback(finished)
        await done
        return [f.result() for f in futures]

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

    def _pick(self, now: float, extra: bool) -> Lane | None:
        """The lane a manager serves next: the first (in rotation) with nothing running; for a
        spare manager only such a lane that has waited ``starve_s``; else the first with work."""
        first = None
        for lane, queue in self._lanes.items():
            if not queue.tasks:
                continue
            if queue.running == 0:
                waited = now - max(queue.tasks[0].queued_at, queue.served_at)
                if not extra or waited >= self.starve_s:
                    return lane
            elif first is None and not extra:
                first = lane
        return first

    def _starve_wait(self, now: float) -> float | None:
        """How long until a waiting lane may be served by a spare manager (None: no lane)."""
        waits = [
            max(q.tasks[0].queued_at, q.served_at) + self.starve_s - now
            for q in self._lanes.values()
            if q.tasks and q.running == 0
        ]
        return max(0.001, min(waits)) if waits else None

    def _share(self, lane: Lane, queue: _LaneQueue) -> int:
        """How many tasks of the lane go in one chunk: about ``chunk_time_s`` of work by the
        lane's measured cost, spread over the workers; a lane not measured yet gets a small
        first chunk (its checks may be slow: a chunk sent cannot be taken back)."""
        if lane.cost_s is None:
            by_time = min(_FIRST_CHUNK, int(self.chunk_time_s / max(self._cost_s, 1e-4)))
        else:
            by_time = int(self.chunk_time_s / max(lane.cost_s, 1e-4))
        spread = -(-len(queue.tasks) // self.workers)
        return max(1, min(self.chunk, by_time, spread, len(queue.tasks)))

    def _take(self, extra: bool, has_worker: bool) -> list[_Task] | None:
        """The next chunk for a manager; None when the pool closed; [] when a spare manager has
        been idle ``extra_idle_s`` (it stops its process)."""
        idle_since = time.monotonic()
        with self._cond:
            while True:
                if self._closed:
                    return None
                now = time.monotonic()
                lane = self._pick(now, extra)
                if lane is not None:
                    break
                timeout = self._starve_wait(now) if extra else None
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

    def _settle(self, task: _Task, value: Any, took_s: float | None) -> None:
        with self._cond:
            queue = self._lanes.get(task.lane)
            if queue is not None:
                queue.running -= 1
                queue.served_at = time.monotonic()
                if queue.running == 0:
                    if not queue.tasks:
                        del self._lanes[task.lane]
                    else:
                        self._cond.notify_all()  # it may starve now: the spares look
            if took_s is not None:
                lane = task.lane
                lane.cost_s = took_s if lane.cost_s is None else 0.7 * lane.cost_s + 0.3 * took_s
                self._cost_s = 0.95 * self._cost_s + 0.05 * took_s
            self._last_result = time.monotonic()
        if not task.future.done():
            task.future.set_result(value)

    def _requeue(self, tasks: list[_Task]) -> None:
        dropped: list[_Task] = []
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
                        self._stop(worker)
                        worker = None
                    continue
                if worker is None or not worker.proc.is_alive():
                    if worker is not None:
                        worker.kill()
                    worker = Worker(self._ctx, self.memory_mb)
                if not self._run_batch(index, worker, batch):
                    worker.kill()
                    self.replaced += 1
                    worker = None
        finally:
            if worker is not None:
                self._stop(worker)

    @staticmethod
    def _stop(worker: Worker) -> None:
        try:
            worker.conn.send(None)
        except (OSError, ValueError):
            pass
        worker.kill()

    def _run_batch(self, index: int, worker: Worker, batch: list[_Task]) -> bool:
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
            worker.conn.send([(i, t.fn, t.args) for i, t in enumerate(live)])
        except (OSError, ValueError):
            self._requeue(live)
            return False
        try:
            for i, task in enumerate(live):
                if not self._await_one(index, worker, task, i, live[i + 1 :]):
                    return False
            return True
        finally:
            with self._cond:
                self._running.pop(index, None)

    def _await_one(
        self, index: int, worker: Worker, task: _Task, i: int, rest: list[_Task]
    ) -> bool:
        started = time.monotonic()
        with self._cond:
            self._running[index] = (started, task.timeout_s)
        while True:
            if task.lane.dropped is not None:
                with self._cond:
                    self.dropped += 1
                self._settle(task, WorkerFailed(f"dropped: {task.lane.dropped}"), None)
                self._requeue(rest)
                return False
            remaining = task.timeout_s - (time.monotonic() - started)
            try:
                ready = worker.conn.poll(max(0.0, min(remaining, _POLL_S)))
            except (OSError, ValueError):
                ready, remaining = False, -1.0
            if ready:
                try:
                    got, status, value = worker.conn.recv()
                except (EOFError, OSError):
                    self._settle(task, WorkerFailed("the worker process died"), None)
                    self._requeue(rest)
                    return False
                assert got == i
                result = value if status == "ok" else WorkerFailed(value)
                self._settle(task, result, time.monotonic() - started)
                return True
            if not worker.proc.is_alive():
                self._settle(task, WorkerFailed("the worker process died"), None)
                self._requeue(rest)
                return False
            if remaining <= 0:
                self._settle(task, TimedOut(task.timeout_s), task.timeout_s)
                self._requeue(rest)
                return False
