"""The ``procedural`` environment: a reasoning-gym task with feedback turns.

Each answer is scored by the task's own scorer (the ``procedural`` grader, on the check pool
under its deadline). A right one ends the episode; a wrong one gets feedback (what was read
from the answer, and that it is not right) and another turn, up to ``max_turns``. Every turn's
reward is kept. When the episode ends, its last result is fed to the curriculum once, as a
``/v1/rewards`` item of that problem would be, so ``/v1/curriculum`` learns from sessions too
(a retry after feedback is not counted as a fresh attempt at the level).

The row is either a generated problem (``grader``: a ``procedural`` grader as
``/v1/environments/{task}/problems`` and ``/v1/curriculum/problems`` return it, with its
``prompt``), or what to generate: ``task`` (the family), ``config``, ``level``, ``index``, and
the session's ``seed``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from referee.client.environment_models import DEFAULT_INSTRUCTION
from referee.client.errors import InvalidRequest, ServiceUnavailable
from referee.client.models import ProceduralGrader, RewardItem, RewardResult
from referee.services.environments.curriculum import record_batch
from referee.services.scoring.batch import on_pool, to_result
from referee.services.sessions.episode import Answer, EnvContext, Episode, no_answer
from referee.verifiers import TimedOut, WorkerFailed, procedural

__all__ = ["ProceduralEpisode", "feedback"]

log = logging.getLogger("referee.sessions")
TASK_FIELDS = {
    "task": "The reasoning-gym family to generate a problem of (with config, level, index).",
    "config": "The family's config (optional).",
    "level": "A curriculum level (optional).",
    "index": "Which problem of the seed's sequence (default 0).",
    "grader": "Instead of task: a generated problem's procedural grader (with its prompt).",
    "prompt": "With grader: the problem's text.",
}


def feedback(result: RewardResult, turns_left: int) -> str:
    """What a wrong answer is told: what was read, why it scored what it did, turns left."""
    details = result.details
    extracted = details.get("extracted")
    outcome = details.get("outcome", "wrong")
    if outcome == "no_answer" or extracted is None:
        head = "No answer was found in your response."
    else:
        head = f"Your answer {str(extracted)[:200]!r} is not correct"
        head += f" (partial credit {result.score:.2f})." if outcome == "partial" else "."
    reason = details.get("reason")
    if reason and outcome not in ("wrong", "partial", "no_answer"):
        head += f" ({str(reason)[:300]})"
    plural = "s" if turns_left != 1 else ""
    return f"{head} Try again: {turns_left} attempt{plural} left. {DEFAULT_INSTRUCTION}"


class ProceduralEpisode(Episode):
    tools = ()

    def __init__(self, ctx: EnvContext, task: dict[str, Any], seed: int | None) -> None:
        self.ctx = ctx
        self.row = task
        self.seed = seed if seed is not None else 0
        self.grader: dict[str, Any] = {}
        self.prompt = ""
        self.last_answer: str | None = None
        self.last_result: RewardResult | None = None
        self.recorded = False

    async def open(self) -> str:
        if not await asyncio.to_thread(procedural.available):
            raise ServiceUnavailable(
                "the procedural environment needs reasoning-gym: "
                "pip install 'referee[environments]'"
            )
        if "grader" in self.row:
            try:
                grader = ProceduralGrader.model_validate(self.row["grader"])
            except ValueError as exc:
                raise InvalidRequest(f"task.grader: not a procedural grader ({exc})") from exc
            prompt = self.row.get("prompt") or self.row.get("question")
            if not isinstance(prompt, str) or not prompt:
                raise InvalidRequest("task.prompt: a generated problem comes with its prompt")
            self.grader, self.prompt = grader.model_dump(), prompt
            return self.prompt
        return await self._generate()

    async def _generate(self) -> str:
        name, config = self.row.get("task"), self.row.get("config") or {}
        level, index = self.row.get("level"), self.row.get("index", 0)
        if not isinstance(name, str) or not isinstance(config, dict):
            raise InvalidRequest("task.task: the procedural environment needs a family name")
        if not isinstance(index, int) or index < 0 or not (level is None or isinstance(level, int)):
            raise InvalidRequest("task.index and task.level must be non-negative integers")
        if name not in await asyncio.to_thread(procedural.family_names):
            raise InvalidRequest(f"task.task: unknown family {name!r} (GET /v1/environments)")
        try:
            if level is not None:
                config = await asyncio.to_thread(procedural.config_at_level, name, level, config)
        except procedural.ProceduralError as exc:
            raise InvalidRequest(str(exc)) from exc
        [out] = await self.ctx.scorer.pool.amap(
            procedural.generate,
            [(name, config, self.seed, 1, index)],
            timeout_s=self.ctx.settings.environments_timeout_s,
        )
        if isinstance(out, TimedOut | WorkerFailed):
            why = "took too long" if isinstance(out, TimedOut) else out.reason
            raise InvalidRequest(f"the {name!r} generator failed with this config: {why}")
        problem = out[0]
        self.grader = ProceduralGrader(
            task=name, entry=problem["entry"], config=config, level=level
        ).model_dump()
        self.prompt = f"{problem['question']}\n\n{DEFAULT_INSTRUCTION}"
        return self.prompt

    async def _score(self, item_id: str, text: str) -> RewardResult:
        settings = self.ctx.settings
        [out] = await on_pool(
            self.ctx.scorer.pool,
            [self.grader],
            [text],
            settings.math_timeout_s,
            settings.procedural_timeout_s,
        )
        return to_result(item_id, out)

    async def answer(self, text: str, turn: int, last_turn: bool) -> Answer:
        result = await self._score(f"turn-{turn}", text)
        self.last_answer, self.last_result = text, result
        solved = (result.score or 0.0) >= 1.0
        ended = solved or last_turn or not result.valid
        if ended:
            await self._record(text, result)
        observation = None
        if not ended:
            observation = feedback(result, self.max_turns - turn - 1)
        return Answer(
            reward=result.score or 0.0,
            terminated=solved or not result.valid,
            result=result,
            observation=observation,
        )

    async def _record(self, text: str, result: RewardResult) -> None:
        """The episode's result, once, to the curriculum (a store outage costs no reward)."""
        store = self.ctx.scorer.curriculum
        if store is None or self.recorded:
            return
        self.recorded = True
        item = RewardItem.model_validate({"id": "episode", "response": text, "grader": self.grader})
        try:
            await record_batch(store, [item], [result], 1.0)
        except Exception:
            log.exception("the curriculum could not record this session")

    async def verify(self, text: str | None) -> RewardResult:
        if text is not None:
            return await self._score("final", text)
        if self.last_result is not None:
            return self.last_result.model_copy(update={"id": "final"})
        return no_answer("the session has no answer")
