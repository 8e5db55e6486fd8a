"""Multi-turn sessions: an environment held by the server between calls.

``POST   /v1/sessions``                   open one (env, task row, seed, group, max_turns, deadline)
``POST   /v1/sessions/{id}/tools/{name}`` run one of its tools
``POST   /v1/sessions/{id}/step``         a model turn: tool calls run, or an answer scored
``POST   /v1/sessions/{id}/verify``       the reward (a /v1/rewards result) and each turn's
``GET    /v1/sessions/{id}``              state, turns, time left
``DELETE /v1/sessions/{id}``              close it (the reaper closes it at its deadline or idle)
``GET    /v1/sessions/environments``      the environments, their tools and task fields

The routes are thin: the manager (``services/sessions/manager.py``) does the work. ``install``
adds them to an app and runs the manager inside the app's lifespan (after the scorer it uses
starts, closed before it closes).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, Request
from starlette.convertors import StringConvertor, register_url_convertor

from referee.client.session_models import (
    CreateSessionRequest,
    CreateSessionResponse,
    SessionEnvironments,
    SessionReward,
    SessionState,
    StepRequest,
    StepResponse,
    ToolCallRequest,
    ToolCallResponse,
    VerifyRequest,
)
from referee.services.auth import require_api_key
from referee.services.openapi_doc import api_key_router
from referee.services.sessions.catalog import ENVIRONMENTS
from referee.services.sessions.episode import EnvContext
from referee.services.sessions.manager import SessionManager
from referee.services.sessions.router import SessionRouter, serving

__all__ = ["install", "router"]

router = api_key_router(
    "/v1/sessions",
    "sessions",
    {
        404: "Unknown environment, or no such (or a closed) session",
        409: "The episode is over, or a request_id reused",
        422: "A task row the environment cannot use",
        503: "Too many live sessions (Retry-After), or no sandbox",
    },
)


class SessionIdConvertor(StringConvertor):
    """A session id (``s-`` and hex), so ``/v1/sessions/environments`` is never read as one:
    the routes of ``/{session_id}`` do not match it, and its ``Allow`` is GET alone."""

    regex = "s-[0-9a-f]{1,64}"


register_url_convertor("session_id", SessionIdConvertor())


def _manager(request: Request) -> SessionRouter:
    router: SessionRouter = request.app.state.sessions
    return router


@router.get("/environments", response_model=SessionEnvironments, summary="Session environments")
async def environments(request: Request) -> SessionEnvironments:
    """Each environment: what it is, its tools (OpenAI function schemas), the row's fields it
    reads and its default turns; the server's session limits."""
    s = request.app.state.settings
    return SessionEnvironments(
        environments=[e.listing() for e in ENVIRONMENTS.values()],
        max_live=s.sessions_max_live,
        idle_timeout_s=s.sessions_idle_timeout_s,
        default_deadline_s=s.sessions_deadline_s,
        node=_manager(request).local_tag,
    )


@router.post("", response_model=CreateSessionResponse, summary="Open a session")
async def create(body: CreateSessionRequest, request: Request) -> CreateSessionResponse:
    """Open an episode of `env` on the task row: the first observation and the tools."""
    return await _manager(request).create(body)


@router.post(
    "/{session_id:session_id}/tools/{name}", response_model=ToolCallResponse, summary="Call a tool"
)
async def tool(
    session_id: str, name: str, body: ToolCallRequest, request: Request
) -> ToolCallResponse:
    """Run the tool; bad arguments or an unknown tool are answered as text for the model."""
    return await _manager(request).tool(session_id, name, body.arguments, body.request_id)


@router.post(
    "/{session_id:session_id}/step", response_model=StepResponse, summary="Take a model turn"
)
async def step(session_id: str, body: StepRequest, request: Request) -> StepResponse:
    """Tool calls are run (their outputs returned); a turn without any is an answer, scored."""
    return await _manager(request).step(session_id, body)


@router.post(
    "/{session_id:session_id}/verify", response_model=SessionReward, summary="The session's reward"
)
async def verify(session_id: str, body: VerifyRequest, request: Request) -> SessionReward:
    """The final answer's reward, as a /v1/rewards result, with every turn's reward."""
    return await _manager(request).verify(session_id, body)


@router.get("/{session_id:session_id}", response_model=SessionState, summary="A session's state")
async def state(session_id: str, request: Request) -> SessionState:
    return await _manager(request).state(session_id)


@router.delete("/{session_id:session_id}", response_model=SessionState, summary="Close a session")
async def close(session_id: str, request: Request) -> SessionState:
    """Close it now: its sandbox and processes go."""
    return await _manager(request).close_session(session_id)


def install(app: FastAPI) -> None:
    """Add the routes (behind the API key) and the session manager's life to ``app``."""
    app.include_router(router, dependencies=[Depends(require_api_key)])
    inner: Callable[[FastAPI], AbstractAsyncContextManager[Any]] = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: FastAPI) -> AsyncIterator[Any]:
        async with inner(a) as state:
            settings = a.state.settings
            threads = ThreadPoolExecutor(
                max_workers=min(256, settings.sessions_max_live + 4),
                thread_name_prefix="session",
            )
            # an api whose programs run on sandbox nodes opens its sessions there
            manager = (
                None
                if settings.sandbox_backend == "remote"
                else SessionManager(EnvContext(a.state.scorer, settings, threads))
            )
            if manager is not None:
                manager.start()
            try:
                async with serving(SessionRouter.for_app(settings, manager), a) as router:
                    a.state.sessions = router
                    yield state
            finally:
                if manager is not None:
                    await manager.close_all()
                threads.shutdown(wait=False, cancel_futures=True)

    app.router.lifespan_context = lifespan
