"""Fenced blocks (```lang ... ```) of a model's response, found in linear time.

    >>> fenced_blocks("Here:\\n```sql\\nSELECT 1\\n```\\n")
    [('sql', 'SELECT 1\\n')]

A fence is a line that starts (after at most three spaces) with three or more backticks or
tildes; the text after it on the line is the info string, whose first word is the language. The
block runs to the next line holding only the same fence (or a longer one); an unclosed block is
not a block. One pass over the lines: a regular expression with a lazy body re-scans the rest
of the text from every opening fence that never closes, which a hostile response can make
quadratic or worse.
"""

from __future__ import annotations

__all__ = ["fenced_blocks"]


def _fence(line: str) -> tuple[str, str] | None:
    """``(fence, info)`` when ``line`` opens or closes a fence."""
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3 or stripped[:1] not in ("`", "~"):
        return None
    char = stripped[0]
    n = len(stripped) - len(stripped.lstrip(char))
    if n < 3:
        return None
    info = stripped[n:].strip()
    if char == "`" and "`" in info:
        return None
    return stripped[:n], info


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """Every closed fenced block as ``(language, body)``, in order (language lower-cased,
    ``""`` when the fence names none)."""
    blocks: list[tuple[str, str]] = []
    open_fence: str | None = None
    language = ""
    body: list[str] = []
    for line in text.splitlines(keepends=True):
        found = _fence(line.rstrip("\r\n"))
        if open_fence is None:
            if found is not None:
                open_fence, info = found
                language = info.split()[0].lower().lstrip("{.").rstrip("}") if info else ""
                body = []
        elif (
            found is not None
            and not found[1]
            and found[0][0] == open_fence[0]
            and len(found[0]) >= len(open_fence)
        ):
            blocks.append((language, "".join(body)))
            open_fence = None
        else:
            body.append(line)
    return blocks
