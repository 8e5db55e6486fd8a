"""The imports a competitive-programming evaluator puts before every Python solution.

APPS's ``testing_util`` as LiveCodeBench and PRIME carry it (the copy veRL ships in
``verl/utils/reward_score/prime_code``, its default reward for the apps, codecontests,
codeforces and taco data sources; LiveCodeBench's ``lcb_runner`` has the same list) runs a
solution after ``from typing import *``, ``from collections import *``, ``import sys``,
``from math import *`` and a dozen more, so a solution that writes ``List[int]``, ``deque()`` or
``sys.stdin`` without importing them runs there. ``with_imports`` gives a program those imports
in that order (``from builtins import *`` after the others, as there, so ``pow`` and ``open`` are
the builtins again); ``IMPORTED`` names the modules, which a batch imports once before its runs
fork (the program imports them anyway: a run then finds them in ``sys.modules``).
"""

from __future__ import annotations

import ast
import re

__all__ = ["APPS_IMPORTS", "IMPORTED", "with_imports"]

IMPORTED = (
    "string",
    "re",
    "datetime",
    "collections",
    "heapq",
    "bisect",
    "copy",
    "math",
    "random",
    "statistics",
    "itertools",
    "functools",
    "operator",
    "io",
    "sys",
    "json",
    "builtins",
    "typing",
)
"""The modules of the evaluators' imports, in their order."""

APPS_IMPORTS = (
    "".join(f"from {name} import *\n" for name in IMPORTED)
    + "".join(f"import {name}\n" for name in IMPORTED if name not in ("builtins", "typing"))
    + "sys.setrecursionlimit(6*10**5)\n"
)
"""The imports as the evaluators write them: every module's names, then the modules
themselves, then the recursion limit they set."""

_FUTURE = re.compile(r"^from\s+__future__\s+import\b", re.MULTILINE)


def _future_lines(program: str) -> list[int] | None:
    """The 0-based lines of ``program``'s ``from __future__`` statements, each alone on its
    lines (the module's first statements, as Python requires); None when it has none that can
    be moved (it does not parse, or one shares its line with another statement)."""
    if _FUTURE.search(program) is None:  # the parse only for programs that may have one
        return None
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = program.splitlines(keepends=True)
    found: list[int] = []
    for node in tree.body:
        if not (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            continue
        end = node.end_lineno or node.lineno
        before = lines[node.lineno - 1][: node.col_offset]  # offsets: the import is ASCII
        after = lines[end - 1][node.end_col_offset or 0 :].strip()
        if before.strip() or (after and not after.startswith("#")):
            return None
        found.extend(range(node.lineno - 1, end))
    return found or None


def with_imports(program: str) -> str:
    """``program`` after :data:`APPS_IMPORTS`. Its ``from __future__`` imports, which must come
    first in a module, are moved before them (the evaluators put them after, where they are a
    SyntaxError: a solution that starts with ``from __future__ import annotations`` is not a
    wrong one). Only the statements are moved, read by Python's parser: a line that looks like
    one inside a string stays where it is."""
    moved = _future_lines(program)
    if moved is None:
        return APPS_IMPORTS + program
    lines = program.splitlines(keepends=True)
    head = "".join(lines[k] if lines[k].endswith("\n") else lines[k] + "\n" for k in moved)
    keep = set(moved)
    rest = "".join(line for k, line in enumerate(lines) if k not in keep)
    return head + APPS_IMPORTS + rest
