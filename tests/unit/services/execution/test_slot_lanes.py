"""Code runs of a caller that hung up do not start: the sandbox executor reads the caller's lane
(the one the middleware drops when its client disconnects) when a run reaches its slot."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from referee.services.execution.slots import SandboxExecutor
from referee.services.settings import Settings
from referee.verifiers import Lane, current_lane


def _queued(
    executor: SandboxExecutor, lane: Lane, fn: Any, n: int, *, skip: bool = True
) -> list[asyncio.Task[Any]]:
    token = current_lane.set(lane)  # tasks copy the context: their runs are in ``lane``
    try:
        return [
            asyncio.create_task(
                executor.run_queued(
                    fn, k, if_dropped=(lambda why: ("not run", why)) if skip else None
                )
            )
            for k in range(n)
        ]
    finally:
        current_lane.reset(token)


def test_runs_queued_behind_a_dropped_lane_never_start() -> None:
    async def scenario() -> None:
        executor = SandboxExecutor(Settings(sandbox_slots=1))
        executor.start()
        assert executor.backend is not None, executor.unavailable_reason
        started, release = threading.Event(), threading.Event()
        calls: list[tuple[str, int]] = []

        def run(k: int, who: str) -> tuple[str, int]:
            calls.append((who, k))
            if (who, k) == ("gone", 0):
                started.set()
                release.wait(60)
            return ("ran", k)

        gone, other, plain = Lane("gone"), Lane("other"), Lane("plain")
        try:
            first = _queued(executor, gone, lambda k: run(k, "gone"), 6)
            await asyncio.to_thread(started.wait, 60)
            second = _queued(executor, other, lambda k: run(k, "other"), 2)
            third = _queued(executor, plain, lambda k: run(k, "plain"), 2, skip=False)
            gone.drop("the client disconnected")
            plain.drop("the client disconnected")  # no if_dropped: its runs still run
            release.set()
            out = await asyncio.gather(*first, *second, *third)
        finally:
            executor.close()
        reason = ("not run", "the client disconnected")
        assert (
            out[:6] == [("ran", 0)] + [reason] * 5
        )  # the running one finishes, the rest never start
        assert out[6:] == [("ran", 0), ("ran", 1), ("ran", 0), ("ran", 1)]
        assert sorted(calls) == sorted(
            [("gone", 0), ("other", 0), ("other", 1), ("plain", 0), ("plain", 1)]
        )
        assert executor.in_flight == 0

    asyncio.run(scenario())
