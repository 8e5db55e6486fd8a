"""veRL 0.9.1's own SandboxFusion client against a real referee server's ``/run_code`` on 2
sandbox slots, at veRL's default concurrency: 64 solutions scored at once (veRL's reward loop
scores trajectories as they complete), each sending all its tests together, every call through
one semaphore of ``reward.sandbox_fusion.max_concurrent`` (64). Every correct solution must score
1 and every wrong one 0: a call answered "busy" would count as a failed test (veRL retries only
504), so the server must queue them.

The scores come from veRL's functions (``default_compute_score`` -> ``sandbox_fusion
.compute_score`` -> ``check_correctness`` -> ``call_sandbox_api``); the test also checks that
veRL's ``call_sandbox_api`` made the calls.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .verl_sandbox_fusion import VerlSandboxFusion, problem, score_all, verl_modules

Server = Any
SOLUTIONS = 64
TESTS = 3


@pytest.fixture(scope="module")
def verl() -> Iterator[VerlSandboxFusion]:
    with verl_modules() as modules:
        yield modules


@pytest.fixture(scope="module")
def two_slots(referee_server_factory: Any, tmp_path_factory: pytest.TempPathFactory) -> Server:
    env = {"REFEREE_SANDBOX_SLOTS": "2"}  # the queue's wait and depth are the defaults
    return referee_server_factory(tmp_path_factory.mktemp("verl-sf"), env, "verl-sf")


def test_default_concurrency_is_read_from_verl(verl: VerlSandboxFusion) -> None:
    assert verl.max_concurrent == 64
    assert Path(verl.utils.__file__ or "").parts[-4:] == (
        "utils",
        "reward_score",
        "sandbox_fusion",
        "utils.py",
    )


def test_verl_client_at_default_concurrency_scores_right(
    verl: VerlSandboxFusion, two_slots: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    lock = threading.Lock()
    real_call = verl.utils.call_sandbox_api

    def counted(*args: Any, **kwargs: Any) -> Any:
        with lock:
            calls.append(1)
        return real_call(*args, **kwargs)

    # count veRL's own calls (check_correctness looks the name up in its module at call time)
    monkeypatch.setattr(verl.utils, "call_sandbox_api", counted)
    problems = [problem(i, TESTS) for i in range(SOLUTIONS)]
    tests = [p[2] for p in problems]
    right = score_all(verl, two_slots.url, [p[0] for p in problems], tests)
    assert right == [1.0] * SOLUTIONS
    wrong = score_all(verl, two_slots.url, [p[1] for p in problems], tests)
    assert wrong == [0.0] * SOLUTIONS
    assert len(calls) == 2 * SOLUTIONS * TESTS
