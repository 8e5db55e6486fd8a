"""JSON Lines read a line at a time, as the command line's readers need them (``referee
rewards``, ``referee judge --responses``, the ``referee train`` datasets): each says in its own
words what is wrong with a line. Standard library only (the trainer adapters import it)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["json_lines"]


def json_lines(lines: Iterable[str]) -> Iterator[tuple[int, Any, json.JSONDecodeError | None]]:
    """``(number, value, None)`` for each line that is not blank (numbered from 1), or
    ``(number, None, error)`` for one that is not JSON."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, None, exc
            continue
        yield number, value, None
