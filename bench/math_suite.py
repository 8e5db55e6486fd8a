"""Section (a3) of ``python -m bench.math``: accuracy on math-verify 0.9.0's own test suite.

The cases are read from math-verify's sdist by tests/unit/verifiers/math/math_verify_suite.py
(the same loader the differential test uses; the sdist is downloaded once into
~/.cache/referee-tests/).
Three columns, each case in a CheckPool(workers=1) worker process with the benchmark's deadline:

- **referee**: the ``math`` grader with its defaults, as ``/v1/rewards`` scores it; a case that
  math-verify runs at a non-default ``precision`` gets ``abs_tol = 10**-precision``;
- **math-verify, as its tests call it**: ``parse`` with the test's own extraction configs, then
  ``verify`` with the test's precision/strict/set-relation switches (its home ground);
- **math-verify, one call for all**: the benchmark's ``math_verify_score`` (the same call for
  every case, as a trainer would make it).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SUITE_LOADER = ROOT / "tests" / "unit" / "verifiers" / "math" / "math_verify_suite.py"
DISAGREEMENTS = ROOT / "tests" / "data" / "math_verify_disagreements.jsonl"
SWITCH_TESTS = {"test_set_rel_assymetry", "test_strict_variable_comparison"}
"""The two tests that exercise math-verify switches referee does not have; the other 269 cases
run at compare_strings' defaults."""


def suite_loader() -> ModuleType:
    if "math_verify_suite" in sys.modules:
        return sys.modules["math_verify_suite"]
    spec = importlib.util.spec_from_file_location("math_verify_suite", SUITE_LOADER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["math_verify_suite"] = module
    spec.loader.exec_module(module)
    return module


def referee_case(gold: str, pred: str, options_json: str) -> float:
    from referee.client.models import MathGrader
    from referee.verifiers.registry import score_item

    options = json.loads(options_json)
    extra = {"abs_tol": 10.0 ** -options["precision"]} if "precision" in options else {}
    score, _ = score_item(MathGrader(reference=gold, **extra).model_dump(), pred)
    return float(score or 0.0)


def math_verify_as_tested(gold: str, pred: str, match_types_json: str, options_json: str) -> float:
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    match_types = json.loads(match_types_json)
    if not match_types:  # test_yujianll.py: verify(parse(gold), parse(pred))
        return 1.0 if verify(parse(gold), parse(pred)) else 0.0
    targets = [
        LatexExtractionConfig(boxed_match_priority=0) if m == "latex" else ExprExtractionConfig()
        for m in match_types
    ]
    opts = {"precision": 6, "strict": True, "allow_set_relation_comp": False}
    opts.update(json.loads(options_json))
    ok = verify(
        parse(gold, targets),
        parse(pred, targets),
        float_rounding=opts["precision"],
        strict=opts["strict"],
        allow_set_relation_comp=opts["allow_set_relation_comp"],
    )
    return 1.0 if ok else 0.0


def run_suite(
    make_pool: Callable[[], Any], score_of: Callable[[Any], tuple[float, str]], generic: Any
) -> dict[str, Any]:
    """Score every case with the three columns; tallies per file, for the 269 default-setting
    cases and for all 275, and referee's misses."""
    cases = suite_loader().load_suite()
    listed = {json.loads(line)["case"] for line in DISAGREEMENTS.read_text().splitlines() if line}
    jobs: dict[str, list[tuple[Any, ...]]] = {
        "referee": [(c.gold, c.pred, json.dumps(c.options)) for c in cases],
        "math-verify (its tests' calls)": [
            (c.gold, c.pred, json.dumps(list(c.match_types)), json.dumps(c.options)) for c in cases
        ],
        "math-verify (one call for all)": [(c.pred, c.gold) for c in cases],
    }
    fns = {
        "referee": referee_case,
        "math-verify (its tests' calls)": math_verify_as_tested,
        "math-verify (one call for all)": generic,
    }
    scores: dict[str, list[tuple[float, str]]] = {}
    for name, args in jobs.items():
        with make_pool() as pool:
            scores[name] = [score_of(f.result()) for f in pool.map(fns[name], args)]
    tallies: dict[str, dict[str, dict[str, int]]] = {
        name: defaultdict(lambda: {"n": 0, "right": 0, "fp": 0, "fn": 0, "to": 0}) for name in jobs
    }
    misses = []
    for i, case in enumerate(cases):
        groups = [case.file, "ALL (275)"]
        if case.test not in SWITCH_TESTS:
            groups.append("DEFAULT SETTINGS (269)")
        for name in jobs:
            score, status = scores[name][i]
            got = score == 1.0
            for g in groups:
                t = tallies[name][g]
                t["n"] += 1
                t["right"] += got == case.expected
                t["fp"] += got and not case.expected
                t["fn"] += (not got) and case.expected
                t["to"] += status != "ok"
        got = scores["referee"][i][0] == 1.0
        if got != case.expected:
            tag = "listed policy disagreement" if case.key in listed else "NOT LISTED"
            misses.append(f"{case.key} (expected {int(case.expected)}, got {int(got)}; {tag})")
    return {"tallies": tallies, "misses": misses, "columns": list(jobs)}


def emit_suite(
    emit: Callable[..., None], table: Callable[..., str], result: dict[str, Any]
) -> None:
    cols = result["columns"]
    tallies = result["tallies"]
    groups = sorted(g for g in tallies[cols[0]] if not g.isupper() and "(" not in g)
    groups += ["DEFAULT SETTINGS (269)", "ALL (275)"]
    rows = []
    for g in groups:
        row: list[Any] = [f"**{g}**" if "(" in g else g, tallies[cols[0]][g]["n"]]
        for name in cols:
            t = tallies[name][g]
            row += [f"{100 * t['right'] / t['n']:.1f}%", t["fp"], t["fn"], t["to"]]
        rows.append(row)
    header: list[str] = ["file", "n"]
    for name in cols:
        header += [name, "FP", "FN", "TO"]
    emit(table(header, rows))
    emit()
    emit(f"referee misses ({len(result['misses'])}):" + ("" if result["misses"] else " none"))
    for line in result["misses"]:
        emit(f"- {line}")
    emit()
