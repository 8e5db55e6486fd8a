"""Scoring a batch of reward items on the check pool, with per-group statistics.

Every item runs in a pool worker under its own deadline (``math_timeout_s`` per math check it
contains). A timeout or a worker failure is reported on that item (score 0, ``details.outcome``
``timeout`` or ``error``, ``details.error``), never by failing the batch. Items with ``code``
graders first run their programs on the sandbox executor (``code_grading``), at the same time
as the other items run on the pool; a batch with code items on a server without isolation is
refused as a whole (503), since that is the service's fault, not the items'.
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from referee.client.errors import ServiceUnavailable
from referee.client.models import GroupStats, RewardItem, RewardResult, RewardsResponse
from referee.genrm.backend import LLMBackend
from referee.genrm.prm import RolloutCache
from referee.services.code_grading import has_code, resolve_code_leaves
from referee.services.grader_tree import has_type
from referee.services.grading import item_deadline, score_item
from referee.services.group_grading import has_group_grader, resolve_group_leaves
from referee.services.judge_grading import has_judge, require_judge, resolve_judge_leaves
from referee.services.metrics import Metrics
from referee.services.openai_graders import has_openai, lower
from referee.services.prm_grading import has_prm, pool_check, require_policy, resolve_prm_leaves
from referee.services.python_grading import resolve_python_leaves
from referee.services.sandbox_executor import SandboxExecutor
from referee.verifiers import CheckPool, TimedOut, WorkerFailed

log = logging.getLogger("referee.rewards")

__all__ = ["PRMOptions", "group_stats", "score_batch", "to_result"]


@dataclass(slots=True)
class PRMOptions:
    """How ``prm_mc`` leaves run: the policy backend, the shared rollout cache, the rollout
    budget (``/v1/rewards``: the synchronous limit; jobs: none), progress, error handling."""

    policy: LLMBackend | None = None
    cache: RolloutCache | None = None
    budget: int | None = None
    progress: Callable[[int], None] | None = None
    propagate_errors: bool = False


def to_result(item_id: str, grader_type: str, outcome: Any) -> RewardResult:
    if isinstance(outcome, TimedOut):
        return RewardResult(
            id=item_id,
            score=0.0,
            details={
                "outcome": "timeout",
                "error": f"the check did not finish within {outcome.timeout_s:g} s and was stopped",
            },
        )
    if isinstance(outcome, WorkerFailed):
        return RewardResult(
            id=item_id, score=0.0, details={"outcome": "error", "error": outcome.reason}
        )
    score, details = outcome
    return RewardResult(id=item_id, score=score, details=details)


def _mean(results: Sequence[RewardResult]) -> float:
    scores = [r.score for r in results if r.score is not None and r.valid]
    return statistics.fmean(scores) if scores else 0.0


def group_stats(
    items: Sequence[RewardItem], results: Sequence[RewardResult], pass_threshold: float
) -> list[GroupStats]:
    groups: dict[str, list[float]] = {}
    invalid: dict[str, int] = {}
    for item, res in zip(items, results, strict=True):
        if item.group is not None:
            groups.setdefault(item.group, [])
            if res.score is not None and res.valid:  # referee's failures are left out
                groups[item.group].append(res.score)
            else:
                invalid[item.group] = invalid.get(item.group, 0) + 1
    stats = []
    for name, scores in groups.items():
        if not scores:
            continue
        passes = sum(1 for s in scores if s >= pass_threshold)
        stats.append(
            GroupStats(
                group=name,
                n=len(scores),
                invalid=invalid.get(name, 0),
                mean=statistics.fmean(scores),
                std=statistics.pstdev(scores) if len(scores) > 1 else 0.0,
                pass_rate=passes / len(scores),
                all_pass=passes == len(scores),
                all_fail=passes == 0,
            )
        )
    return stats


async def _on_pool(
    pool: CheckPool,
    graders: list[dict[str, Any]],
    responses: list[str],
    timeout_s: float,
    procedural_timeout_s: float | None = None,
) -> list[Any]:
    deadlines = [item_deadline(g, timeout_s, procedural_timeout_s) for g in graders]
    return await pool.amap(
        score_item, list(zip(graders, responses, strict=True)), timeout_s=deadlines
    )


async def _with_code(
    pool: CheckPool,
    sandbox: SandboxExecutor,
    graders: list[dict[str, Any]],
    responses: list[str],
    timeout_s: float,
    procedural_timeout_s: float | None = None,
) -> list[Any]:
    """Code leaves on the sandbox executor, then what is left of each grader on the pool."""
    resolved = await asyncio.gather(
        *(resolve_code_leaves(g, r, sandbox) for g, r in zip(graders, responses, strict=True)),
        return_exceptions=True,
    )
    outcomes: list[Any] = [None] * len(graders)
    rest: list[int] = []
    for i, res in enumerate(resolved):
        if isinstance(res, BaseException):
            log.error("code grading failed", exc_info=res)
            outcomes[i] = WorkerFailed(f"code grading failed: {type(res).__name__}")
        elif res["type"] == "precomputed":  # a python grader's fault scores None
            score = res["score"]
            outcomes[i] = (None if score is None else float(score), dict(res["details"]))
        else:
            rest.append(i)
    if rest:
        done = await _on_pool(
            pool,
            [resolved[i] for i in rest],  # type: ignore[misc]
            [responses[i] for i in rest],
            timeout_s,
            procedural_timeout_s,
        )
        for i, out in zip(rest, done, strict=True):
            outcomes[i] = out
    return outcomes


async def score_batch(
    pool: CheckPool,
    items: Sequence[RewardItem],
    timeout_s: float,
    pass_threshold: float,
    metrics: Metrics | None = None,
    sandbox: SandboxExecutor | None = None,
    judge: LLMBackend | None = None,
    judge_templates: str | None = None,
    prm: PRMOptions | None = None,
    procedural_timeout_s: float | None = None,
) -> RewardsResponse:
    """``procedural_timeout_s``: the least deadline of an item with a procedural leaf
    (default ``grading.PROCEDURAL_TIMEOUT_S``)."""
    start = time.perf_counter()
    graders = [item.grader.model_dump() for item in items]
    responses = [item.response for item in items]
    if any(has_group_grader(g) for g in graders):  # majority_vote, length_penalty: per group
        graders = await resolve_group_leaves(
            graders,
            items,
            pool,
            timeout_s,
            pass_threshold,
            lambda inner: score_batch(
                pool, inner, timeout_s, pass_threshold, None, sandbox, judge, judge_templates, prm
            ),
        )
    if any(has_openai(g) for g in graders):  # OpenAI's multi/score_model/label_model objects
        graders = [lower(g) for g in graders]
    if any(has_judge(g) for g in graders):
        graders = await resolve_judge_leaves(graders, items, require_judge(judge), judge_templates)
    if any(has_prm(g) for g in graders):
        prm = prm or PRMOptions()
        graders = await resolve_prm_leaves(
            graders,
            items,
            require_policy(prm.policy),
            pool_check(pool, timeout_s),
            cache=prm.cache,
            budget=prm.budget,
            progress=prm.progress,
            propagate_errors=prm.propagate_errors,
        )
    if sandbox is not None and any(has_type(g, {"python"}) for g in graders):
        graders = await resolve_python_leaves(graders, responses, sandbox)
    code = [i for i, g in enumerate(graders) if has_code(g)]
    if code:
        if sandbox is None:
            raise ServiceUnavailable("code execution is not enabled on this server")
        sandbox.require_backend()
    code_set = set(code)
    plain = [i for i in range(len(items)) if i not in code_set]
    plain_out, code_out = await asyncio.gather(
        _on_pool(
            pool,
            [graders[i] for i in plain],
            [responses[i] for i in plain],
            timeout_s,
            procedural_timeout_s,
        ),
        _with_code(
            pool,
            sandbox,
            [graders[i] for i in code],
            [responses[i] for i in code],
            timeout_s,
            procedural_timeout_s,
        )
        if code and sandbox is not None
        else asyncio.sleep(0, result=[]),
    )
    outcomes: list[Any] = [None] * len(items)
    for i, out in zip(plain, plain_out, strict=True):
        outcomes[i] = out
    for i, out in zip(code, code_out, strict=True):
        outcomes[i] = out
    results = [
        to_result(item.id, g["type"], out)
        for item, g, out in zip(items, graders, outcomes, strict=True)
    ]
    if metrics is not None:
        for g, res in zip(graders, results, strict=True):
            outcome = str(res.details.get("outcome", "unknown"))
            metrics.items.labels(g.get("of", g["type"]), outcome).inc()  # multi: its own
            if outcome == "timeout":
                metrics.check_timeouts.inc()
    return RewardsResponse(
        rewards=results,
        groups=group_stats(items, results, pass_threshold),
        mean=_mean(results),
        elapsed_ms=(time.perf_counter() - start) * 1000,
    )
