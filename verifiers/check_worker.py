"""The worker process of the check pool, and what a check can come back as besides its value.

A worker runs under an address-space cap (RLIMIT_AS, so a memory bomb fails one check with an
error; pyarrow, which cosine reads its vocabulary with, is told to use the system allocator, not
mimalloc, which reserves a 1 GiB arena of that address space at its first allocation), without
core dumps, with what it was forked with frozen out of the collector's walks. It is owned by
one manager thread of
:class:`~referee.verifiers.check_pool.CheckPool`, which kills it when a check overruns its
deadline.

Before each task of a chunk the worker writes the task's index and start time into a small
shared array (:attr:`Worker.progress`), so its manager always knows which check is running and
since when. Results go back in groups: a group is sent once ``FLUSH_S`` has passed since the
last one was (at once after a check of that long or longer) and at the end of the chunk, so a
chunk of cheap checks costs a few messages, not one per check (about 25 µs each, which was more
than a rouge or fuzzy_match check itself). A killed worker loses at most ``FLUSH_S`` of finished
results, which its manager queues again.
"""

from __future__ import annotations

import gc
import os
import resource
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from referee.verifiers.check_tasks import Task

__all__ = ["Answers", "TimedOut", "Worker", "WorkerFailed", "run_chunk", "start_worker"]

_READY = "ready"
FLUSH_S = 0.005
"""How long a worker may hold finished results before it sends them."""
_POLL_S = 0.1  # how often a manager waiting on a long check looks whether its lane was dropped
_START_S = 120.0  # how long a new worker may take to start on a loaded machine


@dataclass(frozen=True, slots=True)
class TimedOut:
    """The check overran its deadline; its worker was killed and replaced."""

    timeout_s: float


@dataclass(frozen=True, slots=True)
class WorkerFailed:
    """The check failed inside its worker (memory cap, crash, unexpected exception), or was
    dropped with its lane."""

    reason: str


def _worker_main(conn: Connection, memory_mb: int, progress: Any) -> None:
    if memory_mb > 0:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        # read when pyarrow is imported (no worker imports it before a check): under the cap,
        # mimalloc's arena would take half of a 2 GB worker's address space from the checks
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # made before any check: at the cap, building a message can itself fail
    out_of_memory = f"memory limit of {memory_mb} MB exceeded"
    # what the worker was forked with (the preloaded verifiers: sympy and the rest, some
    # 80,000 objects) is never freed: out of the collector's sight, a full
    # collection walks only what the checks made (a BLEU check, which makes many small objects,
    # took 300 µs here instead of the 170 µs it takes in a fresh process)
    gc.freeze()
    conn.send(_READY)  # the manager starts a task's deadline from here, not from the spawn
    clock = time.monotonic  # CLOCK_MONOTONIC: the manager's clock too
    while True:
        try:
            batch = conn.recv()
        except (EOFError, OSError):
            return
        if batch is None:
            return
        replies: list[tuple[Any, ...]] = []
        sent_at = clock()
        for index, fn, args in batch:
            # the start first, then the index: a manager that reads the new index reads the
            # new start; one that reads the old index with the new start only waits longer
            started = clock()
            progress[1] = started
            progress[0] = index
            # the reply is built after the except clause: inside it, the exception's traceback
            # still holds the frames (and the memory) of the check that ran out of it
            failure: str | None = None
            try:
                reply: tuple[Any, ...] = (index, "ok", fn(*args))
            except MemoryError:
                failure = out_of_memory
            except RecursionError:
                failure = "recursion limit exceeded"
            except Exception as exc:  # a bug in a check must not kill the worker
                try:
                    failure = f"{type(exc).__name__}: {exc}"[:500]
                except MemoryError:
                    failure = out_of_memory
            if failure is not None:
                reply = (index, "error", failure)
            now = clock()
            replies.append((*reply, now - started))
            if now - sent_at >= FLUSH_S or index == batch[-1][0]:
                _send(conn, replies)
                replies = []
                sent_at = clock()


def _send(conn: Connection, replies: list[tuple[Any, ...]]) -> None:
    try:
        conn.send(replies)
    except MemoryError:  # one by one, a result too large to send failed alone
        for index, status, value, took in replies:
            try:
                conn.send([(index, status, value, took)])
            except MemoryError:
                conn.send([(index, "error", "result too large", took)])


class Worker:
    def __init__(self, ctx: Any, memory_mb: int) -> None:
        parent, child = ctx.Pipe()
        self.conn: Connection = parent
        try:
            self.progress: Any = ctx.RawArray("d", 2)
            """The running task's index in its chunk (-1: none started yet) and its start
            time."""
            self.progress[0] = -1.0
            self.proc = ctx.Process(
                target=_worker_main, args=(child, memory_mb, self.progress), daemon=True
            )
            self.proc.start()
        except BaseException:
            parent.close()
            raise
        finally:
            child.close()
        self.ready = False

    def wait_ready(self, timeout_s: float = _START_S) -> bool:
        """Wait for the worker's first message (sent once it runs): a loaded machine can take
        seconds to start a process, and that time is not the check's. False if it never came."""
        if self.ready:
            return True
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if self.conn.poll(min(0.05, max(0.0, deadline - time.monotonic()))):
                    self.ready = self.conn.recv() == _READY
                    return self.ready
            except (EOFError, OSError):
                return False
            if not self.proc.is_alive():
                return False
        return False

    def stop(self) -> None:
        """Ask the worker to exit, then make sure it has."""
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.kill()

    def kill(self) -> None:
        try:
            self.proc.kill()
        except (OSError, ValueError):
            pass
        self.proc.join(timeout=5)
        self.conn.close()


def start_worker(ctx: Any, memory_mb: int) -> Worker | WorkerFailed:
    """A new worker, or why none could start (no process, file descriptor or memory left, or
    a start method that refused): the chunk it was for then fails with that reason, instead
    of its manager thread dying and the chunk's callers waiting for ever."""
    try:
        return Worker(ctx, memory_mb)
    except Exception as exc:
        return WorkerFailed(f"could not start a worker process: {type(exc).__name__}: {exc}"[:500])


class Answers(Protocol):
    """What :func:`run_chunk` tells the pool of one manager."""

    def settle(self, settled: list[tuple[Task, Any, float | None]]) -> None:
        """Answer these tasks: (task, value or failure, seconds it took or None)."""

    def requeue(self, tasks: list[Task]) -> None:
        """Queue these again (or answer them as dropped, when their lane was)."""

    def running(self, began: float, timeout_s: float) -> None:
        """The manager's worker runs a task since ``began`` under ``timeout_s``."""


def run_chunk(worker: Worker, live: list[Task], answers: Answers) -> bool:
    """Send ``live`` (one lane's tasks) to ``worker`` and read the results as it sends them,
    watching the running task's deadline; False when the worker had to be killed (what it had
    not answered is then answered or queued again)."""
    worker.progress[0] = -1.0  # no task of this chunk started yet
    try:
        worker.conn.send([(i, t.fn, t.args) for i, t in enumerate(live)])
    except (OSError, ValueError):
        answers.requeue(live)
        return False
    lane = live[0].lane
    done = 0  # results received: live[:done]
    heard = time.monotonic()  # when the chunk went out or the last results came
    shown = -1  # the task last reported running
    while done < len(live):
        # the task running now: the worker's word if it has started one not answered yet
        # (index first: its start was written before it), else the next, since ``heard``
        cur = int(worker.progress[0])
        began = float(worker.progress[1]) if cur >= done else heard
        cur = max(cur, done)
        task = live[cur]
        if cur != shown:
            answers.running(began, task.timeout_s)
            shown = cur
        if lane.dropped is not None:
            answers.requeue(live[done:])  # counted and answered as dropped
            return False
        remaining = task.timeout_s - (time.monotonic() - began)
        try:
            ready = worker.conn.poll(max(0.0, min(remaining, _POLL_S)))
        except (OSError, ValueError):
            ready, remaining = False, -1.0
        if ready:
            try:
                replies = worker.conn.recv()
            except (EOFError, OSError):
                return _died(worker, live, done, answers)
            settled: list[tuple[Task, Any, float | None]] = []
            for got, status, value, took_s in replies:
                assert got == done + len(settled)
                result = value if status == "ok" else WorkerFailed(value)
                settled.append((live[got], result, took_s))
            answers.settle(settled)
            done += len(settled)
            heard = time.monotonic()
            continue
        if not worker.proc.is_alive():
            return _died(worker, live, done, answers)
        if int(worker.progress[0]) > cur:
            continue  # the worker went on to the next task while this one waited
        if remaining <= 0:
            answers.settle([(task, TimedOut(task.timeout_s), task.timeout_s)])
            answers.requeue(live[done:cur] + live[cur + 1 :])
            return False
    return True


def _died(worker: Worker, live: list[Task], done: int, answers: Answers) -> bool:
    """The worker died: the task it was running fails (its last word, read now that it writes
    no more), the others not answered (finished but unsent, or not started) are queued again."""
    cur = max(done, int(worker.progress[0]))
    answers.settle([(live[cur], WorkerFailed("the worker process died"), None)])
    answers.requeue(live[done:cur] + live[cur + 1 :])
    return False
