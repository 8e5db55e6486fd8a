"""The session manager on a real scorer (check pool, reasoning-gym, memory curriculum) without
a server: the bound on live sessions, the reaper's deadline and idle rules (driven by the clock
it is given), idempotent steps, and what a closed session answers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from referee.client.errors import Conflict, NotFound, ServiceUnavailable
from referee.client.session_models import CreateSessionRequest, StepRequest, VerifyRequest
from referee.services.scoring.scorer import Scorer
from referee.services.sessions.episode import EnvContext
from referee.services.sessions.manager import SessionManager
from referee.services.settings import Settings

pytest.importorskip("reasoning_gym")

IDLE_S = 30.0
ROW = {"task": "basic_arithmetic"}


def with_manager(test: Callable[[SessionManager], Awaitable[None]], **settings: object) -> None:
    config = Settings(
        math_workers=1,
        sessions_max_live=1,
        sessions_idle_timeout_s=IDLE_S,
        **settings,  # type: ignore[arg-type]
    )

    async def run() -> None:
        scorer = Scorer.from_settings(config, sandbox=False)
        threads = ThreadPoolExecutor(2)
        manager = SessionManager(EnvContext(scorer, config, threads))
        try:
            await test(manager)
        finally:
            await manager.close_all()
            threads.shutdown()
            await scorer.close()

    asyncio.run(run())


def open_request(**more: object) -> CreateSessionRequest:
    return CreateSessionRequest.model_validate({"env": "procedural", "task": ROW, **more})


def test_bounded_idempotent_and_reaped_when_idle() -> None:
    async def check(manager: SessionManager) -> None:
        a = await manager.create(open_request(seed=3))
        with pytest.raises(ServiceUnavailable) as full:
            await manager.create(open_request())
        assert full.value.retry_after_s is not None and 1.0 <= full.value.retry_after_s <= 60.0

        wrong = StepRequest(response="<answer>zzz</answer>", request_id="r1")
        first = await manager.step(a.session_id, wrong)
        again = await manager.step(a.session_id, wrong)
        assert again == first and first.reward == 0.0 and first.observation
        assert manager.state(a.session_id).turns == 1  # the replay ran nothing
        with pytest.raises(Conflict):
            await manager.step(a.session_id, StepRequest(response="other", request_id="r1"))

        assert await manager.reap(time.monotonic() + IDLE_S / 2) == []
        assert await manager.reap(time.monotonic() + IDLE_S + 1) == [a.session_id]
        state = manager.state(a.session_id)
        assert state.state == "closed" and "idle" in (state.reason or "")
        with pytest.raises(NotFound, match="idle"):
            await manager.step(a.session_id, StepRequest(response="1"))
        await manager.create(open_request())  # its place is free again

    with_manager(check)


def test_a_deadline_closes_even_a_session_in_use() -> None:
    async def check(manager: SessionManager) -> None:
        opened = await manager.create(open_request(deadline_s=5))
        assert await manager.reap(time.monotonic() + 1) == []
        assert await manager.reap(time.monotonic() + 6) == [opened.session_id]
        assert "deadline" in (manager.state(opened.session_id).reason or "")

    with_manager(check)


def test_a_deadline_asked_for_is_capped_and_a_failed_open_holds_no_place() -> None:
    async def check(manager: SessionManager) -> None:
        with pytest.raises(ServiceUnavailable, match="bubblewrap"):  # no sandbox here
            await manager.create(
                CreateSessionRequest(env="python", task={"prompt": "1+1?", "reference": "2"})
            )
        assert manager.live == 0
        opened = await manager.create(open_request(deadline_s=86_400))
        assert opened.info["deadline_s"] == 100.0

    with_manager(check, sessions_max_deadline_s=100.0)


def test_an_ended_episode_no_longer_counts_as_live() -> None:
    async def check(manager: SessionManager) -> None:
        opened = await manager.create(open_request(max_turns=1))
        step = await manager.step(opened.session_id, StepRequest(response="<answer>x</answer>"))
        assert step.truncated and manager.state(opened.session_id).state == "done"
        assert manager.live == 0
        second = await manager.create(open_request())
        assert second.session_id != opened.session_id
        reward = await manager.verify(opened.session_id, VerifyRequest())
        assert reward.score == 0.0 and [t.index for t in reward.turns] == [0]

    with_manager(check)


def test_a_request_sent_twice_at_once_runs_once() -> None:
    async def check(manager: SessionManager) -> None:
        opened = await manager.create(open_request(max_turns=3))
        step = StepRequest(response="<answer>no</answer>", request_id="same")
        first, second = await asyncio.gather(
            manager.step(opened.session_id, step), manager.step(opened.session_id, step)
        )
        assert first == second
        assert manager.state(opened.session_id).turns == 1

    with_manager(check)
