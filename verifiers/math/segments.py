r"""Where the math is in a response: delimited segments, boxes, special tokens, the last sentence.

Every scan here is linear in the text (one regular-expression pass with no backtracking over the
whole response, or a brace walk), so a megabyte of output costs milliseconds.

Delimited segments follow the usual Markdown/LaTeX rules: ``$$...$$`` and ``\[...\]`` are display
math and may span lines; ``$...$`` and ``\(...\)`` are inline and end on their line (an inline
segment that would run past a newline is not a segment). A ``$`` directly followed by a digit
does not close a segment (``costs $5 and $10`` holds no math), and ``\$`` is a dollar sign.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from referee.verifiers.text_scan import Box, boxed_spans

__all__ = [
    "Box",
    "Segment",
    "box_run",
    "boxes",
    "final_sentence_start",
    "math_segments",
    "segment_at",
    "strip_special_tokens",
]

_MAX_SEGMENTS = 512
_DELIM = re.compile(r"\\\$|\$\$|\$|\\\(|\\\)|\\\[|\\\]|\n")

# Chat-template tokens. A start-of-turn token after some text ends the response there (what
# follows is a turn the model should not have written); end-of-text tokens go wherever they are.
_LEADING = re.compile(
    r"^(?:\s*(?:<s>|<bos>|<\|begin_of_text\|>|<｜begin▁of▁sentence｜>|<\|startoftext\|>|"
    r"<\|im_start\|>\s*assistant\b|<\|start_header_id\|>\s*assistant\s*<\|end_header_id\|>|"
    r"<start_of_turn>\s*model\b|<\|assistant\|>))+"
)
_TURN_START = re.compile(
    r"<\|im_start\|>|<\|start_header_id\|>|<start_of_turn>|<\|user\|>|<\|system\|>|"
    r"<｜User｜>|<｜Assistant｜>"
)
_END_TOKENS = re.compile(
    r"<\|im_end\|>|<\|endoftext\|>|</s>|<\|eot_id\|>|<\|end_of_text\|>|<\|eom_id\|>|"
    r"<｜end▁of▁sentence｜>|<end_of_turn>|<eos>|<\|end\|>|<\|return\|>|<\|end_header_id\|>|<pad>|"
    r"<\|finetune_right_pad_id\|>"
)


_ANY_TOKEN = re.compile(r"<\|[a-z_]+\|>|</?s>|<｜|<(?:bos|eos|pad|end_of_turn|start_of_turn)>")


def strip_special_tokens(text: str) -> str:
    """The response without chat-template tokens (``<|im_end|>``, ``</s>``, ``<|eot_id|>``,
    ``<｜end▁of▁sentence｜>`` ...), cut before a new turn the model began on its own."""
    if "<" not in text or _ANY_TOKEN.search(text) is None:
        return text
    text = _LEADING.sub("", text)
    turn = _TURN_START.search(text)
    if turn is not None and text[: turn.start()].strip():
        text = text[: turn.start()]
    return _END_TOKENS.sub("\n", text)


@dataclass(frozen=True, slots=True)
class Segment:
    start: int
    """Index of the opening delimiter."""
    end: int
    """Index just after the closing delimiter."""
    inner: str
    display: bool


def _inline_closes(text: str, at: int) -> bool:
    nxt = text[at + 1 : at + 2]
    return not nxt.isdigit()


def math_segments(text: str, limit: int = _MAX_SEGMENTS) -> list[Segment]:
    """Every delimited math segment of ``text``, in order (the last ``limit`` of them)."""
    out: list[Segment] = []
    opener: str | None = None
    open_at = inner_at = 0
    for m in _DELIM.finditer(text):
        tok = m.group(0)
        if tok == "\\$":
            continue
        if opener is None:
            if tok in ("$$", "$", "\\(", "\\["):
                opener, open_at, inner_at = tok, m.start(), m.end()
            continue
        if tok == "\n":
            if opener in ("$", "\\("):
                opener = None  # an inline segment ends on its line: this was no segment
            continue
        closer = {"$$": "$$", "$": "$", "\\(": "\\)", "\\[": "\\]"}[opener]
        if tok == closer and (tok != "$" or _inline_closes(text, m.start())):
            out.append(
                Segment(open_at, m.end(), text[inner_at : m.start()], opener in ("$$", "\\["))
            )
            if len(out) > 2 * limit:
                del out[:limit]
            opener = None
        elif opener == "$" and tok == "$$":
            # "$x$$y$": the first $ closes, the second opens
            out.append(Segment(open_at, m.start() + 1, text[inner_at : m.start()], False))
            opener, open_at, inner_at = "$", m.start() + 1, m.end()
    return out[-limit:]


def segment_at(text: str, start: int) -> Segment | bool | None:
    """The segment whose opening delimiter is at ``text[start]``: a Segment; False when a
    delimiter opens there but the segment does not close properly; None when no delimiter
    opens there."""
    if not text.startswith(("$", "\\(", "\\["), start):
        return None
    segs = math_segments(text[start : start + 20_000], limit=1_000_000)
    if segs and segs[0].start == 0:
        s = segs[0]
        return Segment(start, start + s.end, s.inner, s.display)
    return False


def boxes(text: str, unclosed_tail: bool = False) -> list[Box]:
    r"""Every ``\boxed{...}``/``\fbox{...}`` with its span (``\boxed 5`` takes one token), blank
    ones left out.

    A box that never closes ends the scan; with ``unclosed_tail`` it takes the rest of the text
    (a reference cut short)."""
    return [b for b in boxed_spans(text, unclosed_tail) if b.content.strip()]


_GLUE_TEXT = re.compile(r"\\(?:text|textbf|textit|mathrm|mbox|textnormal)\s*\{[^{}]*\}")
_GLUE_CMD = re.compile(r"\\[A-Za-z]+|\\.")
_GLUE_WORD = re.compile(r"[A-Za-z]{2,}")
_GLUE_OK = frozenset({"and", "or"})


def _is_glue(between: str) -> bool:
    """Nothing but punctuation, spacing, math delimiters, ``and``/``or``, ``\text{}`` labels and
    at most one other word (a unit: ``\boxed{1} paper and \boxed{2} bins``) stands between two
    boxes: they are parts of one answer."""
    if len(between) > 200:
        return False
    rest = _GLUE_CMD.sub(" ", _GLUE_TEXT.sub(" ", between))
    return sum(w.lower() not in _GLUE_OK for w in _GLUE_WORD.findall(rest)) <= 1


def box_run(text: str, found: list[Box]) -> list[Box]:
    """The trailing run of boxes joined only by glue (see :func:`_is_glue`)."""
    if not found:
        return []
    run = [found[-1]]
    for prev in reversed(found[:-1]):
        if not _is_glue(text[prev.end : run[0].start]):
            break
        run.insert(0, prev)
    return run


_SENTENCE_END = re.compile(r"[.!?](?=\s)|\n[ \t]*\n")


def final_sentence_start(masked: str) -> int:
    """Where the last sentence of ``masked`` begins (math segments masked out beforehand, so
    a decimal point or an abbreviation inside math never ends a sentence)."""
    end = len(masked.rstrip().rstrip(".!?").rstrip())
    start = 0
    for m in _SENTENCE_END.finditer(masked, 0, end):
        start = m.end()
    return start
