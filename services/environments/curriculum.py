"""The curriculum: pass rates of procedural tasks, a difficulty level per task, and draws.

Every ``/v1/rewards`` call that scores ``procedural`` items records, per task and per level,
how many passed. Each task has a current level; once ``window`` results at that level are in,
the level goes up when their pass rate is above the band (default 0.3-0.7) and down when it is
below, and the window starts again. Draws (``POST /v1/curriculum/problems``) pick tasks with
probability proportional to ``1 - s`` (``s``: the task's latest pass rate at its level, 0.5
before any result; a floor keeps solved tasks in the mix) and generate each problem at its
task's current level. The levels are reasoning-gym's curriculum levels for the task (the ones
its config accepts).

State lives in Redis (``REFEREE_BROKER_URL``; one hash per task, updated by a Lua script so
API replicas agree) or in memory.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from referee.client.models import RewardItem, RewardResult

__all__ = [
    "CurriculumPolicy",
    "CurriculumStore",
    "MemoryCurriculumStore",
    "RedisCurriculumStore",
    "TaskState",
    "build_curriculum_store",
    "curriculum_from_settings",
    "draw_tasks",
    "procedural_outcomes",
    "record_batch",
    "task_weight",
]

WEIGHT_FLOOR = 0.02
"""The least weight of a task: a solved task still comes up now and then."""


@dataclass(frozen=True, slots=True)
class CurriculumPolicy:
    low: float = 0.3
    high: float = 0.7
    window: int = 32


@dataclass(slots=True)
class TaskState:
    task: str
    level: int = 0
    window_n: int = 0
    window_pass: int = 0
    last_rate: float | None = None
    per_level: dict[str, list[float]] = field(default_factory=dict)
    """level (or "none") -> [n, passes, score sum]."""

    @property
    def rate(self) -> float | None:
        if self.window_n:
            return self.window_pass / self.window_n
        return self.last_rate


def task_weight(state: TaskState | None) -> float:
    rate = None if state is None else state.rate
    return max(WEIGHT_FLOOR, 1.0 - (0.5 if rate is None else rate))


def draw_tasks(
    tasks: Sequence[str], states: dict[str, TaskState], n: int, rng: random.Random
) -> list[str]:
    weights = [task_weight(states.get(t)) for t in tasks]
    return rng.choices(list(tasks), weights=weights, k=n)


def _apply(
    state: TaskState,
    level: int | None,
    n: int,
    passes: int,
    score_sum: float,
    policy: CurriculumPolicy,
    max_level: int,
) -> None:
    """The in-memory twin of the Lua script below."""
    key = "none" if level is None else str(level)
    row = state.per_level.setdefault(key, [0, 0, 0.0])
    row[0] += n
    row[1] += passes
    row[2] += score_sum
    if level is None or level != state.level:
        return  # results of problems drawn at another level do not move this one
    state.window_n += n
    state.window_pass += passes
    if state.window_n >= policy.window:
        rate = state.window_pass / state.window_n
        state.last_rate = rate
        if rate > policy.high and state.level < max_level:
            state.level += 1
        elif rate < policy.low and state.level > 0:
            state.level -= 1
        state.window_n = state.window_pass = 0


class CurriculumStore(Protocol):
    name: str

    async def record(
        self, task: str, level: int | None, n: int, passes: int, score_sum: float, max_level: int
    ) -> None: ...

    async def states(self, tasks: Iterable[str] | None = None) -> dict[str, TaskState]: ...

    async def close(self) -> None: ...


class MemoryCurriculumStore:
    name = "memory"

    def __init__(self, policy: CurriculumPolicy) -> None:
        self.policy = policy
        self._states: dict[str, TaskState] = {}
        self._lock = threading.Lock()

    async def record(
        self, task: str, level: int | None, n: int, passes: int, score_sum: float, max_level: int
    ) -> None:
        with self._lock:
            state = self._states.setdefault(task, TaskState(task))
            _apply(state, level, n, passes, score_sum, self.policy, max_level)

    async def states(self, tasks: Iterable[str] | None = None) -> dict[str, TaskState]:
        with self._lock:
            names = list(self._states) if tasks is None else list(tasks)
            return {
                t: TaskState(
                    t,
                    s.level,
                    s.window_n,
                    s.window_pass,
                    s.last_rate,
                    {k: list(v) for k, v in s.per_level.items()},
                )
                for t in names
                if (s := self._states.get(t)) is not None
            }

    async def close(self) -> None:
        return None


_RECORD = """
local key = KEYS[1]
local level, n, passes, ssum = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local window, low, high, maxl = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]),
  tonumber(ARGV[8])
redis.call('HINCRBY', key, 'n:' .. level, n)
redis.call('HINCRBY', key, 'p:' .. level, passes)
redis.call('HINCRBYFLOAT', key, 's:' .. level, ssum)
local current = tonumber(redis.call('HGET', key, 'level') or '0')
if level == 'none' or tonumber(level) ~= current then return current end
local wn = redis.call('HINCRBY', key, 'wn', n)
local wp = redis.call('HINCRBY', key, 'wp', passes)
if wn >= window then
  local rate = wp / wn
  redis.call('HSET', key, 'last', tostring(rate))
  if rate > high and current < maxl then
    current = current + 1
  elseif rate < low and current > 0 then
    current = current - 1
  end
  redis.call('HSET', key, 'level', current, 'wn', 0, 'wp', 0)
end
return current
"""


class RedisCurriculumStore:
    name = "redis"

    def __init__(self, url: str, policy: CurriculumPolicy, prefix: str = "referee:curriculum:"):
        import redis

        self.policy = policy
        self.prefix = prefix
        self._client = redis.Redis.from_url(url, socket_timeout=10, decode_responses=True)
        self._script = self._client.register_script(_RECORD)

    def _record(
        self, task: str, level: int | None, n: int, passes: int, score_sum: float, max_level: int
    ) -> None:
        p = self.policy
        self._client.sadd(self.prefix + "tasks", task)
        self._script(
            keys=[self.prefix + task],
            args=[
                "none" if level is None else str(level),
                n,
                passes,
                repr(float(score_sum)),
                p.window,
                repr(p.low),
                repr(p.high),
                max_level,
            ],
        )

    async def record(
        self, task: str, level: int | None, n: int, passes: int, score_sum: float, max_level: int
    ) -> None:
        await asyncio.to_thread(self._record, task, level, n, passes, score_sum, max_level)

    def _states(self, tasks: Iterable[str] | None) -> dict[str, TaskState]:
        names = (
            sorted(str(t) for t in self._client.smembers(self.prefix + "tasks"))
            if tasks is None
            else list(tasks)
        )
        out: dict[str, TaskState] = {}
        for task in names:
            raw = {str(k): str(v) for k, v in self._client.hgetall(self.prefix + task).items()}
            if not raw:
                continue
            state = TaskState(
                task,
                int(raw.get("level", 0)),
                int(raw.get("wn", 0)),
                int(raw.get("wp", 0)),
                float(raw["last"]) if "last" in raw else None,
            )
            for key, value in raw.items():
                if key.startswith("n:"):
                    lv = key[2:]
                    state.per_level[lv] = [
                        float(value),
                        float(raw.get("p:" + lv, 0)),
                        float(raw.get("s:" + lv, 0)),
                    ]
            out[task] = state
        return out

    async def states(self, tasks: Iterable[str] | None = None) -> dict[str, TaskState]:
        return await asyncio.to_thread(self._states, None if tasks is None else list(tasks))

    async def close(self) -> None:
        self._client.close()


def build_curriculum_store(broker_url: str | None, policy: CurriculumPolicy) -> CurriculumStore:
    if broker_url:
        return RedisCurriculumStore(broker_url, policy)
    return MemoryCurriculumStore(policy)


def curriculum_from_settings(settings: Any) -> CurriculumStore:
    """The store the settings call for (Redis with a broker URL, else memory)."""
    policy = CurriculumPolicy(
        settings.curriculum_low, settings.curriculum_high, settings.curriculum_window
    )
    return build_curriculum_store(settings.broker_url, policy)


def _procedural_scores(
    item: RewardItem, res: RewardResult, pass_threshold: float
) -> list[tuple[str, int | None, float, bool]]:
    """(task, level, score, passed) of an item's procedural leaves: the item itself, or the
    procedural parts of a ``weighted`` grader (e.g. with a format bonus), each passed when its
    own score is 1."""
    grader = item.grader
    if res.score is None or not res.valid:  # referee failed: nothing learnt of the task
        return []
    if grader.type == "procedural":
        return [(grader.task, grader.level, res.score, res.score >= pass_threshold)]
    if grader.type != "weighted":
        return []
    out = []
    parts = res.details.get("parts") or []
    for part, detail in zip(grader.graders, parts, strict=False):
        leaf = part.grader
        score = detail.get("score") if isinstance(detail, dict) else None
        if leaf.type != "procedural" or not isinstance(score, int | float):
            continue
        if detail.get("outcome") in ("error", "timeout"):
            continue
        out.append((leaf.task, leaf.level, float(score), score >= 1.0))
    return out


def procedural_outcomes(
    items: Sequence[RewardItem], results: Sequence[RewardResult], pass_threshold: float
) -> dict[tuple[str, int | None], tuple[int, int, float]]:
    """(task, level) -> (n, passes, score sum) over the scored procedural leaves of a batch
    (an item without a score, e.g. a malformed entry's error, is left out)."""
    agg: dict[tuple[str, int | None], list[float]] = defaultdict(lambda: [0, 0, 0.0])
    for item, res in zip(items, results, strict=True):
        for task, level, score, passed in _procedural_scores(item, res, pass_threshold):
            row = agg[(task, level)]
            row[0] += 1
            row[1] += 1 if passed else 0
            row[2] += score
    return {k: (int(v[0]), int(v[1]), float(v[2])) for k, v in agg.items()}


async def record_batch(
    store: CurriculumStore,
    items: Sequence[RewardItem],
    results: Sequence[RewardResult],
    pass_threshold: float,
) -> None:
    """Feed the pass rates of a scored batch's procedural items to the curriculum."""
    from referee.verifiers import procedural

    for (task, level), (n, passes, ssum) in procedural_outcomes(
        items, results, pass_threshold
    ).items():
        try:
            levels = await asyncio.to_thread(procedural.level_count, task)
        except procedural.ProceduralError:
            continue  # an unknown task: its items were errors, nothing to learn
        await store.record(task, level, n, passes, ssum, max(0, levels - 1))
