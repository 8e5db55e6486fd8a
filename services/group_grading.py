"""Group-level graders (``majority_vote``, ``length_penalty``) in a reward batch.

These graders score an item from its whole group (the G rollouts of one prompt, items sharing
``group``), so they are resolved before the per-item pool step, the way judge leaves are: every
group leaf (top level or inside ``weighted``) is replaced by a ``precomputed`` node (score,
details) that the ordinary grading path then combines.

- ``majority_vote`` (TTRL): one :func:`referee.verifiers.consensus.majority_vote` per group and
  option set, on the check pool under a deadline of ``timeout_s`` per response.
- ``length_penalty`` (ALP): the inner graders of all such leaves are scored first as one batch
  through the full pipeline (``score_inner``: math, code, judges, other group graders), then each
  group's pass rate sets the penalty (:func:`referee.verifiers.length_penalty`).

An item without ``group``, a group of one sample (outcome ``group_too_small``: what a
per-sample route such as OpenRLHF's or slime's gives a group grader), a vote that overran its
deadline, an inner grader with no score: reported on that item (``score`` None or 0 with the
reason, ``valid`` false), never by failing the batch and never as a silent score.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from referee.client.models import RewardItem, RewardResult, RewardsResponse
from referee.verifiers import CheckPool, TimedOut, WorkerFailed
from referee.verifiers.consensus import majority_vote
from referee.verifiers.length_penalty import apply_length_penalty, length_of, pass_rate
from referee.verifiers.registry import math_config
from referee.verifiers.tree import Path, has_type, leaves, replace

__all__ = [
    "GROUP_TYPES",
    "has_group_grader",
    "resolve_group_leaves",
    "too_small",
    "vote_scores",
]

GROUP_TYPES = {"majority_vote", "length_penalty"}
ScoreInner = Callable[[Sequence[RewardItem]], Awaitable[RewardsResponse]]
_NO_GROUP = "{kind} scores an item against its group: set `group` on the G rollouts of a prompt"


def too_small(kind: str) -> dict[str, Any]:
    """The details of a group leaf whose group holds one sample: not a score (``valid`` false).
    A per-sample route (OpenRLHF sends one sample per request, slime always one) gets this."""
    return {
        "outcome": "group_too_small",
        "error": f"{kind} scores a sample against the other samples of its group, and this "
        "group has one: send the G rollouts of a prompt in one request (/v1/rewards with "
        "`group`, veRL's batch reward function)",
    }


def has_group_grader(grader: dict[str, Any]) -> bool:
    return has_type(grader, GROUP_TYPES)


def _node(kind: str, score: float | None, details: dict[str, Any]) -> dict[str, Any]:
    return {"type": "precomputed", "of": kind, "score": score, "details": details}


def _options(leaf: dict[str, Any]) -> str:
    return json.dumps(leaf, sort_keys=True)


def vote_scores(
    responses: list[str], options: dict[str, Any]
) -> list[tuple[float | None, dict[str, Any]]]:
    """One group's majority vote as (score, details) per response (runs in a pool worker)."""
    vote = majority_vote(responses, math_config(options))
    scores = vote.scores(options.get("min_share", 0.0))
    summary = vote.to_dict()
    out: list[tuple[float | None, dict[str, Any]]] = []
    for score, member, extracted in zip(scores, vote.members, vote.extracted, strict=True):
        if vote.majority is None:
            outcome = "no_consensus"
            reason = "no response of the group has a readable final answer"
        elif score is None:
            outcome = "no_consensus"
            reason = f"the majority holds {vote.share:.0%} of the group, below min_share"
        elif member is None:
            outcome, reason = "no_answer", "no final answer found (or several different ones)"
        elif score == 1.0:
            outcome, reason = "majority", None
        else:
            outcome, reason = "minority", "not the answer most of the group agrees on"
        details = {
            "outcome": outcome,
            "extracted": extracted,
            "pseudo_reference": vote.answer,
            "votes": vote.votes,
            "share": summary["share"],
            "clusters": len(summary["clusters"]),
        }
        if reason:
            details["reason"] = reason
        out.append((score, details))
    return out


async def _resolve_votes(
    members: dict[tuple[str, str], list[tuple[int, Path, dict[str, Any]]]],
    items: Sequence[RewardItem],
    pool: CheckPool,
    timeout_s: float,
) -> dict[tuple[int, Path], dict[str, Any]]:
    keys = list(members)
    args = [([items[i].response for i, _p, _l in members[k]], members[k][0][2]) for k in keys]
    deadlines = [timeout_s * max(1, len(a[0])) for a in args]
    outcomes = await pool.amap(vote_scores, args, timeout_s=deadlines)
    nodes: dict[tuple[int, Path], dict[str, Any]] = {}
    for key, outcome in zip(keys, outcomes, strict=True):
        for n, (i, path, _leaf) in enumerate(members[key]):
            if isinstance(outcome, TimedOut):
                node = _node(
                    "majority_vote",
                    0.0,
                    {
                        "outcome": "timeout",
                        "error": f"the vote did not finish within {outcome.timeout_s:g} s",
                    },
                )
            elif isinstance(outcome, WorkerFailed):
                node = _node("majority_vote", 0.0, {"outcome": "error", "error": outcome.reason})
            else:
                score, details = outcome[n]
                node = _node("majority_vote", score, details)
            nodes[(i, path)] = node
    return nodes


async def _resolve_penalties(
    leaves: list[tuple[int, Path, dict[str, Any]]],
    items: Sequence[RewardItem],
    pass_threshold: float,
    score_inner: ScoreInner,
) -> dict[tuple[int, Path], dict[str, Any]]:
    inner_items = [
        RewardItem.model_validate(
            {
                "id": f"{n}",
                "prompt": items[i].prompt,
                "response": items[i].response,
                "grader": leaf["grader"],
                "group": items[i].group,
            }
        )
        for n, (i, _path, leaf) in enumerate(leaves)
    ]
    inner: list[RewardResult] = (await score_inner(inner_items)).rewards
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for n, (i, _path, leaf) in enumerate(leaves):
        groups[(str(items[i].group), _options(leaf))].append(n)
    nodes: dict[tuple[int, Path], dict[str, Any]] = {}
    for members in groups.values():
        leaf = leaves[members[0]][2]
        threshold = leaf.get("pass_threshold")
        scores = [inner[n].score for n in members]
        lengths = [length_of(items[leaves[n][0]].response, leaf["unit"]) for n in members]
        penalised = apply_length_penalty(
            scores,
            lengths,
            beta=leaf["beta"],
            max_length=leaf["max_length"],
            mode=leaf["mode"],
            threshold=pass_threshold if threshold is None else threshold,
            min_budget=leaf.get("min_budget"),
            max_budget=leaf.get("max_budget"),
        )
        rate = pass_rate(scores, pass_threshold if threshold is None else threshold)
        for n, score, length in zip(members, penalised, lengths, strict=True):
            i, path, _leaf = leaves[n]
            base = inner[n]
            details: dict[str, Any] = {
                "outcome": "penalised" if base.score is not None else "incomplete",
                "base_score": base.score,
                "length": length,
                "group_pass_rate": rate,
                "inner": base.details,
            }
            if base.score is None:
                details["reason"] = "the inner grader has no score (see inner)"
            nodes[(i, path)] = _node("length_penalty", score, details)
    return nodes


async def resolve_group_leaves(
    graders: list[dict[str, Any]],
    items: Sequence[RewardItem],
    pool: CheckPool,
    timeout_s: float,
    pass_threshold: float,
    score_inner: ScoreInner,
) -> list[dict[str, Any]]:
    """``graders`` with every group leaf replaced by its ``precomputed`` result."""
    votes: dict[tuple[str, str], list[tuple[int, Path, dict[str, Any]]]] = defaultdict(list)
    penalties: list[tuple[int, Path, dict[str, Any]]] = []
    nodes: dict[tuple[int, Path], dict[str, Any]] = {}
    for i, grader in enumerate(graders):
        for path, leaf in leaves(grader, GROUP_TYPES):
            group = items[i].group
            if group is None:
                error = {"outcome": "error", "error": _NO_GROUP.format(kind=leaf["type"])}
                nodes[(i, path)] = _node(leaf["type"], None, error)
            elif leaf["type"] == "majority_vote":
                votes[(group, _options(leaf))].append((i, path, leaf))
            else:
                penalties.append((i, path, leaf))
    for key in [k for k, members in votes.items() if len(members) < 2]:
        for i, path, leaf in votes.pop(key):
            nodes[(i, path)] = _node(leaf["type"], None, too_small(leaf["type"]))
    sizes: dict[tuple[str, str], int] = defaultdict(int)
    for i, _path, leaf in penalties:
        sizes[(str(items[i].group), _options(leaf))] += 1
    kept = []
    for i, path, leaf in penalties:
        if sizes[(str(items[i].group), _options(leaf))] < 2:
            nodes[(i, path)] = _node(leaf["type"], None, too_small(leaf["type"]))
        else:
            kept.append((i, path, leaf))
    penalties = kept
    if votes:
        nodes.update(await _resolve_votes(votes, items, pool, timeout_s))
    if penalties:
        nodes.update(await _resolve_penalties(penalties, items, pass_threshold, score_inner))
    resolved = list(graders)
    for (i, path), node in nodes.items():
        resolved[i] = replace(resolved[i], path, node)
    return resolved
