"""``prm_mc`` graders in a reward batch: Monte Carlo step values from the policy backend.

Every ``prm_mc`` leaf (top level or inside ``weighted``) is collected; leaves with the same
options are estimated together by one :class:`~referee.genrm.prm.MonteCarloPRM` call, so the
policy backend gets large batches and identical prefixes are sampled once. Rollout answers are
checked on the server's check pool (each check under its deadline). Each leaf becomes a
``precomputed`` node whose score aggregates the step values (``min`` by default) and whose
details carry the steps, the first wrong step and the rollouts used.

In ``/v1/rewards`` a batch may plan at most ``REFEREE_PRM_SYNC_MAX_ROLLOUTS`` rollouts; more is
refused (413) with a pointer to ``POST /v1/jobs``, where there is no such budget.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from referee.client.errors import PayloadTooLarge, ServiceUnavailable
from referee.client.models import RewardItem
from referee.genrm.backend import LLMBackend
from referee.genrm.prm import (
    AnswerCheck,
    MonteCarloPRM,
    PRMConfig,
    PRMInput,
    PRMResult,
    RolloutCache,
    check_answer,
)
from referee.genrm.steps import split_steps
from referee.services.judge_grading import prompt_text
from referee.verifiers import CheckPool
from referee.verifiers.tree import Path, has_type, leaves, replace

__all__ = [
    "PRM_TYPE",
    "has_prm",
    "planned_rollouts",
    "pool_check",
    "require_policy",
    "resolve_prm_leaves",
]

log = logging.getLogger("referee.prm")
PRM_TYPE = "prm_mc"
NO_POLICY = (
    "no policy model is configured for prm_mc graders: set REFEREE_POLICY_BACKEND=openai with "
    "REFEREE_POLICY_BASE_URL and REFEREE_POLICY_MODEL (any OpenAI-compatible server, e.g. "
    "`vllm serve MODEL`), or REFEREE_POLICY_BACKEND=transformers with "
    "REFEREE_POLICY_MODEL=/path/to/local/model"
)
_CONFIG_FIELDS: tuple[str, ...] = (
    "n_rollouts",
    "mode",
    "split",
    "delimiter",
    "max_tokens",
    "temperature",
)
_CONFIG_FIELDS += ("top_p", "seed")


def has_prm(grader: dict[str, Any]) -> bool:
    return has_type(grader, (PRM_TYPE,))


def require_policy(backend: LLMBackend | None) -> LLMBackend:
    if backend is None:
        raise ServiceUnavailable(NO_POLICY)
    return backend


def pool_check(pool: CheckPool, timeout_s: float) -> AnswerCheck:
    """Answer checks on the check pool; a check that overran or failed counts as wrong."""

    async def check(pairs: Sequence[tuple[str, str]]) -> list[bool]:
        outcomes = await pool.amap(check_answer, list(pairs), timeout_s=timeout_s)
        return [out is True for out in outcomes]

    return check


def _config(leaf: dict[str, Any]) -> PRMConfig:
    return PRMConfig(**{k: leaf[k] for k in _CONFIG_FIELDS if leaf.get(k) is not None})


def planned_rollouts(graders: Sequence[dict[str, Any]], responses: Sequence[str]) -> int:
    """The most rollouts the ``prm_mc`` leaves of a batch can cost."""
    total = 0
    for grader, response in zip(graders, responses, strict=True):
        for _path, leaf in leaves(grader, (PRM_TYPE,)):
            config = _config(leaf)
            total += config.planned_rollouts(
                len(split_steps(response, config.split, config.delimiter))
            )
    return total


def _score(result: PRMResult, aggregate: str) -> float | None:
    labels = [s.value if s.value is not None else s.hard for s in result.steps]
    if result.mode == "binary_search":
        labels = [s.hard for s in result.steps]
    known = [float(v) for v in labels if v is not None]
    if not known:
        return float(result.final_correct)
    if aggregate == "mean":
        return sum(known) / len(known)
    if aggregate == "last":
        return known[-1]
    return min(known)


def _node(result: PRMResult | None, aggregate: str, error: str | None = None) -> dict[str, Any]:
    if result is None:
        return {
            "type": "precomputed",
            "of": PRM_TYPE,
            "score": None,
            "details": {"outcome": "error", "error": error or "PRM estimation failed"},
        }
    details = result.to_dict()
    details["outcome"] = "prm"
    details["aggregate"] = aggregate
    return {
        "type": "precomputed",
        "of": PRM_TYPE,
        "score": _score(result, aggregate),
        "details": details,
    }


async def resolve_prm_leaves(
    graders: list[dict[str, Any]],
    items: Sequence[RewardItem],
    backend: LLMBackend,
    check: AnswerCheck,
    cache: RolloutCache | None = None,
    budget: int | None = None,
    progress: Callable[[int], None] | None = None,
    propagate_errors: bool = False,
) -> list[dict[str, Any]]:
    """``graders`` with every ``prm_mc`` leaf replaced by its ``precomputed`` result.

    ``budget``: the most rollouts the batch may plan (None: no limit). ``propagate_errors``: a
    backend failure raises (a job is retried) instead of failing the items it touched.
    """
    if budget is not None:
        planned = planned_rollouts(graders, [i.response for i in items])
        if planned > budget:
            raise PayloadTooLarge(
                f"the prm_mc graders of this batch may need {planned} rollouts; a synchronous "
                f"/v1/rewards call allows {budget}: submit the batch as a job (POST /v1/jobs, "
                "or the SDK's submit()), or lower n_rollouts"
            )
    by_options: dict[str, list[tuple[int, Path, dict[str, Any]]]] = defaultdict(list)
    for i, grader in enumerate(graders):
        for path, leaf in leaves(grader, (PRM_TYPE,)):
            options = {k: leaf.get(k) for k in (*_CONFIG_FIELDS, "aggregate")}
            by_options[json.dumps(options, sort_keys=True)].append((i, path, leaf))
    resolved = list(graders)
    prm = MonteCarloPRM(backend, check=check, cache=cache)
    for members in by_options.values():
        leaf0 = members[0][2]
        inputs = [
            PRMInput(
                leaf.get("problem") or prompt_text(items[i].prompt),
                items[i].response,
                leaf["reference"],
            )
            for i, _path, leaf in members
        ]
        aggregate = leaf0.get("aggregate", "min")
        try:
            results: list[PRMResult | None] = list(
                await prm.estimate(inputs, _config(leaf0), progress)
            )
            error = None
        except Exception as exc:
            if propagate_errors:
                raise
            log.warning("PRM estimation failed: %s", exc)
            results = [None] * len(members)
            error = f"the policy backend failed: {exc}"[:300]
        for (i, path, _leaf), result in zip(members, results, strict=True):
            resolved[i] = replace(resolved[i], path, _node(result, aggregate, error))
    return resolved
