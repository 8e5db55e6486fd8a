"""The SDK's session calls (multi-turn environments, ``/v1/sessions``; the wire models in
``client/session_models.py``), sync and async, mixed into ``RefereeClient`` and
``AsyncRefereeClient``, which give them their transport (``_post``, ``_get``, ``_send``)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import quote

from pydantic import BaseModel, ValidationError

from referee.client.errors import InvalidRequest
from referee.client.session_models import (
    CreateSessionRequest,
    CreateSessionResponse,
    SessionEnvironments,
    SessionReward,
    SessionState,
    StepMessage,
    StepRequest,
    StepResponse,
    ToolCallResponse,
)

__all__ = ["AsyncSessionCalls", "SessionCalls", "checked_body"]

M = TypeVar("M", bound=BaseModel)


def checked_body(
    model: type[M], where: str, fields: Mapping[str, Any], **dump: Any
) -> dict[str, Any]:
    """A request body checked here first, so a mistake is named before anything is sent (the
    fields that are ``None`` left out; ``dump``: how the model is dumped)."""
    try:
        body = model.model_validate({k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise InvalidRequest(f"{where}: {loc}: {first['msg']}") from exc
    return body.model_dump(**dump)


def _session_body(model: type[M], where: str, **fields: Any) -> dict[str, Any]:
    """A session request: the fields given are sent as given (a task row's or a tool's
    ``None`` values included)."""
    return checked_body(model, where, fields, mode="json", exclude_unset=True)


def _sid(session_id: str) -> str:
    return f"/v1/sessions/{quote(session_id, safe='')}"


# The bodies of the session calls, built here once for both clients.
def _open_body(
    env: str,
    task: Mapping[str, Any],
    seed: int | None,
    group: Mapping[str, Any] | None,
    max_turns: int | None,
    deadline_s: float | None,
) -> dict[str, Any]:
    return _session_body(
        CreateSessionRequest,
        "open_session",
        env=env,
        task=dict(task),
        seed=seed,
        group=dict(group) if group is not None else None,
        max_turns=max_turns,
        deadline_s=deadline_s,
    )


def _tool_call(
    session_id: str, name: str, arguments: Mapping[str, Any], request_id: str | None
) -> tuple[str, dict[str, Any]]:
    """The path and body of a tool call (a ``request_id`` made if not given)."""
    payload = {"arguments": dict(arguments), "request_id": request_id or uuid.uuid4().hex}
    return f"{_sid(session_id)}/tools/{quote(name, safe='')}", payload


def _step_body(
    response: str | Mapping[str, Any] | StepMessage, request_id: str | None
) -> dict[str, Any]:
    return _session_body(
        StepRequest,
        "session_step",
        response=(
            response.model_dump(exclude_none=True)
            if isinstance(response, StepMessage)
            else response
        ),
        request_id=request_id or uuid.uuid4().hex,
    )


def _verify_body(response: str | Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
    if response is None or isinstance(response, str):
        return {"response": response}
    return {"response": [dict(m) for m in response]}


class SessionCalls:
    """The session calls of :class:`~referee.client.sdk.RefereeClient`."""

    def _post(self, path: str, payload: dict[str, Any], model: type[M]) -> M:
        raise NotImplementedError

    def _get(self, path: str, model: type[M]) -> M:
        raise NotImplementedError

    def _send(self, method: str, path: str, payload: dict[str, Any] | None, model: type[M]) -> M:
        raise NotImplementedError

    def session_environments(self) -> SessionEnvironments:
        """The session environments, their tools' schemas and the server's session limits."""
        return self._get("/v1/sessions/environments", SessionEnvironments)

    def open_session(
        self,
        env: str,
        task: Mapping[str, Any],
        *,
        seed: int | None = None,
        group: Mapping[str, Any] | None = None,
        max_turns: int | None = None,
        deadline_s: float | None = None,
    ) -> CreateSessionResponse:
        """Open a session of ``env`` on the task row: its first observation and its tools."""
        payload = _open_body(env, task, seed, group, max_turns, deadline_s)
        return self._post("/v1/sessions", payload, CreateSessionResponse)

    def session_tool(
        self,
        session_id: str,
        name: str,
        arguments: Mapping[str, Any],
        *,
        request_id: str | None = None,
    ) -> ToolCallResponse:
        """Run one tool. A ``request_id`` is made if not given, so the SDK's retries of this
        call never run it twice."""
        path, payload = _tool_call(session_id, name, arguments, request_id)
        return self._post(path, payload, ToolCallResponse)

    def session_step(
        self,
        session_id: str,
        response: str | Mapping[str, Any] | StepMessage,
        *,
        request_id: str | None = None,
    ) -> StepResponse:
        """A model turn: text (an answer) or an assistant message with ``tool_calls``."""
        payload = _step_body(response, request_id)
        return self._post(f"{_sid(session_id)}/step", payload, StepResponse)

    def session_verify(
        self, session_id: str, response: str | Sequence[Mapping[str, Any]] | None = None
    ) -> SessionReward:
        """The session's reward (``response``: the final answer; unset: its last answer)."""
        payload = _verify_body(response)
        return self._post(f"{_sid(session_id)}/verify", payload, SessionReward)

    def session(self, session_id: str) -> SessionState:
        return self._get(_sid(session_id), SessionState)

    def close_session(self, session_id: str) -> SessionState:
        return self._send("DELETE", _sid(session_id), None, SessionState)


class AsyncSessionCalls:
    """The session calls of :class:`~referee.client.sdk.AsyncRefereeClient`."""

    async def _post(self, path: str, payload: dict[str, Any], model: type[M]) -> M:
        raise NotImplementedError

    async def _get(self, path: str, model: type[M]) -> M:
        raise NotImplementedError

    async def _send(
        self, method: str, path: str, payload: dict[str, Any] | None, model: type[M]
    ) -> M:
        raise NotImplementedError

    async def session_environments(self) -> SessionEnvironments:
        """The session environments, their tools' schemas and the server's session limits."""
        return await self._get("/v1/sessions/environments", SessionEnvironments)

    async def open_session(
        self,
        env: str,
        task: Mapping[str, Any],
        *,
        seed: int | None = None,
        group: Mapping[str, Any] | None = None,
        max_turns: int | None = None,
        deadline_s: float | None = None,
    ) -> CreateSessionResponse:
        """Open a session of ``env`` on the task row: its first observation and its tools."""
        payload = _open_body(env, task, seed, group, max_turns, deadline_s)
        return await self._post("/v1/sessions", payload, CreateSessionResponse)

    async def session_tool(
        self,
        session_id: str,
        name: str,
        arguments: Mapping[str, Any],
        *,
        request_id: str | None = None,
    ) -> ToolCallResponse:
        """Run one tool. A ``request_id`` is made if not given, so the SDK's retries of this
        call never run it twice."""
        path, payload = _tool_call(session_id, name, arguments, request_id)
        return await self._post(path, payload, ToolCallResponse)

    async def session_step(
        self,
        session_id: str,
        response: str | Mapping[str, Any] | StepMessage,
        *,
        request_id: str | None = None,
    ) -> StepResponse:
        """A model turn: text (an answer) or an assistant message with ``tool_calls``."""
        payload = _step_body(response, request_id)
        return await self._post(f"{_sid(session_id)}/step", payload, StepResponse)

    async def session_verify(
        self, session_id: str, response: str | Sequence[Mapping[str, Any]] | None = None
    ) -> SessionReward:
        """The session's reward (``response``: the final answer; unset: its last answer)."""
        payload = _verify_body(response)
        return await self._post(f"{_sid(session_id)}/verify", payload, SessionReward)

    async def session(self, session_id: str) -> SessionState:
        return await self._get(_sid(session_id), SessionState)

    async def close_session(self, session_id: str) -> SessionState:
        return await self._send("DELETE", _sid(session_id), None, SessionState)
