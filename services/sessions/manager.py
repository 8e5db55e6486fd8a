"""The live sessions of one server process: opened, stepped, verified, closed and reaped.

    manager = SessionManager(ctx)            # ctx: the app's scorer, settings, a thread pool
    manager.start()                          # the reaper
    opened = await manager.create(CreateSessionRequest(env="python", task={...}))
    await manager.tool(opened.session_id, "python", {"code": "x = 1"}, request_id="r1")
    await manager.close_all()

Why it is built this way:

* **Bounded.** ``sessions_max_live`` active sessions at once (a python session holds a sandbox
  with up to a GiB of memory). One more is a 503 with ``Retry-After`` (when the first live one
  will time out at the latest), so a trainer backs off instead of piling up sandboxes.
* **Reaped.** A task on the event loop closes every session at its deadline or after
  ``sessions_idle_timeout_s`` without a call, whether or not its caller is still there (a
  crashed trainer never calls DELETE). A call in progress is not idle; the deadline closes
  even such a session (the interpreter answers ``closed``).
* **Done frees.** An episode that ended (answered, solved, out of turns) or was verified frees
  what it holds at once (its interpreter) and no longer counts as live; ``verify`` and ``GET``
  still answer for it until its deadline or idle timeout, then it is forgotten.
* **Idempotent.** A ``request_id`` seen before on the session returns the first answer
  without running anything again (a retry after a lost connection must not run a cell twice);
  the same id with a different body is a 409.
* **One call at a time per session** (an asyncio lock): an episode never sees two calls at
  once, and a retried request waits for the first one's answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from referee.client.errors import Conflict, NotFound, ServiceUnavailable
from referee.client.session_models import (
    CreateSessionRequest,
    CreateSessionResponse,
    SessionReward,
    SessionState,
    StepMessage,
    StepRequest,
    StepResponse,
    ToolCallResponse,
    ToolOutput,
    TurnReward,
    VerifyRequest,
)
from referee.services.sessions.catalog import ENVIRONMENTS, open_episode
from referee.services.sessions.episode import EnvContext, Episode, final_text

__all__ = ["Session", "SessionManager"]

log = logging.getLogger("referee.sessions")
_REMEMBERED = 4096  # ended sessions kept for GET's "closed, because ..."
_REPLAYS = 256  # request ids remembered per session


@dataclass(slots=True)
class Session:
    id: str
    env: str
    episode: Episode
    max_turns: int
    deadline: float  # time.monotonic()
    info: dict[str, Any]
    last_used: float = field(default_factory=time.monotonic)
    state: Literal["active", "done", "closed"] = "active"
    turns: list[TurnReward] = field(default_factory=list)
    tool_calls: int = 0
    busy: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    replies: OrderedDict[str, tuple[str, BaseModel]] = field(default_factory=OrderedDict)
    reason: str | None = None


def _fingerprint(kind: str, payload: Any) -> str:
    raw = json.dumps([kind, payload], sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()


class SessionManager:
    """Sessions of this process (see the module doc)."""

    def __init__(self, ctx: EnvContext, tag: str | None = None) -> None:
        self.ctx = ctx
        self.tag = tag or secrets.token_hex(4)  # names this process in its sessions' ids
        self.settings = ctx.settings
        self.sessions: dict[str, Session] = {}
        self.ended: OrderedDict[str, SessionState] = OrderedDict()
        self._opening = 0
        self._reaper: asyncio.Task[None] | None = None

    # -- life ---------------------------------------------------------------------------------

    @property
    def live(self) -> int:
        """Sessions that hold an episode's resources (and those being opened)."""
        return self._opening + sum(1 for s in self.sessions.values() if s.state == "active")

    def start(self) -> None:
        self._reaper = asyncio.get_running_loop().create_task(self._reap_forever())

    async def close_all(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        for sid in list(self.sessions):
            await self._end(sid, "the server shut down")

    async def _reap_forever(self) -> None:
        period = min(1.0, self.settings.sessions_idle_timeout_s / 4)
        while True:
            await asyncio.sleep(period)
            try:
                await self.reap()
            except Exception:  # one bad close must not stop the reaping of the rest
                log.exception("reaping sessions failed")

    async def reap(self, now: float | None = None) -> list[str]:
        """Close every session past its deadline or idle too long; their ids."""
        now = time.monotonic() if now is None else now
        idle = self.settings.sessions_idle_timeout_s
        due: list[tuple[str, str]] = []
        for s in self.sessions.values():
            if now >= s.deadline:
                due.append((s.id, "its deadline passed"))
            elif not s.busy and now - s.last_used >= idle:
                due.append((s.id, f"idle for {idle:g} s"))
        for sid, why in due:
            await self._end(sid, why)
        return [sid for sid, _ in due]

    async def _free(self, session: Session) -> None:
        """Free the episode's resources (blocking: a sandbox is killed) off the event loop."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self.ctx.threads, session.episode.close)

    async def _end(self, sid: str, reason: str) -> SessionState | None:
        session = self.sessions.pop(sid, None)
        if session is None:
            return None
        session.state, session.reason = "closed", reason
        try:
            await self._free(session)
        finally:
            view = self._view(session)
            self.ended[sid] = view
            while len(self.ended) > _REMEMBERED:
                self.ended.popitem(last=False)
        log.info("session %s closed: %s", sid, reason)
        return view

    # -- the calls ----------------------------------------------------------------------------

    def _retry_after(self) -> float:
        now, idle = time.monotonic(), self.settings.sessions_idle_timeout_s
        ends = [
            min(s.deadline, s.last_used + idle) - now
            for s in self.sessions.values()
            if s.state == "active"
        ]
        return min(60.0, max(1.0, min(ends))) if ends else 1.0

    async def create(self, body: CreateSessionRequest) -> CreateSessionResponse:
        settings = self.settings
        if body.env not in ENVIRONMENTS:
            raise NotFound(
                f"unknown environment {body.env!r}: GET /v1/sessions/environments lists them"
            )
        if self.live >= settings.sessions_max_live:
            raise ServiceUnavailable(
                f"{settings.sessions_max_live} sessions are live, the most this server holds: "
                "close finished ones (DELETE /v1/sessions/{id}) or retry later",
                retry_after_s=self._retry_after(),
            )
        env = ENVIRONMENTS[body.env]
        max_turns = body.max_turns or env.max_turns
        deadline_s = min(
            body.deadline_s or settings.sessions_deadline_s, settings.sessions_max_deadline_s
        )
        self._opening += 1
        try:
            episode, observation = await open_episode(self.ctx, body, max_turns)
        finally:
            self._opening -= 1
        sid = "s-" + self.tag + secrets.token_hex(12)
        info: dict[str, Any] = {
            "env": body.env,
            "max_turns": max_turns,
            "deadline_s": deadline_s,
            "idle_timeout_s": settings.sessions_idle_timeout_s,
            "node": self.tag,
        }
        if body.group is not None:
            info["group"] = body.group.model_dump()
        if body.seed is not None:
            info["seed"] = body.seed
        self.sessions[sid] = Session(
            sid, body.env, episode, max_turns, time.monotonic() + deadline_s, info
        )
        return CreateSessionResponse(
            session_id=sid,
            observation=observation,
            tools=[t.schema() for t in episode.tools],
            info=info,
        )

    def _get(self, sid: str) -> Session:
        session = self.sessions.get(sid)
        if session is not None:
            return session
        ended = self.ended.get(sid)
        if ended is not None:
            raise NotFound(f"session {sid} is closed: {ended.reason}")
        raise NotFound(f"no session {sid}")

    def _active(self, session: Session) -> None:
        if session.state != "active":
            raise Conflict(f"session {session.id}'s episode is over: verify it or close it")

    @contextlib.asynccontextmanager
    async def _call(self, sid: str) -> Any:
        session = self._get(sid)
        session.busy += 1
        try:
            async with session.lock:
                if session.state == "closed":
                    raise NotFound(f"session {sid} is closed: {session.reason}")
                session.last_used = time.monotonic()
                yield session
        finally:
            session.busy -= 1
            session.last_used = time.monotonic()

    def _replay(self, session: Session, request_id: str | None, print_: str) -> BaseModel | None:
        if request_id is None or request_id not in session.replies:
            return None
        seen, reply = session.replies[request_id]
        if seen != print_:
            raise Conflict(f"request_id {request_id!r} was used for a different call")
        return reply

    def _remember(
        self, session: Session, request_id: str | None, print_: str, reply: BaseModel
    ) -> None:
        if request_id is not None:
            session.replies[request_id] = (print_, reply)
            while len(session.replies) > _REPLAYS:
                session.replies.popitem(last=False)

    async def tool(
        self, sid: str, name: str, arguments: dict[str, Any], request_id: str | None
    ) -> ToolCallResponse:
        print_ = _fingerprint("tool", [name, arguments])
        async with self._call(sid) as session:
            replay = self._replay(session, request_id, print_)
            if isinstance(replay, ToolCallResponse):
                return replay
            self._active(session)
            session.tool_calls += 1
            result = await session.episode.call_tool(name, arguments)
            if result.done:
                await self._finish(session)
            reply = ToolCallResponse(
                output=result.output,
                reward=result.reward,
                done=session.state != "active",
                info=result.info,
            )
            self._remember(session, request_id, print_, reply)
            return reply

    async def _finish(self, session: Session) -> None:
        """The episode ended: free what it holds; verify and GET still answer."""
        if session.state == "active":
            session.state = "done"
            await self._free(session)

    async def step(self, sid: str, body: StepRequest) -> StepResponse:
        print_ = _fingerprint(
            "step", body.response if isinstance(body.response, str) else body.response.model_dump()
        )
        async with self._call(sid) as session:
            replay = self._replay(session, body.request_id, print_)
            if isinstance(replay, StepResponse):
                return replay
            self._active(session)
            reply = await self._step(session, body.response)
            self._remember(session, body.request_id, print_, reply)
            return reply

    async def _step(self, session: Session, response: str | StepMessage) -> StepResponse:
        index = len(session.turns)
        last_turn = index + 1 >= session.max_turns
        message = response if isinstance(response, StepMessage) else None
        reply = StepResponse()
        if message is not None and message.tool_calls:
            for k, call in enumerate(message.tool_calls):
                session.tool_calls += 1
                result = await session.episode.call_tool(
                    call.function.name, call.function.arguments
                )
                reply.tool_outputs.append(
                    ToolOutput(
                        call_id=call.id or f"call_{index}_{k}",
                        name=call.function.name,
                        output=result.output,
                    )
                )
                if result.done:
                    reply.truncated = True
                    break
            reply.truncated = reply.truncated or last_turn
            reply.info = {"kind": "tools", "calls": len(reply.tool_outputs)}
        else:
            text = (
                response
                if isinstance(response, str)
                else (message.content or "")
                if message
                else ""
            )
            answer = await session.episode.answer(text, index, last_turn)
            reply.reward = answer.reward
            reply.terminated = answer.terminated
            reply.truncated = not answer.terminated and last_turn
            reply.observation = answer.observation
            details = answer.result.details
            reply.info = {
                "kind": "answer",
                "outcome": details.get("outcome"),
                "valid": answer.result.valid,
            }
        session.turns.append(TurnReward(index=index, reward=reply.reward, info=dict(reply.info)))
        if reply.terminated or reply.truncated:
            await self._finish(session)
        reply.info["turns_left"] = max(0, session.max_turns - len(session.turns))
        return reply

    async def verify(self, sid: str, body: VerifyRequest) -> SessionReward:
        async with self._call(sid) as session:
            text = final_text(body.response) if body.response is not None else None
            result = await session.episode.verify(text)
            await self._finish(session)
            return SessionReward(
                id=session.id,
                score=result.score,
                valid=result.valid,
                details=result.details,
                turns=list(session.turns),
                total=sum(t.reward for t in session.turns),
            )

    def state(self, sid: str) -> SessionState:
        session = self.sessions.get(sid)
        if session is not None:
            return self._view(session)
        ended = self.ended.get(sid)
        if ended is not None:
            return ended
        raise NotFound(f"no session {sid}")

    async def close(self, sid: str) -> SessionState:
        self._get(sid)  # 404 for an unknown one; a closed one answers its state again
        view = await self._end(sid, "closed by the caller")
        return view if view is not None else self.state(sid)

    def _view(self, session: Session) -> SessionState:
        now = time.monotonic()
        over = session.state == "closed"
        idle_left = session.last_used + self.settings.sessions_idle_timeout_s - now
        return SessionState(
            session_id=session.id,
            env=session.env,
            state=session.state,
            turns=len(session.turns),
            tool_calls=session.tool_calls,
            max_turns=session.max_turns,
            time_left_s=0.0 if over else max(0.0, session.deadline - now),
            idle_left_s=0.0 if over else max(0.0, idle_left),
            reason=session.reason,
        )
