"""A ``code`` grader run here: find the program in a response, compile it once and run it
against its tests in the sandbox (each test in a fresh sandbox, or in one batch sandbox).

An item's deadline covers its sandbox runs: compile limit + tests x (run limit + overhead)
(:func:`code_deadline_s`); tests that would start after it are reported ``skipped``.
Expected values never enter the sandbox: stdin/stdout tests compare outside, function-call tests
send only the name and arguments (see ``referee.sandbox.harness``).
"""

from __future__ import annotations

from typing import Any

from referee.sandbox import (
    AssertTest,
    CompareMode,
    Comparison,
    FunctionCallTest,
    LanguageUnavailable,
    SandboxBackend,
    StdioTest,
    TestCase,
    TestResult,
    extract_code,
    run_tests,
)
from referee.sandbox.languages import normalize_language
from referee.sandbox.python_imports import IMPORTED, with_imports
from referee.services.execution.program import ProgramLimits
from referee.services.execution.wire import limits_dict, run_result_dict

__all__ = ["RUN_OVERHEAD_S", "code_deadline_s", "grade_code", "no_score"]

RUN_OVERHEAD_S = 1.0  # sandbox set-up and tear-down per run, generously
_EXCERPT = 500


def code_deadline_s(grader: dict[str, Any], limits: ProgramLimits) -> float:
    """How long one code grader may take: its compile step and every test, with overhead."""
    per_test = limits.run.wall_time_s + RUN_OVERHEAD_S
    return limits.compile.wall_time_s + RUN_OVERHEAD_S + per_test * len(grader["tests"])


def _tests(grader: dict[str, Any]) -> list[TestCase]:
    mode = CompareMode(grader.get("comparison", "trailing_whitespace"))
    abs_tol, rel_tol = grader.get("abs_tol", 1e-6), grader.get("rel_tol", 1e-6)
    tests: list[TestCase] = []
    for spec in grader["tests"]:
        a = spec.get("abs_tol") if spec.get("abs_tol") is not None else abs_tol
        r = spec.get("rel_tol") if spec.get("rel_tol") is not None else rel_tol
        if "fn_name" in spec:
            exact = mode in (CompareMode.APPS, CompareMode.LCB)  # as those evaluators compare
            call_mode = mode if exact else CompareMode.FLOAT
            cmp = Comparison(mode=call_mode, abs_tol=a, rel_tol=r)
            wrapped = bool(spec.get("expected_wrapped"))
            test = FunctionCallTest(spec["fn_name"], spec["args"], spec["expected"], cmp, wrapped)
            tests.append(test)
        elif "test_code" in spec:
            tests.append(AssertTest(spec["test_code"], spec.get("entry_point")))
        else:
            test_mode = CompareMode(spec["comparison"]) if spec.get("comparison") else mode
            cmp = Comparison(mode=test_mode, abs_tol=a, rel_tol=r)
            tests.append(StdioTest(spec.get("stdin", ""), spec["stdout"], cmp))
    return tests


def _imports(grader: dict[str, Any]) -> str:
    """The grader's ``imports``; unset, ``apps`` with the ``apps`` or ``lcb`` comparison."""
    given = grader.get("imports")
    if given is not None:
        return str(given)
    return "apps" if grader.get("comparison") in ("apps", "lcb") else "none"


def _test_detail(test: TestResult) -> dict[str, Any]:
    out: dict[str, Any] = {"index": test.index, "outcome": test.outcome.value}
    if test.run is not None:
        out["time_s"] = round(test.run.wall_time_s, 4)
    if test.passed:
        return out
    if test.message:
        out["message"] = test.message
    if test.actual is not None:
        out["stdout"] = test.actual[:_EXCERPT]
    if test.run is not None and test.run.stderr:
        out["stderr"] = test.run.stderr[-_EXCERPT:]
    return out


def no_score(outcome: str, reason: str, **extra: Any) -> tuple[float, dict[str, Any]]:
    return 0.0, {"outcome": outcome, "reason": reason, **extra}


def grade_code(
    grader: dict[str, Any], response: str, backend: SandboxBackend, limits: ProgramLimits
) -> tuple[float, dict[str, Any]]:
    """Score one response with one ``code`` grader here (blocking; runs in a sandbox thread):
    compile once, run every test, each in a fresh sandbox."""
    language = grader["language"]
    prefix = grader.get("prefix") or ""
    program = extract_code(response, language, grader.get("extract", "last"))
    if program is None and prefix and response.strip():
        program = response  # no fenced block: the completion that continues the prefix
    if program is None:
        whole = grader.get("extract") in ("none", "last_or_whole")
        where = "the response is empty" if whole else "no fenced code block"
        return no_score("no_code", f"no program found ({where})", language=language)
    program = prefix + program  # HumanEval's harness runs prompt + completion
    preload: tuple[str, ...] = ()
    if normalize_language(language) == "python" and _imports(grader) == "apps":  # as APPS runs it
        program, preload = with_imports(program), IMPORTED
    try:
        result = run_tests(
            program,
            language,
            _tests(grader),
            limits.run,
            backend=backend,
            stop_on_first_failure=grader.get("stop_at_first_failure", False),
            compile_limits=limits.compile,
            deadline_s=code_deadline_s(grader, limits),
            preload=preload,
        )
    except LanguageUnavailable as exc:
        return no_score("language_unavailable", str(exc), language=language)
    except ValueError as exc:  # function-call or assert tests for a language other than python
        return no_score("invalid", str(exc), language=language)
    mode = grader.get("reward", "fraction")
    score = result.reward("all_pass" if mode == "all_or_nothing" else "fraction")
    details: dict[str, Any] = {
        "outcome": result.outcome.value,
        "language": result.language,
        "passed": result.passed,
        "total": result.total,
        "pass_rate": result.pass_fraction,
        "reward": mode,
        "limits": limits_dict(limits.run),
        "tests": [_test_detail(t) for t in result.tests],
    }
    if result.compile is not None:
        compiled = run_result_dict(result.compile)
        compiled["stdout"] = compiled["stdout"][-_EXCERPT:]
        compiled["stderr"] = compiled["stderr"][-2000:]
        details["compile"] = compiled
    return score, details
