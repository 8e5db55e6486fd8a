"""The grader kinds the check pool scores: ``{kind: PoolKind}``, and :func:`score_item`.

:func:`score_item` is what the server's check pool runs in its worker processes (it takes and
returns plain, picklable values and imports only ``referee.verifiers``); it is also the
in-process path of ``referee rewards``. Each entry is a pure function ``(grader, response) ->
(score, details)`` plus what the item's deadline needs to know of it. Kinds that are not scored
here say where they are (:data:`ELSEWHERE`): their stage resolves them first and leaves a
``precomputed`` node in their place (:mod:`referee.verifiers.tree`).

Adding a pool kind: a schema class in ``client/`` (in the ``Grader`` union), a function in
``verifiers/``, and one entry in :data:`KINDS` (docs/development.md, "Adding a grader").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from referee.verifiers.answer_match import answer_match
from referee.verifiers.format_check import check_format
from referee.verifiers.math import MathConfig, verify
from referee.verifiers.multiple_choice import verify_multiple_choice
from referee.verifiers.string_check import string_check
from referee.verifiers.text_scan import after_thinking
from referee.verifiers.tree import iter_leaves
from referee.verifiers.weighted import combine

__all__ = [
    "ELSEWHERE",
    "KINDS",
    "PROCEDURAL_TIMEOUT_S",
    "PoolKind",
    "count_math_leaves",
    "item_deadline",
    "math_config",
    "score_item",
]

Verdict = tuple[float | None, dict[str, Any]]
ScoreFn = Callable[[dict[str, Any], str], Verdict]

PROCEDURAL_TIMEOUT_S = 20.0
"""The least deadline of an item with a leaf whose worker imports a library on its first check
(reasoning-gym about 2 s and a task's generator, ARC loads its data; nltk, langdetect, sacreBLEU,
rouge-score)."""


@dataclass(frozen=True, slots=True)
class PoolKind:
    """A grader kind the pool scores.

    ``score``: the pure function. ``math_checks``: it costs one math check (the item's deadline
    is ``REFEREE_MATH_TIMEOUT_S`` per check). ``imports``: its first check in a worker imports a
    library (the item gets at least the procedural deadline). ``seconds``: the longest the leaf
    may take by its own options (SQL statements have their own deadline), if it says."""

    score: ScoreFn
    math_checks: bool = False
    imports: bool = False
    seconds: Callable[[dict[str, Any]], float] | None = None


def _details(data: dict[str, Any]) -> dict[str, Any]:
    data.pop("score", None)
    return data


_MATH_OPTIONS = (
    "extract",
    "last_number_fallback",
    "hedging_is_wrong",
    "percent",
    "rel_tol",
    "approx_min_sig_digits",
    "decimal_comma",
    "ordered_lists",
    "abs_tol",
)


def math_config(grader: dict[str, Any]) -> MathConfig:
    return MathConfig(**{k: grader[k] for k in _MATH_OPTIONS if k in grader})


def _precomputed(grader: dict[str, Any], response: str) -> Verdict:
    """A leaf scored elsewhere (code: the sandbox executor; judges; PRM; groups)."""
    score = grader["score"]
    return (None if score is None else float(score)), dict(grader["details"])


def _math(grader: dict[str, Any], response: str) -> Verdict:
    verdict = verify(response, grader["reference"], math_config(grader))
    return verdict.score, _details(verdict.to_dict())


def _multiple_choice(grader: dict[str, Any], response: str) -> Verdict:
    result = verify_multiple_choice(response, grader["reference"], grader.get("choices", "ABCD"))
    return result.score, _details(result.to_dict())


def _string_check(grader: dict[str, Any], response: str) -> Verdict:
    reference, operation = grader["reference"], grader.get("operation", "eq")
    result = string_check(after_thinking(response), reference, operation)
    return result.score, _details(result.to_dict())


def _answer_match(grader: dict[str, Any], response: str) -> Verdict:
    result = answer_match(
        response,
        grader["reference"],
        grader.get("metric", "em"),
        extract=grader.get("extract", "answer_tag"),
        max_answer_tags=grader.get("max_answer_tags"),
        marker=grader.get("marker"),
    )
    return result.score, _details(result.to_dict())


def _format(grader: dict[str, Any], response: str) -> Verdict:
    result = check_format(response, grader.get("pattern", "think_answer"))
    return result.score, _details(result.to_dict())


def _instruction_following(grader: dict[str, Any], response: str) -> Verdict:
    from referee.verifiers.instructions import check_instructions

    followed = check_instructions(
        after_thinking(response),
        grader["instructions"],
        mode=grader.get("mode", "strict"),
        aggregate=grader.get("aggregate", "fraction"),
    )
    return followed.score, followed.to_dict()


def _text_similarity(grader: dict[str, Any], response: str) -> Verdict:
    from referee.verifiers.text_similarity import similarity

    sim = similarity(
        after_thinking(response),
        grader["reference"],
        grader.get("evaluation_metric", "fuzzy_match"),
        grader.get("pass_threshold"),
        binary=grader.get("binary", False),
    )
    return sim.score, sim.to_dict()


def _sql(grader: dict[str, Any], response: str) -> Verdict:
    from referee.verifiers.sql import SQLLimits, sql_match

    if grader.get("database") is not None and grader.get("database_path") is None:
        reason = "the database file was not resolved (a server resolves `database` to its file)"
        return None, {"outcome": "bad_reference", "reason": reason, "valid": False}
    sql = sql_match(
        response,
        grader.get("setup"),
        grader["reference"],
        ordered=grader.get("ordered"),
        float_digits=grader.get("float_digits", 6),
        extract=grader.get("extract", "auto"),
        limits=SQLLimits(
            timeout_s=grader.get("timeout_s", 2.0), max_rows=grader.get("max_rows", 10_000)
        ),
        database=grader.get("database_path"),  # the server's file `database` names
        compare=grader.get("compare", "multiset"),
    )
    return (sql.score if sql.valid else None), _details(sql.to_dict())


def _sql_seconds(grader: dict[str, Any]) -> float:
    """Set-up, reference and response each get the statement deadline."""
    return 3 * float(grader.get("timeout_s", 2.0)) + 1.0


def _tool_call(grader: dict[str, Any], response: str) -> Verdict:
    from referee.verifiers.tool_calls import grade_tool_calls

    calls = grade_tool_calls(
        response,
        grader["reference"],
        scoring=grader.get("scoring", "exact"),
        ordered=grader.get("ordered", False),
        tools=grader.get("tools"),
        extra_arguments=grader.get("extra_arguments", "wrong"),
    )
    return calls.score, _details(calls.to_dict())


def _json_schema(grader: dict[str, Any], response: str) -> Verdict:
    from referee.verifiers.json_schema import check_json_schema

    check = check_json_schema(
        after_thinking(response), grader["schema"], grader.get("extract", "auto")
    )
    return check.score, check.to_dict()


def _procedural(grader: dict[str, Any], response: str) -> Verdict:
    """reasoning-gym's own scorer, here in a pool worker."""
    from referee.verifiers.procedural import score as score_procedural

    return score_procedural(
        grader["task"],
        grader["entry"],
        response,
        config=grader.get("config") or {},
        extract=grader.get("extract", "auto"),
        tag=grader.get("tag", "answer"),
    )


def _weighted(grader: dict[str, Any], response: str) -> Verdict:
    if "formula" in grader:  # OpenAI's multi (and model graders), lowered
        return _formula(grader, response)
    parts: list[tuple[float, float]] = []
    breakdown: list[dict[str, Any]] = []
    missing = False
    for part in grader["graders"]:
        score, detail = score_item(part["grader"], response)
        if score is None:
            missing = True  # a judge without a readable verdict: no total either
        else:
            parts.append((part["weight"], score))
        kind = part["grader"].get("of", part["grader"]["type"])
        breakdown.append({"type": kind, "weight": part["weight"], "score": score, **detail})
    if missing:
        reason = "a part has no score (see parts)"
        return None, {"outcome": "incomplete", "parts": breakdown, "reason": reason}
    total = combine(parts, normalize=grader.get("normalize", True))
    return total, {"outcome": "weighted", "parts": breakdown}


def _formula(grader: dict[str, Any], response: str) -> Verdict:
    """A ``weighted`` node lowered from OpenAI's multi/score_model/label_model: its parts are
    named, and ``formula`` (``calculate_output``) combines their scores."""
    from referee.verifiers.formula import evaluate

    scores: dict[str, float] = {}
    breakdown: list[dict[str, Any]] = []
    missing = False
    for part in grader["graders"]:
        score, detail = score_item(part["grader"], response)
        kind = part["grader"].get("of", part["grader"]["type"])
        breakdown.append({"name": part["name"], "type": kind, "score": score, **detail})
        if score is None:
            missing = True
        else:
            scores[part["name"]] = score
    of = grader.get("of", "multi")
    extra = {"openai": grader["openai"]} if grader.get("openai") else {}
    if missing:
        reason = "a grader has no score (see parts)"
        return None, {
            "outcome": "incomplete",
            "of": of,
            "parts": breakdown,
            "reason": reason,
            **extra,
        }
    try:
        total = evaluate(grader["formula"], scores)
    except ValueError as exc:
        return None, {
            "outcome": "grader_error",
            "valid": False,
            "of": of,
            "reason": f"calculate_output: {exc}",
            "parts": breakdown,
            **extra,
        }
    return total, {"outcome": of, "parts": breakdown, **extra}


KINDS: dict[str, PoolKind] = {
    "precomputed": PoolKind(_precomputed),
    "math": PoolKind(_math, math_checks=True),
    "multiple_choice": PoolKind(_multiple_choice),
    "string_check": PoolKind(_string_check),
    "answer_match": PoolKind(_answer_match),
    "format": PoolKind(_format),
    "instruction_following": PoolKind(_instruction_following, imports=True),
    "text_similarity": PoolKind(_text_similarity, imports=True),
    "sql": PoolKind(_sql, seconds=_sql_seconds),
    "tool_call": PoolKind(_tool_call),
    "procedural": PoolKind(_procedural, imports=True),
    "json_schema": PoolKind(_json_schema),
    "weighted": PoolKind(_weighted),
}
"""Every kind the check pool scores."""

ELSEWHERE: dict[str, str] = {
    "code": "the sandbox executor (resolve_code_leaves)",
    "python": "the sandbox executor (resolve_python_leaves)",
    "prm_mc": "the policy backend (resolve_prm_leaves)",
    "rubric": "the judge backend (resolve_judge_leaves)",
    "genrm": "the judge backend (resolve_judge_leaves)",
    "majority_vote": "the group stage (resolve_group_leaves)",
    "length_penalty": "the group stage (resolve_group_leaves)",
}
"""Kinds a stage before the pool resolves, and which: reaching the pool is a bug."""


def score_item(grader: dict[str, Any], response: str) -> Verdict:
    kind = grader["type"]
    entry = KINDS.get(kind)
    if entry is not None:
        return entry.score(grader, response)
    if kind in ELSEWHERE:
        raise ValueError(f"{kind} graders run on {ELSEWHERE[kind]}, not on the check pool")
    raise ValueError(f"unknown grader type {kind!r}")


def count_math_leaves(grader: dict[str, Any]) -> int:
    """How many math checks an item costs (its deadline scales with it)."""
    return sum(1 for leaf in iter_leaves(grader) if _kind(leaf).math_checks)


def item_deadline(
    grader: dict[str, Any], timeout_s: float, procedural_timeout_s: float | None = None
) -> float:
    """An item's deadline on the pool: ``timeout_s`` per math check, the seconds its leaves
    give themselves (``sql``), at least ``procedural_timeout_s`` (default
    :data:`PROCEDURAL_TIMEOUT_S`) with a leaf whose first check imports libraries."""
    if grader["type"] != "weighted":  # a leaf (the common case: no walk, no sums)
        kind = _kind(grader)
        deadline = timeout_s if kind.seconds is None else max(timeout_s, kind.seconds(grader))
        if not kind.imports:
            return deadline
        least = PROCEDURAL_TIMEOUT_S if procedural_timeout_s is None else procedural_timeout_s
        return max(deadline, least)
    found = [(leaf, _kind(leaf)) for leaf in iter_leaves(grader)]
    own = sum(k.seconds(leaf) for leaf, k in found if k.seconds is not None)
    checks = sum(1 for _, k in found if k.math_checks)
    deadline = max(timeout_s * max(1, checks), own)
    if not any(k.imports for _, k in found):
        return deadline
    least = PROCEDURAL_TIMEOUT_S if procedural_timeout_s is None else procedural_timeout_s
    return max(deadline, least)


_NOTHING = PoolKind(_precomputed)


def _kind(leaf: dict[str, Any]) -> PoolKind:
    return KINDS.get(leaf["type"], _NOTHING)
