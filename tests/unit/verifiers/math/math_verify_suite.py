"""math-verify 0.9.0's own test cases, read from its sdist, as (gold, prediction, expected) rows.

The differential test (test_math_verify_suite.py) and ``bench/math.py`` run every row through
referee's ``math`` grader. The sdist is downloaded once by pip (``pip download --no-binary
:all: --no-deps math-verify==0.9.0``) into ``~/.cache/referee-tests/`` (``REFEREE_TEST_CACHE``
overrides it), checked against its pinned sha256, and its ``tests/*.py`` are read with
:mod:`ast`: no test module of math-verify is imported or run.

How math-verify's tests call it, and what a row keeps of that:

- ``compare_strings(gold, pred, match_types, precision=6, strict=True,
  allow_set_relation_comp=False)`` parses both strings with the same extraction configs (gold
  first) and calls ``verify(gold, pred, float_rounding=precision, ...)``; the test asserts the
  result equals ``expected``. A row records the keyword arguments each test passes (literal or
  taken from its parameters), so a case that runs at ``precision=2`` or ``strict=False`` says so.
- ``test_yujianll.py`` calls ``verify(parse(gold), parse(pred))`` with parse's defaults.
- Tests without a gold/prediction pair (string extraction of letters, timeouts, configs, gamma
  parsing, raise_on_error) are not comparisons of two answers and are left out.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import math
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["SDIST_SHA256", "VERSION", "SuiteCase", "load_suite", "sdist_path"]

VERSION = "0.9.0"
SDIST_NAME = f"math_verify-{VERSION}.tar.gz"
SDIST_SHA256 = "45ac6c61344ba056b9e99a660a4bc8d044ed408f730aed68c60435aa5eec4645"
DEFAULTS = {"precision": 6, "strict": True, "allow_set_relation_comp": False}
"""compare_strings' own defaults (tests/test_all.py)."""


@dataclass(frozen=True)
class SuiteCase:
    file: str
    test: str
    index: int
    gold: str
    pred: str
    expected: bool
    options: dict[str, Any] = field(default_factory=dict)
    """Non-default keyword arguments of the comparison (precision, strict,
    allow_set_relation_comp)."""
    match_types: tuple[str, ...] = ()
    """compare_strings' extraction targets ("latex", "expr"); empty: parse()'s defaults."""

    @property
    def key(self) -> str:
        return f"{self.file}::{self.test}[{self.index}]"


def sdist_path() -> Path:
    """The pinned sdist in the cache, downloaded by pip when it is missing or altered
    (tests/pinned_download.py, loaded by path: benchmarks load this module from its file)."""
    spec = importlib.util.spec_from_file_location(
        "referee_pinned_download", Path(__file__).resolve().parents[3] / "pinned_download.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found: Path = module.pinned_file("math-verify", VERSION, SDIST_NAME, SDIST_SHA256, sdist=True)
    return found


def _test_sources(sdist: Path) -> dict[str, str]:
    sources: dict[str, str] = {}
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if len(parts) == 3 and parts[1] == "tests" and parts[2].endswith(".py"):
                handle = tar.extractfile(member)
                if handle is not None:
                    sources[parts[2]] = io.TextIOWrapper(handle, encoding="utf-8").read()
    return sources


def _value(node: ast.expr) -> Any:
    """A literal, or the one non-literal the suite uses: an f-string over ``math``
    (test_float_precision's ``f"{math.sqrt(17):.15f}"``), evaluated with only ``math`` in
    scope. Anything else raises."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        if isinstance(node, ast.JoinedStr):
            code = compile(ast.Expression(node), "<math-verify case>", "eval")
            return eval(code, {"__builtins__": {}, "math": math})
        raise


def _comparison_call(fn: ast.FunctionDef) -> ast.Call | None:
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("compare_strings", "verify"):
                return node
    return None


def _options(call: ast.Call, row: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(call.func, ast.Name) or call.func.id != "compare_strings":
        return {}
    opts: dict[str, Any] = {}
    for kw in call.keywords:
        if kw.arg not in DEFAULTS:
            continue
        value = row[kw.value.id] if isinstance(kw.value, ast.Name) else _value(kw.value)
        if value != DEFAULTS[kw.arg]:
            opts[kw.arg] = value
    return opts


def _match_types(call: ast.Call) -> tuple[str, ...]:
    if not isinstance(call.func, ast.Name) or call.func.id != "compare_strings":
        return ()
    for kw in call.keywords:
        if kw.arg == "match_types":
            return tuple(_value(kw.value))
    return ("latex", "expr")


def _cases(name: str, source: str) -> list[SuiteCase]:
    out: list[SuiteCase] = []
    for fn in ast.parse(source).body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        for deco in fn.decorator_list:
            if not (isinstance(deco, ast.Call) and getattr(deco.func, "attr", "") == "parametrize"):
                continue
            names = [n.strip() for n in ast.literal_eval(deco.args[0]).split(",")]
            call = _comparison_call(fn)
            if "gold" not in names or "pred" not in names or call is None:
                continue
            assert isinstance(deco.args[1], ast.List | ast.Tuple)
            for index, element in enumerate(deco.args[1].elts):
                assert isinstance(element, ast.Tuple)
                row = dict(zip(names, (_value(e) for e in element.elts), strict=True))
                expected = row.get("expected", row.get("result"))
                out.append(
                    SuiteCase(
                        file=name,
                        test=fn.name,
                        index=index,
                        gold=row["gold"],
                        pred=row["pred"],
                        expected=bool(expected),
                        options=_options(call, row),
                        match_types=_match_types(call),
                    )
                )
    return out


def load_suite() -> list[SuiteCase]:
    """Every gold/prediction case of math-verify 0.9.0's test suite, in file order."""
    sources = _test_sources(sdist_path())
    cases = [c for name in sorted(sources) for c in _cases(name, sources[name])]
    if not cases:
        raise RuntimeError(f"no test cases found in {SDIST_NAME}")
    return cases
