"""The worker process of the check pool, and what a check can come back as besides its value.

A worker runs under an address-space cap (RLIMIT_AS, so a memory bomb fails one check with an
error; pyarrow, which cosine reads its vocabulary with, is told to use the system allocator, not
mimalloc, which reserves a 1 GiB arena of that address space at its first allocation), without
core dumps, and answers each task of a chunk as it finishes it. It is owned by
one manager thread of :class:`~referee.verifiers.check_pool.CheckPool`, which kills it when a
check overruns its deadline.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

__all__ = ["TimedOut", "Worker", "WorkerFailed"]

_READY = "ready"
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


def _worker_main(conn: Connection, memory_mb: int) -> None:
    if memory_mb > 0:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        # read when pyarrow is imported (no worker imports it before a check): under the cap,
        # mimalloc's arena would take half of a 2 GB worker's address space from the checks
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # made before any check: at the cap, building a message can itself fail
    out_of_memory = f"memory limit of {memory_mb} MB exceeded"
    conn.send(_READY)  # the manager starts a task's deadline from here, not from the spawn
    while True:
        try:
            batch = conn.recv()
        except (EOFError, OSError):
            return
        if batch is None:
            return
        for index, fn, args in batch:
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
            try:
                conn.send(reply)
            except MemoryError:
                conn.send((index, "error", "result too large"))


class Worker:
    def __init__(self, ctx: Any, memory_mb: int) -> None:
        parent, child = ctx.Pipe()
        self.conn: Connection = parent
        self.proc = ctx.Process(target=_worker_main, args=(child, memory_mb), daemon=True)
        self.proc.start()
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

    def kill(self) -> None:
        try:
            self.proc.kill()
        except (OSError, ValueError):
            pass
        self.proc.join(timeout=5)
        self.conn.close()
