"""Procedural environments and the curriculum.

``GET /v1/environments``                      the task families, config schema, difficulty
``POST /v1/environments/{task}/problems``     n reproducible problems, each with its grader
``GET /v1/curriculum``                        pass rates per task and level, current levels
``POST /v1/curriculum/problems``              problems drawn by failure rate at each task's level

Generation runs on the check pool (a generator that hangs on a config is killed at
``environments_timeout_s``); listing reads reasoning-gym's classes in a thread.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import time
from collections import Counter
from typing import Any

from fastapi import Request

from referee.client.environment_models import (
    CurriculumProblemsRequest,
    CurriculumResponse,
    EnvironmentsResponse,
    ExcludedFamily,
    Family,
    GeneratedProblem,
    LevelStats,
    ProblemsRequest,
    ProblemsResponse,
    TaskCurriculum,
)
from referee.client.errors import InvalidRequest, NotFound, PayloadTooLarge, ServiceUnavailable
from referee.client.models import ProceduralGrader
from referee.services.environments.curriculum import (
    CurriculumStore,
    curriculum_from_settings,
    draw_tasks,
    task_weight,
)
from referee.services.openapi_doc import api_key_router
from referee.verifiers import TimedOut, WorkerFailed, procedural

__all__ = ["curriculum_store", "generate_problems", "router"]

_CHUNK = 64
router = api_key_router(
    "/v1",
    "environments",
    {
        404: "Unknown task",
        413: "Too many problems",
        422: "Invalid config or level",
        503: "reasoning-gym is not installed",
    },
)


async def _families() -> list[dict[str, Any]]:
    if not await asyncio.to_thread(procedural.available):
        raise ServiceUnavailable(
            "procedural environments need reasoning-gym: pip install 'referee[environments]'"
        )
    return await asyncio.to_thread(procedural.families)


async def _known(task: str) -> dict[str, Any]:
    for family in await _families():
        if family["name"] == task:
            return family
    if task in procedural.EXCLUDED:
        raise NotFound(f"task {task!r} is not served: {procedural.EXCLUDED[task]}")
    raise NotFound(f"unknown task {task!r}: GET /v1/environments lists the tasks")


def curriculum_store(request: Request) -> CurriculumStore:
    state = request.app.state
    store: CurriculumStore | None = getattr(state, "curriculum", None)
    if store is None:
        store = curriculum_from_settings(state.settings)
        state.curriculum = store
    return store


async def generate_problems(
    request: Request,
    task: str,
    config: dict[str, Any],
    seed: int,
    n: int,
    start: int,
    level: int | None,
    instruction: str,
) -> list[GeneratedProblem]:
    """Problems ``start..start+n-1`` on the pool, in chunks, each with its grader."""
    settings = request.app.state.settings
    if level is not None:
        try:
            config = await asyncio.to_thread(procedural.config_at_level, task, level, config)
        except procedural.ProceduralError as exc:
            raise InvalidRequest(str(exc)) from exc
    chunks = [
        (task, config, seed, min(_CHUNK, start + n - i), i) for i in range(start, start + n, _CHUNK)
    ]
    outcomes = await request.app.state.pool.amap(
        procedural.generate, chunks, timeout_s=settings.environments_timeout_s
    )
    problems: list[GeneratedProblem] = []
    for out in outcomes:
        if isinstance(out, TimedOut):
            raise InvalidRequest(
                f"generating {_CHUNK} {task!r} problems took longer than {out.timeout_s:g} s "
                "with this config and was stopped: choose an easier config"
            )
        if isinstance(out, WorkerFailed):
            reason = out.reason.removeprefix("ProceduralError: ")
            raise InvalidRequest(f"the {task!r} generator failed: {reason}")
        for p in out:
            problems.append(
                GeneratedProblem(
                    task=task,
                    index=p["index"],
                    prompt=f"{p['question']}\n\n{instruction}".rstrip(),
                    question=p["question"],
                    answer=p["answer"],
                    grader=ProceduralGrader(
                        task=task, entry=p["entry"], config=config, level=level
                    ),
                )
            )
    return problems


def _limit(request: Request, n: int) -> None:
    top = request.app.state.settings.environments_max_problems
    if n > top:
        raise PayloadTooLarge(f"{n} problems asked for; the limit is {top}: ask in parts")


@router.get("/environments", response_model=EnvironmentsResponse, summary="Task families")
async def environments() -> EnvironmentsResponse:
    """Every task family: config fields with defaults, difficulty attributes and levels."""
    families = await _families()
    return EnvironmentsResponse(
        families=[Family.model_validate(f) for f in families],
        excluded=[ExcludedFamily(name=k, reason=v) for k, v in sorted(procedural.EXCLUDED.items())],
    )


@router.post(
    "/environments/{task}/problems",
    response_model=ProblemsResponse,
    summary="Generate problems of one task",
)
async def problems(task: str, body: ProblemsRequest, request: Request) -> ProblemsResponse:
    """``n`` problems for a seed and config (the same seed and config give the same problems),
    each with its prompt and the ``procedural`` grader that scores a response to it."""
    start = time.perf_counter()
    _limit(request, body.n)
    await _known(task)
    out = await generate_problems(
        request, task, body.config, body.seed, body.n, body.start, body.level, body.instruction
    )
    return ProblemsResponse(problems=out, elapsed_ms=(time.perf_counter() - start) * 1000)


def _task_view(name: str, state: Any, levels: int) -> TaskCurriculum:
    per_level = []
    if state is not None:
        for key, (n, passes, ssum) in sorted(state.per_level.items()):
            per_level.append(
                LevelStats(
                    level=None if key == "none" else int(key),
                    n=int(n),
                    pass_rate=passes / n if n else 0.0,
                    mean_score=ssum / n if n else 0.0,
                )
            )
    return TaskCurriculum(
        task=name,
        level=0 if state is None else state.level,
        levels=levels,
        window_n=0 if state is None else state.window_n,
        window_pass_rate=(state.window_pass / state.window_n) if state and state.window_n else None,
        pass_rate=None if state is None else state.rate,
        weight=task_weight(state),
        per_level=per_level,
    )


async def _tasks(request: Request, wanted: list[str] | None) -> list[str]:
    names = {f["name"] for f in await _families()}
    tasks = wanted or request.app.state.settings.curriculum_tasks or sorted(names)
    unknown = [t for t in tasks if t not in names]
    if unknown:
        raise InvalidRequest(f"unknown tasks: {', '.join(unknown)} (GET /v1/environments)")
    return list(dict.fromkeys(tasks))


@router.get("/curriculum", response_model=CurriculumResponse, summary="Pass rates and levels")
async def curriculum(request: Request) -> CurriculumResponse:
    """Per task: its current level, the pass rates per level from the rewards referee computed
    for its problems, and its weight in draws (∝ 1 − pass rate). Tasks with results first."""
    store = curriculum_store(request)
    states = await store.states()
    settings = request.app.state.settings
    names = list(states) + [t for t in settings.curriculum_tasks if t not in states]
    views = []
    for name in names:
        levels = await asyncio.to_thread(procedural.level_count, name)
        views.append(_task_view(name, states.get(name), levels))
    return CurriculumResponse(
        band=(settings.curriculum_low, settings.curriculum_high),
        window=settings.curriculum_window,
        store=store.name,
        tasks=views,
    )


@router.post(
    "/curriculum/problems", response_model=ProblemsResponse, summary="Draw problems by need"
)
async def curriculum_problems(
    body: CurriculumProblemsRequest, request: Request
) -> ProblemsResponse:
    """``n`` problems: tasks drawn with probability ∝ 1 − pass rate, each problem generated at
    its task's current level. Score the responses with the graders returned (their ``level``
    tells the curriculum which level the result belongs to)."""
    start = time.perf_counter()
    _limit(request, body.n)
    tasks = await _tasks(request, body.tasks)
    store = curriculum_store(request)
    states = await store.states(tasks)
    rng = random.Random(body.seed if body.seed is not None else secrets.randbits(32))
    counts = Counter(draw_tasks(tasks, states, body.n, rng))
    out: list[GeneratedProblem] = []
    for task in tasks:  # in a fixed order, so a seeded draw is reproducible
        k = counts.get(task, 0)
        if not k:
            continue
        levels = await asyncio.to_thread(procedural.level_count, task)
        # A task without a usable curriculum stays at level 0: its pass rate still weighs it.
        level = min(states[task].level, levels - 1) if task in states and levels else 0
        seed = rng.randrange(2**32)
        for lv in range(level, -1, -1):  # a level whose generator fails: the one below
            try:
                out += await generate_problems(request, task, {}, seed, k, 0, lv, body.instruction)
                break
            except InvalidRequest:
                if lv == 0:
                    raise
    rng.shuffle(out)
    return ProblemsResponse(problems=out, elapsed_ms=(time.perf_counter() - start) * 1000)
