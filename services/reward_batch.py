"""Scoring a batch of reward items on the check pool, with per-group statistics.

Every item runs in a pool worker under its own deadline (``math_timeout_s`` per math check it
contains). A timeout or a worker failure is reported on that item (score 0, ``details.outcome``
``timeout`` or ``error``, ``details.error``), never by failing the batch.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Any

from referee.client.models import GroupStats, RewardItem, RewardResult, RewardsResponse
from referee.services.grading import count_math_leaves, score_item
from referee.services.metrics import Metrics
from referee.verifiers import CheckPool, TimedOut, WorkerFailed

__all__ = ["group_stats", "score_batch", "to_result"]


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


def group_stats(
    items: Sequence[RewardItem], results: Sequence[RewardResult], pass_threshold: float
) -> list[GroupStats]:
    groups: dict[str, list[float]] = {}
    for item, res in zip(items, results, strict=True):
        if item.group is not None:
            groups.setdefault(item.group, []).append(res.score)
    stats = []
    for name, scores in groups.items():
        passes = sum(1 for s in scores if s >= pass_threshold)
        stats.append(
            GroupStats(
                group=name,
                n=len(scores),
                mean=statistics.fmean(scores),
                std=statistics.pstdev(scores) if len(scores) > 1 else 0.0,
                pass_rate=passes / len(scores),
                all_pass=passes == len(scores),
                all_fail=passes == 0,
            )
        )
    return stats


async def score_batch(
    pool: CheckPool,
    items: Sequence[RewardItem],
    timeout_s: float,
    pass_threshold: float,
    metrics: Metrics | None = None,
) -> RewardsResponse:
    start = time.perf_counter()
    graders = [item.grader.model_dump() for item in items]
    deadlines = [timeout_s * max(1, count_math_leaves(g)) for g in graders]
    outcomes = await pool.amap(
        score_item,
        [(g, item.response) for g, item in zip(graders, items, strict=True)],
        timeout_s=deadlines,
    )
    results = [
        to_result(item.id, g["type"], out)
        for item, g, out in zip(items, graders, outcomes, strict=True)
    ]
    if metrics is not None:
        for g, res in zip(graders, results, strict=True):
            outcome = str(res.details.get("outcome", "unknown"))
            metrics.items.labels(g["type"], outcome).inc()
            if outcome == "timeout":
                metrics.check_timeouts.inc()
    return RewardsResponse(
        rewards=results,
        groups=group_stats(items, results, pass_threshold),
        mean=statistics.fmean(r.score for r in results) if results else 0.0,
        elapsed_ms=(time.perf_counter() - start) * 1000,
    )
