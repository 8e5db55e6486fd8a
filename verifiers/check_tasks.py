"""What the check pool queues: a task, and where its result goes (a Future, or a slot of an
``amap`` call's results); and what the pool tells of itself (:class:`PoolHealth`)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from referee.verifiers.check_lanes import Lane

__all__ = ["Gather", "PoolHealth", "Slot", "Task"]


def _resolve(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)


_UNSET: Any = object()


class Gather:
    """The results of one :meth:`CheckPool.amap` call, in place of a Future per check (each
    holds a Condition, and settling one took about 10 µs of the pool's per-check cost): the
    event loop is woken once, when the last is in."""

    __slots__ = ("_count", "_done", "_loop", "values")

    def __init__(self, n: int, loop: asyncio.AbstractEventLoop) -> None:
        self.values: list[Any] = [_UNSET] * n
        self._count = itertools.count(1)  # next() is atomic under the GIL: no lock
        self._loop = loop
        self._done: asyncio.Future[None] = loop.create_future()

    def settle(self, k: int, value: Any) -> None:
        self.values[k] = value
        if next(self._count) == len(self.values):
            try:
                self._loop.call_soon_threadsafe(_resolve, self._done)
            except RuntimeError:  # the loop closed while the checks ran
                pass

    async def wait(self) -> list[Any]:
        await self._done
        return self.values


class Slot:
    """Where one check of an amap call puts its result: the part of a Future the pool uses."""

    __slots__ = ("gather", "k")

    def __init__(self, gather: Gather, k: int) -> None:
        self.gather = gather
        self.k = k

    def running(self) -> bool:
        return True  # an amap check is never cancelled alone (its lane is dropped instead)

    def set_running_or_notify_cancel(self) -> bool:
        return True

    def done(self) -> bool:
        return self.gather.values[self.k] is not _UNSET

    def set_result(self, value: Any) -> None:
        self.gather.settle(self.k, value)


@dataclass(slots=True)
class Task:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    timeout_s: float
    future: Future[Any] | Slot
    lane: Lane
    queued_at: float


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
