"""Finding the program in a model's response: fenced code blocks (```lang ... ```).

    extract_code("Here it is:\n```python\nprint(1)\n```", "python")   # -> "print(1)\n"

``which="last"`` (the default) takes the last block, ``"first"`` the first, ``"none"`` the whole
response as the program, ``"last_or_whole"`` the last block or, in a response with none, the
whole response, as open-instruct's code verifier takes a bare completion (AceCode's rows are
answered so); after a ``</think>``, its text after it (a draft in the reasoning is not the
answer). Blocks whose fence names the grader's language (or an alias: ``py``,
``c++``, ``js`` ...) are preferred over blocks tagged with another language or untagged ones.
When the response has a reasoning section closed by ``</think>``, blocks after it are preferred
(drafts inside the reasoning are not the answer). An unclosed final fence (a response cut off
at the token limit) is not a block. ``None`` means no block was found.
"""

from __future__ import annotations

import bisect
import re
from typing import Literal, NamedTuple

from referee.sandbox.languages import normalize_language

__all__ = ["CodeBlock", "ExtractMode", "extract_code", "find_code_blocks"]

ExtractMode = Literal["first", "last", "none", "last_or_whole"]


class CodeBlock(NamedTuple):
    """A fenced block: its language tag (lower-case, may be empty) and its body."""

    tag: str
    code: str


def find_code_blocks(text: str) -> list[CodeBlock]:
    """Every closed fenced block of ``text``, in order.

    A fence opens a line (after at most three spaces or tabs) with three or more backticks or
    tildes and an optional info string (no backtick in it), and closes at the next line that holds
    the same fence, at the opening's indent or none, followed only by spaces or tabs. A fence that
    never closes is no block; the lines after it are read for blocks of their own. Linear in the
    text (up to a logarithm): every line is read once, and each opening finds its closing line by a
    lookup, so a response of thousands of unclosed fences costs no more than any other text."""
    lines = text.split("\n")
    # each line that can close a fence, by (indent, fence): the indices in order
    closings: dict[tuple[str, str], list[int]] = {}
    openings: list[tuple[int, str, str, str]] = []  # (line, indent, fence, info)
    for k, line in enumerate(lines):
        head = _FENCE_LINE.match(line)
        if head is None:
            continue
        indent, fence, rest = head.group("indent"), head.group("fence"), head.group("rest")
        if not rest.strip(" \t"):
            closings.setdefault((indent, fence), []).append(k)
        if k + 1 < len(lines):  # an opening line ends in a newline
            openings.extend(_openings(k, indent, fence, rest))
    blocks: list[CodeBlock] = []
    after = 0  # the first line a new block may open on
    for k, indent, fence, info in openings:
        if k < after:
            continue
        close = _next_closing(closings, k, indent, fence)
        if close is None:
            continue
        words = info.strip().split()
        tag = words[0].lower().lstrip("{.").rstrip("}") if words else ""
        blocks.append(CodeBlock(tag, "".join(line + "\n" for line in lines[k + 1 : close])))
        after = close + 1
    return blocks


# a line that may open or close a fence: indent, the fence, the rest of the line
_FENCE_LINE = re.compile(r"(?P<indent>[ \t]{0,3})(?P<fence>`{3,}|~{3,})(?P<rest>.*)", re.DOTALL)


def _openings(k: int, indent: str, fence: str, rest: str) -> list[tuple[int, str, str, str]]:
    """The ways line ``k`` opens a fence, longest fence first. The info string may not hold a
    backtick; a tilde fence may also open as a shorter fence whose info starts with its extra
    tildes (the way a backtracking pattern reads it)."""
    found = []
    for n in range(len(fence), 2, -1):
        info = fence[n:] + rest
        if "`" in info:
            break
        found.append((k, indent, fence[:n], info.lstrip(" \t")))
    return found


def _next_closing(
    closings: dict[tuple[str, str], list[int]], k: int, indent: str, fence: str
) -> int | None:
    """The first line after ``k`` that closes ``fence`` opened at ``indent``."""
    best = None
    for key in {(indent, fence), ("", fence)}:
        lines = closings.get(key, [])
        at = bisect.bisect_right(lines, k)
        if at < len(lines) and (best is None or lines[at] < best):
            best = lines[at]
    return best


def _pick(blocks: list[CodeBlock], language: str | None, which: ExtractMode) -> str | None:
    if not blocks:
        return None
    if language is not None:
        wanted = normalize_language(language)
        tagged = [b for b in blocks if b.tag and normalize_language(b.tag) == wanted]
        untagged = [b for b in blocks if not b.tag]
        blocks = tagged or untagged or blocks
    chosen = blocks[0] if which == "first" else blocks[-1]
    return chosen.code


def extract_code(
    response: str, language: str | None = None, which: ExtractMode = "last"
) -> str | None:
    """The program in ``response`` (see the module docstring), or ``None`` if there is none."""
    if which == "none":
        return response if response.strip() else None
    if which not in ("first", "last", "last_or_whole"):
        raise ValueError(f"unknown extraction mode {which!r}")
    _, sep, tail = response.rpartition("</think>")
    if sep:
        found = _pick(find_code_blocks(tail), language, which)
        if found is not None:
            return found
        if which == "last_or_whole" and tail.strip():
            return tail  # the answer is a bare program: a draft in the reasoning is not it
    found = _pick(find_code_blocks(response), language, which)
    if found is None and which == "last_or_whole" and not sep:
        return response if response.strip() else None
    return found
