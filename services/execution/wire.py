"""The sandbox's ``RunResult`` and the shapes the wire carries it in, both ways: referee's own
``ExecutionResult`` (``/v1/sandbox/run``, a code grader's compile step, what a sandbox node
answers) and SandboxFusion's ``RunCodeResult`` (``/run_code``)."""

from __future__ import annotations

from typing import Any

from referee.client.models import ExecutionResult, RunCodeResult
from referee.sandbox import Limits, RunResult, RunStatus
from referee.sandbox.process_io import cut_for_json

__all__ = ["limits_dict", "run_result_dict", "to_run_code_result", "to_run_result"]


def limits_dict(limits: Limits) -> dict[str, Any]:
    """The wire shape of a run's limits (``referee.client.code_models.RunLimits``)."""
    return {"time_s": limits.wall_time_s, "memory_mb": limits.memory_mb}


def run_result_dict(run: RunResult, body_bytes: int | None = None) -> dict[str, Any]:
    """The wire shape of one run (``referee.client.models.ExecutionResult``); with
    ``body_bytes``, stdout and stderr are each cut to that many bytes of JSON (``output_cut``)."""
    stdout, stderr, cut = run.stdout, run.stderr, False
    if body_bytes is not None:
        stdout, cut_out = cut_for_json(stdout, body_bytes)
        stderr, cut_err = cut_for_json(stderr, body_bytes)
        cut = cut_out or cut_err
    return {
        "status": run.status.value,
        "exit_code": run.exit_code,
        "signal": run.signal,
        "stdout": stdout,
        "stderr": stderr,
        "stdout_truncated": run.truncated,
        "stderr_truncated": run.stderr_truncated,
        "output_cut": cut,
        "wall_time_s": round(run.wall_time_s, 6),
        "cpu_time_s": run.cpu_time_s,
        "message": run.message,
    }


def to_run_result(result: ExecutionResult) -> RunResult:
    """The sandbox's ``RunResult`` for a run as the wire carries it."""
    return RunResult(
        status=RunStatus(result.status),
        exit_code=result.exit_code,
        signal=result.signal,
        stdout=result.stdout,
        stderr=result.stderr,
        truncated=result.stdout_truncated,
        stderr_truncated=result.stderr_truncated,
        wall_time_s=result.wall_time_s,
        cpu_time_s=result.cpu_time_s,
        message=result.message,
    )


def to_run_code_result(run: RunResult, body_bytes: int | None = None) -> RunCodeResult:
    """SandboxFusion's shape of one run; with ``body_bytes``, stdout and stderr are each cut
    to that many bytes of JSON, and stderr says so (its schema has no field for it)."""
    if run.status is RunStatus.TIME_LIMIT:
        status = "TimeLimitExceeded"
    elif run.status is RunStatus.SANDBOX_ERROR:
        status = "Error"
    else:
        status = "Finished"
    code = (
        run.exit_code
        if run.exit_code is not None
        else (-run.signal if run.signal is not None else None)
    )
    stdout, stderr, cut = run.stdout, run.stderr, False
    if body_bytes is not None:
        stdout, cut_out = cut_for_json(stdout, body_bytes)
        stderr, cut_err = cut_for_json(stderr, body_bytes)
        cut = cut_out or cut_err
    notes = []
    if run.status in (RunStatus.OUTPUT_LIMIT, RunStatus.MEMORY_LIMIT) and run.message:
        notes.append(f"[referee] {run.message}")
    if cut:
        notes.append(f"[referee] output cut to {body_bytes} bytes of JSON for the response")
    if notes:
        stderr = "\n".join([stderr, *notes]) if stderr else "\n".join(notes)
    return RunCodeResult(
        status=status,
        execution_time=run.wall_time_s,
        return_code=code,
        stdout=stdout,
        stderr=stderr,
    )
