"""A NeMo Gym (0.7.0) resources server that forwards to referee.

NeMo Gym launches resources servers from a folder of its own tree; copy this folder to
``resources_servers/referee`` of a NeMo Gym checkout and start referee beside it
(``referee serve`` or the compose stack). Every route is referee's: the session is opened,
its tools run and its answer verified by referee's ``/nemo-gym/{env}/`` routes; this server
keeps only the map from NeMo Gym's sessions to referee's.

- ``/seed_session``: the legacy body (the row, as an Agent's ``/run`` sends it) or an
  Environment Server's ``ResourcesSeedSessionRequest`` (its ``task_data`` is the row).
- ``/{tool}``: the session's tools (``python``, ``run_tests``, ``answer``...), their output as
  the model sees it.
- ``/verify``: referee's reward; referee's own failures come back with ``mask_sample`` and a
  ``failure_kind`` of NeMo Gym's vocabulary, never as a reward of the model.
- ``/close_session``: both bodies; a seed after a close is refused.
"""

from __future__ import annotations

import asyncio
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any, ClassVar, TypeVar

import httpx
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import PlainTextResponse
from nemo_gym.base_resources_server import (
    BaseResourcesServerConfig,
    BaseSeedSessionResponse,
    BaseVerifyRequest,
    BaseVerifyResponse,
    ResourcesCloseSessionRequest,
    ResourcesCloseSessionResponse,
    ResourcesSeedSessionRequest,
    ResourcesSeedSessionResponse,
    ReverifyMode,
    SimpleResourcesServer,
)
from nemo_gym.server_utils import SESSION_ID_KEY
from pydantic import ConfigDict, PrivateAttr, ValidationError

COOKIE = "referee_nemo_gym___{env}"


class RefereeResourcesServerConfig(BaseResourcesServerConfig):
    referee_url: str = "http://127.0.0.1:8000"
    # referee's environment: python (tool-integrated math), procedural or code
    referee_env: str = "python"
    referee_api_key: str | None = None
    referee_timeout_s: float = 300.0
    # a verify without a seeded session opens its own from the row: re-runnable
    REVERIFY_MODE: ClassVar[ReverifyMode] = ReverifyMode.STATELESS


class RefereeVerifyResponse(BaseVerifyResponse):
    """NeMo Gym's verify answer with the row's own fields and referee's (``reward_components``,
    ``details``, ``turns``) kept."""

    model_config = ConfigDict(extra="allow")


def _masked(row: dict[str, Any], kind: str, reason: str) -> RefereeVerifyResponse:
    """referee's own failure: no reward of the model, the sample masked, the reason named."""
    failure = {"reward": 0.0, "mask_sample": True, "failure_kind": kind, "failure_reason": reason}
    return RefereeVerifyResponse.model_validate({**row, **failure})


Req = TypeVar("Req", ResourcesSeedSessionRequest, ResourcesCloseSessionRequest)


def _resources_request(body: Any, model: type[Req]) -> Req | None:
    """The resources-session request of a seed or close body (None: the body is not one, an
    older agent's call); one that is malformed is a 422 naming the model."""
    if not (isinstance(body, dict) and "resources_session_id" in body):
        return None
    try:
        return model.model_validate(body)
    except ValidationError as e:
        raise HTTPException(422, f"not a {model.__name__}: {e}") from e


class RefereeResourcesServer(SimpleResourcesServer):
    config: RefereeResourcesServerConfig
    # NeMo Gym's session id (its signed cookie) or resources_session_id -> referee's session id
    _sessions: dict[str, str] = PrivateAttr(default_factory=dict)
    _episodes: dict[str, Any] = PrivateAttr(default_factory=dict)
    _closed: set[str] = PrivateAttr(default_factory=set)
    # resources_session_id -> its referee session being opened (a repeated seed waits for it)
    _opening: dict[str, asyncio.Future[None]] = PrivateAttr(default_factory=dict)
    _http: httpx.AsyncClient | None = PrivateAttr(default=None)
    _http_loop: Any = PrivateAttr(default=None)

    # -- referee ----------------------------------------------------------------------------
    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()  # a client belongs to one event loop
        if self._http is None or self._http_loop is not loop:
            headers = {}
            if self.config.referee_api_key:
                headers["Authorization"] = f"Bearer {self.config.referee_api_key}"
            base = f"{self.config.referee_url.rstrip('/')}/nemo-gym/{self.config.referee_env}"
            # one client for every session: it keeps no cookie, each call names its session
            never = CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))
            self._http = httpx.AsyncClient(
                base_url=base, headers=headers, cookies=never, timeout=self.config.referee_timeout_s
            )
            self._http_loop = loop
        return self._http

    async def _post(self, path: str, body: Any, key: str | None) -> httpx.Response:
        sid = self._sessions.get(key) if key else None
        headers = {"Cookie": f"{COOKIE.format(env=self.config.referee_env)}={sid}"} if sid else {}
        return await self._client().post(path, json=body, headers=headers)

    async def _open(self, key: str, row: dict[str, Any]) -> None:
        try:
            answer = await self._post("/seed_session", row, None)
        except httpx.HTTPError as e:
            raise HTTPException(
                502, f"referee unreachable at {self.config.referee_url}: {e!r}"
            ) from e
        if answer.status_code != 200:  # referee's status (422: a row it cannot use) and reason
            raise HTTPException(answer.status_code, f"referee refused the row: {answer.text[:500]}")
        sid = answer.cookies.get(COOKIE.format(env=self.config.referee_env))
        if not sid:
            raise HTTPException(502, "referee opened no session (no session cookie in its answer)")
        self._sessions[key] = sid

    async def _seeded(self, key: str | None) -> None:
        """Wait while the seed of ``key`` is still opening its referee session (a failed seed
        has answered its caller; here it only means there is no session)."""
        opening = self._opening.get(key) if key else None
        if opening is not None:
            try:
                await asyncio.shield(opening)
            except Exception:
                pass

    @staticmethod
    async def _json(request: Request) -> Any:
        try:
            return await request.json()
        except ValueError as e:
            raise HTTPException(422, f"the body is not JSON: {e}") from e

    # -- NeMo Gym's routes --------------------------------------------------------------------
    def setup_webserver(self) -> FastAPI:
        app = super().setup_webserver()
        app.post("/{tool_name}", response_class=PlainTextResponse)(self.tool)
        return app

    async def seed_session(self, request: Request) -> Any:  # type: ignore[override]
        body = await self._json(request)
        seed = _resources_request(body, ResourcesSeedSessionRequest)
        if seed is not None:
            rid = seed.resources_session_id
            if rid in self._closed:
                raise HTTPException(409, f"Resources session is already closed: {rid}")
            known = self._episodes.get(rid)
            if known is not None and known != (seed.episode_id, seed.task_id):
                raise HTTPException(409, f"{rid} is already bound to another episode or task")
            if known is None:
                self._episodes[rid] = (seed.episode_id, seed.task_id)
                opening = asyncio.ensure_future(self._open(rid, dict(seed.task_data)))
                self._opening[rid] = opening
                try:
                    await asyncio.shield(opening)
                except BaseException:
                    self._episodes.pop(rid, None)  # not seeded: a retry may seed it
                    raise
                finally:
                    self._opening.pop(rid, None)
            elif rid in self._opening:  # the same seed again while the first is opening it
                await asyncio.shield(self._opening[rid])
            request.session[SESSION_ID_KEY] = rid  # the agent's tool calls carry this cookie
            return ResourcesSeedSessionResponse(resources_session_id=rid)
        if not isinstance(body, dict):
            raise HTTPException(422, "seed_session takes a JSON object (the row)")
        await self._open(request.session[SESSION_ID_KEY], body)
        return BaseSeedSessionResponse()

    async def tool(self, tool_name: str, request: Request) -> PlainTextResponse:
        """The tool's output as the model sees it; any status is read as text by NeMo Gym's
        agents, so failures say what went wrong."""
        key = request.session.get(SESSION_ID_KEY)
        await self._seeded(key)
        if key not in self._sessions:
            return PlainTextResponse(
                "no session: call /seed_session first and send its cookie", 404
            )
        arguments = await self._json(request)
        try:
            answer = await self._post(f"/{tool_name}", arguments, key)
        except httpx.HTTPError as e:
            text = f"referee unreachable at {self.config.referee_url}: {e!r}"
            return PlainTextResponse(text, 502)
        return PlainTextResponse(answer.text, answer.status_code)

    async def verify(self, request: Request, body: BaseVerifyRequest) -> RefereeVerifyResponse:  # type: ignore[override]
        row = await self._json(request)  # the whole row: NeMo Gym's model keeps only its own fields
        key = request.session.get(SESSION_ID_KEY)
        await self._seeded(key)
        try:
            answer = await self._post("/verify", row, key if key in self._sessions else None)
        except httpx.HTTPError as e:
            reason = f"referee unreachable at {self.config.referee_url}: {e!r}"
            return _masked(row, "transport_unreachable", reason)
        if answer.status_code != 200:
            reason = f"referee answered {answer.status_code}: {answer.text[:500]}"
            return _masked(row, "verifier_error", reason)
        return RefereeVerifyResponse.model_validate({**row, **answer.json()})

    async def close_resources_session(self, request: Request) -> Any:  # type: ignore[override]
        body = await self._json(request)
        close = _resources_request(body, ResourcesCloseSessionRequest)
        if close is not None:
            rid = close.resources_session_id
            known = self._episodes.get(rid)
            if known is not None and known[0] != close.episode_id:
                raise HTTPException(409, "episode_id does not match the seeded resources session")
            await self._close(rid)
            self._closed.add(rid)
            return ResourcesCloseSessionResponse(resources_session_id=rid)
        await self._close(request.session.get(SESSION_ID_KEY))
        return {}

    async def _close(self, key: str | None) -> None:
        await self._seeded(key)  # a close while its seed opens: closes what the seed opened
        if key in self._sessions:
            answer = await self._post("/close_session", {}, key)
            if answer.status_code not in (200, 404):  # 404: referee had closed or reaped it
                # raised, so the caller can retry (NeMo Gym's close contract)
                raise HTTPException(
                    502, f"referee could not close the session: {answer.text[:500]}"
                )
            del self._sessions[key]


if __name__ == "__main__":
    RefereeResourcesServer.run_webserver()
