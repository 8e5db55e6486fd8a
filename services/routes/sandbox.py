"""``POST /v1/sandbox/run`` (one program, stdin, limits -> result) and
``GET /v1/sandbox/languages``."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request

from referee.client.errors import InvalidRequest
from referee.client.models import (
    ExecutionResult,
    LanguageInfo,
    Problem,
    SandboxLanguages,
    SandboxRunRequest,
    SandboxRunResponse,
)
from referee.sandbox import (
    LanguageUnavailable,
    Limits,
    RunResult,
    SandboxBackend,
    available_languages,
    get_language,
    prepare,
)
from referee.services.code_grading import run_result_dict
from referee.services.sandbox_executor import SandboxExecutor

__all__ = ["router", "run_once"]

_PROBLEMS: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": "Missing or unknown API key"},
    422: {"model": Problem, "description": "Invalid request (unknown language, ...)"},
    429: {"model": Problem, "description": "Every sandbox slot is busy; retry after a moment"},
    503: {"model": Problem, "description": "No isolation backend: code execution is refused"},
}
router = APIRouter(prefix="/v1/sandbox", tags=["sandbox"], responses=_PROBLEMS)


def run_once(
    backend: SandboxBackend,
    code: str,
    language: str,
    stdin: str,
    limits: Limits,
    compile_limits: Limits,
) -> tuple[RunResult | None, RunResult]:
    """Compile (if needed) and run once: ``(compile_result, run_result)``; a failed compile is
    both (the run did not happen). Blocking: runs in a sandbox thread."""
    with prepare(code, language, backend, compile_limits=compile_limits) as program:
        if not program.ready:
            assert program.compile_result is not None
            return program.compile_result, program.compile_result
        return program.compile_result, program.run(stdin, limits)


def checked_language(language: str) -> str:
    """The canonical name of an installed language, or ``InvalidRequest`` (422)."""
    try:
        return get_language(language).name
    except LanguageUnavailable as exc:
        raise InvalidRequest(str(exc)) from exc


@router.post("/run", response_model=SandboxRunResponse, summary="Run one program in the sandbox")
async def sandbox_run(body: SandboxRunRequest, request: Request) -> SandboxRunResponse:
    """Compile (if the language needs it) and run the program once with `stdin`.

    How the program ended is a result (`status`: ok, runtime_error, compile_error, time_limit,
    memory_limit, output_limit, sandbox_error), never an error response.
    """
    start = time.perf_counter()
    executor: SandboxExecutor = request.app.state.sandbox
    backend = executor.require_backend()
    language = checked_language(body.language)
    limits = executor.limits(body.limits)
    compiled, run = await executor.run_now(
        run_once, backend, body.code, language, body.stdin, limits, executor.compile_limits()
    )
    shown = run_result_dict(run)
    return SandboxRunResponse(
        **shown,
        language=language,
        compile=ExecutionResult(**run_result_dict(compiled)) if compiled is not None else None,
        limits=executor.applied(limits),
        elapsed_ms=(time.perf_counter() - start) * 1000,
    )


@router.get("/languages", response_model=SandboxLanguages, summary="Languages that can run here")
async def sandbox_languages(request: Request) -> SandboxLanguages:
    executor: SandboxExecutor = request.app.state.sandbox
    names = available_languages() if executor.backend is not None else []
    return SandboxLanguages(
        backend=executor.backend.name if executor.backend is not None else None,
        available=executor.backend is not None,
        reason=executor.unavailable_reason,
        languages=[LanguageInfo(name=n, compiled=get_language(n).compiled) for n in names],
        slots=executor.slots,
    )
