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

_FUTURE = re.compile(r"^from\s+__future__\s+import\s+[^\n]*\n?", re.MULTILINE)


def with_imports(program: str) -> str:
    """``program`` after :data:`APPS_IMPORTS`. Its ``from __future__`` imports, which must come
    first in a module, are moved before them (the evaluators put them after, where they are a
    SyntaxError: a solution that starts with ``from __future__ import annotations`` is not a
    wrong one)."""
    futures = _FUTURE.findall(program)
    if futures:
        program = _FUTURE.sub("", program)
        head = "".join(f if f.endswith("\n") else f + "\n" for f in futures)
        return head + APPS_IMPORTS + program
    return APPS_IMPORTS + program
