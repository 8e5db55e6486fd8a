"""Majority-vote consensus over the G responses to one prompt: a label-free reward (TTRL).

Test-Time Reinforcement Learning (Zuo et al., 2025) has no reference answer: the answer most of
the group agrees on becomes the pseudo-reference, and each response is rewarded 1 when its final
answer equals it, 0 otherwise. Answers are read as :func:`referee.verifiers.math.verify` reads
them (the same extraction options) and grouped by *mathematical* equivalence, so ``0.5``,
``\\frac{1}{2}`` and ``1/2`` are one vote.

    >>> vote = majority_vote(["... \\\\boxed{4}", "so it is 4", "\\\\boxed{2+2}", "\\\\boxed{5}"])
    >>> vote.answer, vote.votes, vote.scores()
    ('4', 3, [1.0, 1.0, 1.0, 0.0])

Pure (no I/O) but CPU-bound: comparisons go through sympy when the fast paths do not decide,
so the server runs it on its check pool under a deadline. Ties go to the answer seen first.
A response without a readable final answer (or hedging between different ones) casts no vote
and scores 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from referee.verifiers.math.answer_extraction import extract_answer
from referee.verifiers.math.checker import EVAL_ERRORS
from referee.verifiers.math.comparison import equal
from referee.verifiers.math.config import MathConfig
from referee.verifiers.math.guards import Rejected
from referee.verifiers.math.parsing import Unparseable, parse_answer
from referee.verifiers.math.values import Value

__all__ = ["Vote", "majority_vote", "read_answer"]

_ERRORS = (Unparseable, Rejected, *EVAL_ERRORS)
_MISSING = object()


@dataclass(frozen=True, slots=True)
class Vote:
    """The outcome of a majority vote over one group."""

    answer: str | None
    """The majority answer as the first response in its cluster wrote it (None: no votes)."""
    votes: int
    """Responses in the majority cluster."""
    size: int
    """Responses in the group (voters and abstainers)."""
    members: list[int | None]
    """Per response: the index of its cluster in ``clusters``, None when it cast no vote."""
    clusters: list[tuple[str, int]] = field(default_factory=list)
    """(answer, votes) per cluster, in order of first appearance."""
    extracted: list[str | None] = field(default_factory=list)
    """Per response: the final answer read from it."""
    majority: int | None = None
    """Index of the majority cluster."""

    @property
    def share(self) -> float:
        """The majority's share of the whole group (abstainers count against it)."""
        return self.votes / self.size if self.size else 0.0

    def scores(self, min_share: float = 0.0) -> list[float | None]:
        """1.0 for members of the majority, else 0.0; all None when the majority's share is
        below ``min_share`` (no consensus: nothing to learn from) or nobody voted."""
        if self.majority is None or self.share < min_share:
            return [None] * self.size
        return [1.0 if m == self.majority else 0.0 for m in self.members]

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "votes": self.votes,
            "size": self.size,
            "share": self.share,
            "clusters": [list(c) for c in self.clusters],
        }


def read_answer(response: str, config: MathConfig) -> str | None:
    """The response's final answer, or None when it has none (or hedges between several)."""
    found = extract_answer(response, config)
    if found.answer is None:
        return None
    distinct = {c.strip() for c in found.candidates} if config.hedging_is_wrong else set()
    if len(distinct) > 1:
        parsed = [_parse(c, config) for c in distinct]
        first = parsed[0]
        if first is None or any(p is None or not _equal(first, p, config) for p in parsed[1:]):
            return None
    return found.answer.strip()


def _parse(answer: str, config: MathConfig) -> Value | None:
    try:
        return parse_answer(answer, config)
    except _ERRORS:
        return None


def _equal(a: Value, b: Value, config: MathConfig) -> bool:
    try:
        return bool(equal(a, b, config))
    except _ERRORS:
        return False


def majority_vote(responses: Sequence[str], config: MathConfig | None = None) -> Vote:
    """Cluster the responses' final answers by math equivalence and find the largest cluster.

    Each distinct answer string is parsed once and compared with one representative per
    cluster (answers that do not parse only match the same string)."""
    cfg = config or MathConfig()
    extracted = [read_answer(r, cfg) for r in responses]
    reps: list[tuple[str, Value | None]] = []  # representative answer and its parsed value
    counts: list[int] = []
    by_text: dict[str, int] = {}
    members: list[int | None] = []
    for answer in extracted:
        if answer is None:
            members.append(None)
            continue
        cluster = by_text.get(answer)
        if cluster is None:
            value = _parse(answer, cfg)
            if value is not None:
                for k, (_text, rep_value) in enumerate(reps):
                    if rep_value is not None and _equal(rep_value, value, cfg):
                        cluster = k
                        break
            if cluster is None:
                cluster = len(reps)
                reps.append((answer, value))
                counts.append(0)
            by_text[answer] = cluster
        counts[cluster] += 1
        members.append(cluster)
    if not counts:
        return Vote(None, 0, len(responses), members, [], extracted, None)
    best = max(range(len(counts)), key=lambda k: (counts[k], -k))
    return Vote(
        answer=reps[best][0],
        votes=counts[best],
        size=len(responses),
        members=members,
        clusters=[(text, n) for (text, _v), n in zip(reps, counts, strict=True)],
        extracted=extracted,
        majority=best,
    )
