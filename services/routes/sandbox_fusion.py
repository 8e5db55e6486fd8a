"""SandboxFusion compatibility: ``POST /run_code`` and ``GET /v1/ping``, so veRL's
``sandbox_fusion`` reward (and other SandboxFusion clients) work against referee unchanged.

``status`` is ``Success`` when the program built and exited 0, ``Failed`` when it did not
(compile error, non-zero exit, time or memory limit), ``SandboxError`` when the sandbox itself
failed or the language is not available. Each result is ``{status: Finished | Error |
TimeLimitExceeded, execution_time, return_code, stdout, stderr}``; a run killed by a signal has
``return_code`` -signal, as Python's ``subprocess`` reports it. Limits: ``run_timeout`` and
``compile_timeout`` (seconds) and ``memory_limit_MB`` (-1: the server default), capped by the
server's maxima. A call waits for a free sandbox slot (first come, first served) for up to
``REFEREE_SANDBOX_QUEUE_WAIT_S``, then is answered 504 with ``Retry-After``, the one status
veRL's client retries; a full queue is 503 with ``Retry-After``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from referee.client.errors import InvalidRequest
from referee.client.models import (
    RunCodeRequest,
    RunCodeResponse,
    RunLimits,
)
from referee.sandbox import RunStatus
from referee.services.execution.program import Program
from referee.services.execution.slots import SandboxExecutor
from referee.services.execution.wire import to_run_code_result
from referee.services.json_body import FastJSONRoute
from referee.services.openapi_doc import problem_responses
from referee.services.routes.sandbox import hang_up

__all__ = ["ping_router", "router"]

router = APIRouter(tags=["compat"], route_class=FastJSONRoute)
ping_router = APIRouter(tags=["compat"], route_class=FastJSONRoute)

# SandboxFusion's language names that differ from referee's (the rest are aliases it knows).
_LANGUAGES = {"nodejs": "javascript"}


_QUEUE_PROBLEMS = problem_responses(
    {
        503: "No isolation backend; or (with Retry-After) the slot queue is full",
        504: "No sandbox slot came free within REFEREE_SANDBOX_QUEUE_WAIT_S (with Retry-After; "
        "veRL's client retries it)",
    }
)


@router.post(
    "/run_code",
    response_model=RunCodeResponse,
    summary="SandboxFusion: run code",
    responses=_QUEUE_PROBLEMS,
)
async def run_code(body: RunCodeRequest, request: Request) -> RunCodeResponse:
    executor: SandboxExecutor = request.app.state.sandbox
    runner = executor.require_runner()
    name = _LANGUAGES.get(body.language, body.language)
    try:
        language = runner.check_language(name)
    except InvalidRequest as exc:
        return RunCodeResponse(status="SandboxError", message=exc.detail)
    if any(body.files.values()):
        return RunCodeResponse(status="SandboxError", message="`files` are not supported")
    memory = body.memory_limit_MB if body.memory_limit_MB > 0 else None
    asked = RunLimits(time_s=body.run_timeout, memory_mb=memory)
    limits = executor.limits(asked, body.compile_timeout)
    try:
        compiled, run = await executor.run_single(
            runner.run_once,
            Program(body.code, language, limits),
            body.stdin or "",
            gone=hang_up(request),
        )
    except InvalidRequest as exc:  # a remote backend's node does not know the language
        return RunCodeResponse(status="SandboxError", message=exc.detail)
    body_bytes = executor.settings.sandbox_output_bytes
    compile_result = to_run_code_result(compiled, body_bytes) if compiled is not None else None
    if compiled is not None and not compiled.ok:
        top = "SandboxError" if compiled.status is RunStatus.SANDBOX_ERROR else "Failed"
        return RunCodeResponse(status=top, message=compiled.message, compile_result=compile_result)
    if run.status is RunStatus.SANDBOX_ERROR:
        top = "SandboxError"
    else:
        top = "Success" if run.ok else "Failed"
    return RunCodeResponse(
        status=top,
        message=run.message,
        compile_result=compile_result,
        run_result=to_run_code_result(run, body_bytes),
    )


@ping_router.get("/v1/ping", summary="SandboxFusion: liveness")
async def ping() -> str:
    return "pong"
