"""The one scoring object: what a batch of reward items needs, built once from the settings.

    scorer = Scorer.from_settings(settings)   # check pool, sandbox, judge, policy, PRM cache,
    await scorer.start()                      # named graders, curriculum, deadlines
    response = await scorer.score(items, pass_threshold=1.0)
    await scorer.close()

Every entry point scores through it, so an option or a deadline is wired in one place: the
routes (``/v1/rewards`` and the OpenRLHF and slime routes, ``routes/rewards.py``), the job runner
(embedded jobs and the Celery worker, ``jobs/runner.py``), the CLI (``referee rewards``) and the
inner batch of ``length_penalty`` (``scoring/group.py``). A request's batch (:meth:`Scorer.score`)
has the synchronous PRM rollout budget; a job's chunk (:meth:`Scorer.score_job_chunk`) has none,
reports its rollouts and lets a PRM backend's failure raise, so the job can be retried.

The pipeline, stage by stage: named graders expanded; group leaves (majority vote, the length
penalty over its inner grader, scored by this same object); OpenAI-style graders lowered; judge
leaves; ``prm_mc`` leaves; ``python`` graders and code leaves on the sandbox executor, beside
the other items on the check pool; per-group statistics; metrics; the procedural items' pass
rates fed to the curriculum.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from referee.client.errors import ServiceUnavailable
from referee.client.models import RewardItem, RewardsResponse
from referee.genrm.backend import LLMBackend
from referee.genrm.prm import MemoryRolloutCache, RolloutCache
from referee.services.environments.curriculum import (
    CurriculumStore,
    curriculum_from_settings,
    procedural_outcomes,
    record_batch,
)
from referee.services.execution.slots import SandboxExecutor
from referee.services.metrics import Metrics
from referee.services.scoring.batch import (
    PRMOptions,
    group_stats,
    mean_score,
    on_pool,
    to_result,
    with_code,
)
from referee.services.scoring.code import has_code
from referee.services.scoring.group import has_group_grader, resolve_group_leaves
from referee.services.scoring.judge import has_judge, require_judge, resolve_judge_leaves
from referee.services.scoring.named import GraderRegistry
from referee.services.scoring.openai import has_openai, lower
from referee.services.scoring.prm import has_prm, pool_check, require_policy, resolve_prm_leaves
from referee.services.scoring.python import resolve_python_leaves
from referee.services.scoring.sql_files import resolve_sql_databases, uses_database_files
from referee.services.settings import Settings
from referee.verifiers import CheckPool
from referee.verifiers.math import verify
from referee.verifiers.tree import has_type

__all__ = ["Scorer"]

log = logging.getLogger("referee.rewards")


class Scorer:
    """Scores batches of reward items with the components it holds (see the module doc)."""

    def __init__(
        self,
        settings: Settings,
        pool: CheckPool,
        *,
        sandbox: SandboxExecutor | None = None,
        judge: LLMBackend | None = None,
        policy: LLMBackend | None = None,
        prm_cache: RolloutCache | None = None,
        graders: GraderRegistry | None = None,
        metrics: Metrics | None = None,
        curriculum: CurriculumStore | None = None,
    ) -> None:
        self.settings = settings
        self.pool = pool
        self.sandbox = sandbox
        self.judge = judge
        self.policy = policy
        self.prm_cache = prm_cache
        self.graders = graders or GraderRegistry.from_settings(settings)
        self.metrics = metrics
        self.curriculum = curriculum
        """Procedural items' pass rates go here (``/v1/curriculum``); None: not recorded."""

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        sandbox: bool = True,
        prm_cache: RolloutCache | None = None,
        graders: GraderRegistry | None = None,
        metrics: Metrics | None = None,
        curriculum: bool = True,
    ) -> Scorer:
        """Everything the settings name (blocking: a judge on transformers loads its model).
        ``sandbox=False``: no sandbox executor (code items are refused with a 503)."""
        from referee.services.execution.llm import build_judge, build_policy

        return cls(
            settings,
            CheckPool(
                workers=settings.math_workers,
                timeout_s=settings.math_timeout_s,
                memory_mb=settings.math_memory_mb,
            ),
            sandbox=SandboxExecutor(settings) if sandbox else None,
            judge=build_judge(settings),
            policy=build_policy(settings),
            prm_cache=prm_cache if prm_cache is not None else MemoryRolloutCache(),
            graders=graders,
            metrics=metrics,
            curriculum=curriculum_from_settings(settings) if curriculum else None,
        )

    async def start(self) -> None:
        """Start every check worker now, so the first batch does not pay for it; probe the
        sandbox."""
        await asyncio.gather(
            self.pool.amap(verify, [("1", "1")] * self.settings.math_workers, timeout_s=60.0),
            asyncio.to_thread(self.sandbox.start) if self.sandbox is not None else asyncio.sleep(0),
        )

    async def close(self) -> None:
        if self.curriculum is not None:
            await self.curriculum.close()
        if self.sandbox is not None:
            self.sandbox.close()
        self.pool.close()
        for backend in (self.judge, self.policy):
            if backend is not None:
                await backend.close()

    async def score(
        self, items: Sequence[RewardItem], pass_threshold: float = 1.0, where: str = "items"
    ) -> RewardsResponse:
        """A request's batch, as ``/v1/rewards`` scores it: ``prm_mc`` within the synchronous
        rollout budget. ``where`` names the items in an error about a named grader."""
        prm = PRMOptions(budget=self.settings.prm_sync_max_rollouts)
        return await self._score(items, pass_threshold, where, prm)

    async def score_job_chunk(
        self,
        items: Sequence[RewardItem],
        pass_threshold: float,
        progress: Callable[[int], None] | None = None,
    ) -> RewardsResponse:
        """One chunk of a job: ``prm_mc`` with no rollout budget, ``progress`` told of each
        batch of rollouts, a PRM backend's failure raised (the job is retried)."""
        prm = PRMOptions(budget=None, progress=progress, propagate_errors=True)
        return await self._score(items, pass_threshold, "items", prm)

    async def _score(
        self, items: Sequence[RewardItem], pass_threshold: float, where: str, prm: PRMOptions
    ) -> RewardsResponse:
        expanded = self.graders.expand_items(items, where)  # "named" -> the grader
        response = await self._batch(expanded, pass_threshold, prm, self.metrics)
        if self.curriculum is not None and procedural_outcomes(
            expanded, response.rewards, pass_threshold
        ):
            try:  # the curriculum learns from procedural items; a store outage costs no rewards
                await record_batch(self.curriculum, expanded, response.rewards, pass_threshold)
            except Exception:
                log.exception("the curriculum could not record this batch")
        return response

    async def _batch(
        self,
        items: Sequence[RewardItem],
        pass_threshold: float,
        prm: PRMOptions,
        metrics: Metrics | None,
    ) -> RewardsResponse:
        start = time.perf_counter()
        timeout_s = self.settings.math_timeout_s
        procedural_s = self.settings.procedural_timeout_s
        graders = [item.grader.model_dump() for item in items]
        responses = [item.response for item in items]
        # sql graders naming a server file (length_penalty's inner one: in its inner batch)
        sql_or_inner = {"sql", "length_penalty"}
        if any(has_type(g, sql_or_inner) for g in graders) and any(
            map(uses_database_files, graders)
        ):
            graders = resolve_sql_databases(graders, self.settings.sql_databases_dir)
        if any(has_group_grader(g) for g in graders):  # majority_vote, length_penalty: per group
            graders = await resolve_group_leaves(
                graders,
                items,
                self.pool,
                timeout_s,
                pass_threshold,
                # the inner batch: the same components and deadlines, counted once (no metrics)
                lambda inner: self._batch(inner, pass_threshold, prm, None),
            )
        if any(has_openai(g) for g in graders):  # OpenAI's multi/score_model/label_model objects
            graders = [lower(g) for g in graders]
        if any(has_judge(g) for g in graders):
            graders = await resolve_judge_leaves(
                graders, items, require_judge(self.judge), self.settings.judge_templates_dir
            )
        if any(has_prm(g) for g in graders):
            graders = await resolve_prm_leaves(
                graders,
                items,
                require_policy(self.policy),
                pool_check(self.pool, timeout_s),
                cache=self.prm_cache,
                budget=prm.budget,
                progress=prm.progress,
                propagate_errors=prm.propagate_errors,
            )
        if self.sandbox is not None and any(has_type(g, {"python"}) for g in graders):
            graders = await resolve_python_leaves(graders, responses, self.sandbox)
        code = [i for i, g in enumerate(graders) if has_code(g)]
        if code:
            if self.sandbox is None:
                raise ServiceUnavailable("code execution is not enabled on this server")
            self.sandbox.require_runner()
        code_set = set(code)
        plain = [i for i in range(len(items)) if i not in code_set]
        plain_out, code_out = await asyncio.gather(
            on_pool(
                self.pool,
                [graders[i] for i in plain],
                [responses[i] for i in plain],
                timeout_s,
                procedural_s,
            ),
            with_code(
                self.pool,
                self.sandbox,
                [graders[i] for i in code],
                [responses[i] for i in code],
                timeout_s,
                procedural_s,
            )
            if code and self.sandbox is not None
            else asyncio.sleep(0, result=[]),
        )
        outcomes: list[Any] = [None] * len(items)
        for i, out in zip(plain, plain_out, strict=True):
            outcomes[i] = out
        for i, out in zip(code, code_out, strict=True):
            outcomes[i] = out
        results = [to_result(item.id, out) for item, out in zip(items, outcomes, strict=True)]
        if metrics is not None:  # counted per (kind, outcome): one inc each, not one per item
            counts = collections.Counter(
                (g.get("of", g["type"]), str(res.details.get("outcome", "unknown")))  # multi: own
                for g, res in zip(graders, results, strict=True)
            )
            for (kind, outcome), n in counts.items():
                metrics.items.labels(kind, outcome).inc(n)
                if outcome == "timeout":
                    metrics.check_timeouts.inc(n)
        return RewardsResponse(
            rewards=results,
            groups=group_stats(items, results, pass_threshold),
            mean=mean_score(results),
            elapsed_ms=(time.perf_counter() - start) * 1000,
        )
