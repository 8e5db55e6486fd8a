"""Finding the final answer in a model response.

Every scan here is linear in the response length (no backtracking regular expressions over
the whole text), so a 1 MB response costs milliseconds, not a hang.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from referee.verifiers.math.config import MathConfig
from referee.verifiers.text_scan import find_boxed, last_tag_content

__all__ = ["Extraction", "extract_answer", "find_boxed"]

_THINK_END = "</think>"
_FINAL_PHRASE = re.compile(
    r"(?:final\s+answer|the\s+answer|answer)\s*(?:is|=|:)\s*:?\s*",
    re.IGNORECASE,
)
_GSM8K = re.compile(r"####[ \t]*([^\n]*)")
_NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?(?:/\d+)?")
_OR_SPLIT = re.compile(r"\s+(?:or|\\(?:text|mbox|textbf)\{\s*or\s*\})\s+|\\text\{\s+or\s+\}")
_MAX_CANDIDATES = 16


@dataclass(frozen=True, slots=True)
class Extraction:
    answer: str | None
    source: str | None  # boxed, answer_tag, final_answer, gsm8k, last_number, whole
    candidates: tuple[str, ...] = field(default=())
    """Every distinct final answer found (more than one means the response may be hedging)."""


def _unescaped(text: str, char: str, start: int) -> int:
    """Index of the next ``char`` not escaped by a backslash (``\\$`` is a dollar sign)."""
    i = text.find(char, start)
    while i > 0 and text[i - 1] == "\\":
        i = text.find(char, i + 1)
    return i


def _phrase_answer(text: str) -> str | None:
    last = None
    for m in _FINAL_PHRASE.finditer(text):
        last = m
    if last is None:
        return None
    rest = text[last.end() : last.end() + 4000].lstrip("*_ ")
    if rest.startswith("$$"):
        end = rest.find("$$", 2)
        return rest[2:end] if end > 0 else None
    if rest.startswith("$"):
        end = _unescaped(rest, "$", 1)
        return rest[1:end] if end > 0 else None
    if rest.startswith("\\(") or rest.startswith("\\["):
        close = "\\)" if rest[1] == "(" else "\\]"
        end = rest.find(close, 2)
        return rest[2:end] if end > 0 else None
    line = rest.split("\n", 1)[0].lstrip("*_ ")
    # A sentence ends at ". " or at a final "." (a decimal point is followed by a digit).
    line = re.split(r"\.(?:\s|$)", line, maxsplit=1)[0]
    line = line.strip().rstrip(".;,!")
    return line or None


_RELATION = re.compile(r"[<>≤≥]|\\[lg]eq?(?![a-z])|\\[lg]t(?![a-z])")


_ASSIGNMENT = re.compile(r"^\s*([A-Za-z])\s*=")
_LATEX_CMD = re.compile(r"\\[A-Za-z]+")
_WORD = re.compile(r"[A-Za-z]{2,}")


def _looks_like_bare_answer(text: str) -> bool:
    """A short one-line response with no prose is the answer itself: ``x \\in [2, \\infty)``,
    ``12 apples``, ``Monday``; ``I think it is 5`` is prose (its last number is read instead)."""
    s = text.strip()
    if not s or len(s) > 200 or "\n" in s:
        return False
    words = _WORD.findall(_LATEX_CMD.sub(" ", s))
    if not any(ch.isdigit() for ch in s):
        return len(words) <= 4
    return len(words) <= 1


def _split_or(answer: str) -> list[str]:
    parts = [p.strip() for p in _OR_SPLIT.split(answer) if p and p.strip()]
    if len(parts) > 1 and all(_RELATION.search(p) for p in parts):
        return [answer]  # "x < -2 or x > 2" is one answer: a union
    sides = [_ASSIGNMENT.match(p) for p in parts]
    if len(parts) > 1 and all(sides) and len({m.group(1) for m in sides if m}) == 1:
        return [answer]  # "x = -2 or x = 3": the solutions of one equation
    return parts if len(parts) > 1 else [answer]


def _distinct(values: list[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for v in values:
        key = " ".join(v.split())
        if key:
            seen.setdefault(key, None)
    return tuple(seen)[:_MAX_CANDIDATES]


def _result(answers: list[str], source: str) -> Extraction:
    expanded: list[str] = []
    for a in answers:
        expanded.extend(_split_or(a.strip()))
    candidates = _distinct(expanded)
    if not candidates:
        return Extraction(None, source)
    return Extraction(candidates[-1], source, candidates)


def extract_answer(response: str, config: MathConfig | None = None) -> Extraction:
    """Read the final answer of ``response``. See :data:`~referee.verifiers.math.ExtractMode`."""
    cfg = config or MathConfig()
    text = response.replace("\x00", "")
    if cfg.extract == "none":
        return _result([text], "whole")
    # The final answer stands after the reasoning: read the part after </think> first.
    cut = text.rfind(_THINK_END)
    segments = [text[cut + len(_THINK_END) :], text] if cut >= 0 else [text]
    for segment in segments:
        found = _extract_segment(segment, cfg)
        if found.answer is not None:
            return found
    return Extraction(None, None)


def _extract_segment(text: str, cfg: MathConfig) -> Extraction:
    mode = cfg.extract
    if mode in ("auto", "boxed"):
        boxed = [b for b in find_boxed(text) if b.strip()]
        if boxed:
            return _result(boxed, "boxed")
        if mode == "boxed":
            return Extraction(None, None)
    if mode in ("auto", "answer_tag"):
        inner = last_tag_content(text, "answer")
        if inner is not None:
            phrase = _phrase_answer(inner)
            return _result([phrase if phrase else inner], "answer_tag")
        if mode == "answer_tag":
            return Extraction(None, None)
    if mode in ("auto", "final_answer"):
        phrase = _phrase_answer(text)
        if phrase:
            return _result([phrase], "final_answer")
        if mode == "final_answer":
            return Extraction(None, None)
    if mode in ("auto", "gsm8k"):
        marks = _GSM8K.findall(text)
        if marks and marks[-1].strip():
            return _result([marks[-1]], "gsm8k")
        if mode == "gsm8k":
            return Extraction(None, None)
    if mode == "auto" and _looks_like_bare_answer(text):
        return _result([text], "whole")
    if mode == "auto" and cfg.last_number_fallback:
        last = None
        for m in _NUMBER.finditer(text[-20_000:]):
            last = m
        if last is not None:
            return Extraction(last.group(0), "last_number", (last.group(0),))
    return Extraction(None, None)
