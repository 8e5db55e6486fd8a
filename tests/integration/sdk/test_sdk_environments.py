"""The SDK's environment and curriculum methods against a real server: generated problems score
through the same client, the curriculum sees the results, mistakes are named before sending."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from referee.client import AsyncRefereeClient, InvalidRequest, NotFound, RefereeClient

TASK = "leg_counting"  # a task no other test of the session server plays


def test_families_problems_and_their_rewards(server: Any) -> None:
    with RefereeClient(server.url) as client:
        families = {f.name: f for f in client.environments().families}
        assert TASK in families and "basic_arithmetic" in families
        assert families["basic_arithmetic"].levels >= 2
        first = client.problems(TASK, 4, seed=11)
        again = client.problems(TASK, 4, seed=11)
        other = client.problems(TASK, 4, seed=12)
        assert [p.question for p in first.problems] == [p.question for p in again.problems]
        assert [p.question for p in first.problems] != [p.question for p in other.problems]
        items = [
            {
                "id": f"{p.index}-{kind}",
                "prompt": p.prompt,
                "response": f"<answer>{answer}</answer>",
                "grader": p.grader,
            }
            for p in first.problems
            for kind, answer in (("right", p.answer), ("wrong", f"{p.answer}1"))
        ]
        scores = {r.id: r.score for r in client.rewards(items).rewards}
        for p in first.problems:
            assert scores[f"{p.index}-right"] == 1.0
            assert scores[f"{p.index}-wrong"] < 1.0
        seen = {t.task: t for t in client.curriculum().tasks}
        assert TASK in seen  # the rewards above fed the curriculum
        assert sum(level.n for level in seen[TASK].per_level) >= len(items)


def test_async_client_draws_from_the_curriculum(server: Any) -> None:
    async def go() -> Any:
        async with AsyncRefereeClient(server.url) as client:
            drawn = await client.curriculum_problems(6, tasks=[TASK, "basic_arithmetic"], seed=3)
            generated = await client.problems("basic_arithmetic", 2, seed=1, level=0)
            state = await client.curriculum()
            return drawn, generated, state

    drawn, generated, state = asyncio.run(go())
    assert len(drawn.problems) == 6
    assert {p.task for p in drawn.problems} <= {TASK, "basic_arithmetic"}
    assert len(generated.problems) == 2 and all(p.answer for p in generated.problems)
    assert 0.0 <= state.band[0] < state.band[1] <= 1.0


def test_mistakes_are_clear(server: Any) -> None:
    with RefereeClient(server.url) as client:
        with pytest.raises(InvalidRequest, match="problems: n"):
            client.problems(TASK, 0)  # named here, nothing sent
        with pytest.raises(NotFound, match="no_such_task"):
            client.problems("no_such_task", 1)
        with pytest.raises(NotFound):
            client.problems("../../v1/rewards", 1)  # the name stays one path segment
