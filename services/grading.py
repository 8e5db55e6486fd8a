"""Scoring one reward item: grader spec (as a plain dict) + response -> (score, details).

:func:`score_item` is what the server's check pool runs in its worker processes, so it takes
and returns plain, picklable values. It is also the in-process path of ``referee rewards``.
``code`` graders do not run here: ``referee.services.code_grading`` runs them on the sandbox
executor first and leaves a ``precomputed`` node (score and details) in their place.
"""

from __future__ import annotations

from typing import Any

from referee.verifiers.format_check import check_format
from referee.verifiers.math import MathConfig, verify
from referee.verifiers.multiple_choice import verify_multiple_choice
from referee.verifiers.string_check import string_check
from referee.verifiers.weighted import combine

__all__ = ["PROCEDURAL_TIMEOUT_S", "count_math_leaves", "item_deadline", "score_item"]

PROCEDURAL_TIMEOUT_S = 20.0
"""The least deadline of an item with a ``procedural`` leaf: a worker's first one imports
reasoning-gym (about 2 s) and builds the task's generator (ARC loads its data)."""

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


def _details(data: dict[str, Any]) -> dict[str, Any]:
    data.pop("score", None)
    return data


def score_item(grader: dict[str, Any], response: str) -> tuple[float | None, dict[str, Any]]:
    kind = grader["type"]
    if kind == "precomputed":  # a leaf scored elsewhere (code: sandbox executor; judges)
        score = grader["score"]
        return (None if score is None else float(score)), dict(grader["details"])
    if kind == "math":
        verdict = verify(response, grader["reference"], math_config(grader))
        return verdict.score, _details(verdict.to_dict())
    if kind == "multiple_choice":
        result = verify_multiple_choice(
            response, grader["reference"], grader.get("choices", "ABCD")
        )
        return result.score, _details(result.to_dict())
    if kind == "string_check":
        result = string_check(response, grader["reference"], grader.get("operation", "eq"))
        return result.score, _details(result.to_dict())
    if kind == "format":
        result = check_format(response, grader.get("pattern", "think_answer"))
        return result.score, _details(result.to_dict())
    # text graders (issue 19): IFEval instructions, OpenAI's text similarity
    if kind == "instruction_following":
        from referee.verifiers.instructions import check_instructions

        followed = check_instructions(
            response,
            grader["instructions"],
            mode=grader.get("mode", "strict"),
            aggregate=grader.get("aggregate", "fraction"),
        )
        return followed.score, followed.to_dict()
    if kind == "text_similarity":
        from referee.verifiers.text_similarity import similarity

        sim = similarity(
            response,
            grader["reference"],
            grader.get("evaluation_metric", "fuzzy_match"),
            grader.get("pass_threshold"),
            binary=grader.get("binary", False),
        )
        return sim.score, sim.to_dict()
    # sql and tool_call (issue 19)
    if kind == "sql":
        from referee.verifiers.sql import SQLLimits, sql_match

        sql = sql_match(
            response,
            grader["setup"],
            grader["reference"],
            ordered=grader.get("ordered"),
            float_digits=grader.get("float_digits", 6),
            extract=grader.get("extract", "auto") != "none",
            limits=SQLLimits(
                timeout_s=grader.get("timeout_s", 2.0), max_rows=grader.get("max_rows", 10_000)
            ),
        )
        return (sql.score if sql.valid else None), _details(sql.to_dict())
    if kind == "tool_call":
        from referee.verifiers.tool_calls import grade_tool_calls

        calls = grade_tool_calls(
            response,
            grader["reference"],
            scoring=grader.get("scoring", "exact"),
            ordered=grader.get("ordered", False),
            tools=grader.get("tools"),
        )
        return calls.score, _details(calls.to_dict())
    if kind == "weighted" and "formula" in grader:  # OpenAI's multi (and model graders)
        return _formula(grader, response)
    if kind == "weighted":
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
            return None, {
                "outcome": "incomplete",
                "parts": breakdown,
                "reason": "a part has no score (see parts)",
            }
        total = combine(parts, normalize=grader.get("normalize", True))
        return total, {"outcome": "weighted", "parts": breakdown}
    if kind == "procedural":  # reasoning-gym's own scorer, here in a pool worker
        from referee.verifiers.procedural import score as score_procedural

        return score_procedural(
            grader["task"],
            grader["entry"],
            response,
            config=grader.get("config") or {},
            extract=grader.get("extract", "auto"),
            tag=grader.get("tag", "answer"),
        )
    if kind in ("code", "python"):
        raise ValueError(f"{kind} graders run on the sandbox executor (resolve_code_leaves)")
    if kind == "prm_mc":
        raise ValueError("prm_mc graders run on the policy backend (resolve_prm_leaves)")
    if kind in ("rubric", "genrm"):
        raise ValueError("judge graders run on the judge backend (resolve_judge_leaves)")
    raise ValueError(f"unknown grader type {kind!r}")


def _formula(grader: dict[str, Any], response: str) -> tuple[float | None, dict[str, Any]]:
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


def count_math_leaves(grader: dict[str, Any]) -> int:
    """How many math checks an item costs (its deadline scales with it)."""
    if grader["type"] == "weighted":
        return sum(count_math_leaves(p["grader"]) for p in grader["graders"])
    return 1 if grader["type"] == "math" else 0


_IMPORTING = frozenset({"procedural", "instruction_following", "text_similarity"})
"""Leaves whose worker imports a library on its first check (reasoning-gym; nltk, langdetect and
its language profiles, sacreBLEU, rouge-score: about 2 s together)."""


def _has_procedural(grader: dict[str, Any]) -> bool:
    if grader["type"] == "weighted":
        return any(_has_procedural(p["grader"]) for p in grader["graders"])
    return grader["type"] in _IMPORTING


def sql_seconds(grader: dict[str, Any]) -> float:
    """The longest an item's ``sql`` leaves may take: setup, reference and response each get
    their statement deadline."""
    if grader["type"] == "weighted":
        return sum(sql_seconds(p["grader"]) for p in grader["graders"])
    return 3 * float(grader.get("timeout_s", 2.0)) + 1.0 if grader["type"] == "sql" else 0.0


def item_deadline(
    grader: dict[str, Any], timeout_s: float, procedural_timeout_s: float | None = None
) -> float:
    """An item's deadline on the pool: ``timeout_s`` per math check, at least
    ``procedural_timeout_s`` (default :data:`PROCEDURAL_TIMEOUT_S`) with a procedural,
    instruction_following or text_similarity leaf (their first check imports libraries); a
    ``sql`` leaf gets its statements' deadlines (:func:`sql_seconds`)."""
    deadline = max(timeout_s * max(1, count_math_leaves(grader)), sql_seconds(grader))
    if not _has_procedural(grader):
        return deadline
    least = PROCEDURAL_TIMEOUT_S if procedural_timeout_s is None else procedural_timeout_s
    return max(deadline, least)
