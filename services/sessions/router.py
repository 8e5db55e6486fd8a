"""Where each session lives, and every session call taken there: ``app.state.sessions``.

A session is held by one server process, the one whose interpreter and episode it owns; its id
names that process (``s-`` + the process's 8-hex tag + 24 random hex digits). A call may reach
any process (uvicorn's workers share one port; replicas sit behind one balancer), so the router
of the process that receives it takes it where the session is:

* **Local** (the sandbox is this machine's): sessions are opened in this process. Each process
  also serves the app on a Unix socket named after its tag, in a folder its sibling workers
  share (``sessions_socket_dir``); a call for a sibling's session is passed to that socket.
* **Nodes** (``REFEREE_SANDBOX_BACKEND=remote``, the compose stack): the api holds no sandbox,
  so every session is opened on a sandbox node (round robin, the next node when one is full or
  down), and later calls go to the node that answered for the session's tag (learnt at the open,
  or by asking the nodes). Api workers and replicas keep no state of their own: any of them
  routes any call.

A session whose process is gone (a worker killed, a node lost or restarted) is **lost**: its
verify answers ``valid: false`` with the reason, a tool call or step ends the episode
(``done``/``truncated``, the reason in ``info``), its state reads ``closed``. Its processes die
with their owner (bubblewrap's ``--die-with-parent``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import re
import secrets
import tempfile
from collections.abc import AsyncIterator, Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import httpx
import uvicorn
from pydantic import BaseModel

from referee.client.errors import APIError, NotFound, ServiceUnavailable
from referee.client.sdk import RefereeClient
from referee.client.session_models import (
    CreateSessionRequest,
    CreateSessionResponse,
    SessionReward,
    SessionState,
    StepRequest,
    StepResponse,
    ToolCallRequest,
    ToolCallResponse,
    VerifyRequest,
)
from referee.services.sessions.manager import SessionManager
from referee.services.settings import Settings

__all__ = ["SessionRouter", "owner_of", "socket_dir"]

log = logging.getLogger("referee.sessions")
M = TypeVar("M", bound=BaseModel)
_SID = re.compile(r"s-([0-9a-f]{8})[0-9a-f]{24}")
_CALL_TIMEOUT_S = 600.0  # a forwarded call: a cell's limits, a verify's scoring


def owner_of(session_id: str) -> str | None:
    """The tag of the process that holds ``session_id`` (None for an id of no process)."""
    match = _SID.fullmatch(session_id)
    return match.group(1) if match else None


def socket_dir(settings: Settings) -> Path:
    """The folder of the sibling workers' sockets: the setting, or one per parent process
    (uvicorn's and gunicorn's workers are children of one supervisor)."""
    if settings.sessions_socket_dir:
        return Path(settings.sessions_socket_dir)
    return Path(tempfile.gettempdir()) / "referee-sessions" / str(os.getppid())


class _Lost(Exception):
    """The process holding the session is gone."""


class _SocketServer(uvicorn.Server):
    """The app again, on this process's Unix socket, inside the main server's event loop: the
    main server keeps the signals and runs the app's lifespan."""

    @contextlib.contextmanager
    def capture_signals(self) -> Any:
        yield

    def install_signal_handlers(self) -> None:  # uvicorn before 0.29
        pass


class SessionRouter:
    """The session calls of the routes, taken to the process that holds each session."""

    def __init__(self, settings: Settings, local: SessionManager | None, tag: str) -> None:
        self.settings = settings
        self.local = local  # None on an api that forwards everything to sandbox nodes
        self.tag = tag
        self.nodes = (
            [u.strip().rstrip("/") for u in (settings.sandbox_url or "").split(",") if u.strip()]
            if local is None
            else []
        )
        self._turn = itertools.count()
        self._node_of: dict[str, str] = {}  # tag -> node URL, learnt
        self._clients: dict[str, httpx.AsyncClient] = {}
        self._socket_server: _SocketServer | None = None
        self._socket_task: asyncio.Task[None] | None = None
        self.socket_path: Path | None = None

    @property
    def local_tag(self) -> str | None:
        return self.tag if self.local is not None else None

    @classmethod
    def for_app(cls, settings: Settings, manager: SessionManager | None) -> SessionRouter:
        tag = manager.tag if manager is not None else secrets.token_hex(4)
        return cls(settings, manager, tag)

    # -- life ---------------------------------------------------------------------------------

    async def start(self, app: Any) -> None:
        """Serve ``app`` on this process's socket (local mode), for the sibling workers."""
        if self.local is None:
            return
        folder = socket_dir(self.settings)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.socket_path = folder / f"{self.tag}.sock"
        # no logging set-up of its own: the main server's stays as it is
        config = uvicorn.Config(
            app, uds=str(self.socket_path), lifespan="off", log_config=None, log_level=None
        )
        self._socket_server = server = _SocketServer(config)

        async def serve() -> None:
            try:
                await server.serve()
            except SystemExit:  # uvicorn's answer to a failed bind: not this process's end
                log.warning("the sessions socket %s could not be served", self.socket_path)

        self._socket_task = asyncio.get_running_loop().create_task(serve())
        for _ in range(200):  # it binds at once; wait so a sibling never finds no socket
            if self._socket_server.started or self._socket_task.done():
                break
            await asyncio.sleep(0.01)

    async def close(self) -> None:
        if self._socket_server is not None and self._socket_task is not None:
            self._socket_server.should_exit = True
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._socket_task, 10)
        if self.socket_path is not None:
            with contextlib.suppress(OSError):
                self.socket_path.unlink()
        for client in self._clients.values():
            await client.aclose()

    # -- the calls ----------------------------------------------------------------------------

    async def create(self, body: CreateSessionRequest) -> CreateSessionResponse:
        if self.local is not None:
            return await self.local.create(body)
        payload = body.model_dump(mode="json", exclude_unset=True)
        full: ServiceUnavailable | None = None
        down: list[str] = []
        for _ in range(len(self.nodes)):
            node = self.nodes[next(self._turn) % len(self.nodes)]
            try:
                opened = await self._send(
                    node, "POST", "/v1/sessions", payload, CreateSessionResponse
                )
            except _Lost:
                down.append(node)
                continue
            except ServiceUnavailable as exc:  # full, or no sandbox there: the next node
                if full is None or (exc.retry_after_s or 0) < (full.retry_after_s or 0):
                    full = exc
                continue
            owner = owner_of(opened.session_id)
            if owner is not None:
                self._node_of[owner] = node
            return opened
        if full is not None:
            raise full
        raise ServiceUnavailable(f"no sandbox node answers: {', '.join(down)}", retry_after_s=5)

    async def tool(
        self, sid: str, name: str, arguments: dict[str, Any], request_id: str | None
    ) -> ToolCallResponse:
        async def here(m: SessionManager) -> ToolCallResponse:
            return await m.tool(sid, name, arguments, request_id)

        def lost(reason: str) -> ToolCallResponse:
            return ToolCallResponse(
                output=f"[session_lost: {reason}]\n",
                done=True,
                info={"error": "session_lost", "reason": reason},
            )

        body = ToolCallRequest(arguments=arguments, request_id=request_id)
        return await self._route(sid, here, lost, "POST", f"/tools/{name}", body, ToolCallResponse)

    async def step(self, sid: str, body: StepRequest) -> StepResponse:
        async def here(m: SessionManager) -> StepResponse:
            return await m.step(sid, body)

        def lost(reason: str) -> StepResponse:
            info = {"kind": "lost", "valid": False, "error": "session_lost", "reason": reason}
            return StepResponse(truncated=True, info=info)

        return await self._route(sid, here, lost, "POST", "/step", body, StepResponse)

    async def verify(self, sid: str, body: VerifyRequest) -> SessionReward:
        async def here(m: SessionManager) -> SessionReward:
            return await m.verify(sid, body)

        def lost(reason: str) -> SessionReward:
            details = {"outcome": "session_lost", "reason": reason}
            return SessionReward(id=sid, score=0.0, valid=False, details=details)

        return await self._route(sid, here, lost, "POST", "/verify", body, SessionReward)

    async def state(self, sid: str) -> SessionState:
        async def here(m: SessionManager) -> SessionState:
            return m.state(sid)

        return await self._route(
            sid, here, partial(_lost_state, sid), "GET", "", None, SessionState
        )

    async def close_session(self, sid: str) -> SessionState:
        async def here(m: SessionManager) -> SessionState:
            return await m.close(sid)

        return await self._route(
            sid, here, partial(_lost_state, sid), "DELETE", "", None, SessionState
        )

    # -- routing ------------------------------------------------------------------------------

    async def _route(
        self,
        sid: str,
        here: Callable[[SessionManager], Any],
        lost: Callable[[str], M],
        method: str,
        path: str,
        body: BaseModel | None,
        model: type[M],
    ) -> M:
        """The call taken where the session is: ``here`` on this process's manager, else
        ``method path`` (below the session's URL) sent to its process; a session whose process
        is gone answers ``lost(reason)``."""
        owner = owner_of(sid)
        if owner is None:
            raise NotFound(f"no session {sid}")
        payload = body.model_dump(mode="json", exclude_unset=True) if body is not None else None
        full_path = f"/v1/sessions/{sid}{path}"
        try:
            if self.local is None:
                return await self._to_node(owner, sid, method, full_path, payload, model)
            if owner != self.tag:
                return await self._to_sibling(owner, sid, method, full_path, payload, model)
            result: M = await here(self.local)
            return result
        except _Lost as gone:
            return lost(str(gone))

    async def _to_sibling(
        self, owner: str, sid: str, method: str, path: str, payload: Any, model: type[M]
    ) -> M:
        folder = socket_dir(self.settings)
        sock, lost = folder / f"{owner}.sock", folder / f"{owner}.lost"
        gone = f"the server process that held session {sid} is gone"
        if lost.exists():
            raise _Lost(f"{gone} ({lost.read_text(errors='replace')[:200]})")
        if not sock.exists():
            raise NotFound(f"no session {sid}")
        try:
            return await self._send(f"unix:{sock}", method, path, payload, model)
        except _Lost as exc:
            # a dead worker's socket (no one will answer it) becomes a note that it died
            with contextlib.suppress(OSError):
                lost.write_text(str(exc))
                sock.unlink()
            raise _Lost(f"{gone} ({exc})") from None

    async def _to_node(
        self, owner: str, sid: str, method: str, path: str, payload: Any, model: type[M]
    ) -> M:
        node = self._node_of.get(owner)
        if node is None:
            node = await self._find_node(sid)
            self._node_of[owner] = node
        try:
            return await self._send(node, method, path, payload, model)
        except _Lost as exc:
            raise _Lost(
                f"the sandbox node {node} that held session {sid} is lost ({exc})"
            ) from None
        except NotFound:
            if await self._restarted(node, owner):
                raise _Lost(f"the sandbox node {node} that held session {sid} restarted") from None
            raise

    async def _find_node(self, sid: str) -> str:
        """Ask each node for the session (an api that did not open it, or was restarted)."""
        for node in self.nodes:
            try:
                await self._send(node, "GET", f"/v1/sessions/{sid}", None, SessionState)
                return node
            except (_Lost, APIError):
                continue
        raise NotFound(f"no session {sid} on any sandbox node")

    async def _restarted(self, node: str, owner: str) -> bool:
        """The node answers, and not as the process whose tag the session carries."""
        try:
            envs = await self._send(node, "GET", "/v1/sessions/environments", None, _Node)
        except (_Lost, APIError):
            return False
        return envs.node is not None and envs.node != owner

    def _client(self, where: str) -> httpx.AsyncClient:
        client = self._clients.get(where)
        if client is None:
            if where.startswith("unix:"):
                transport = httpx.AsyncHTTPTransport(uds=where[5:])
                base, key = "http://referee", _first(self.settings.api_keys)
            else:
                transport, base, key = (
                    httpx.AsyncHTTPTransport(retries=2),
                    where,
                    (self.settings.sandbox_api_key),
                )
            headers = {"user-agent": "referee-session-router"}
            if key:
                headers["authorization"] = f"Bearer {key}"
            client = httpx.AsyncClient(
                base_url=base, transport=transport, headers=headers, timeout=_CALL_TIMEOUT_S
            )
            self._clients[where] = client
        return client

    async def _send(self, where: str, method: str, path: str, payload: Any, model: type[M]) -> M:
        try:
            response = await self._client(where).request(method, path, json=payload)
        except httpx.TransportError as exc:
            raise _Lost(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__) from exc
        # the SDK's reading of an answer: the same error, its Retry-After passed on
        return RefereeClient._parse(response, model)


class _Node(BaseModel):
    """The part of ``GET /v1/sessions/environments`` that names the answering process."""

    node: str | None = None


def _first(keys: list[str]) -> str | None:
    return keys[0] if keys else None


def _lost_state(sid: str, reason: str) -> SessionState:
    return SessionState(
        session_id=sid,
        env="unknown",
        state="closed",
        turns=0,
        tool_calls=0,
        max_turns=0,
        time_left_s=0.0,
        idle_left_s=0.0,
        reason=reason,
    )


@contextlib.asynccontextmanager
async def serving(router: SessionRouter, app: Any) -> AsyncIterator[SessionRouter]:
    await router.start(app)
    try:
        yield router
    finally:
        await router.close()
