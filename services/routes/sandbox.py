"""``POST /v1/sandbox/run`` (one program, stdin, limits -> result), ``POST /v1/sandbox/grade``
(one response, one ``code`` grader -> score and details) and ``GET /v1/sandbox/languages``.

With the ``remote`` backend each of them is forwarded to a sandbox node (``execution/remote.py``),
which validates the language and applies its own limits too.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from fastapi import Request

from referee.client.models import (
    CodeGradeRequest,
    CodeGradeResponse,
    ExecutionResult,
    SandboxLanguages,
    SandboxRunRequest,
    SandboxRunResponse,
)
from referee.services.execution.program import Program
from referee.services.execution.slots import SandboxExecutor
from referee.services.execution.wire import run_result_dict
from referee.services.openapi_doc import api_key_router

__all__ = ["hang_up", "router"]

router = api_key_router(
    "/v1/sandbox",
    "sandbox",
    {
        422: "Invalid request (unknown language, ...)",
        503: "No isolation backend: code execution is refused; or (with Retry-After) the queue "
        "for a sandbox slot is full",
        504: "No sandbox slot came free within REFEREE_SANDBOX_QUEUE_WAIT_S; retry after "
        "Retry-After",
    },
)


def hang_up(request: Request) -> Callable[[], Awaitable[object]]:
    """A coroutine function that returns once the client of ``request`` has hung up (its body
    is already read, so the next ASGI message is the disconnect)."""

    async def gone() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    return gone


@router.post("/run", response_model=SandboxRunResponse, summary="Run one program in the sandbox")
async def sandbox_run(body: SandboxRunRequest, request: Request) -> SandboxRunResponse:
    """Compile (if the language needs it) and run the program once with `stdin`.

    The run waits for a free sandbox slot (first come, first served) for up to
    `REFEREE_SANDBOX_QUEUE_WAIT_S`, then 504 with `Retry-After`; a full queue is 503 with
    `Retry-After`. How the program ended is a result (`status`: ok, runtime_error,
    compile_error, time_limit, memory_limit, output_limit, sandbox_error), never an error
    response.
    """
    start = time.perf_counter()
    executor: SandboxExecutor = request.app.state.sandbox
    runner = executor.require_runner()
    language = runner.check_language(body.language)
    limits = executor.limits(body.limits, body.compile_time_s)
    compiled, run = await executor.run_single(
        runner.run_once, Program(body.code, language, limits), body.stdin, gone=hang_up(request)
    )
    body_bytes = executor.settings.sandbox_output_bytes
    shown = run_result_dict(run, body_bytes)
    compile_shown = run_result_dict(compiled, body_bytes) if compiled is not None else None
    return SandboxRunResponse(
        **shown,
        language=language,
        compile=ExecutionResult(**compile_shown) if compile_shown is not None else None,
        limits=executor.applied(limits),
        elapsed_ms=(time.perf_counter() - start) * 1000,
    )


@router.post(
    "/grade", response_model=CodeGradeResponse, summary="Score one response with a code grader"
)
async def sandbox_grade(body: CodeGradeRequest, request: Request) -> CodeGradeResponse:
    """Find the program in `response`, compile it once and run every test of the grader, as for
    a `code` item of `/v1/rewards` (waiting for a free slot with no bound of its own). This is
    what a server with the `remote` sandbox backend asks its sandbox nodes for."""
    start = time.perf_counter()
    executor: SandboxExecutor = request.app.state.sandbox
    runner = executor.require_runner()
    grader = body.grader.model_dump()
    limits = executor.limits(body.grader.limits, body.compile_time_s)
    score, details = await executor.run_queued(runner.grade_code, grader, body.response, limits)
    return CodeGradeResponse(
        score=score, details=details, elapsed_ms=(time.perf_counter() - start) * 1000
    )


@router.get("/languages", response_model=SandboxLanguages, summary="Languages that can run here")
async def sandbox_languages(request: Request) -> SandboxLanguages:
    executor: SandboxExecutor = request.app.state.sandbox
    if executor.runner is None:
        return SandboxLanguages(
            backend=None,
            available=False,
            reason=executor.unavailable_reason,
            languages=[],
            slots=executor.slots,
        )
    return await asyncio.to_thread(executor.runner.languages, executor.slots)
