"""Procedural task families (reasoning-gym): list them, generate problems, score answers.

reasoning-gym ships about a hundred generators of verifiable problems (arithmetic, algebra,
logic puzzles, games, graphs, ARC grids, ...), each with its own scorer and, for most, a
curriculum of difficulty levels. This module is the one place referee touches it:

    families()                                 # names, config schema, difficulty attributes
    generate("basic_arithmetic", {}, seed=1, n=8)   # reproducible problems, JSON-safe
    score("basic_arithmetic", entry, "... <answer>42</answer>")   # (score, details)

``score`` extracts the answer from the response first (``<answer>`` tags, ``\\boxed{}``, the
whole response, or a custom tag) and then calls the task's own ``score_answer``, which may give
partial credit. Scorers are third-party code that runs on model output: the server calls this
module only inside ``CheckPool`` worker processes, where a scorer that hangs or blows up its
memory costs one item. A scorer that raises on a malformed answer scores 0 (``unparseable``).

reasoning-gym is an optional dependency (the ``environments`` extra); it is imported on first
use, never at import time of this module.

The answer's extraction and scoring are here; the families, their levels and the per-family
tables are in ``procedural_catalog.py``, problem generation in ``procedural_problems.py`` (both
re-exported here).
"""

from __future__ import annotations

import math
import re
from typing import Any, Final

from referee.verifiers.procedural_catalog import (
    _GUARDS,
    _RESTORE,
    EXAMPLE_SOLUTION,
    EXCLUDED,
    HASH_SEED_DEPENDENT,
    NO_REFERENCE,
    ProceduralError,
    available,
    config_at_level,
    families,
    family_names,
    level_count,
)
from referee.verifiers.procedural_problems import (
    _check_config,
    _config_key,
    _dataset,
    example_solution,
    generate,
)
from referee.verifiers.text_scan import find_boxed, last_tag_content

__all__ = [
    "EXAMPLE_SOLUTION",
    "EXCLUDED",
    "EXTRACT_MODES",
    "HASH_SEED_DEPENDENT",
    "NO_REFERENCE",
    "ProceduralError",
    "available",
    "config_at_level",
    "example_solution",
    "extract_answer",
    "families",
    "family_names",
    "generate",
    "level_count",
    "score",
]

EXTRACT_MODES: Final = ("auto", "answer_tag", "boxed", "none")
"""``auto``: the last ``<answer>`` tag, else the last ``\\boxed{}``; ``answer_tag``: only the tag
(``tag`` names another one); ``boxed``: only ``\\boxed{}``; ``none``: the whole response."""


_MAX_ANSWER_CHARS: Final = 100_000


def extract_answer(
    response: str, mode: str = "auto", tag: str = "answer"
) -> tuple[str | None, str]:
    """The answer read from a response and where it came from (``answer_tag``, ``boxed``,
    ``whole``, or ``none`` when nothing was found). Text up to ``</think>`` is skipped."""
    if mode not in EXTRACT_MODES:
        raise ProceduralError(
            f"unknown extract mode {mode!r}: use one of {', '.join(EXTRACT_MODES)}"
        )
    think = response.rfind("</think>")
    text = response[think + len("</think>") :] if think >= 0 else response
    if mode == "none":
        return text.strip(), "whole"
    if mode in ("auto", "answer_tag"):
        found = last_tag_content(text, tag)
        if found is not None:
            return found.strip(), "answer_tag"
        if mode == "answer_tag":
            return None, "none"
    boxes = find_boxed(text)
    if boxes:
        return boxes[-1].strip(), "boxed"
    return None, "none"


_EVAL_ESCAPE = re.compile(
    r"__|\b(?:exec|eval|open|compile|getattr|setattr|delattr|globals|locals|vars|breakpoint|"
    r"input|help|exit|quit|memoryview)\s*\("
)


def score(
    task: str,
    entry: dict[str, Any],
    response: str,
    config: dict[str, Any] | None = None,
    extract: str = "auto",
    tag: str = "answer",
) -> tuple[float, dict[str, Any]]:
    """Score a response with the task's own scorer: (score in [0, 1], details with ``outcome``
    correct / partial / wrong / no_answer / unparseable, ``extracted``, ``extraction``)."""
    config = dict(config or {})
    _check_config(task, config)
    if not isinstance(entry, dict) or not isinstance(entry.get("metadata", {}), dict):
        raise ProceduralError("entry must be an object with `answer` and `metadata`")
    if "answer" in entry and entry["answer"] is not None and not isinstance(entry["answer"], str):
        raise ProceduralError("entry.answer must be a string or null")
    if task not in NO_REFERENCE and not isinstance(entry.get("answer"), str):
        raise ProceduralError(
            f"entry.answer is missing: every {task!r} problem has one (no answer given)"
        )
    answer, where = extract_answer(response, extract, tag)
    details: dict[str, Any] = {"task": task, "extracted": answer, "extraction": where}
    if answer is None:
        return 0.0, {**details, "outcome": "no_answer", "reason": "no answer found in the response"}
    if len(answer) > _MAX_ANSWER_CHARS:
        return 0.0, {
            **details,
            "extracted": answer[:200],
            "outcome": "unparseable",
            "reason": f"the answer is longer than {_MAX_ANSWER_CHARS} characters",
        }
    if _EVAL_ESCAPE.search(answer):  # some scorers hand the answer to eval / sympy.parse_expr
        return 0.0, {
            **details,
            "extracted": answer[:200],
            "outcome": "rejected",
            "reason": "the answer contains a dunder or a call of a Python builtin",
        }
    guard = _GUARDS.get(task)
    reason = guard(answer, entry) if guard is not None else None
    if reason is not None:
        return 0.0, {**details, "outcome": "wrong", "reason": reason}
    full = {"question": "", "answer": None, "metadata": {}, **entry}
    restore = _RESTORE.get(task)
    if restore is not None:
        full = restore(full)
    dataset = _dataset(task, _config_key(config), 0, 1)
    try:
        value = dataset.score_answer(answer, full)
    except (KeyError, IndexError) as exc:
        raise ProceduralError(
            f"the entry lacks what the {task!r} scorer needs ({type(exc).__name__}: {exc}); "
            "send the entry the problem came with"
        ) from exc
    except Exception as exc:  # the scorer choked on the model's answer: a wrong answer
        return 0.0, {
            **details,
            "outcome": "unparseable",
            "reason": f"the task's scorer could not read the answer ({type(exc).__name__})",
        }
    try:
        result = float(value)
    except (TypeError, ValueError):
        result = 0.0
    if not math.isfinite(result):
        result = 0.0
    result = min(1.0, max(0.0, result))
    outcome = "correct" if result >= 1.0 else "partial" if result > 0 else "wrong"
    return result, {**details, "outcome": outcome}
