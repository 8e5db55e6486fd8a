"""What both ``referee train`` commands share: the JSONL dataset reader, the ``--grader``
argument read into a grader, and bad input reported as a message and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from referee.services.jsonl import json_lines

__all__ = ["read_jsonl"]


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a JSONL dataset; each needs a ``prompt``. Raises ValueError naming the line."""
    rows = []
    with open(path, encoding="utf-8") as stream:
        for lineno, row, error in json_lines(stream):
            if error is not None:
                raise ValueError(f"{path}:{lineno}: not JSON: {error.msg}") from error
            if not isinstance(row, dict) or "prompt" not in row:
                raise ValueError(f"{path}:{lineno}: expected a JSON object with a 'prompt'")
            rows.append(row)
    if not rows:
        raise ValueError(f"{path}: no rows")
    return rows


def _grader_arg(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    from referee.client.grader_specs import parse_grader

    return parse_grader(text)


def _guarded(run: Any) -> Any:
    """Bad input (a malformed dataset or grader) is a message and exit status 2."""

    def command(args: argparse.Namespace) -> int:
        try:
            return int(run(args))
        except ValueError as exc:
            print(f"referee: {exc}", file=sys.stderr)
            return 2

    return command
