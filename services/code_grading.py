"""The ``code`` grader: find the program in a response, run it against its tests in the sandbox.

:func:`grade_code` is the blocking part (one thread of the sandbox executor: compile once, run
every test, each in a fresh sandbox). :func:`resolve_code_leaves` runs every ``code`` grader of
an item (top level or inside ``weighted``) on the executor and puts a ``precomputed`` node with
its score and details in its place, so that the rest of the grader (math leaves, say) is scored
by :func:`referee.verifiers.registry.score_item` on the check pool as before.

An item's deadline covers its sandbox runs: compile limit + tests x (run limit + overhead)
(:func:`code_deadline_s`); tests that would start after it are reported ``skipped``.
Expected values never enter the sandbox: stdin/stdout tests compare outside, function-call tests
send only the name and arguments (see ``referee.sandbox.harness``).
"""

from __future__ import annotations

from typing import Any

from referee.client.models import RunLimits
from referee.sandbox import (
    AssertTest,
    CompareMode,
    Comparison,
    FunctionCallTest,
    LanguageUnavailable,
    Limits,
    RunResult,
    SandboxBackend,
    StdioTest,
    TestCase,
    TestResult,
    extract_code,
    run_tests,
)
from referee.sandbox.process_io import cut_for_json
from referee.services.remote_sandbox import RemoteSandbox
from referee.services.sandbox_executor import SandboxExecutor
from referee.verifiers.tree import amap_leaves, iter_leaves

__all__ = [
    "code_deadline_s",
    "grade_code",
    "has_code",
    "resolve_code_leaves",
    "run_result_dict",
]

RUN_OVERHEAD_S = 1.0  # sandbox set-up and tear-down per run, generously
_EXCERPT = 500


SANDBOX_TYPES = frozenset({"code", "python"})
"""Leaves that run in the sandbox: model-written programs, and user grader code."""


def has_code(grader: dict[str, Any]) -> bool:
    return any(_runs_code(leaf) for leaf in iter_leaves(grader))


def _runs_code(leaf: dict[str, Any]) -> bool:
    if leaf["type"] == "multi":  # OpenAI's, before it is lowered to weighted
        return any(has_code(g) for g in leaf["graders"].values())
    return leaf["type"] in SANDBOX_TYPES


def code_deadline_s(grader: dict[str, Any], limits: Limits, compile_limits: Limits) -> float:
    """How long one code grader may take: its compile step and every test, with overhead."""
    per_test = limits.wall_time_s + RUN_OVERHEAD_S
    return compile_limits.wall_time_s + RUN_OVERHEAD_S + per_test * len(grader["tests"])


def _tests(grader: dict[str, Any]) -> list[TestCase]:
    mode = CompareMode(grader.get("comparison", "trailing_whitespace"))
    abs_tol, rel_tol = grader.get("abs_tol", 1e-6), grader.get("rel_tol", 1e-6)
    tests: list[TestCase] = []
    for spec in grader["tests"]:
        a = spec.get("abs_tol") if spec.get("abs_tol") is not None else abs_tol
        r = spec.get("rel_tol") if spec.get("rel_tol") is not None else rel_tol
        if "fn_name" in spec:
            cmp = Comparison(mode=CompareMode.FLOAT, abs_tol=a, rel_tol=r)
            tests.append(FunctionCallTest(spec["fn_name"], spec["args"], spec["expected"], cmp))
        elif "test_code" in spec:
            tests.append(AssertTest(spec["test_code"], spec.get("entry_point")))
        else:
            test_mode = CompareMode(spec["comparison"]) if spec.get("comparison") else mode
            cmp = Comparison(mode=test_mode, abs_tol=a, rel_tol=r)
            tests.append(StdioTest(spec.get("stdin", ""), spec["stdout"], cmp))
    return tests


def run_result_dict(run: RunResult, body_bytes: int | None = None) -> dict[str, Any]:
    """The wire shape of one run (``referee.client.models.ExecutionResult``); with
    ``body_bytes``, stdout and stderr are each cut to that many bytes of JSON (``output_cut``)."""
    stdout, stderr, cut = run.stdout, run.stderr, False
    if body_bytes is not None:
        stdout, cut_out = cut_for_json(stdout, body_bytes)
        stderr, cut_err = cut_for_json(stderr, body_bytes)
        cut = cut_out or cut_err
    return {
        "status": run.status.value,
        "exit_code": run.exit_code,
        "signal": run.signal,
        "stdout": stdout,
        "stderr": stderr,
        "stdout_truncated": run.truncated,
        "stderr_truncated": run.stderr_truncated,
        "output_cut": cut,
        "wall_time_s": round(run.wall_time_s, 6),
        "cpu_time_s": run.cpu_time_s,
        "message": run.message,
    }


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


def _no_score(outcome: str, reason: str, **extra: Any) -> tuple[float, dict[str, Any]]:
    return 0.0, {"outcome": outcome, "reason": reason, **extra}


def _not_run(reason: str) -> tuple[float, dict[str, Any]]:
    """A program whose caller went away before a slot was free: never started."""
    return _no_score("error", f"not run: {reason}")


def grade_code(
    grader: dict[str, Any],
    response: str,
    backend: SandboxBackend,
    limits: Limits,
    compile_limits: Limits,
) -> tuple[float, dict[str, Any]]:
    """Score one response with one ``code`` grader (blocking; runs in a sandbox thread). A
    remote backend's node does it all (compile once, run every test)."""
    if isinstance(backend, RemoteSandbox):
        deadline = code_deadline_s(grader, limits, compile_limits)
        return backend.grade_code(grader, response, limits, compile_limits, deadline)
    language = grader["language"]
    program = extract_code(response, language, grader.get("extract", "last"))
    if program is None:
        where = "in the response" if grader.get("extract") == "none" else "no fenced code block"
        return _no_score("no_code", f"no program found ({where})", language=language)
    try:
        result = run_tests(
            program,
            language,
            _tests(grader),
            limits,
            backend=backend,
            stop_on_first_failure=grader.get("stop_at_first_failure", False),
            compile_limits=compile_limits,
            deadline_s=code_deadline_s(grader, limits, compile_limits),
        )
    except LanguageUnavailable as exc:
        return _no_score("language_unavailable", str(exc), language=language)
    except ValueError as exc:  # function-call or assert tests for a language other than python
        return _no_score("invalid", str(exc), language=language)
    mode = grader.get("reward", "fraction")
    score = result.reward("all_pass" if mode == "all_or_nothing" else "fraction")
    details: dict[str, Any] = {
        "outcome": result.outcome.value,
        "language": result.language,
        "passed": result.passed,
        "total": result.total,
        "pass_rate": result.pass_fraction,
        "reward": mode,
        "limits": {"time_s": limits.wall_time_s, "memory_mb": limits.memory_mb},
        "tests": [_test_detail(t) for t in result.tests],
    }
    if result.compile is not None:
        compiled = run_result_dict(result.compile)
        compiled["stdout"] = compiled["stdout"][-_EXCERPT:]
        compiled["stderr"] = compiled["stderr"][-2000:]
        details["compile"] = compiled
    return score, details


async def resolve_code_leaves(
    grader: dict[str, Any], response: str, executor: SandboxExecutor
) -> dict[str, Any]:
    """``grader`` with each ``code`` node replaced by ``{"type": "precomputed", "of": "code",
    "score", "details"}``, run on the sandbox executor (waiting for free slots)."""
    return await amap_leaves(grader, lambda leaf: _resolve_leaf(leaf, response, executor))


async def _resolve_leaf(
    grader: dict[str, Any], response: str, executor: SandboxExecutor
) -> dict[str, Any]:
    if grader["type"] == "code":
        backend = executor.require_backend()
        limits = executor.limits(_asked(grader))
        score, details = await executor.run_queued(
            grade_code,
            grader,
            response,
            backend,
            limits,
            executor.compile_limits(),
            if_dropped=_not_run,
        )
        return {"type": "precomputed", "of": "code", "score": score, "details": details}
    if grader["type"] == "python":
        from referee.services.python_grading import grade_python

        backend = executor.require_backend()
        asked = RunLimits(time_s=grader.get("timeout_s", 10.0), memory_mb=grader.get("memory_mb"))
        limits = executor.limits(asked)  # capped by the server's REFEREE_SANDBOX_MAX_*
        verdict: tuple[float | None, dict[str, Any]] = await executor.run_queued(
            grade_python, grader, response, backend, limits, executor.compile_limits()
        )
        return {"type": "precomputed", "of": "python", "score": verdict[0], "details": verdict[1]}
    return grader


def _asked(grader: dict[str, Any]) -> RunLimits | None:
    raw = grader.get("limits")
    return RunLimits.model_validate(raw) if raw else None
