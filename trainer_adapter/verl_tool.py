"""veRL: a ``BaseTool`` whose calls run in a referee session, one session per trajectory.

veRL 0.9.1's tool agent loop (``agent.default_agent_loop=tool_agent``) builds its tools from a
YAML file (``actor_rollout_ref.rollout.multi_turn.tool_config_path``, read by
``verl.tools.tool_registry.initialize_tools_from_config``) and, for *every* tool call, runs
``create(create_kwargs=...) -> execute(instance_id, arguments, agent_data=...) -> release``: the
instance id is new on each call, so a session keyed on it would be a fresh interpreter per call.
The state is therefore keyed on the trajectory: the session id is kept in
``agent_data.extra_fields["referee_session"]`` (``agent_data.request_id`` names the
trajectory), opened by the trajectory's first tool call and reused by the next ones, whichever
of the YAML's tools they call. ``release`` forgets the call, never the session. Without
``agent_data`` (a caller that keeps one instance for the whole trajectory, as veRL's older
rollouts did) the instance id is the key and ``release`` closes the session.

The session's task is the row's ``extra_info.tools_kwargs.<tool>.create_kwargs`` (veRL passes
it as ``create_kwargs``): ``prompt``, ``reference``, ``tests``, ... as the environment reads
them; a missing ``prompt`` is taken from the trajectory's first user message.

veRL copies ``extra_fields`` into the reward manager's ``extra_info`` (``tool_extra_fields``),
so :func:`referee.trainer_adapter.verl_session_reward.compute_score` finds the session there,
verifies it on the decoded response and closes it. Write the YAML from the server's own tool
schemas::

    python -m referee.trainer_adapter.verl_tool --url http://127.0.0.1:8000 --env python \\
        > referee_tools.yaml

(JSON, which is YAML.) A fault of the service (server down, session reaped) raises: veRL's loop
shows the model ``Error executing tool ...`` and goes on; a bad argument is the session's own
model-visible text.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from verl.tools.base_tool import BaseTool  # type: ignore[import-not-found, unused-ignore]
from verl.tools.schemas import ToolResponse  # type: ignore[import-not-found, unused-ignore]

from referee.client.sdk import AsyncRefereeClient, RefereeClient

__all__ = ["SESSION_KEY", "RefereeSessionTool", "tool_config"]

SESSION_KEY = "referee_session"
DEFAULT_URL = "http://127.0.0.1:8000"
_MODULE = "referee.trainer_adapter.verl_tool"  # not __name__: that is __main__ under -m


def tool_config(referee_url: str, env: str, *, max_turns: int | None = None) -> dict[str, Any]:
    """veRL's tool YAML (as a dict) for every tool of ``env``, schemas from the server."""
    with RefereeClient(referee_url) as client:
        envs = {e.name: e for e in client.session_environments().environments}
    if env not in envs:
        raise ValueError(f"no session environment {env!r}: {sorted(envs)}")
    config: dict[str, Any] = {"type": "native", "referee_url": referee_url, "env": env}
    if max_turns is not None:
        config["max_turns"] = max_turns
    return {
        "tools": [
            {
                "class_name": f"{_MODULE}.RefereeSessionTool",
                "config": config,
                "tool_schema": tool.model_dump(),
            }
            for tool in envs[env].tools
        ]
    }


def _first_user_text(agent_data: Any) -> str | None:
    for message in getattr(agent_data, "messages", None) or []:
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
    return None


class RefereeSessionTool(BaseTool):  # type: ignore[misc]
    """One tool of a referee session environment (``config``: ``referee_url``, ``env``,
    optionally ``api_key``, ``max_turns``, ``deadline_s``, ``timeout``)."""

    def __init__(self, config: dict[str, Any], tool_schema: Any) -> None:
        super().__init__(config, tool_schema)
        self.referee_url = str(config.get("referee_url") or DEFAULT_URL)
        self.env = str(config.get("env") or "python")
        self._calls: dict[str, dict[str, Any]] = {}  # instance id -> create_kwargs
        self._own: dict[str, str] = {}  # instance id -> session id (calls without agent_data)
        self._clients: dict[int, AsyncRefereeClient] = {}

    def _client(self) -> AsyncRefereeClient:
        """One client per event loop (veRL may run rollouts on several; httpx's async pool
        belongs to the loop that opened it)."""
        loop = id(asyncio.get_running_loop())
        client = self._clients.get(loop)
        if client is None:
            client = AsyncRefereeClient(
                self.referee_url,
                api_key=self.config.get("api_key"),
                timeout=float(self.config.get("timeout", 300.0)),
            )
            self._clients[loop] = client
        return client

    async def create(
        self, instance_id: str | None = None, **kwargs: Any
    ) -> tuple[str, ToolResponse]:
        instance_id, response = await super().create(instance_id)
        task = kwargs.get("create_kwargs")
        self._calls[instance_id] = dict(task) if isinstance(task, dict) else {}
        return instance_id, response

    async def _open(self, task: dict[str, Any], agent_data: Any) -> str:
        task = dict(task)
        if "prompt" not in task:
            prompt = _first_user_text(agent_data)
            if prompt is not None:
                task["prompt"] = prompt
        seed = task.pop("seed", None)
        opened = await self._client().open_session(
            self.env,
            task,
            seed=seed if isinstance(seed, int) else None,
            max_turns=self.config.get("max_turns"),
            deadline_s=self.config.get("deadline_s"),
        )
        return opened.session_id

    async def _session(self, instance_id: str, agent_data: Any) -> str:
        task = self._calls.get(instance_id, {})
        if agent_data is None:
            sid = self._own.get(instance_id)
            if sid is None:
                sid = self._own[instance_id] = await self._open(task, None)
            return sid
        fields: dict[str, Any] = agent_data.extra_fields
        state = fields.get(SESSION_KEY)
        if not isinstance(state, dict) or "session_id" not in state:
            sid = await self._open(task, agent_data)
            state = {
                "session_id": sid,
                "referee_url": self.referee_url,
                "env": self.env,
                "request_id": getattr(agent_data, "request_id", None),
            }
            fields[SESSION_KEY] = state
        return str(state["session_id"])

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float, dict[str, Any]]:
        agent_data = kwargs.get("agent_data")
        sid = await self._session(instance_id, agent_data)
        done = await self._client().session_tool(sid, self.name, parameters)
        reward = float(done.reward) if done.reward is not None else 0.0
        metrics = {"session_id": sid, "done": done.done, **done.info}
        return ToolResponse(text=done.output), reward, metrics

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The session's reward so far (its last answer); 0.0 before any."""
        sid = self._own.get(instance_id)
        if sid is None:
            return 0.0
        result = await self._client().session_verify(sid)
        return float(result.score or 0.0) if result.valid else 0.0

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        self._calls.pop(instance_id, None)
        sid = self._own.pop(instance_id, None)
        if sid is not None:
            await self._client().close_session(sid)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Print veRL's tool YAML for a referee env.")
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--env", default="python")
    parser.add_argument("--max-turns", type=int, default=None)
    args = parser.parse_args(argv)
    print(json.dumps(tool_config(args.url, args.env, max_turns=args.max_turns), indent=2))


if __name__ == "__main__":
    main()
