"""TRL: ``GRPOTrainer(environment_factory=...)`` classes over referee sessions.

    from functools import partial
    from trl import GRPOTrainer
    from referee.trainer_adapter.trl_env import PythonSession

    trainer = GRPOTrainer(
        model=...,
        environment_factory=partial(PythonSession, "http://127.0.0.1:8000"),
        train_dataset=dataset,          # rows: prompt, reference
        args=...,
    )

TRL 1.16 builds one instance per rollout (pooled, ``reset`` between rollouts), turns every
public method but ``reset`` and ``get_reward`` into a tool (its schema from the type hints and
the docstring's ``Args:``, transformers' ``get_json_schema``), and calls ``get_reward()`` once
per finished rollout. So:

* ``reset(**row)`` closes the instance's previous session and opens a new one of the class's
  ``env`` on the row (the row is the task: ``prompt``, ``reference``, ``tests``, ...). It returns
  the session's first observation only when the row has no prompt of its own (a generated
  procedural problem): TRL appends a returned string to the last user message.
* the tools are the session's: ``python(code)`` (``PythonSession``), ``run_tests(code)``
  (``CodeSession``), and ``answer(answer)`` in each, the model's final answer (a session step;
  the procedural environment answers a wrong one with feedback and another turn).
* ``get_reward()`` verifies the session: the reward of its final answer, or ``None`` (TRL
  ignores it) when referee, not the model, failed: ``valid: false``, or the session gone before
  its reward (reaped at its deadline or idle time, closed elsewhere). The server unreachable
  raises (``on_error="raise"``, TRL stops) or is ``None`` too (``on_error="none"``). A rollout
  that never called ``answer`` is scored on nothing and gets 0; to score the completion's own
  final text instead, add :func:`completion_reward` to ``reward_funcs``.

A tool that fails for a reason of the service (the server unreachable, the session reaped)
raises; TRL shows the model the error as the tool's output.

TRL keeps its instances for the whole run and has no hook that ends them, so each instance's
last session would stay open until the server reaps it. Pass ``callbacks=[CloseSessions()]`` to
the trainer and they are closed when training ends (:func:`close_sessions` does it by hand)::

    from referee.trainer_adapter.trl_env import CloseSessions
    trainer = GRPOTrainer(..., environment_factory=..., callbacks=[CloseSessions()])
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from referee.client.errors import Conflict, NotFound, RefereeError, TransportError
from referee.client.sdk import RefereeClient

# and CloseSessions, built on first use (see __getattr__)
__all__ = [
    "CodeSession",
    "ProceduralSession",
    "PythonSession",
    "SessionEnvironment",
    "close_sessions",
    "completion_reward",
]

log = logging.getLogger(__name__)
_LIVE: weakref.WeakSet[SessionEnvironment] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


def _has_prompt(row: Mapping[str, Any]) -> bool:
    prompt = row.get("prompt")
    if isinstance(prompt, str):
        return bool(prompt.strip())
    if isinstance(prompt, list):
        return any(isinstance(m, dict) and m.get("content") for m in prompt)
    return False


def _jsonable(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        if hasattr(value, "tolist"):  # numpy values of a datasets row
            value = value.tolist()
        out[str(key)] = value
    return out


class SessionEnvironment:
    """One rollout's referee session (see the module doc). Subclasses name the ``env``."""

    env: ClassVar[str] = ""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        api_key: str | None = None,
        max_turns: int | None = None,
        timeout: float = 300.0,
        on_error: Literal["raise", "none"] = "raise",
    ) -> None:
        if on_error not in ("raise", "none"):
            raise ValueError("on_error is 'raise' or 'none'")
        self._client = RefereeClient(base_url, api_key=api_key, timeout=timeout)
        self._max_turns = max_turns
        self._on_error = on_error
        self._session_id: str | None = None
        with _LIVE_LOCK:
            _LIVE.add(self)

    def reset(self, **row: Any) -> str | None:
        """Open a new session on ``row`` (the previous one is closed)."""
        self._close()
        task = _jsonable(row)
        seed = task.pop("seed", None)
        if not _has_prompt(task):
            task.pop("prompt", None)
        opened = self._client.open_session(
            self.env,
            task,
            seed=seed if isinstance(seed, int) else None,
            max_turns=self._max_turns,
        )
        self._session_id = opened.session_id
        observation = opened.observation
        if _has_prompt(row) or not isinstance(observation, str):
            return None
        return observation

    def _sid(self) -> str:
        if self._session_id is None:
            raise RuntimeError("no session: reset() opens one")
        return self._session_id

    def _tool(self, name: str, **arguments: str) -> str:
        return self._client.session_tool(self._sid(), name, arguments).output

    def answer(self, answer: str) -> str:
        """Submit your final answer. Call it once, when you are done.

        Args:
            answer: The final answer, as the task asks for it.
        """
        try:
            step = self._client.session_step(self._sid(), answer)
        except Conflict:
            return "The episode is over: no more answers are taken."
        if step.observation:
            return step.observation
        return "Your answer is recorded. The episode is over."

    def get_reward(self) -> float | None:
        """The session's reward (None when referee failed: TRL ignores it)."""
        sid = self._session_id
        if sid is None:
            return None
        try:
            reward = self._client.session_verify(sid)
        except NotFound as gone:  # reaped or closed before its reward: nothing left to score
            log.warning("session %s has no reward: %s", sid, gone)
            return None
        except TransportError as lost:
            if self._on_error == "raise":
                raise
            log.warning("session %s has no reward: %s", sid, lost)
            return None
        if not reward.valid or reward.score is None:
            log.warning("session %s has no reward: %s", sid, reward.details.get("reason"))
            return None
        return reward.score

    def _release(self) -> None:
        """Close the session and the HTTP client (not a tool: TRL skips ``_`` names). TRL keeps
        its instances for the whole run; the server reaps a session left open."""
        self._close()
        self._client.close()

    def __del__(self) -> None:
        client = getattr(self, "_client", None)
        if client is not None:
            client.close()

    def _close(self) -> None:
        sid, self._session_id = self._session_id, None
        if sid is not None:
            try:
                self._client.close_session(sid)
            except RefereeError:
                pass  # reaped already, or the server went away: it is gone either way


class PythonSession(SessionEnvironment):
    """A math problem with a persistent sandboxed Python interpreter (rows: prompt, reference)."""

    env = "python"

    def python(self, code: str) -> str:
        """Run Python code in a persistent interpreter: variables, imports and functions
        survive between calls; the value of the last expression is shown. numpy and sympy can
        be imported. No network.

        Args:
            code: The Python code to run.
        """
        return self._tool("python", code=code)


class CodeSession(SessionEnvironment):
    """A programming task: run the visible tests, then answer with the program (rows: prompt,
    tests, hidden_tests, language)."""

    env = "code"

    def run_tests(self, code: str) -> str:
        """Run a complete program on the task's visible tests and see which pass.

        Args:
            code: The whole program's source code.
        """
        return self._tool("run_tests", code=code)


class ProceduralSession(SessionEnvironment):
    """A reasoning-gym problem: a wrong answer gets feedback and another try (rows: task,
    config, level, index, seed; or a generated problem's prompt and grader)."""

    env = "procedural"


def close_sessions() -> int:
    """Close the open session of every live :class:`SessionEnvironment` of this process (their
    HTTP clients stay usable: a later ``reset`` opens a new one). Returns how many closed."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    closed = 0
    for env in live:
        if env._session_id is not None:
            env._close()
            closed += 1
    return closed


def _close_sessions_callback() -> type:
    from transformers import TrainerCallback

    class CloseSessions(TrainerCallback):
        """A ``transformers`` callback: when training ends, the last session of every
        environment instance is closed (:func:`close_sessions`)."""

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            closed = close_sessions()
            log.info("closed %d referee sessions at the end of training", closed)

    return CloseSessions


def __getattr__(name: str) -> Any:
    # CloseSessions subclasses transformers' TrainerCallback: built on first use, so that
    # importing this module does not import transformers
    if name == "CloseSessions":
        cls = _close_sessions_callback()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def completion_reward(
    completions: Sequence[Any], environments: Sequence[Any] = (), **kwargs: Any
) -> list[float | None]:
    """A ``reward_funcs`` entry: each rollout's session verified on the completion's own final
    text (for models that answer in their last message instead of calling ``answer``)."""
    from referee.trainer_adapter.trl import completion_text

    rewards: list[float | None] = []
    for completion, env in zip(completions, environments, strict=False):
        sid = getattr(env, "_session_id", None)
        client = getattr(env, "_client", None)
        if sid is None or not isinstance(client, RefereeClient):
            rewards.append(None)
            continue
        reward = client.session_verify(sid, completion_text(completion))
        rewards.append(reward.score if reward.valid else None)
    return rewards
