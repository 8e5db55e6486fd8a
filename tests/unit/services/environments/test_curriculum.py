"""The curriculum's bookkeeping: outcomes read from a scored batch, level moves, draw weights.

The same rules run against a real server (memory and Redis) in
tests/integration/api/test_environments_api.py.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from referee.client.models import RewardItem, RewardResult
from referee.services.environments.curriculum import (
    WEIGHT_FLOOR,
    CurriculumPolicy,
    MemoryCurriculumStore,
    TaskState,
    draw_tasks,
    procedural_outcomes,
    task_weight,
)

_ENTRY: dict[str, Any] = {"answer": "3", "metadata": {}}


def _item(grader: dict[str, Any]) -> RewardItem:
    return RewardItem(id="x", response="r", grader=grader)  # type: ignore[arg-type]


def test_outcomes_from_plain_and_weighted_items() -> None:
    proc = {"type": "procedural", "task": "t", "entry": _ENTRY, "level": 2}
    weighted = {
        "type": "weighted",
        "graders": [
            {"weight": 1.0, "grader": proc},
            {"weight": 0.1, "grader": {"type": "format", "pattern": "answer_tag"}},
        ],
    }
    items = [
        _item(proc),
        _item(proc),
        _item(weighted),
        _item(proc),
        _item({"type": "math", "reference": "1"}),
    ]
    results = [
        RewardResult(id="x", score=1.0, details={"outcome": "correct"}),
        RewardResult(id="x", score=0.5, details={"outcome": "partial"}),
        RewardResult(
            id="x",
            score=0.95,
            details={
                "outcome": "weighted",
                "parts": [
                    {"type": "procedural", "weight": 1.0, "score": 1.0, "outcome": "correct"},
                    {"type": "format", "weight": 0.1, "score": 0.5, "outcome": "wrong"},
                ],
            },
        ),
        RewardResult(id="x", score=0.0, details={"outcome": "error", "error": "bad entry"}),
        RewardResult(id="x", score=1.0, details={"outcome": "correct"}),
    ]
    # The error is left out; the weighted item counts by its procedural part (passed).
    assert procedural_outcomes(items, results, 1.0) == {("t", 2): (3, 2, 2.5)}


def test_levels_move_out_of_the_band_and_only_on_their_own_level() -> None:
    store = MemoryCurriculumStore(CurriculumPolicy(low=0.3, high=0.7, window=4))

    async def run() -> list[int]:
        seen = []
        await store.record("t", 0, 4, 4, 4.0, max_level=2)  # 1.0 > 0.7: up
        seen.append((await store.states())["t"].level)
        await store.record("t", 0, 4, 0, 0.0, max_level=2)  # results of the old level: no move
        seen.append((await store.states())["t"].level)
        await store.record("t", 1, 2, 1, 1.0, max_level=2)  # not a full window yet
        await store.record("t", 1, 2, 1, 1.0, max_level=2)  # 0.5: inside the band, stays
        seen.append((await store.states())["t"].level)
        for _ in range(2):
            await store.record("t", 1, 4, 4, 4.0, max_level=2)  # up, then up is capped at 2
        seen.append((await store.states())["t"].level)
        await store.record("t", 2, 4, 4, 4.0, max_level=2)
        seen.append((await store.states())["t"].level)
        await store.record("t", 2, 4, 1, 1.0, max_level=2)  # 0.25 < 0.3: down
        seen.append((await store.states())["t"].level)
        return seen

    assert asyncio.run(run()) == [1, 1, 1, 2, 2, 1]
    state = asyncio.run(store.states())["t"]
    assert state.per_level["0"] == [8, 4, 4.0] and state.rate == 0.25


def test_draws_follow_the_failure_rate() -> None:
    states = {"easy": TaskState("easy", last_rate=0.9), "hard": TaskState("hard", last_rate=0.2)}
    assert task_weight(states["hard"]) == 0.8 and task_weight(None) == 0.5
    assert task_weight(TaskState("solved", last_rate=1.0)) == WEIGHT_FLOOR
    drawn = draw_tasks(["easy", "hard", "new"], states, 3000, random.Random(0))
    share = {t: drawn.count(t) / 3000 for t in ("easy", "hard", "new")}
    # p ∝ 1 - s: 0.1 : 0.8 : 0.5
    assert abs(share["hard"] - 0.8 / 1.4) < 0.04 and abs(share["easy"] - 0.1 / 1.4) < 0.03
