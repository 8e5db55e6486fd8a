"""Linear scans of model output shared by the verifiers: brace groups, boxed answers, answer tags.

No regular expression here runs over a whole response with backtracking, and this module imports
nothing heavy (the multiple-choice and format checks use it without loading sympy).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "THINK_END",
    "Box",
    "after_thinking",
    "boxed_spans",
    "closing_brace",
    "find_boxed",
    "last_tag_content",
]

THINK_END = "</think>"

_BOX = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")
_MAX_BOXES = 64
_MAX_GAP = 64  # spaces allowed between \boxed and its brace
_MAX_BARE_TOKEN = 24  # \boxed 5: the bare token after it


def after_thinking(text: str) -> str:
    """A reasoning model's final answer: the text after the last ``</think>``, its surrounding
    whitespace removed; ``text`` as it is when it closes no think block. What the graders of the
    answer's form and wording read (string checks, instructions, similarity, JSON), so that the
    reasoning neither earns nor loses them anything: "no commas" is about the answer, and a
    reference "like"-matched in the reasoning is not an answer."""
    cut = text.rfind(THINK_END)
    return text if cut < 0 else text[cut + len(THINK_END) :].strip()


def closing_brace(text: str, start: int) -> int | None:
    """Index of the ``}`` closing the group that opens at ``text[start] == '{'``, or None.

    ``\\{`` and ``\\}`` are escaped braces and do not count."""
    depth = 0
    i = start
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


@dataclass(frozen=True, slots=True)
class Box:
    start: int
    end: int
    content: str


def boxed_spans(text: str, unclosed_tail: bool = False) -> list[Box]:
    r"""Every ``\boxed{...}`` / ``\fbox{...}`` (nested braces allowed) with its span, in order,
    blank ones included.

    ``\boxed 5`` (no braces) takes the next token. A box that never closes ends the scan; with
    ``unclosed_tail`` it takes the rest of the text (a reference cut short)."""
    found: list[Box] = []
    pos = 0
    while len(found) < _MAX_BOXES:
        m = _BOX.search(text, pos)
        if m is None:
            break
        j = m.end()
        while j < len(text) and j - m.end() < _MAX_GAP and text[j] in " \t":
            j += 1
        if j < len(text) and text[j] == "{":
            close = closing_brace(text, j)
            if close is None:
                if unclosed_tail:
                    found.append(Box(m.start(), len(text), text[j + 1 :]))
                break
            found.append(Box(m.start(), close + 1, text[j + 1 : close]))
            pos = close + 1
        else:
            k = j
            while (
                k < len(text)
                and k - j < _MAX_BARE_TOKEN
                and not text[k].isspace()
                and (text[k] != "$")
            ):
                k += 1
            if k > j:
                found.append(Box(m.start(), k, text[j:k]))
            pos = max(k, j + 1)
    return found


def find_boxed(text: str) -> list[str]:
    r"""Contents of every ``\boxed{...}`` / ``\fbox{...}`` (nested braces allowed), in order.

    ``\boxed 5`` (no braces) takes the next token. An unclosed box ends the scan."""
    return [box.content for box in boxed_spans(text)]


def last_tag_content(text: str, tag: str = "answer") -> str | None:
    """Content of the last ``<tag>...</tag>`` (found from the end: linear), case-insensitive."""
    lower = text.lower()
    close = f"</{tag}>"
    end = lower.rfind(close)
    if end < 0:
        return None
    start = lower.rfind(f"<{tag}>", 0, end)
    return text[start + len(tag) + 2 : end] if start >= 0 else None
