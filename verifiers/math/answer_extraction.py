r"""Finding the final answer in a model response, in a documented order.

``auto`` tries, in this order, and the first that finds something wins:

1. ``\boxed{}``/``\fbox{}``: the last box (every distinct box is a candidate, so two different
   boxed answers are a hedge). When a final-answer cue comes after the last box and states an
   answer with a number or math in it and no prose, that cue is the final answer instead.
2. ``<answer>...</answer>`` tags (a cue inside them is read as in 3).
3. A final-answer cue (``The final answer is $x$``, ``Answer: 9``, ``Answer \[ 9 \]``,
   ``Final Answer: The largest $n$ is 34.``; see :mod:`~referee.verifiers.math.cues`), then
   GSM8K's ``#### 72``.
4. A one-line response that is only an answer (``x \in [2, \infty)``, ``12 apples``).
5. The last display-math block (``$$...$$``, ``\[...\]``) when it is the last math in the
   response and no number follows it.
6. The last inline-math segment (``$...$``, ``\(...\)``) of the final sentence when no number
   follows it in that sentence (``Therefore $x \geq 5$ is the solution.``).
7. The last number (``last_number_fallback``).

Before any of this, chat-template tokens are removed (``<|im_end|>``, ``</s>``, ``<|eot_id|>``,
``<｜end▁of▁sentence｜>`` ...) and a new turn the model began on its own (``<|im_start|>user``)
is cut off; the part after ``</think>`` is read first. Every scan is linear in the response
length (no backtracking regular expression over the whole text).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from referee.verifiers.math.config import MathConfig
from referee.verifiers.math.cues import cue_answer, gsm8k_answer, sentence_answer
from referee.verifiers.math.prose import prose_words
from referee.verifiers.math.segments import (
    box_run,
    boxes,
    final_sentence_start,
    math_segments,
    strip_special_tokens,
)
from referee.verifiers.text_scan import find_boxed, last_tag_content

__all__ = ["Extraction", "extract_answer", "find_boxed"]

_THINK_END = "</think>"
_NUMBER = re.compile(r"(?<![A-Za-z\d])-?\d+(?:,\d{3})*(?:\.\d+)?(?:/\d+)?")
_NUMBER_DECIMAL_COMMA = re.compile(r"(?<![A-Za-z\d])-?\d+(?:[.,]\d+)?(?:/\d+)?")
_OR_SPLIT = re.compile(r"\s+(?:or|\\(?:text|mbox|textbf)\{\s*or\s*\})\s+|\\text\{\s+or\s+\}")
_MAX_CANDIDATES = 16
_DIGIT = re.compile(r"\d")
_HAS_CONTENT = re.compile(r"[A-Za-z0-9]")


@dataclass(frozen=True, slots=True)
class Extraction:
    answer: str | None
    source: str | None
    """boxed, answer_tag, final_answer, gsm8k, whole, display_math, inline_math, last_number."""
    candidates: tuple[str, ...] = field(default=())
    """Every distinct final answer found (more than one means the response may be hedging)."""
    parts: tuple[str, ...] = field(default=())
    """The trailing run of boxes (``\\boxed{1}, \\boxed{2}``) when there are several: one list
    answer when the reference is a list or a set (see :func:`~referee.verifiers.math.verify`)."""


_RELATION = re.compile(r"[<>≤≥]|\\[lg]eq?(?![a-z])|\\[lg]t(?![a-z])")
_ASSIGNMENT = re.compile(r"^\s*([A-Za-z](?:\s*\(\s*[A-Za-z]\s*\))?)\s*=")
_LATEX_CMD = re.compile(r"\\[A-Za-z]+")
_WORD = re.compile(r"[A-Za-z]{2,}")
_LEADING_WORD = re.compile(r"^\s*[A-Za-z]{2,}")


_ENVIRONMENT = re.compile(r"\\(?:begin|end)\s*\{[A-Za-z*]+\}(?:\{[lcr|]*\})?")
"""``\\begin{pmatrix}``: a matrix's markup, not a word of prose."""


def _looks_like_bare_answer(text: str) -> bool:
    """A short one-line response with no prose is the answer itself: ``x \\in [2, \\infty)``,
    ``12 apples``, ``Monday``; ``I think it is 5`` and ``Total : 2,74`` are prose (their last
    number is read instead)."""
    s = text.strip()
    if not s or len(s) > 200 or "\n" in s:
        return False
    bare = _LATEX_CMD.sub(" ", _ENVIRONMENT.sub(" ", s) if "\\begin" in s else s)
    words = _WORD.findall(bare)
    if not any(ch.isdigit() for ch in s):
        return len(words) <= 4
    return not words or (len(words) == 1 and not _LEADING_WORD.match(bare))


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


def _result(answers: list[str], source: str, parts: tuple[str, ...] = ()) -> Extraction:
    expanded: list[str] = []
    for a in answers:
        expanded.extend(_split_or(a.strip()))
    candidates = _distinct(expanded)
    if not candidates:
        return Extraction(None, source)
    return Extraction(candidates[-1], source, candidates, parts)


def extract_answer(response: str, config: MathConfig | None = None) -> Extraction:
    """Read the final answer of ``response``. See the module documentation for the order."""
    cfg = config or MathConfig()
    text = strip_special_tokens(response.replace("\x00", ""))
    if cfg.extract == "none":
        return _result([text], "whole")
    # The final answer stands after the reasoning: read the part after </think> first.
    cut = text.rfind(_THINK_END)
    segments = [text[cut + len(_THINK_END) :], text] if cut >= 0 else [text]
    for segment in segments:
        found = _extract_segment(segment, cfg)
        if found.answer is not None or found.source == "final_answer":
            return found
    return Extraction(None, None)


def _boxed(text: str, cfg: MathConfig) -> Extraction | None:
    found = boxes(text)
    if not found:
        return None
    if cfg.extract == "auto":
        cue = cue_answer(text[found[-1].end :])
        if cue is not None and cue.answer and _states_math(cue.answer):
            return _result([cue.answer], "final_answer")
    run = box_run(text, found)
    parts = tuple(b.content.strip() for b in run) if len(run) > 1 else ()
    return _result([b.content for b in found], "boxed", parts)


def _states_math(answer: str) -> bool:
    """A cue's answer that can replace the boxes: math (a digit, a command, a segment) and no
    prose (``\\boxed{A}. The answer is A because 3 > 2`` keeps the box)."""
    has_math = bool(_DIGIT.search(answer)) or "\\" in answer or "$" in answer
    return has_math and not prose_words(answer)


def _is_math(inner: str) -> bool:
    """Not a decoration such as ``$\\blacksquare$`` or ``$\\quad$``."""
    return bool(_HAS_CONTENT.search(_LATEX_CMD.sub("", inner)))


def _masked(text: str) -> tuple[str, list[tuple[int, int, str, bool]]]:
    """The last 20,000 characters with math segments blanked (decorations become spaces), and
    the segments that hold math."""
    tail = text[-20_000:]
    segs = [(s.start, s.end, s.inner, s.display) for s in math_segments(tail)]
    out, last, kept = [], 0, []
    for seg in segs:
        start, end, inner, _ = seg
        out.append(tail[last:start])
        if _is_math(inner):
            out.append("\x01" * (end - start))
            kept.append(seg)
        else:
            out.append(" " * (end - start))
        last = end
    out.append(tail[last:])
    return "".join(out), kept


def _math_block(text: str) -> Extraction | None:
    """Steps 5 and 6: the last display block, or the last inline segment of the final
    sentence, when no number follows it."""
    if "$" not in text and "\\(" not in text and "\\[" not in text:
        return None
    masked, segs = _masked(text)
    if not segs:
        return None
    start, end, inner, display = segs[-1]
    if _DIGIT.search(masked[end:]):
        return None
    if display:
        return _result([inner], "display_math")
    if start < final_sentence_start(masked):
        return None
    return _result([inner], "inline_math")


def _extract_segment(text: str, cfg: MathConfig) -> Extraction:
    mode = cfg.extract
    if mode in ("auto", "boxed"):
        boxed = _boxed(text, cfg)
        if boxed is not None:
            return boxed
        if mode == "boxed":
            return Extraction(None, None)
    if mode in ("auto", "answer_tag"):
        inner = last_tag_content(text, "answer")
        if inner is not None:
            cue = cue_answer(inner)
            said = cue.answer if cue is not None and cue.answer else inner
            return _result([said], "answer_tag")
        if mode == "answer_tag":
            return Extraction(None, None)
    if mode in ("auto", "final_answer"):
        cue = cue_answer(text)
        if cue is not None:
            if cue.answer is None:  # a cue, then math that does not close: no guess
                return Extraction(None, "final_answer")
            return _result([cue.answer], "final_answer")
        if mode == "final_answer":
            return Extraction(None, None)
    if mode in ("auto", "gsm8k"):
        mark = gsm8k_answer(text)
        if mark is not None:
            return _result([sentence_answer(mark)], "gsm8k")
        if mode == "gsm8k":
            return Extraction(None, None)
    if mode != "auto":
        return Extraction(None, None)
    if _looks_like_bare_answer(text):
        return _result([text], "whole")
    block = _math_block(text)
    if block is not None:
        return block
    if cfg.last_number_fallback:
        pattern = _NUMBER_DECIMAL_COMMA if cfg.decimal_comma else _NUMBER
        last = None
        for m in pattern.finditer(text[-20_000:]):
            last = m
        if last is not None:
            return Extraction(last.group(0), "last_number", (last.group(0),))
    return Extraction(None, None)
