"""Judge graders (``rubric``, ``genrm``) in a reward batch: resolved on the judge backend first.

Every judge leaf of the batch (top level or inside ``weighted``) is collected; leaves that can
share a call are judged together (pointwise and rubric leaves with the same options in one
batched call; pairwise leaves per ``group``), and each leaf is replaced by a ``precomputed`` node
(score, details) that the ordinary grading path then combines. A judge failure (server down,
unreadable verdict) gives that leaf ``score=None`` with the reason, never a failed batch.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from referee.client.errors import ServiceUnavailable
from referee.client.models import RewardItem
from referee.genrm.backend import LLMBackend
from referee.genrm.judges import (
    Criterion,
    JudgeItem,
    JudgeResult,
    judge_pairwise,
    judge_pointwise,
    judge_rubric,
)
from referee.services.group_grading import too_small
from referee.verifiers.tree import Path, has_type, leaves, replace

__all__ = ["JUDGE_TYPES", "has_judge", "prompt_text", "require_judge", "resolve_judge_leaves"]

log = logging.getLogger("referee.judges")
JUDGE_TYPES = {"rubric", "genrm"}
NO_JUDGE = (
    "no judge model is configured: set REFEREE_JUDGE_BACKEND=openai with REFEREE_JUDGE_BASE_URL "
    "and REFEREE_JUDGE_MODEL (any OpenAI-compatible server, e.g. `vllm serve MODEL`), "
    "REFEREE_JUDGE_BACKEND=vllm with REFEREE_JUDGE_MODEL=/path/or/name (vLLM in-process on a GPU), "
    "or REFEREE_JUDGE_BACKEND=transformers with REFEREE_JUDGE_MODEL=/path/to/local/model"
)


def has_judge(grader: dict[str, Any]) -> bool:
    return has_type(grader, JUDGE_TYPES)


def require_judge(backend: LLMBackend | None) -> LLMBackend:
    if backend is None:
        raise ServiceUnavailable(NO_JUDGE)
    return backend


def prompt_text(prompt: str | list[dict[str, Any]]) -> str:
    if isinstance(prompt, str):
        return prompt
    return "\n".join(f"{m.get('role', 'user')}: {m.get('content', '')}" for m in prompt)


def _node(kind: str, result: JudgeResult) -> dict[str, Any]:
    return {"type": "precomputed", "of": kind, "score": result.score, "details": result.to_dict()}


def _options(leaf: dict[str, Any]) -> str:
    keep = {k: v for k, v in leaf.items() if k != "reference"}
    return json.dumps(keep, sort_keys=True)


async def _judge_group(
    backend: LLMBackend,
    kind: str,
    leaf: dict[str, Any],
    items: list[JudgeItem],
    template_dir: str | None,
) -> list[JudgeResult]:
    if kind == "rubric":
        criteria = [Criterion(c["text"], c.get("weight", 1.0)) for c in leaf["criteria"]]
        return await judge_rubric(
            backend,
            items,
            criteria,
            mode=leaf.get("mode", "explicit"),
            template_dir=template_dir,
            structured=leaf.get("structured_verdict", False),
        )
    return await judge_pointwise(
        backend,
        items,
        mode=leaf.get("verdict", "binary"),
        samples=leaf.get("samples", 1),
        aggregate=leaf.get("aggregate", "mean"),
        label_probs=leaf.get("label_probs", False),
        template_dir=template_dir,
        structured=leaf.get("structured_verdict", False),
    )


async def resolve_judge_leaves(
    graders: list[dict[str, Any]],
    items: Sequence[RewardItem],
    backend: LLMBackend,
    template_dir: str | None = None,
) -> list[dict[str, Any]]:
    """``graders`` with every judge leaf replaced by its ``precomputed`` result."""
    pointwise: dict[tuple[str, str], list[tuple[int, Path, dict[str, Any]]]] = defaultdict(list)
    pairwise: dict[tuple[str, str], list[tuple[int, Path, dict[str, Any]]]] = defaultdict(list)
    resolved = list(graders)
    for i, grader in enumerate(graders):
        for path, leaf in leaves(grader, JUDGE_TYPES):
            if leaf["type"] == "genrm" and leaf.get("mode") == "pairwise":
                group = items[i].group
                if group is None:
                    node = _node(
                        "genrm",
                        JudgeResult(
                            None,
                            "error",
                            "pairwise judging compares the responses of one group: set group",
                        ),
                    )
                    resolved[i] = replace(resolved[i], path, node)
                    continue
                pairwise[(group, _options(leaf))].append((i, path, leaf))
            else:
                pointwise[(leaf["type"], _options(leaf))].append((i, path, leaf))

    for (kind, _), members in pointwise.items():
        judge_items = [
            JudgeItem(prompt_text(items[i].prompt), items[i].response, leaf.get("reference"))
            for i, _p, leaf in members
        ]
        try:
            results = await _judge_group(backend, kind, members[0][2], judge_items, template_dir)
        except Exception as exc:  # a judge server failure is reported on each item it touched
            log.warning("judge call failed: %s", exc)
            results = [
                JudgeResult(None, "judge_error", f"the judge failed: {exc}"[:300]) for _ in members
            ]
        for (i, path, _leaf), result in zip(members, results, strict=True):
            resolved[i] = replace(resolved[i], path, _node(kind, result))

    for (_group, _), members in pairwise.items():
        leaf = members[0][2]
        if len(members) < 2:  # nothing to compare with (a per-sample route)
            [(i, path, _leaf)] = members
            details = too_small("genrm pairwise")
            result = JudgeResult(None, "group_too_small", details["error"])
            resolved[i] = replace(resolved[i], path, _node("genrm", result))
            continue
        try:
            results = await judge_pairwise(
                backend,
                prompt_text(items[members[0][0]].prompt),
                [items[i].response for i, _p, _l in members],
                reference=leaf.get("reference"),
                score=leaf.get("pairwise_score", "win_rate"),
                template_dir=template_dir,
                structured=leaf.get("structured_verdict", False),
            )
        except Exception as exc:
            log.warning("pairwise judge call failed: %s", exc)
            results = [
                JudgeResult(None, "judge_error", f"the judge failed: {exc}"[:300]) for _ in members
            ]
        for (i, path, _leaf), result in zip(members, results, strict=True):
            resolved[i] = replace(resolved[i], path, _node("genrm", result))
    return resolved
