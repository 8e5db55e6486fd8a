"""A pool of worker processes that runs CPU-bound checks with a hard deadline per check.

Why not ``concurrent.futures.ProcessPoolExecutor``: it cannot stop one task that hangs (sympy on
a hostile power tower can run for hours), and ``signal.alarm`` only works in a process's main
thread, so a server thread gets no protection from it. Here every worker is owned by one manager
thread in the parent. The manager sends its worker a chunk of tasks, reads the results back one
by one, and gives each task its own deadline from the moment the previous result arrived. A task
that overruns gets its worker killed (SIGKILL) and replaced, is answered with :class:`TimedOut`,
and the rest of the chunk is queued again, so a hang costs one check, not the server. Workers
run under an address-space cap (RLIMIT_AS), so a memory bomb fails one check with an error.

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
import resource
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

__all__ = ["CheckPool", "TimedOut", "WorkerFailed"]

_PRELOAD = ["referee.verifiers.math"]


def _resolve(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)


@dataclass(frozen=True, slots=True)
class TimedOut:
    """The check overran its deadline; its worker was killed and replaced."""

    timeout_s: float


@dataclass(frozen=True, slots=True)
class WorkerFailed:
    """The check failed inside its worker (memory cap, crash, unexpected exception)."""

    reason: str


@dataclass(slots=True)
class _Task:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    timeout_s: float
    future: Future[Any]


def _worker_main(conn: Connection, memory_mb: int) -> None:
    if memory_mb > 0:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    while True:
        try:
            batch = conn.recv()
        except (EOFError, OSError):
            return
        if batch is None:
            return
        for index, fn, args in batch:
            try:
                reply: tuple[Any, ...] = (index, "ok", fn(*args))
            except MemoryError:
                reply = (index, "error", f"memory limit of {memory_mb} MB exceeded")
            except RecursionError:
                reply = (index, "error", "recursion limit exceeded")
            except Exception as exc:  # a bug in a check must not kill the worker
                reply = (index, "error", f"{type(exc).__name__}: {exc}"[:500])
            try:
                conn.send(reply)
            except MemoryError:
                conn.send((index, "error", "result too large"))


class _Worker:
    def __init__(self, ctx: Any, memory_mb: int) -> None:
        parent, child = ctx.Pipe()
        self.conn: Connection = parent
        self.proc = ctx.Process(target=_worker_main, args=(child, memory_mb), daemon=True)
        self.proc.start()
        child.close()

    def kill(self) -> None:
        try:
            self.proc.kill()
        except (OSError, ValueError):
            pass
        self.proc.join(timeout=5)
        self.conn.close()


class CheckPool:
    """Worker processes with a per-task wall-clock deadline. Thread-safe; asyncio-friendly."""

    def __init__(
        self,
        workers: int | None = None,
        timeout_s: float = 5.0,
        memory_mb: int = 2048,
        chunk: int = 32,
        start_method: str = "forkserver",
    ) -> None:
        if workers is not None and workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers or max(1, os.cpu_count() or 1)
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.chunk = max(1, chunk)
        self._ctx = mp.get_context(start_method)
        if start_method == "forkserver":
            self._ctx.set_forkserver_preload(_PRELOAD)
        self._queue: collections.deque[_Task] = collections.deque()
        self._cond = threading.Condition()
        self._closed = False
        self.replaced = 0
        """How many workers were killed and replaced (deadline overruns and crashes)."""
        self._threads = [
            threading.Thread(target=self._manage, name=f"check-pool-{i}", daemon=True)
            for i in range(self.workers)
        ]
        for t in self._threads:
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
        """Queue ``fn(*args)`` per args; futures resolve to the value, TimedOut or WorkerFailed.

        ``timeout_s`` is one deadline for all, or one per task (default: the pool's)."""
        args_list = [tuple(a) for a in arg_tuples]
        if timeout_s is None or isinstance(timeout_s, int | float):
            deadlines = [float(timeout_s or self.timeout_s)] * len(args_list)
        else:
            deadlines = [float(t) for t in timeout_s]
            if len(deadlines) != len(args_list):
                raise ValueError("one timeout per task, or a single timeout")
        tasks = [_Task(fn, a, d, Future()) for a, d in zip(args_list, deadlines, strict=True)]
        with self._cond:
            if self._closed:
                raise RuntimeError("the check pool is closed")
            self._queue.extend(tasks)
            self._cond.notify_all()
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
        return len(self._queue)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            while self._queue:
                self._queue.popleft().future.set_result(WorkerFailed("the check pool was closed"))
            self._cond.notify_all()
        for t in self._threads:
            t.join(timeout=10)

    def __enter__(self) -> CheckPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the manager of one worker ---------------------------------------------------------
    def _take(self) -> list[_Task] | None:
        with self._cond:
            while not self._queue and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            share = max(1, min(self.chunk, -(-len(self._queue) // self.workers)))
            return [self._queue.popleft() for _ in range(min(share, len(self._queue)))]

    def _requeue(self, tasks: list[_Task]) -> None:
        with self._cond:
            if self._closed:
                for t in tasks:
                    t.future.set_result(WorkerFailed("the check pool was closed"))
                return
            self._queue.extendleft(reversed(tasks))
            self._cond.notify_all()

    def _manage(self) -> None:
        worker: _Worker | None = None
        try:
            while True:
                batch = self._take()
                if batch is None:
                    break
                if worker is None or not worker.proc.is_alive():
                    if worker is not None:
                        worker.kill()
                    worker = _Worker(self._ctx, self.memory_mb)
                if not self._run_batch(worker, batch):
                    worker.kill()
                    self.replaced += 1
                    worker = None
        finally:
            if worker is not None:
                try:
                    worker.conn.send(None)
                except (OSError, ValueError):
                    pass
                worker.kill()

    def _run_batch(self, worker: _Worker, batch: list[_Task]) -> bool:
        """Run a chunk on ``worker``; False when the worker had to be killed."""
        live = [t for t in batch if t.future.running() or t.future.set_running_or_notify_cancel()]
        if not live:
            return True
        try:
            worker.conn.send([(i, t.fn, t.args) for i, t in enumerate(live)])
        except (OSError, ValueError) as exc:
            self._requeue(live)
            del exc
            return False
        for i, task in enumerate(live):
            started = time.monotonic()
            while True:
                remaining = task.timeout_s - (time.monotonic() - started)
                try:
                    ready = worker.conn.poll(max(0.0, remaining))
                except (OSError, ValueError):
                    ready = False
                    remaining = -1.0
                if ready:
                    try:
                        index, status, value = worker.conn.recv()
                    except (EOFError, OSError):
                        task.future.set_result(WorkerFailed("the worker process died"))
                        self._requeue(live[i + 1 :])
                        return False
                    assert index == i
                    task.future.set_result(value if status == "ok" else WorkerFailed(value))
                    break
                if not worker.proc.is_alive():
                    task.future.set_result(WorkerFailed("the worker process died"))
                    self._requeue(live[i + 1 :])
                    return False
                if remaining <= 0:
                    task.future.set_result(TimedOut(task.timeout_s))
                    self._requeue(live[i + 1 :])
                    return False
        return True
