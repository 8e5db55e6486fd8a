"""The deadline pool: overruns are killed and replaced, crashes and memory bombs fail one task."""

from __future__ import annotations

import gc
import os
import threading
import time

import pytest

from referee.verifiers import CheckPool, TimedOut, WorkerFailed


def sleep_then(seconds: float, value: int) -> int:
    time.sleep(seconds)
    return value


def crash() -> None:
    os._exit(3)


def allocate(mb: int) -> int:
    return len(bytearray(mb * 1024 * 1024))


def raises() -> None:
    raise KeyError("boom")


def worker_pid() -> int:
    return os.getpid()


def test_overrun_is_killed_and_the_rest_of_the_chunk_still_runs() -> None:
    with CheckPool(workers=1, timeout_s=0.5, chunk=8) as pool:
        args = [(0.0, 1), (30.0, 2), (0.0, 3), (0.0, 4)]
        start = time.monotonic()
        results = [f.result() for f in pool.map(sleep_then, args)]
        elapsed = time.monotonic() - start
    assert results[0] == 1 and results[2:] == [3, 4]
    assert isinstance(results[1], TimedOut) and results[1].timeout_s == 0.5
    assert pool.replaced == 1
    assert elapsed < 20  # the 30 s sleeper did not run to its end


def crash_at(value: int, at: int) -> int:
    if value == at:
        os._exit(3)
    return value


@pytest.mark.slow  # about 1 s: a hang held to its deadline
def test_results_held_in_a_group_survive_a_hang_and_a_crash_after_them() -> None:
    """A worker sends cheap checks' results in groups: the ones it still holds when a later
    check of the chunk hangs or kills it are run again, and only that check fails (a chunk of
    a lane measured cheap holds dozens, so the hang and the crash land behind held results)."""
    with CheckPool(workers=1, timeout_s=1.0, chunk=64) as pool:
        args = [(60.0 if v == 150 else 0.0, v) for v in range(200)]
        start = time.monotonic()
        results = [f.result() for f in pool.map(sleep_then, args)]
        elapsed = time.monotonic() - start
        crashed = [f.result() for f in pool.map(crash_at, [(v, 120) for v in range(200)])]
    assert [r for v, r in enumerate(results) if v != 150] == [v for v in range(200) if v != 150]
    assert isinstance(results[150], TimedOut) and results[150].timeout_s == 1.0
    assert elapsed < 20
    assert [r for v, r in enumerate(crashed) if v != 120] == [v for v in range(200) if v != 120]
    assert isinstance(crashed[120], WorkerFailed) and "died" in crashed[120].reason
    assert pool.replaced == 2


@pytest.mark.slow  # about 3 s: checks that sleep past their deadline
def test_a_deadline_runs_from_the_checks_own_start() -> None:
    """Each check of a chunk has its whole deadline, however long the ones before it took."""
    with CheckPool(workers=1, timeout_s=0.6, chunk=8) as pool:
        out = [f.result() for f in pool.map(sleep_then, [(0.4, v) for v in range(6)])]
    assert out == list(range(6))


def test_a_replaced_worker_is_a_new_process() -> None:
    with CheckPool(workers=1, timeout_s=0.5) as pool:
        before = pool.submit(worker_pid).result()
        assert isinstance(pool.submit(sleep_then, 10.0, 0).result(), TimedOut)
        after = pool.submit(worker_pid).result()
    assert before != after


def test_crash_memory_bomb_and_exception_fail_one_task_each() -> None:
    with CheckPool(workers=1, timeout_s=10, memory_mb=512) as pool:
        out = [f.result() for f in pool.map(crash, [()])]
        assert isinstance(out[0], WorkerFailed) and "died" in out[0].reason
        bomb = pool.submit(allocate, 4096).result()
        assert isinstance(bomb, WorkerFailed) and "memory limit" in bomb.reason
        err = pool.submit(raises).result()
        assert isinstance(err, WorkerFailed) and "KeyError" in err.reason
        assert pool.submit(allocate, 1).result() == 1024 * 1024


def test_per_task_deadlines() -> None:
    with CheckPool(workers=1, timeout_s=5) as pool:
        fast, slow = pool.map(sleep_then, [(0.3, 1), (0.3, 2)], timeout_s=[0.1, 2.0])
        assert isinstance(fast.result(), TimedOut) and slow.result() == 2
        with pytest.raises(ValueError, match="one timeout per task"):
            pool.map(sleep_then, [(0, 1)], timeout_s=[1.0, 2.0])


@pytest.mark.slow  # about 3 s: a hang held to its deadline
def test_a_hang_does_not_starve_other_callers_and_threads_are_safe() -> None:
    with CheckPool(workers=2, timeout_s=3) as pool:
        hang = pool.submit(sleep_then, 60.0, 0)
        results: list[int] = []
        lock = threading.Lock()

        def call(n: int) -> None:
            value = pool.submit(sleep_then, 0.0, n).result()
            with lock:
                results.append(value)

        threads = [threading.Thread(target=call, args=(n,)) for n in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert sorted(results) == list(range(20))
        assert not hang.done() or isinstance(hang.result(), TimedOut)
        assert isinstance(hang.result(), TimedOut)


def worker_heap() -> tuple[int, int]:
    """What the collector leaves out (frozen) and what it still walks in a worker."""
    return gc.get_freeze_count(), len(gc.get_objects())


def test_a_worker_keeps_what_it_was_forked_with_out_of_the_collectors_walk() -> None:
    """The preloaded verifiers are frozen at the worker's start: a full collection walks what
    the checks made, not the tens of thousands sympy and the rest made (BLEU's many small objects
    made it nearly twice as slow)."""
    with CheckPool(workers=1, timeout_s=60) as pool:
        [frozen_walked] = [f.result() for f in pool.map(worker_heap, [()])]
    frozen, walked = frozen_walked
    assert frozen > 50_000 and walked < frozen / 4, frozen_walked


def test_closed_pool_refuses_work() -> None:
    pool = CheckPool(workers=1)
    pool.close()
    with pytest.raises(RuntimeError, match="closed"):
        pool.submit(worker_pid)


_NO_FILE_LEFT = """
import resource
from referee.verifiers import CheckPool, WorkerFailed

pool = CheckPool(workers=1, extra_workers=0, timeout_s=10)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (3, hard))  # no new descriptor: no pipe, no process
failed = pool.map(pow, [(2, 10), (3, 3)])
failed = [f.result(timeout=60) for f in failed]
resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
again = [f.result(timeout=120) for f in pool.map(pow, [(2, 10), (3, 3)])]
pool.close()
assert all(isinstance(f, WorkerFailed) for f in failed), failed
assert "could not start a worker process" in failed[0].reason, failed
assert again == [1024, 27], again
print("ok", failed[0].reason)
"""


def test_a_worker_that_cannot_start_fails_its_chunk_and_the_next_one_starts() -> None:
    """With no file descriptor left (so no pipe to a worker, no process), the checks fail with
    the reason at once instead of waiting for ever on a manager thread that died; once
    descriptors are back, the same pool starts a worker and answers."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _NO_FILE_LEFT], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Too many open files" in done.stdout, done.stdout
