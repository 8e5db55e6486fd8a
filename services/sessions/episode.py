"""What every session environment shares: its tools' schemas, the model-visible checking of a
tool call's arguments, and the ``Episode`` each environment implements.

An episode is one session's environment state. The manager (``manager.py``) serialises the
calls of one session, so an episode never sees two calls at once; ``close`` alone may come from
another thread (the reaper) while a call runs, and must be safe then.

A tool call's bad arguments (a missing ``code``, a number where text goes, an unknown tool) are
the model's mistake: the answer is text it can read and act on (``ToolResult`` with
``info.error``), never an HTTP error, so a trainer's rollout goes on.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from referee.client.errors import InvalidRequest
from referee.client.models import RewardItem, RewardResult
from referee.client.session_models import FunctionSchema, ToolSchema
from referee.services.scoring.scorer import Scorer
from referee.services.settings import Settings

__all__ = [
    "Answer",
    "EnvContext",
    "Episode",
    "OneAnswerEpisode",
    "ToolResult",
    "ToolSpec",
    "check_arguments",
    "final_text",
    "no_answer",
    "score_one",
    "task_prompt",
]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool whose arguments are all strings (what the three environments need)."""

    name: str
    description: str
    params: dict[str, str]  # name -> description; every one required

    def schema(self) -> ToolSchema:
        return ToolSchema(
            function=FunctionSchema(
                name=self.name,
                description=self.description,
                parameters={
                    "type": "object",
                    "properties": {
                        k: {"type": "string", "description": v} for k, v in self.params.items()
                    },
                    "required": list(self.params),
                    "additionalProperties": False,
                },
            )
        )


@dataclass(slots=True)
class ToolResult:
    output: str
    reward: float | None = None
    done: bool = False
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Answer:
    """A model turn that was an answer (no tool call): its reward, whether the episode ends,
    what the environment says back."""

    reward: float
    terminated: bool
    result: RewardResult
    observation: str | None = None


@dataclass(frozen=True, slots=True)
class EnvContext:
    """What an episode may use: the app's scorer (pool, sandbox, curriculum), the settings and
    the sessions' thread pool (blocking sandbox calls run there, not on the event loop's)."""

    scorer: Scorer
    settings: Settings
    threads: Executor


def check_arguments(spec: ToolSpec, arguments: Any) -> tuple[dict[str, str] | None, str]:
    """The arguments as the tool takes them, or None and the text that tells the model why
    not. A JSON string (OpenAI's ``function.arguments``) is decoded first."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return None, f"error: the arguments of {spec.name} are not valid JSON ({exc.msg})"
    if not isinstance(arguments, dict):
        return None, f"error: the arguments of {spec.name} must be a JSON object"
    missing = [k for k in spec.params if k not in arguments]
    extra = sorted(k for k in arguments if k not in spec.params)
    if missing or extra:
        parts = []
        if missing:
            parts.append("missing " + ", ".join(repr(k) for k in missing))
        if extra:
            parts.append("unknown " + ", ".join(repr(k) for k in extra))
        usage = ", ".join(f"{k}: string" for k in spec.params)
        return None, f"error: {spec.name}({usage}) was called with {'; '.join(parts)}"
    wrong = [k for k in spec.params if not isinstance(arguments[k], str)]
    if wrong:
        return None, f"error: argument {wrong[0]!r} of {spec.name} must be a string"
    return {k: arguments[k] for k in spec.params}, ""


def final_text(response: str | list[dict[str, Any]]) -> str:
    """The answer's text: the text itself, or the last assistant message's content."""
    if isinstance(response, str):
        return response
    for message in reversed(response):
        if isinstance(message, dict) and message.get("role") == "assistant":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):  # content parts
                return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


async def score_one(
    ctx: EnvContext, item_id: str, grader: dict[str, Any], response: str
) -> RewardResult:
    """One answer scored as a ``/v1/rewards`` item is (the scorer's deadlines and sandbox)."""
    item = RewardItem.model_validate({"id": item_id, "response": response, "grader": grader})
    scored = await ctx.scorer.score([item], 1.0, "task")
    return scored.rewards[0]


def task_prompt(task: dict[str, Any], env: str) -> str | list[dict[str, Any]]:
    """The row's ``prompt`` (text or chat messages), or ``InvalidRequest`` naming ``env``."""
    prompt = task.get("prompt")
    if not isinstance(prompt, str | list) or not prompt:
        raise InvalidRequest(f"task.prompt: the {env} environment needs the problem's text")
    return prompt


def no_answer(reason: str) -> RewardResult:
    """The final reward of a session that has no answer to score (``reason`` says so)."""
    return RewardResult(id="final", score=0.0, details={"outcome": "no_answer", "reason": reason})


class Episode(ABC):
    """One session's environment. ``open`` gives the first observation; a model turn is either
    tool calls (``call_tool``, one each) or an answer (``answer``); ``verify`` scores the final
    answer."""

    tools: tuple[ToolSpec, ...] = ()
    max_turns: int = 1  # the session's, set when it opens

    def tool(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.name == name), None)

    @abstractmethod
    async def open(self) -> str | list[dict[str, Any]]:
        """Set up (start a sandbox, generate the task) and return the first observation.
        Raises ``InvalidRequest`` for a task row the environment cannot use."""

    async def call_tool(self, name: str, arguments: Any) -> ToolResult:
        spec = self.tool(name)
        if spec is None:
            names = ", ".join(t.name for t in self.tools) or "none"
            return ToolResult(
                f"error: there is no tool {name!r} (tools: {names})",
                info={"error": "unknown_tool"},
            )
        args, problem = check_arguments(spec, arguments)
        if args is None:
            return ToolResult(problem, info={"error": "bad_arguments"})
        return await self.run_tool(spec, args)

    async def run_tool(self, spec: ToolSpec, args: dict[str, str]) -> ToolResult:
        raise NotImplementedError(spec.name)

    @abstractmethod
    async def answer(self, text: str, turn: int, last_turn: bool) -> Answer:
        """Score a model turn that is an answer."""

    @abstractmethod
    async def verify(self, text: str | None) -> RewardResult:
        """The session's reward: ``text`` scored as the final answer, or the last answer."""

    def close(self) -> None:  # noqa: B027 - most environments hold nothing to free
        """Free what the episode holds (thread-safe, idempotent)."""


class OneAnswerEpisode(Episode):
    """An episode that its first answer ends, scored by its ``grader`` as a ``/v1/rewards`` item
    (the code and python environments); ``verify`` scores the text it is given the same way,
    else that answer."""

    ctx: EnvContext
    grader: dict[str, Any]
    last_answer: str | None = None
    no_answer_reason = "the session has no final answer"

    async def answer(self, text: str, turn: int, last_turn: bool) -> Answer:
        self.last_answer = text
        result = await score_one(self.ctx, f"turn-{turn}", self.grader, text)
        return Answer(reward=result.score or 0.0, terminated=True, result=result)

    async def verify(self, text: str | None) -> RewardResult:
        answer = text if text is not None else self.last_answer
        if answer is None:
            return no_answer(self.no_answer_reason)
        return await score_one(self.ctx, "final", self.grader, answer)
