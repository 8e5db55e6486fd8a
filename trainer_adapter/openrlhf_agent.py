"""OpenRLHF: an agent file for ``--train.agent_func_path``, each rollout a referee session.

    --train.agent_func_path "$(python -c 'import referee.trainer_adapter.openrlhf_agent as m
    print(m.__file__)')"
    REFEREE_URL=http://REFEREE:8000 REFEREE_SESSION_ENV=python   # in the rollout workers' env

OpenRLHF 0.11.2 loads the file (``_load_agent_executor``: its ``AgentExecutor``, an
``AgentExecutorBase``) and its ``MultiTurnAgentExecutor`` builds one ``AgentInstance`` per sample
with no arguments (so the settings come from the environment), then calls
``reset({"observation": prompt, "label": label})`` and, after every generation,
``step({"observation_text", "action_text", "label", "sampling_params"})``, which must return
``rewards`` (a tensor: it calls ``.item()``), ``scores``, ``environment_feedback`` (text appended
to the context), ``done`` and ``extra_logs``.

* ``reset`` opens a session of ``REFEREE_SESSION_ENV`` on the task: the prompt, and the label as
  the reference (or, when the label is a JSON object, the task's fields: ``reference``,
  ``tests``, ...). The observation OpenRLHF starts from is its own prompt, unchanged.
* ``step``: tool calls in the generated text (Hermes/Qwen ``<tool_call>{"name", "arguments"}
  </tool_call>``, what Qwen's chat template and vLLM's ``hermes`` parser use, and the other
  formats the ``tool_call`` grader reads: :func:`parse_tool_calls`) run in the session
  and their outputs come back as the feedback, wrapped in :attr:`AgentInstance.tool_feedback`
  (ChatML by default: override it for another template); text without tool calls is an answer (a
  session step: the procedural env may give feedback and another turn). When the episode ends
  the session is verified, the reward is its score, and it is closed.
* referee failing (a fault, the server gone) ends the sample with reward 0 and
  ``extra_logs["referee_failed"] = 1`` (mask it), never a crash of the rollout.
"""

from __future__ import annotations

import json
import os
from typing import Any

from openrlhf.utils.agent import (  # type: ignore[import-not-found, unused-ignore]
    AgentInstanceBase,
    MultiTurnAgentExecutor,
)

from referee.client.errors import RefereeError
from referee.client.sdk import AsyncRefereeClient
from referee.verifiers.tool_call_reading import parse_tool_calls as read_tool_calls

__all__ = ["AgentExecutor", "AgentInstance", "parse_tool_calls"]

_NOT_CALLS = frozenset({"json", "openai", "pythonic"})
"""Readings of ``read_tool_calls`` an agent does not take as calls: an answer may hold JSON or
code of its own."""


def parse_tool_calls(text: str) -> list[dict[str, Any]]:
    """The tool calls in ``text`` after its reasoning, as OpenAI tool calls, read as the
    ``tool_call`` grader reads them (unreadable ones skipped; one pass): Hermes/Qwen's
    ``<tool_call>`` JSON, Qwen3-Coder's and GLM's XML inside it, Llama 3.1's ``<function=...>``,
    MiniMax's, DeepSeek's, Kimi's, Mistral's and gpt-oss's tokens; not a bare JSON object or
    Python call, which an answer may hold."""
    calls, fmt = read_tool_calls(text)
    if fmt in _NOT_CALLS:
        return []
    return [
        {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments},
        }
        for n, call in enumerate(calls)
    ]


def _task(prompt: str, label: Any) -> dict[str, Any]:
    if isinstance(label, str):
        try:
            parsed = json.loads(label)
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            return {"prompt": prompt, **parsed}
    if isinstance(label, dict):
        return {"prompt": prompt, **label}
    return {"prompt": prompt, "reference": "" if label is None else str(label)}


_FAILED = {"referee_valid": 0.0, "referee_failed": 1.0, "turns": 0.0}


def _tensor(value: float) -> Any:
    import torch

    return torch.tensor(value)


class AgentInstance(AgentInstanceBase):  # type: ignore[misc]
    """One sample's referee session (see the module doc)."""

    tool_feedback = "<|im_end|>\n<|im_start|>user\n{responses}<|im_end|>\n<|im_start|>assistant\n"
    tool_response = "<tool_response>\n{output}\n</tool_response>"
    answer_feedback = (
        "<|im_end|>\n<|im_start|>user\n{observation}<|im_end|>\n<|im_start|>assistant\n"
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.url = os.environ.get("REFEREE_URL", "http://127.0.0.1:8000")
        self.env = os.environ.get("REFEREE_SESSION_ENV", "python")
        turns = os.environ.get("REFEREE_MAX_TURNS")
        self.max_turns = int(turns) if turns else None
        self.client = AsyncRefereeClient(self.url, api_key=os.environ.get("REFEREE_API_KEY"))
        self.session_id: str | None = None

    async def reset(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        prompt = states["observation"]
        try:
            opened = await self.client.open_session(
                self.env, _task(prompt, states.get("label")), max_turns=self.max_turns
            )
        except RefereeError:  # the first step ends the sample as referee's failure
            return {"observation": prompt}
        self.session_id = opened.session_id
        return {"observation": prompt}

    def _result(
        self, reward: float, feedback: str, done: bool, logs: dict[str, float]
    ) -> dict[str, Any]:
        return {
            "rewards": _tensor(reward),
            "scores": _tensor(reward),
            "environment_feedback": feedback,
            "done": done,
            "sampling_params": None,
            "extra_logs": logs,
        }

    async def _finish(self, turns: int) -> dict[str, Any]:
        sid, self.session_id = self.session_id, None
        assert sid is not None
        try:
            result = await self.client.session_verify(sid)
        finally:
            try:
                await self.client.close_session(sid)
            except RefereeError:
                pass  # reaped already
            await self.client.aclose()
        valid = result.valid and result.score is not None
        score = float(result.score or 0.0) if valid else 0.0
        logs = {"referee_valid": float(valid), "referee_failed": float(not valid)}
        return self._result(score, "", True, {**logs, "turns": float(turns)})

    async def step(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        if self.session_id is None:  # reset failed or the episode is over
            return self._result(0.0, "", True, dict(_FAILED))
        text = states["action_text"]
        calls = parse_tool_calls(text)
        try:
            step = await self.client.session_step(
                self.session_id, {"content": text, "tool_calls": calls} if calls else text
            )
            state = await self.client.session(self.session_id)
            if step.terminated or step.truncated or state.state != "active":
                return await self._finish(state.turns)
        except RefereeError:
            self.session_id = None
            await self.client.aclose()
            return self._result(0.0, "", True, dict(_FAILED))
        if calls:
            responses = "\n".join(
                self.tool_response.format(output=o.output.rstrip("\n")) for o in step.tool_outputs
            )
            feedback = self.tool_feedback.format(responses=responses)
        else:
            feedback = self.answer_feedback.format(observation=step.observation or "")
        return self._result(0.0, feedback, False, {})


class AgentExecutor(MultiTurnAgentExecutor):  # type: ignore[misc]
    """What ``--train.agent_func_path`` loads: OpenRLHF's multi-turn executor over
    :class:`AgentInstance`."""

    def __init__(self) -> None:
        super().__init__(AgentInstance)
