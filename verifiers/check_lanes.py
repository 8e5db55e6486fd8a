"""Lanes: the checks of one caller, so the check pool can serve callers in turn.

A lane is one HTTP request, one job, or (when the caller names none) one ``map`` call. The pool
keeps a queue per lane and takes work from the lanes in rotation, a lane with nothing running
first, so a caller's thousand slow items cannot make another caller's single item wait behind
them. A lane can be dropped (its client hung up): its checks still queued are answered at once
with :class:`~referee.verifiers.check_pool.WorkerFailed` and never run, and the one running is
stopped.

Callers set the lane of what they queue with :data:`current_lane` (a context variable, so it
follows ``asyncio`` tasks and ``asyncio.to_thread``)::

    token = current_lane.set(Lane("POST /v1/rewards"))
    ...                         # every pool.map / amap here goes into that lane
    current_lane.reset(token)
"""

from __future__ import annotations

import collections
import threading
import weakref
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from referee.verifiers.check_tasks import Task

__all__ = ["Lane", "LaneQueue", "current_lane", "pick", "starve_wait"]


class _Dropper(Protocol):
    def _drop_lane(self, lane: Lane) -> None: ...


class Lane:
    """The checks of one caller. Hashable by identity."""

    __slots__ = ("__weakref__", "_lock", "_pools", "cost_s", "dropped", "label")

    def __init__(self, label: str = "") -> None:
        self.label = label
        self.dropped: str | None = None
        """Why the lane was dropped (None while it is live)."""
        self.cost_s: float | None = None
        """A running mean of how long one of its checks takes (sizes its chunks)."""
        self._pools: weakref.WeakSet[_Dropper] = weakref.WeakSet()
        self._lock = threading.Lock()

    def attach(self, pool: _Dropper) -> None:
        with self._lock:
            self._pools.add(pool)

    def drop(self, reason: str) -> None:
        """Answer every check of this lane still queued with ``WorkerFailed(reason)`` and stop
        the one running; later checks queued into it are answered so at once."""
        with self._lock:
            if self.dropped is not None:
                return
            self.dropped = reason
            pools = list(self._pools)
        for pool in pools:
            pool._drop_lane(self)

    def __repr__(self) -> str:
        state = f" dropped: {self.dropped}" if self.dropped else ""
        return f"<Lane {self.label!r}{state}>"


current_lane: ContextVar[Lane | None] = ContextVar("referee_check_lane", default=None)
"""The lane checks queued now go into; None: each ``map`` call is a lane of its own."""


@dataclass(slots=True)
class LaneQueue:
    """A lane's checks queued in the pool, and how many of them run."""

    tasks: collections.deque[Task] = field(default_factory=collections.deque)
    running: int = 0
    served_at: float = 0.0
    """When a chunk of the lane was last taken or a result of it came back."""


def pick(lanes: dict[Lane, LaneQueue], now: float, extra: bool, starve_s: float) -> Lane | None:
    """The lane a manager serves next: the first (in rotation) with nothing running; for a
    spare manager only such a lane that has waited ``starve_s``; else the first with work."""
    first = None
    for lane, queue in lanes.items():
        if not queue.tasks:
            continue
        if queue.running == 0:
            waited = now - max(queue.tasks[0].queued_at, queue.served_at)
            if not extra or waited >= starve_s:
                return lane
        elif first is None and not extra:
            first = lane
    return first


def starve_wait(lanes: dict[Lane, LaneQueue], now: float, starve_s: float) -> float | None:
    """How long until a waiting lane may be served by a spare manager (None: no lane)."""
    waits = [
        max(q.tasks[0].queued_at, q.served_at) + starve_s - now
        for q in lanes.values()
        if q.tasks and q.running == 0
    ]
    return max(0.001, min(waits)) if waits else None
