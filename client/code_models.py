"""Wire schema of code execution: the ``code`` grader, ``/v1/sandbox/*`` and SandboxFusion's
``/run_code``. Re-exported by :mod:`referee.client.models` (import them from there).

A code grader's tests are told apart by their fields: ``fn_name`` makes a function-call test,
``test_code`` an assert test, anything else a stdin/stdout test (``{"stdin", "stdout"}``, as in
the design's example). Limits a caller asks for are capped by the server's
``REFEREE_SANDBOX_MAX_*`` settings; the limits applied are echoed in the answer.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

__all__ = [
    "AssertTestSpec",
    "CodeGradeRequest",
    "CodeGradeResponse",
    "CodeGrader",
    "CodeTest",
    "CompareModeName",
    "ExecutionResult",
    "FunctionCallTestSpec",
    "LanguageInfo",
    "RunCodeRequest",
    "RunCodeResponse",
    "RunCodeResult",
    "RunLimits",
    "RunStatusName",
    "SandboxLanguages",
    "SandboxRunRequest",
    "SandboxRunResponse",
    "StdioTestSpec",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


CompareModeName = Literal["exact", "trailing_whitespace", "tokens", "float", "apps", "lcb"]
RunStatusName = Literal[
    "ok",
    "runtime_error",
    "compile_error",
    "time_limit",
    "memory_limit",
    "output_limit",
    "sandbox_error",
]
_SOURCE_MAX = 1_000_000
_IO_MAX = 16_000_000


class RunLimits(_Model):
    """Limits of one run; unset fields take the server's defaults, and the server's maxima cap
    what is asked."""

    time_s: float | None = Field(None, gt=0, le=3600, description="Wall-clock limit of one run.")
    memory_mb: int | None = Field(None, ge=16, le=65536, description="Memory limit of one run.")


class StdioTestSpec(_Model):
    """Feed ``stdin``, compare stdout with ``stdout``."""

    stdin: str = Field("", max_length=_IO_MAX)
    stdout: str = Field(..., max_length=_IO_MAX, description="The expected output.")
    comparison: CompareModeName | None = Field(
        None, description="Overrides the grader's comparison for this test."
    )
    abs_tol: float | None = Field(None, ge=0)
    rel_tol: float | None = Field(None, ge=0)


class FunctionCallTestSpec(_Model):
    """Call ``fn_name`` (a top-level function or a ``Solution`` method) with JSON ``args``; the
    returned value is compared with ``expected`` outside the sandbox. Python only."""

    fn_name: str = Field(..., min_length=1, max_length=256, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    args: list[Any] | dict[str, Any] = Field(default_factory=list)
    expected: Any = None
    abs_tol: float | None = Field(None, ge=0)
    rel_tol: float | None = Field(None, ge=0)
    expected_wrapped: bool = Field(
        False,
        description="`expected` was taken out of the one-item list an APPS/TACO row wraps a "
        "return value in (`[[3]]` for 3): under the `apps` comparison the value wrapped counts "
        "too, as APPS's testing_util takes it. Set when the test is read from such a row.",
    )


_CHECK_DEFINED = re.compile(r"^def check\(", re.MULTILINE)


class AssertTestSpec(_Model):
    """Run ``test_code`` after the program (HumanEval style); passes when nothing raises. With
    ``entry_point``, ``check(<entry_point>)`` is called too. Python only."""

    test_code: str = Field(..., min_length=1, max_length=_IO_MAX)
    entry_point: str | None = Field(None, max_length=256, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")

    @model_validator(mode="after")
    def _check_is_called(self) -> AssertTestSpec:
        """A HumanEval test defines ``check(candidate)``; without ``entry_point`` nothing would
        call it and every program would pass."""
        if self.entry_point is None and _CHECK_DEFINED.search(self.test_code):
            if self.test_code.count("check(") < 2:
                raise ValueError(
                    "test_code defines check() but nothing calls it: give entry_point (the "
                    "function to test) so that check(<entry_point>) runs"
                )
        return self


def _test_kind(value: Any) -> str:
    if isinstance(value, dict):
        if "fn_name" in value:
            return "call"
        if "test_code" in value:
            return "assert"
        return "stdio"
    if isinstance(value, FunctionCallTestSpec):
        return "call"
    if isinstance(value, AssertTestSpec):
        return "assert"
    return "stdio"


CodeTest = Annotated[
    Annotated[StdioTestSpec, Tag("stdio")]
    | Annotated[FunctionCallTestSpec, Tag("call")]
    | Annotated[AssertTestSpec, Tag("assert")],
    Discriminator(_test_kind),
]


class CodeGrader(_Model):
    """Run the program found in the response against tests in the sandbox.

    Score: the fraction of tests passed (`fraction`) or 1 only when all pass
    (`all_or_nothing`). Per-test outcomes are in `details.tests`; expected values never enter
    the sandbox.
    """

    type: Literal["code"] = "code"
    language: str = Field(..., min_length=1, max_length=32, examples=["python", "cpp"])
    tests: list[CodeTest] = Field(..., min_length=1, max_length=1000)
    reward: Literal["fraction", "all_or_nothing"] = "fraction"
    stop_at_first_failure: bool = Field(
        False, description="Skip the tests after the first failure (they count as failed)."
    )
    extract: Literal["last", "first", "none", "last_or_whole"] = Field(
        "last",
        description="Which fenced code block of the response is the program (blocks tagged "
        "with the grader's language first); `none`: the whole response is the program; "
        "`last_or_whole`: the last block, or the whole response (after its last `</think>`) "
        "when it has none, as open-instruct's code verifier reads a bare completion.",
    )
    comparison: CompareModeName = Field(
        "trailing_whitespace",
        description="How stdout is compared with the expected output (`apps`: as APPS's "
        "testing_util compares a stdin test's output and a call's returned value; `lcb`: as "
        "LiveCodeBench's evaluator compares them).",
    )
    abs_tol: float = Field(1e-6, ge=0, description="Absolute tolerance of `float` comparison.")
    rel_tol: float = Field(1e-6, ge=0, description="Relative tolerance of `float` comparison.")
    limits: RunLimits | None = Field(None, description="Limits of each test run.")
    prefix: str | None = Field(
        None,
        max_length=_SOURCE_MAX,
        description="Code put before the response's program, as it is (HumanEval's `prompt`: "
        "the signature and docstring a completion continues). Filled from a HumanEval row.",
    )
    imports: Literal["none", "apps"] | None = Field(
        None,
        description="`apps`: a Python program runs after the imports APPS's, LiveCodeBench's "
        "and veRL's prime_code evaluators put before every solution (`from typing import *`, "
        "`from collections import *`, `import sys`, `from math import *`...), so a solution "
        "that writes `List[int]` or `sys.stdin` without importing them runs as it does there. "
        "Unset: `apps` with the `apps` or `lcb` comparison, else `none`.",
    )


class SandboxRunRequest(_Model):
    code: str = Field(..., max_length=_SOURCE_MAX, examples=["print(input()[::-1])"])
    language: str = Field(..., min_length=1, max_length=32, examples=["python"])
    stdin: str = Field("", max_length=_IO_MAX)
    limits: RunLimits | None = None
    compile_time_s: float | None = Field(
        None, gt=0, le=3600, description="Limit of the compile step (capped by the server)."
    )


class CodeGradeRequest(_Model):
    """Score one response with one ``code`` grader: ``POST /v1/sandbox/grade``. This is what a
    server whose sandbox backend is ``remote`` sends to its sandbox node for each code item."""

    grader: CodeGrader
    response: str = Field(..., max_length=4_000_000, description="The model's response.")
    compile_time_s: float | None = Field(
        None, gt=0, le=3600, description="Limit of the compile step (capped by the server)."
    )


class CodeGradeResponse(_Model):
    score: float
    details: dict[str, Any] = Field(
        default_factory=dict, description="As a code item's details in /v1/rewards."
    )
    elapsed_ms: float


class ExecutionResult(_Model):
    """One process: a compile step or the program's run."""

    status: RunStatusName
    exit_code: int | None = None
    signal: int | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    output_cut: bool = Field(
        False,
        description="stdout or stderr was cut to fit the response (REFEREE_SANDBOX_OUTPUT_BYTES "
        "of JSON each: escapes count, so 8 MiB of newlines does not become 16 MiB of body).",
    )
    wall_time_s: float = 0.0
    cpu_time_s: float | None = None
    message: str = ""


class SandboxRunResponse(ExecutionResult):
    """The run's result (``status`` is ``compile_error`` when the program did not build, and
    ``compile`` then holds the compiler's output)."""

    language: str
    compile: ExecutionResult | None = None
    limits: RunLimits = Field(..., description="The limits applied (after the server's caps).")
    elapsed_ms: float


class LanguageInfo(_Model):
    name: str
    compiled: bool
    packages: list[str] = Field(
        default_factory=list,
        description="Python: the distributions (name==version) of the server's environment a "
        "program may import besides the standard library (REFEREE_SANDBOX_PYTHON_PACKAGES); "
        "the docker backend's image has its own.",
    )


class SandboxLanguages(_Model):
    backend: str | None = Field(None, description="The isolation backend; null if unavailable.")
    available: bool
    reason: str | None = Field(None, description="Why code execution is unavailable, if it is.")
    languages: list[LanguageInfo]
    slots: int = Field(..., description="How many programs run at once.")


class RunCodeRequest(BaseModel):
    """SandboxFusion's ``/run_code`` body. Unknown fields are ignored (not rejected) so every
    version of a SandboxFusion client is accepted; the limits are checked (a time that is not a
    finite number of seconds up to an hour, a memory limit the sandbox cannot give: 422)."""

    model_config = ConfigDict(extra="ignore")

    code: str = Field(..., max_length=_SOURCE_MAX)
    language: str = Field("python", max_length=32)
    stdin: str | None = Field(None, max_length=_IO_MAX)
    compile_timeout: float = Field(
        10.0, gt=0, le=3600, allow_inf_nan=False, description="Seconds (capped by the server)."
    )
    run_timeout: float = Field(
        10.0, gt=0, le=3600, allow_inf_nan=False, description="Seconds (capped by the server)."
    )
    memory_limit_MB: int = Field(
        -1,
        le=65536,
        description="-1 (or 0): the server's default; otherwise 16 to 65536 (capped by the "
        "server).",
    )
    files: dict[str, str | None] = Field(default_factory=dict)
    fetch_files: list[str] = Field(default_factory=list)

    @field_validator("memory_limit_MB")
    @classmethod
    def _memory(cls, value: int) -> int:
        if 0 < value < 16:
            raise ValueError("a run needs at least 16 MB; send -1 for the server's default")
        return value


class RunCodeResult(BaseModel):
    status: Literal["Finished", "Error", "TimeLimitExceeded"]
    execution_time: float | None = None
    return_code: int | None = None
    stdout: str | None = None
    stderr: str | None = None


class RunCodeResponse(BaseModel):
    status: Literal["Success", "Failed", "SandboxError"]
    message: str = ""
    compile_result: RunCodeResult | None = None
    run_result: RunCodeResult | None = None
    executor_pod_name: str | None = None
    files: dict[str, str] = Field(default_factory=dict)
