"""The check pool shares its workers between callers (lanes) and drops a hung-up caller's work.

Real worker processes; slow checks are sleeps far longer than the quick ones, and what is
asserted is the order things finish in, never how long they took.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any

import pytest

from referee.verifiers import CheckPool, Lane, TimedOut, WorkerFailed, current_lane


def sleep_then(seconds: float, value: Any) -> Any:
    time.sleep(seconds)
    return value


def in_lane(pool: CheckPool, lane: Lane, args: list[tuple[float, Any]]) -> list[Future[Any]]:
    token = current_lane.set(lane)
    try:
        return pool.map(sleep_then, args)
    finally:
        current_lane.reset(token)


def finish_order(futures: dict[str, Future[Any]]) -> list[str]:
    order: list[str] = []
    lock = threading.Lock()

    def done(name: str) -> Any:
        def record(_: Future[Any]) -> None:
            with lock:
                order.append(name)

        return record

    for name, future in futures.items():
        future.add_done_callback(done(name))
    for future in futures.values():
        future.result(timeout=120)
    return order


@pytest.mark.slow  # about 30 s: eight checks that each run to a 7 s deadline
def test_one_item_behind_a_batch_that_holds_every_worker_goes_first() -> None:
    """Both workers are held by checks that run to the deadline; a spare worker serves the
    one-item caller, which finishes before any of the slow checks."""
    with CheckPool(workers=2, timeout_s=8.0) as pool:
        hostile = in_lane(pool, Lane("hostile"), [(7.0, i) for i in range(8)])
        time.sleep(0.5)  # both workers are inside a slow check now
        [quick] = in_lane(pool, Lane("quick"), [(0.0, "q")])
        futures = {f"h{i}": f for i, f in enumerate(hostile)} | {"quick": quick}
        order = finish_order(futures)
    assert order[0] == "quick", order
    assert quick.result() == "q"
    assert [f.result() for f in hostile] == list(range(8))


@pytest.mark.slow  # about 3 s: slow checks taking turns
def test_lanes_take_turns_without_spare_workers() -> None:
    """With one worker and no spare, a second caller's item runs at the first free turn, not
    after the whole first batch."""
    with CheckPool(workers=1, timeout_s=30.0, extra_workers=0) as pool:
        first = in_lane(pool, Lane("first"), [(0.4, i) for i in range(6)])
        time.sleep(0.2)
        [second] = in_lane(pool, Lane("second"), [(0.0, "s")])
        futures = {f"f{i}": f for i, f in enumerate(first)} | {"second": second}
        order = finish_order(futures)
    assert order.index("second") < order.index("f5"), order
    assert [f.result() for f in first] == list(range(6))


def test_a_dropped_lane_loses_its_queued_checks_and_its_running_one() -> None:
    with CheckPool(workers=1, timeout_s=60.0, extra_workers=0) as pool:
        lane = Lane("hung up")
        futures = in_lane(pool, lane, [(50.0, i) for i in range(5)])
        time.sleep(0.5)  # the first one runs
        lane.drop("the client disconnected")
        results = [f.result(timeout=30) for f in futures]
        assert all(isinstance(r, WorkerFailed) and "disconnected" in r.reason for r in results)
        assert pool.dropped == 5
        # the worker was replaced and the pool serves the next caller
        assert pool.submit(sleep_then, 0.0, "next").result(timeout=60) == "next"
        # work queued into a dropped lane is answered at once
        [late] = in_lane(pool, lane, [(0.0, "late")])
        assert isinstance(late.result(timeout=5), WorkerFailed)


def test_health_is_read_without_queueing() -> None:
    with CheckPool(workers=1, timeout_s=0.5, extra_workers=0) as pool:
        assert pool.submit(sleep_then, 0.0, 0).result(timeout=60) == 0  # the worker is up
        idle = pool.health()
        assert idle.ok and idle.queued == 0 and idle.running == 0
        slow = pool.map(sleep_then, [(5.0, 1), (0.0, 2)])
        for _ in range(200):
            busy = pool.health()
            if busy.running:
                break
            time.sleep(0.01)
        assert busy.ok and busy.running == 1 and busy.overdue == 0
        assert isinstance(slow[0].result(timeout=30), TimedOut)
        assert slow[1].result(timeout=30) == 2
    assert not pool.health().managers_alive  # closed
