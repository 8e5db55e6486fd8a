"""Running a program against tests and turning the outcomes into a code reward.

Three kinds of test:

* ``StdioTest``: stdin in, stdout compared with the expected text (``comparison`` modes);
* ``FunctionCallTest`` (Python): call ``fn_name`` with JSON ``args`` and compare the returned
  value outside the sandbox (LiveCodeBench / TACO "call-based" tasks);
* ``AssertTest`` (Python): run test code that asserts, then ``check(entry_point)`` (HumanEval).

``run_tests`` compiles once, runs every test in one sandbox of the program, each as its own
process with a clean working state (``programs.ProgramSession``; one sandbox per test with
``REFEREE_SANDBOX_PER_TEST=1``), and returns a ``CodeResult``
with a per-test ``TestOutcome`` (passed, wrong_answer, runtime_error, time_limit, memory_limit,
output_limit, compile_error, sandbox_error, skipped), the pass fraction and
``reward(RewardMode.ALL_PASS | RewardMode.FRACTION)``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from referee.sandbox.backend import SandboxBackend
from referee.sandbox.comparison import Comparison, outputs_match, values_match
from referee.sandbox.drivers import (
    ASSERT_DRIVER,
    ASSERT_DRIVER_NAME,
    CALL_DRIVER,
    CALL_DRIVER_NAME,
    make_nonce,
    parse_marked_result,
    request_line,
)
from referee.sandbox.languages import Language, get_language
from referee.sandbox.models import Limits, RunResult, RunStatus
from referee.sandbox.programs import PreparedProgram, ProgramSession, prepare

__all__ = [
    "AssertTest",
    "CodeResult",
    "FunctionCallTest",
    "RewardMode",
    "StdioTest",
    "TestCase",
    "TestOutcome",
    "TestResult",
    "run_tests",
]


class TestOutcome(StrEnum):
    __test__ = False  # not a pytest class

    PASSED = "passed"
    WRONG_ANSWER = "wrong_answer"
    RUNTIME_ERROR = "runtime_error"
    TIME_LIMIT = "time_limit"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    COMPILE_ERROR = "compile_error"
    SANDBOX_ERROR = "sandbox_error"
    SKIPPED = "skipped"


class RewardMode(StrEnum):
    ALL_PASS = "all_pass"  # 1.0 only when every test passed
    FRACTION = "fraction"  # fraction of tests passed


@dataclass(frozen=True, slots=True)
class StdioTest:
    stdin: str
    expected_stdout: str
    comparison: Comparison | None = None


@dataclass(frozen=True, slots=True)
class FunctionCallTest:
    fn_name: str
    args: list[object] | dict[str, object]
    expected: object
    comparison: Comparison | None = None
    expected_wrapped: bool = False  # the row held [expected] (APPS): see values_match


@dataclass(frozen=True, slots=True)
class AssertTest:
    test_code: str
    entry_point: str | None = None


TestCase = StdioTest | FunctionCallTest | AssertTest

_STATUS_OUTCOME = {
    RunStatus.RUNTIME_ERROR: TestOutcome.RUNTIME_ERROR,
    RunStatus.TIME_LIMIT: TestOutcome.TIME_LIMIT,
    RunStatus.MEMORY_LIMIT: TestOutcome.MEMORY_LIMIT,
    RunStatus.OUTPUT_LIMIT: TestOutcome.OUTPUT_LIMIT,
    RunStatus.COMPILE_ERROR: TestOutcome.COMPILE_ERROR,
    RunStatus.SANDBOX_ERROR: TestOutcome.SANDBOX_ERROR,
}


@dataclass(frozen=True, slots=True)
class TestResult:
    __test__ = False

    index: int
    outcome: TestOutcome
    run: RunResult | None = None
    actual: str | None = None
    message: str = ""

    @property
    def passed(self) -> bool:
        return self.outcome is TestOutcome.PASSED


@dataclass(frozen=True, slots=True)
class CodeResult:
    """Every test's outcome, and the reward they add up to."""

    language: str
    compile: RunResult | None
    tests: tuple[TestResult, ...] = field(default_factory=tuple)

    @property
    def total(self) -> int:
        return len(self.tests)

    @property
    def passed(self) -> int:
        return sum(t.passed for t in self.tests)

    @property
    def pass_fraction(self) -> float:
        return self.passed / self.total if self.tests else 0.0

    @property
    def all_passed(self) -> bool:
        return bool(self.tests) and self.passed == self.total

    @property
    def outcome(self) -> TestOutcome:
        """``passed`` if all passed, else the first failing test's outcome."""
        for test in self.tests:
            if not test.passed:
                return test.outcome
        return TestOutcome.PASSED if self.tests else TestOutcome.SKIPPED

    def reward(self, mode: RewardMode | str = RewardMode.FRACTION) -> float:
        if RewardMode(mode) is RewardMode.ALL_PASS:
            return 1.0 if self.all_passed else 0.0
        return self.pass_fraction


def _fail(index: int, run: RunResult) -> TestResult:
    outcome = _STATUS_OUTCOME.get(run.status, TestOutcome.RUNTIME_ERROR)
    return TestResult(index, outcome, run, run.stdout, run.message)


def _run_stdio(
    program: PreparedProgram | ProgramSession,
    index: int,
    test: StdioTest,
    limits: Limits,
    comparison: Comparison | None,
) -> TestResult:
    run = program.run(test.stdin, limits)
    if run.status is not RunStatus.OK:
        return _fail(index, run)
    if outputs_match(run.stdout, test.expected_stdout, test.comparison or comparison):
        return TestResult(index, TestOutcome.PASSED, run, run.stdout)
    return TestResult(index, TestOutcome.WRONG_ANSWER, run, run.stdout, "output differs")


def _run_driver(
    program: PreparedProgram | ProgramSession,
    index: int,
    entry: str,
    request: dict[str, object],
    limits: Limits,
    *,
    ended: str,
    assertions: bool = False,
) -> TestResult | tuple[RunResult, str]:
    """Run one of the python drivers (``entry``) on ``request`` as test ``index``: the run and
    what the driver printed after its result marker, or the test's result when there is none.

    A failed run is ``_fail`` (with ``assertions``, a runtime error from an ``AssertionError``
    is a wrong answer). A run that ended well but without the marker (keyed by a fresh nonce,
    so the program cannot print it: the program exited first, ``sys.exit``) is a runtime error
    saying ``ended``."""
    nonce = make_nonce()
    run = program.run(request_line(nonce, request), limits, entry=entry)
    if run.status is not RunStatus.OK:
        if assertions and run.status is RunStatus.RUNTIME_ERROR and "AssertionError" in run.stderr:
            return TestResult(index, TestOutcome.WRONG_ANSWER, run, None, "an assertion failed")
        return _fail(index, run)
    found, _, after = parse_marked_result(run.stdout, nonce)
    if not found:
        return TestResult(index, TestOutcome.RUNTIME_ERROR, run, None, ended)
    return run, after


def _run_call(
    program: PreparedProgram | ProgramSession, index: int, test: FunctionCallTest, limits: Limits
) -> TestResult:
    request: dict[str, object] = {"fn_name": test.fn_name, "args": test.args}
    ended = "the program ended before returning a value"
    answer = _run_driver(program, index, CALL_DRIVER_NAME, request, limits, ended=ended)
    if isinstance(answer, TestResult):
        return answer
    run, after = answer
    try:
        value = json.loads(after)
    except ValueError:
        return TestResult(
            index, TestOutcome.RUNTIME_ERROR, run, after, "the returned value could not be read"
        )
    if values_match(value, test.expected, test.comparison, wrapped=test.expected_wrapped):
        return TestResult(index, TestOutcome.PASSED, run, after.strip())
    return TestResult(index, TestOutcome.WRONG_ANSWER, run, after.strip(), "returned value differs")


def _run_assert(
    program: PreparedProgram | ProgramSession, index: int, test: AssertTest, limits: Limits
) -> TestResult:
    request: dict[str, object] = {"test_code": test.test_code, "entry_point": test.entry_point}
    ended = "the program exited before the tests completed"
    answer = _run_driver(
        program, index, ASSERT_DRIVER_NAME, request, limits, ended=ended, assertions=True
    )
    if isinstance(answer, TestResult):
        return answer
    return TestResult(index, TestOutcome.PASSED, answer[0])


def run_tests(
    program: str,
    language: str | Language,
    tests: Sequence[TestCase],
    limits: Limits | None = None,
    *,
    backend: SandboxBackend | None = None,
    comparison: Comparison | None = None,
    stop_on_first_failure: bool = False,
    compile_limits: Limits | None = None,
    deadline_s: float | None = None,
    preload: Sequence[str] = (),
) -> CodeResult:
    """Compile ``program`` once and run it against every test, each in a fresh sandbox.

    ``backend`` defaults to ``select_backend()`` (bwrap). Function-call and assert tests need
    ``language="python"``. With ``stop_on_first_failure`` the tests after a failure are
    ``skipped`` (and count as not passed). ``deadline_s`` bounds the whole call (compile and
    every test, measured from the call): a test that would start after it is ``skipped`` with
    a message saying so. ``preload``: standard modules a Python program imports on every run
    (``python_imports.IMPORTED`` for a program given the evaluators' imports), imported once
    by the batch before its runs fork (``ProgramSession``).
    """
    recipe = get_language(language) if isinstance(language, str) else language
    if recipe.name != "python" and any(not isinstance(t, StdioTest) for t in tests):
        raise ValueError("function-call and assert tests are only supported for python")
    if backend is None:
        from referee.sandbox.selection import select_backend

        backend = select_backend()
    limits = limits or Limits()
    give_up_at = None if deadline_s is None else time.monotonic() + deadline_s
    extra: dict[str, str | bytes] = {}
    if any(isinstance(t, FunctionCallTest) for t in tests):
        extra[CALL_DRIVER_NAME] = CALL_DRIVER
    if any(isinstance(t, AssertTest) for t in tests):
        extra[ASSERT_DRIVER_NAME] = ASSERT_DRIVER
    results: list[TestResult] = []
    with (
        prepare(
            program, recipe, backend, extra_files=extra, compile_limits=compile_limits
        ) as prepared,
        prepared.session(preload) as session,
    ):
        if not prepared.ready:
            assert prepared.compile_result is not None
            failed = prepared.compile_result
            outcome = _STATUS_OUTCOME.get(failed.status, TestOutcome.COMPILE_ERROR)
            return CodeResult(
                recipe.name,
                failed,
                tuple(
                    TestResult(i, outcome, None, None, failed.message) for i in range(len(tests))
                ),
            )
        for index, test in enumerate(tests):
            if stop_on_first_failure and results and not results[-1].passed:
                results.append(TestResult(index, TestOutcome.SKIPPED, message="skipped"))
                continue
            if give_up_at is not None and time.monotonic() >= give_up_at:
                message = f"not run: the item's deadline of {deadline_s:g} s had passed"
                results.append(TestResult(index, TestOutcome.SKIPPED, message=message))
                continue
            if isinstance(test, StdioTest):
                results.append(_run_stdio(session, index, test, limits, comparison))
            elif isinstance(test, FunctionCallTest):
                results.append(_run_call(session, index, test, limits))
            else:
                results.append(_run_assert(session, index, test, limits))
        return CodeResult(recipe.name, prepared.compile_result, tuple(results))
