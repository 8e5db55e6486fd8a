"""The ``python`` environment: tool-integrated reasoning on a math problem.

The tool ``python(code)`` runs the code in the session's own persistent sandboxed interpreter
(``referee.sandbox.interpreter``): variables, imports and functions survive between calls, as
in a notebook, with the sandbox's isolation (no network, uid 65534, one cgroup for the whole
session, a wall and CPU limit per call and a CPU budget in total, capped output). A turn without
a tool call is the final answer, scored by the ``math`` grader against the row's ``reference``.

A cell that fails, times out or loses the interpreter is a result for the model to read (its
traceback, ``[timeout: ...]``), never a fault of the session.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import ValidationError

from referee.client.errors import InvalidRequest, ServiceUnavailable
from referee.client.models import RewardItem, RewardResult
from referee.sandbox import BwrapBackend
from referee.sandbox.errors import SandboxError
from referee.sandbox.interpreter import (
    CellResult,
    CellStatus,
    InterpreterLimits,
    PersistentInterpreter,
)
from referee.services.sessions.episode import (
    EnvContext,
    OneAnswerEpisode,
    ToolResult,
    ToolSpec,
    task_prompt,
)
from referee.services.settings import Settings

__all__ = ["PYTHON_TOOL", "PythonEpisode", "cell_text"]

PYTHON_TOOL = ToolSpec(
    "python",
    "Run Python code in a persistent interpreter: variables, imports and functions survive "
    "between calls. The value of the last expression is shown, as in a notebook; numpy, sympy "
    "and mpmath can be imported. No network.",
    {"code": "The Python code to run."},
)


def limits(settings: Settings) -> InterpreterLimits:
    """A python session's limits, from the ``sessions_python_*`` settings."""
    out = settings.sessions_python_output_kb * 1024
    return InterpreterLimits(
        wall_time_s=settings.sessions_python_call_s,
        total_cpu_time_s=settings.sessions_python_cpu_s,
        memory_mb=settings.sessions_python_memory_mb,
        output_bytes=out,
        stderr_bytes=out,
    )


TASK_FIELDS = {
    "prompt": "The problem (text or chat messages).",
    "reference": "The reference answer the math grader compares the final answer with.",
    "grader": "Instead of reference: any /v1/rewards grader, which scores the final answer.",
}


def cell_text(result: CellResult) -> str:
    """What the model sees of one call: its output, the traceback, and how it ended."""
    parts = [result.stdout, result.stderr, result.traceback]
    text = "".join(p if p.endswith("\n") or not p else p + "\n" for p in parts if p)
    if result.stdout_truncated or result.stderr_truncated:
        text += "[output truncated]\n"
    if result.message:
        text += f"[{result.status.value}: {result.message}]\n"
    elif result.status not in (CellStatus.OK, CellStatus.ERROR):
        text += f"[{result.status.value}]\n"
    return text or "(no output)\n"


class PythonEpisode(OneAnswerEpisode):
    tools = (PYTHON_TOOL,)

    def __init__(self, ctx: EnvContext, task: dict[str, Any]) -> None:
        self.ctx = ctx
        self.prompt = task_prompt(task, "python")
        reference = task.get("reference")
        if task.get("grader") is not None:  # any grader of /v1/rewards scores the final answer
            try:
                checked = RewardItem.model_validate(
                    {"id": "task", "response": "", "grader": task["grader"]}
                )
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise InvalidRequest(f"task.{where}: {first['msg']}") from exc
            self.grader = checked.model_dump(mode="json")["grader"]
        elif isinstance(reference, str | int | float) and str(reference).strip():
            self.grader = {"type": "math", "reference": str(reference)}
        else:
            raise InvalidRequest(
                "task.reference: the python environment needs the answer (or a `grader`)"
            )
        self.interpreter: PersistentInterpreter | None = None
        self.fault: str | None = None  # a failure of the sandbox that cut the rollout

    async def open(self) -> str | list[dict[str, Any]]:
        executor = self.ctx.scorer.sandbox
        backend = executor.backend if executor is not None else None
        if not isinstance(backend, BwrapBackend):
            reason = executor.unavailable_reason if executor is not None else None
            raise ServiceUnavailable(
                "the python environment needs the bubblewrap sandbox on this server"
                + (f": {reason}" if reason else "")
            )
        self.interpreter = PersistentInterpreter(backend, limits(self.ctx.settings))
        try:
            await self._blocking(self.interpreter.start)
        except SandboxError as exc:
            self.interpreter.close()
            raise ServiceUnavailable(f"the session's interpreter did not start: {exc}") from exc
        return self.prompt

    async def _blocking(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.ctx.threads, fn, *args)

    async def run_tool(self, spec: ToolSpec, args: dict[str, str]) -> ToolResult:
        assert self.interpreter is not None
        try:
            result: CellResult = await self._blocking(self.interpreter.run, args["code"])
        except SandboxError as exc:  # a fresh interpreter could not start: referee's fault
            self.fault = f"the interpreter could not be restarted: {exc}"
            return ToolResult(
                "[sandbox_error: the interpreter is unavailable]\n",
                done=True,
                info={"status": "sandbox_error", "error": "sandbox_error"},
            )
        done = result.status is CellStatus.CLOSED or (
            result.status is CellStatus.CPU_LIMIT and "spent" in result.message
        )
        info: dict[str, Any] = {
            "status": result.status.value,
            "wall_s": round(result.wall_s, 4),
            "cpu_s": result.cpu_s,
            "state_lost": result.state_lost,
            "restarted": result.restarted,
            "calls": result.calls,
        }
        return ToolResult(cell_text(result), done=done, info=info)

    async def verify(self, text: str | None) -> RewardResult:
        if self.fault is not None:  # the rollout was cut by referee, not the model: mask it
            return RewardResult(
                id="final", score=0.0, details={"outcome": "sandbox_error", "reason": self.fault}
            )
        return await super().verify(text)

    def close(self) -> None:
        if self.interpreter is not None:
            self.interpreter.close()
