"""Wire models of multi-turn sessions (``/v1/sessions``): an environment held by the server
between calls, with tools the model calls and a reward per turn.

    POST   /v1/sessions                    CreateSessionRequest  -> CreateSessionResponse
    POST   /v1/sessions/{id}/tools/{name}  ToolCallRequest       -> ToolCallResponse
    POST   /v1/sessions/{id}/step          StepRequest           -> StepResponse
    POST   /v1/sessions/{id}/verify        VerifyRequest         -> SessionReward
    GET    /v1/sessions/{id}                                     -> SessionState
    DELETE /v1/sessions/{id}                                     -> SessionState
    GET    /v1/sessions/environments                             -> SessionEnvironments

Text in, text out: observations and tool outputs are text, never token ids. A tool call with
bad arguments is answered with text the model can read, not with an error status.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from referee.client.models import RewardResult

__all__ = [
    "CreateSessionRequest",
    "CreateSessionResponse",
    "FunctionSchema",
    "SessionEnvironment",
    "SessionEnvironments",
    "SessionGroup",
    "SessionReward",
    "SessionState",
    "StepMessage",
    "StepRequest",
    "StepResponse",
    "ToolCall",
    "ToolCallFunction",
    "ToolCallRequest",
    "ToolCallResponse",
    "ToolOutput",
    "ToolSchema",
    "TurnReward",
    "VerifyRequest",
]

_REQUEST_ID = Field(
    None,
    min_length=1,
    max_length=256,
    description="Idempotency key: the same request_id again on this session returns the first "
    "answer without running anything (a retried call after a lost connection).",
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SessionGroup(_Model):
    """Where a session sits in a GRPO group (several attempts at one prompt)."""

    id: str = Field(..., min_length=1, max_length=256, description="The group (prompt) id.")
    attempt: int = Field(0, ge=0, description="Which attempt of the group this is.")
    index: int = Field(0, ge=0, description="The row's index in the dataset.")


class CreateSessionRequest(_Model):
    env: str = Field(
        ...,
        min_length=1,
        max_length=64,
        description="The environment: GET /v1/sessions/environments lists them.",
        examples=["python"],
    )
    task: dict[str, Any] = Field(
        default_factory=dict,
        description="The dataset row: prompt, reference, tests, ... (each environment's "
        "`task_fields` says which it reads).",
        examples=[{"prompt": "What is 2**10?", "reference": "1024"}],
    )
    seed: int | None = Field(None, description="Seed of a generated task (procedural).")
    group: SessionGroup | None = Field(None, description="The GRPO group, echoed in `info`.")
    max_turns: int | None = Field(
        None, ge=1, le=256, description="Model turns (steps) allowed; the environment's default."
    )
    deadline_s: float | None = Field(
        None,
        gt=0,
        le=86_400,
        description="The session is closed this many seconds after it opened (capped by the "
        "server's maximum); the server's default when unset.",
    )


class FunctionSchema(_Model):
    name: str = Field(..., description="The tool's name, as the model calls it.")
    description: str = Field("", description="What the tool does, for the model.")
    parameters: dict[str, Any] = Field(..., description="JSON schema of the arguments.")


class ToolSchema(_Model):
    """A tool in OpenAI's function-calling shape (what chat templates take as `tools`)."""

    type: Literal["function"] = "function"
    function: FunctionSchema


class CreateSessionResponse(_Model):
    session_id: str = Field(..., description="Names the session in every later call.")
    observation: str | list[dict[str, Any]] = Field(
        ..., description="The first observation: the prompt (text or chat messages)."
    )
    tools: list[ToolSchema] = Field(default_factory=list, description="The session's tools.")
    info: dict[str, Any] = Field(
        default_factory=dict, description="env, max_turns, deadline_s, group, seed, ..."
    )


class ToolCallRequest(_Model):
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="The tool's arguments, as its schema gives them."
    )
    request_id: str | None = _REQUEST_ID


class ToolCallResponse(_Model):
    output: str = Field(..., description="What the model sees (also on a bad argument).")
    reward: float | None = Field(None, description="A reward for this call, if the env has one.")
    done: bool = Field(False, description="The session is over (nothing more can run).")
    info: dict[str, Any] = Field(
        default_factory=dict, description="status, timings, truncation, error kind, ..."
    )


class ToolCallFunction(BaseModel):
    """OpenAI's ``function`` of a tool call. ``arguments`` is a JSON string (or an object)."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(..., max_length=256)
    arguments: str | dict[str, Any] = Field("{}", description="JSON object of the arguments.")


class ToolCall(BaseModel):
    """One tool call of an assistant message, in OpenAI's shape (other keys a chat
    parser adds, such as ``index``, are ignored)."""

    model_config = ConfigDict(extra="ignore")

    id: str | None = Field(None, max_length=256, description="The call id (made up if absent).")
    type: Literal["function"] = "function"
    function: ToolCallFunction


class StepMessage(_Model):
    role: Literal["assistant"] = "assistant"
    content: str | None = Field(None, max_length=4_000_000, description="The message's text.")
    tool_calls: list[ToolCall] = Field(
        default_factory=list, max_length=32, description="Tools to run, in order."
    )


class StepRequest(_Model):
    response: str | StepMessage = Field(
        ...,
        description="The model's turn: text (a final answer) or an assistant message whose "
        "tool calls are run.",
    )
    request_id: str | None = _REQUEST_ID


class ToolOutput(_Model):
    call_id: str
    name: str
    output: str


class StepResponse(_Model):
    observation: str | None = Field(None, description="What the environment says back, if any.")
    tool_outputs: list[ToolOutput] = Field(default_factory=list)
    reward: float = Field(0.0, description="This turn's reward (raw).")
    terminated: bool = Field(False, description="The episode ended (answered or solved).")
    truncated: bool = Field(False, description="The episode was cut (turns or time spent).")
    info: dict[str, Any] = Field(default_factory=dict)


class VerifyRequest(_Model):
    response: str | list[dict[str, Any]] | None = Field(
        None,
        description="The final answer (text or the messages, the last assistant message's "
        "text is read); unset: the session's last answer.",
    )


class TurnReward(_Model):
    index: int = Field(..., description="The turn's index (0 first).")
    reward: float
    info: dict[str, Any] = Field(default_factory=dict)


class SessionReward(RewardResult):
    """The session's reward, as a ``/v1/rewards`` item's (``id`` is the session id), with each
    turn's reward and their sum."""

    turns: list[TurnReward] = Field(default_factory=list)
    total: float = Field(0.0, description="The sum of the turns' rewards.")


class SessionState(_Model):
    session_id: str
    env: str
    state: Literal["active", "done", "closed"] = Field(
        ..., description="done: the episode ended, verify still answers; closed: gone."
    )
    turns: int = Field(0, description="Steps taken.")
    tool_calls: int = Field(0, description="Tools run (by /tools or within steps).")
    max_turns: int
    time_left_s: float = Field(..., description="Until the session's deadline.")
    idle_left_s: float = Field(..., description="Until the idle timeout closes it.")
    reason: str | None = Field(None, description="Why a closed session closed.")


class SessionEnvironment(_Model):
    name: str
    description: str
    tools: list[ToolSchema]
    task_fields: dict[str, str] = Field(..., description="The row's fields it reads.")
    max_turns: int = Field(..., description="Default turns.")


class SessionEnvironments(_Model):
    environments: list[SessionEnvironment]
    max_live: int = Field(..., description="Sessions this server process holds at once.")
    idle_timeout_s: float
    default_deadline_s: float
    node: str | None = Field(
        None,
        description="The tag of the process that answered (session ids carry their holder's); "
        "unset on an api that opens every session on sandbox nodes.",
    )
