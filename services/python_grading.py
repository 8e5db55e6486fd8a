"""The ``python`` grader (OpenAI's shape): a user's ``grade(sample, item) -> float`` run in the
sandbox, like model-written code: no network, a wall-clock and memory limit, a private work dir.

A small driver (the user's source embedded as a string) reads ``{"sample", "item"}`` from stdin,
runs ``grade`` with stdout redirected to stderr (so the grader's prints cannot pose as its
result) and writes one marked JSON line. Back here the value must be a number (not a bool) in
[0, 1]; anything else (an exception, a timeout, a crash, no ``grade``, a string, 1.5, NaN) is
a fault of the grader, not of the response: score ``None`` (the trainer skips the sample),
``valid: false`` and the reason. :func:`grade_python` is blocking (a sandbox executor thread);
``code_grading.resolve_code_leaves`` runs it for every ``python`` leaf.
"""

from __future__ import annotations

import json
import math
import secrets
from typing import Any

from referee.sandbox import Limits, RunStatus, SandboxBackend, run_program
from referee.sandbox.models import RunResult
from referee.services.remote_sandbox import RemoteSandbox
from referee.verifiers.tool_calls import parse_tool_calls

__all__ = ["driver_source", "grade_python", "sample_of"]

_DRIVER = """\
import json as _json, sys as _sys
_SOURCE = {source}
_MARK = {mark}
_data = _json.loads(_sys.stdin.read())
_real_stdout = _sys.stdout
_sys.stdout = _sys.stderr
try:
    _ns = {{"__name__": "grader"}}
    exec(compile(_SOURCE, "grader.py", "exec"), _ns)
    _grade = _ns.get("grade")
    if not callable(_grade):
        _result = {{"error": "the source defines no grade(sample, item) function"}}
    else:
        _value = _grade(_data["sample"], _data["item"])
        _ok = isinstance(_value, (int, float)) and not isinstance(_value, bool)
        _result = {{"value": float(_value) if _ok else None, "kind": type(_value).__name__,
                    "repr": repr(_value)[:200]}}
except BaseException as _exc:
    import traceback as _tb
    _result = {{"error": (type(_exc).__name__ + ": " + str(_exc))[:500],
               "traceback": _tb.format_exc()[-2000:]}}
_real_stdout.write(_MARK + _json.dumps(_result) + "\\n")
_real_stdout.flush()
"""


def driver_source(source: str, mark: str) -> str:
    return _DRIVER.format(source=repr(source), mark=repr(mark))


def sample_of(response: str) -> dict[str, Any]:
    """OpenAI's ``sample`` for a text response: output_text, output_json, output_tools,
    choices."""
    try:
        output_json = json.loads(response)
    except (json.JSONDecodeError, RecursionError):
        output_json = None
    calls, _fmt = parse_tool_calls(response)
    tools = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
        }
        for i, c in enumerate(calls)
    ]
    return {
        "output_text": response,
        "output_json": output_json,
        "output_tools": tools,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": response}}],
    }


def _invalid(reason: str, **extra: Any) -> tuple[None, dict[str, Any]]:
    return None, {"outcome": "grader_error", "valid": False, "reason": reason, **extra}


def _run(
    driver: str, stdin: str, backend: SandboxBackend, limits: Limits, compile_limits: Limits
) -> RunResult:
    if isinstance(backend, RemoteSandbox):
        return backend.run_once(driver, "python", stdin, limits, compile_limits)[1]
    return run_program(driver, "python", backend, stdin, limits)


def grade_python(
    grader: dict[str, Any],
    response: str,
    backend: SandboxBackend,
    limits: Limits,
    compile_limits: Limits,
) -> tuple[float | None, dict[str, Any]]:
    """Run the grader's ``grade(sample, item)`` on the response in the sandbox."""
    mark = f"@@referee-result-{secrets.token_hex(8)}@@"
    payload = json.dumps({"sample": sample_of(response), "item": grader.get("item") or {}})
    run = _run(driver_source(grader["source"], mark), payload, backend, limits, compile_limits)
    info: dict[str, Any] = {"wall_time_s": round(run.wall_time_s, 4)}
    if grader.get("name"):
        info["name"] = grader["name"]
    if run.status == RunStatus.TIME_LIMIT:
        return _invalid(f"the grader did not finish within {limits.wall_time_s:g} s", **info)
    if run.status == RunStatus.MEMORY_LIMIT:
        return _invalid(f"the grader ran out of memory ({limits.memory_mb} MB)", **info)
    lines = [line for line in run.stdout.splitlines() if line.startswith(mark)]
    if not lines:
        stderr = run.stderr[-500:]
        why = run.message or f"exit status {run.exit_code}"
        return _invalid(f"the grader stopped without a result ({why})", stderr=stderr, **info)
    try:
        result = json.loads(lines[-1][len(mark) :])
    except json.JSONDecodeError:
        return _invalid("the grader's result could not be read", **info)
    if "error" in result:
        return _invalid(
            f"grade() raised {result['error']}",
            traceback=str(result.get("traceback", ""))[-1000:],
            **info,
        )
    value = result.get("value")
    if value is None:
        return _invalid(
            f"grade() returned {result.get('repr')} ({result.get('kind')}), not a number",
            **info,
        )
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        return _invalid(f"grade() returned {value!r}, outside [0, 1]", **info)
    details: dict[str, Any] = {"outcome": "graded", **info}
    threshold = grader.get("pass_threshold")
    if threshold is not None:
        details["passed"] = value >= threshold
    return float(value), details
