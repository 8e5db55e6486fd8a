"""Finding the program in a model's response: fenced code blocks (```lang ... ```).

    extract_code("Here it is:\n```python\nprint(1)\n```", "python")   # -> "print(1)\n"

``which="last"`` (the default) takes the last block, ``"first"`` the first, ``"none"`` the whole
response as the program. Blocks whose fence names the grader's language (or an alias: ``py``,
``c++``, ``js`` ...) are preferred over blocks tagged with another language or untagged ones.
When the response has a reasoning section closed by ``</think>``, blocks after it are preferred
(drafts inside the reasoning are not the answer). An unclosed final fence (a response cut off
at the token limit) is not a block. ``None`` means no block was found.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

from referee.sandbox.languages import normalize_language

__all__ = ["CodeBlock", "ExtractMode", "extract_code", "find_code_blocks"]

ExtractMode = Literal["first", "last", "none"]

# A fence opens a line with three or more backticks (or tildes), an optional info string, and
# closes with the same fence on its own line.
_FENCE = re.compile(
    r"^(?P<indent>[ \t]{0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)\n"
    r"(?P<body>.*?)"
    r"^(?P=indent)?(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)


class CodeBlock(NamedTuple):
    """A fenced block: its language tag (lower-case, may be empty) and its body."""

    tag: str
    code: str


def find_code_blocks(text: str) -> list[CodeBlock]:
    """Every closed fenced block of ``text``, in order."""
    blocks = []
    for match in _FENCE.finditer(text):
        info = match.group("info").strip().split()
        tag = info[0].lower().lstrip("{.").rstrip("}") if info else ""
        blocks.append(CodeBlock(tag, match.group("body")))
    return blocks


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
    if which not in ("first", "last"):
        raise ValueError(f"unknown extraction mode {which!r}")
    _, sep, tail = response.rpartition("</think>")
    if sep:
        found = _pick(find_code_blocks(tail), language, which)
        if found is not None:
            return found
    return _pick(find_code_blocks(response), language, which)
