"""Reading a judge's verdict out of its text, in the formats judges are trained to write.

    parse_score("... [RESULT] 4", 1, 5)              -> 4.0      (prometheus-eval)
    parse_choice("<answer>[[B]]</answer>")            -> "B"      (RM-R1, MT-Bench style)
    parse_yes_no('{"verdict": "yes"}')                -> True
    parse_criteria('{"1": true, "2": false}', 2)      -> [True, False]

The last verdict in the text wins (a judge may quote the format before using it). Anything that
cannot be read raises :class:`VerdictError` with the reason; callers report it on the item
(score null) and never crash.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["VerdictError", "parse_choice", "parse_criteria", "parse_score", "parse_yes_no"]

_NUM = r"(-?\d+(?:\.\d+)?)"
_SCORE_PATTERNS = [
    re.compile(rf"\[RESULT\]\s*:?\s*{_NUM}", re.IGNORECASE),
    re.compile(rf"\[\[\s*{_NUM}\s*\]\]"),
    re.compile(rf"<score>\s*{_NUM}\s*</score>", re.IGNORECASE),
    re.compile(rf"\\boxed\{{\s*{_NUM}\s*\}}"),
    re.compile(
        rf"(?:score|rating|grade)\s*(?:is|=|:)?\s*\**\s*{_NUM}\s*(?:/\s*\d+)?", re.IGNORECASE
    ),
]
_CHOICE_PATTERNS = [
    re.compile(r"\[RESULT\]\s*:?\s*\(?([A-Za-z]+)\)?", re.IGNORECASE),
    re.compile(r"\[\[\s*([A-Za-z]+)\s*\]\]"),
    re.compile(r"<answer>\s*\(?([A-Za-z]+)\)?\s*</answer>", re.IGNORECASE),
    re.compile(
        r"(?:winner|better response|verdict|answer)\s*(?:is|:)\s*\**\s*\(?(?:response|"
        r"output|assistant)?\s*([A-Za-z]+)\)?",
        re.IGNORECASE,
    ),
]
_YES = {"yes", "true", "correct", "met", "pass", "y"}
_NO = {"no", "false", "incorrect", "not met", "unmet", "fail", "n"}
_YES_NO_PATTERNS = [
    re.compile(r"\[RESULT\]\s*:?\s*(yes|no|true|false|correct|incorrect)", re.IGNORECASE),
    re.compile(r"<answer>\s*(yes|no|true|false|correct|incorrect)\s*</answer>", re.IGNORECASE),
    re.compile(
        r"(?:verdict|answer|judgement|judgment)\s*(?:is|:)\s*\**\s*(yes|no|true|false|"
        r"correct|incorrect)",
        re.IGNORECASE,
    ),
    re.compile(r"\b(yes|no)\b[\s.!*]*$", re.IGNORECASE),
]
_MAX_SCAN = 200_000


class VerdictError(ValueError):
    """The judge's text holds no readable verdict."""


def _json_objects(text: str) -> list[Any]:
    """JSON values embedded in the text (fenced or bare braces), last first."""
    found: list[Any] = []
    decoder = json.JSONDecoder()
    for start in [m.start() for m in re.finditer(r"[{\[]", text)][-20:][::-1]:
        try:
            value, _ = decoder.raw_decode(text[start:])
        except ValueError:
            continue
        found.append(value)
    return found


def _last(patterns: list[re.Pattern[str]], text: str) -> str | None:
    best: tuple[int, str] | None = None
    for pattern in patterns:
        for m in pattern.finditer(text):
            if best is None or m.start() >= best[0]:
                best = (m.start(), m.group(1))
    return best[1] if best else None


def parse_score(text: str, low: float, high: float) -> float:
    text = text[-_MAX_SCAN:]
    for obj in _json_objects(text):
        if isinstance(obj, dict):
            for key in ("score", "result", "rating", "grade"):
                if isinstance(obj.get(key), int | float) and not isinstance(obj.get(key), bool):
                    return _in_range(float(obj[key]), low, high)
    raw = _last(_SCORE_PATTERNS, text)
    if raw is None:
        raise VerdictError(f"no score ({low:g}-{high:g}) found in the judge's output")
    return _in_range(float(raw), low, high)


def _in_range(value: float, low: float, high: float) -> float:
    if not low <= value <= high:
        raise VerdictError(f"score {value:g} is outside {low:g}-{high:g}")
    return value


def parse_choice(text: str, options: tuple[str, ...] = ("A", "B"), tie: str | None = "tie") -> str:
    """One of ``options`` (case-insensitive), or ``tie``; MT-Bench's ``[[C]]`` reads as a tie."""
    text = text[-_MAX_SCAN:]
    wanted = {o.lower(): o for o in options}
    for obj in _json_objects(text):
        if isinstance(obj, dict):
            for key in ("winner", "choice", "result", "verdict", "answer", "better"):
                value = obj.get(key)
                if isinstance(value, str) and value.strip().lower() in wanted:
                    return wanted[value.strip().lower()]
                if isinstance(value, str) and tie and value.strip().lower() in ("tie", "draw"):
                    return tie
    raw = _last(_CHOICE_PATTERNS, text)
    if raw is not None:
        key = raw.lower()
        if key in wanted:
            return wanted[key]
        if tie and (key in ("tie", "draw", "equal") or (key == "c" and "c" not in wanted)):
            return tie
    raise VerdictError(f"no choice among {', '.join(options)} found in the judge's output")


def parse_yes_no(text: str) -> bool:
    text = text[-_MAX_SCAN:]
    for obj in _json_objects(text):
        if isinstance(obj, dict):
            for key in ("verdict", "answer", "result", "met", "correct"):
                value = obj.get(key)
                if isinstance(value, bool):
                    return value
                if isinstance(value, str) and value.strip().lower() in _YES | _NO:
                    return value.strip().lower() in _YES
    raw = _last(_YES_NO_PATTERNS, text.strip())
    if raw is None:
        raise VerdictError("no yes/no verdict found in the judge's output")
    return raw.lower() in _YES


def parse_criteria(text: str, count: int) -> list[bool]:
    """Met/not met for criteria 1..count: JSON (a list, or a dict keyed by number) or lines like
    ``Criterion 2: MET``."""
    text = text[-_MAX_SCAN:]
    for obj in _json_objects(text):
        if isinstance(obj, list) and len(obj) == count and all(isinstance(x, bool) for x in obj):
            return list(obj)
        if isinstance(obj, dict):
            values = [obj.get(str(i + 1), obj.get(i + 1)) for i in range(count)]
            if all(isinstance(v, bool) for v in values):
                return [bool(v) for v in values]
    flags: dict[int, bool] = {}
    for m in re.finditer(
        r"criterion\s*(\d+)\s*[:\-]\s*\**\s*(not met|unmet|met|yes|no)", text, re.IGNORECASE
    ):
        flags[int(m.group(1))] = m.group(2).lower() in ("met", "yes")
    if all(i + 1 in flags for i in range(count)):
        return [flags[i + 1] for i in range(count)]
    raise VerdictError(f"the judge's output does not mark all {count} criteria")
