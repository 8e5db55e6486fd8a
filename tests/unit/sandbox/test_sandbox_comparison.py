"""Output and value comparison: tables of (actual, expected, mode, match)."""

from __future__ import annotations

import pytest

from referee.sandbox import CompareMode, Comparison, outputs_match, values_match
from referee.sandbox.python_imports import APPS_IMPORTS, with_imports

EXACT = Comparison(CompareMode.EXACT)
TRAILING = Comparison(CompareMode.TRAILING_WHITESPACE)
TOKENS = Comparison(CompareMode.TOKENS)
FLOAT = Comparison(CompareMode.FLOAT, abs_tol=1e-6, rel_tol=1e-6)


@pytest.mark.parametrize(
    ("actual", "expected", "comparison", "match"),
    [
        ("3\n", "3\n", EXACT, True),
        ("3", "3\n", EXACT, False),
        ("3 \n", "3\n", EXACT, False),
        ("3\n", "3", TRAILING, True),
        ("3  \r\n4\t\n\n\n", "3\n4", TRAILING, True),
        ("3\n 4\n", "3\n4\n", TRAILING, False),  # leading whitespace matters
        ("1 2\n3", "1 2 3", TRAILING, False),
        ("1 2\n3", "1   2 3\n", TOKENS, True),
        ("1 2 3 4", "1 2 3", TOKENS, False),
        ("", "", TRAILING, True),
        ("\n\n", "", TRAILING, True),
        ("0.30000000000000004\n", "0.3", FLOAT, True),
        ("0.3001", "0.3", FLOAT, False),
        ("1e9 abc", "1000000001 abc", FLOAT, True),  # relative tolerance
        ("abc", "abd", FLOAT, False),
        ("nan inf", "nan inf", FLOAT, True),
        ("YES 1.0", "yes 1", FLOAT, False),
        ("1.0 2.0", "1 2 3", FLOAT, False),
    ],
)
def test_outputs_match(actual: str, expected: str, comparison: Comparison, match: bool) -> None:
    assert outputs_match(actual, expected, comparison) is match


def test_default_is_trailing_whitespace_insensitive() -> None:
    assert outputs_match("ok  \n\n", "ok")
    assert not outputs_match("o k", "ok")


@pytest.mark.parametrize(
    ("actual", "expected", "match"),
    [
        (5, 5, True),
        (5, 6, False),
        (1.5000000001, 1.5, True),
        (0.1 + 0.2, 0.3, True),
        (2, 2.0, True),
        (True, True, True),
        (True, 1, False),
        (False, 0, False),
        ([1, [2, 3]], [1, [2, 3]], True),
        ((1, 2), [1, 2], True),
        ([1, 2], [2, 1], False),
        ({"a": [1.0]}, {"a": [1]}, True),
        ({"a": 1}, {"b": 1}, False),
        (None, None, True),
        ("x", "x", True),
        ("1", 1, False),
    ],
)
def test_values_match(actual: object, expected: object, match: bool) -> None:
    assert values_match(actual, expected) is match


APPS = Comparison(mode=CompareMode.APPS)


@pytest.mark.parametrize(
    ("actual", "expected", "wrapped", "match"),
    [
        ([0, 1], [0, 1], False, True),
        (0.30000000000000004, 0.3, False, False),  # APPS's ==: no tolerance
        (True, 1, False, True),  # Python's ==
        (2.0, 2, False, True),
        (5, [5, 6], False, True),  # the expected list's first item counts
        (6, [5, 6], False, False),
        ([[5, 6]], [5, 6], False, False),
        (3, 3, True, True),  # unwrapped from APPS's [3]: the value or [value]
        ([3], 3, True, True),
        ([1], [1, 2], True, False),  # the row held [[1, 2]]: not its items
        ([[1, 2]], [1, 2], True, True),
        (None, None, False, True),
        ({"a": 1}, {"a": 1}, False, True),
    ],
)
def test_values_match_as_apps(actual: object, expected: object, wrapped: bool, match: bool) -> None:
    assert values_match(actual, expected, APPS, wrapped=wrapped) is match


def test_with_imports_keeps_future_imports_first() -> None:
    program = '"""doc"""\nfrom __future__ import annotations\nimport os\nprint(1)\n'
    out = with_imports(program)
    assert out.startswith("from __future__ import annotations\nfrom string import *\n")
    assert out.endswith('"""doc"""\nimport os\nprint(1)\n') and out.count("__future__") == 1
    compile(out, "main.py", "exec")
    assert with_imports("print(1)") == APPS_IMPORTS + "print(1)"
    # a line inside a string that reads like the import is text, not moved
    text = 'X = """\nfrom __future__ import annotations\n"""\nprint(X)\n'
    assert with_imports(text) == APPS_IMPORTS + text
    spread = "from __future__ import (\n    annotations,\n)  # typing\nprint(1)\n"
    moved = with_imports(spread)
    assert moved.startswith("from __future__ import (\n    annotations,\n)  # typing\nfrom ")
    compile(moved, "main.py", "exec")
    shared = "from __future__ import annotations; import os\nprint(1)\n"
    assert with_imports(shared) == APPS_IMPORTS + shared  # not split: left as the evaluators
    assert with_imports("from __future__ import (\n") == APPS_IMPORTS + "from __future__ import (\n"
    limit = "sys.setrecursionlimit(6*10**5)\n"
    assert APPS_IMPORTS.endswith(limit)
    names: dict[str, object] = {}
    exec(APPS_IMPORTS.removesuffix(limit), names)  # the block, here, but for the limit
    assert names["pow"] is pow and names["open"] is open  # builtins after math's and io's
    assert {"List", "Counter", "deque", "gcd", "heappush", "sys", "stdin"} <= names.keys()
