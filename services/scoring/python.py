"""The ``python`` grader (OpenAI's shape): a user's ``grade(sample, item) -> float`` run in the
sandbox, like model-written code: no network, a wall-clock and memory limit, a private work dir.

A small driver (the user's source embedded as a string) reads ``{"sample", "item"}`` from stdin,
runs ``grade`` with stdout redirected to stderr (so the grader's prints cannot pose as its
result) and writes one marked JSON line. Back here the value must be a number (not a bool) in
[0, 1]; anything else (an exception, a timeout, a crash, no ``grade``, a string, 1.5, NaN) is
a fault of the grader, not of the response: score ``None`` (the trainer skips the sample),
``valid: false`` and the reason. :func:`resolve_python_leaves` runs a batch's ``python``
leaves before its code leaves, those that share a source together (:func:`grade_python_group`,
blocking, on a sandbox executor thread: one prepared driver, a fresh process per item).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import secrets
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from referee.client.models import RunLimits
from referee.sandbox import Limits, RunStatus
from referee.sandbox.models import RunResult
from referee.services.execution.program import Program, ProgramLimits
from referee.services.execution.runners import CodeRunner
from referee.services.execution.slots import SandboxExecutor
from referee.verifiers.text_scan import after_thinking
from referee.verifiers.tool_calls import parse_tool_calls
from referee.verifiers.tree import Path, leaves, replace

log = logging.getLogger("referee.python_grader")

__all__ = [
    "driver_source",
    "grade_python",
    "grade_python_group",
    "resolve_python_leaves",
    "sample_of",
]

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
    choices. A reasoning model's think block is not in them (OpenAI's ``output_text`` is the
    answer, not the reasoning): they hold what follows the last ``</think>``."""
    response = after_thinking(response)
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


def _invalid(reason: str, *, in_grade: bool = False, **extra: Any) -> tuple[None, dict[str, Any]]:
    """No score, and why; ``error_in``: ``grade`` where the user's function raised or returned
    no number in [0, 1], ``runner`` where its run failed around it (time, memory, no result)."""
    where = "grade" if in_grade else "runner"
    return None, {
        "outcome": "grader_error",
        "valid": False,
        "reason": reason,
        "error_in": where,
        **extra,
    }


def _payload(leaf: dict[str, Any], response: str) -> str:
    return json.dumps({"sample": sample_of(response), "item": leaf.get("item") or {}})


def _verdict(
    run: RunResult, mark: str, grader: dict[str, Any], limits: Limits
) -> tuple[float | None, dict[str, Any]]:
    """What one run of the driver means: the grader's number, or why there is none."""
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
            in_grade=True,
            traceback=str(result.get("traceback", ""))[-1000:],
            **info,
        )
    value = result.get("value")
    if value is None:
        return _invalid(
            f"grade() returned {result.get('repr')} ({result.get('kind')}), not a number",
            in_grade=True,
            **info,
        )
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        return _invalid(f"grade() returned {value!r}, outside [0, 1]", in_grade=True, **info)
    details: dict[str, Any] = {"outcome": "graded", **info}
    threshold = grader.get("pass_threshold")
    if threshold is not None:
        details["passed"] = value >= threshold
    return float(value), details


def grade_python(
    grader: dict[str, Any],
    response: str,
    runner: CodeRunner,
    limits: ProgramLimits,
) -> tuple[float | None, dict[str, Any]]:
    """Run the grader's ``grade(sample, item)`` on one response in the sandbox."""
    return grade_python_group([(grader, response)], runner, limits)[0]


def grade_python_group(
    members: Sequence[tuple[dict[str, Any], str]],
    runner: CodeRunner,
    limits: ProgramLimits,
) -> list[tuple[float | None, dict[str, Any]]]:
    """Several responses graded by one source (each ``(leaf, response)``; the leaves differ
    only in their ``item``): the driver is prepared once and each response runs in a process of
    its own, inside one sandbox where the backend can (``ProgramSession``)."""
    mark = f"@@referee-result-{secrets.token_hex(8)}@@"
    source = members[0][0]["source"]
    driver = driver_source(source, mark)
    payloads = [_payload(leaf, r) for leaf, r in members]
    runs = runner.run_each(Program(driver, "python", limits), payloads, PRELOAD)
    return [
        _verdict(run, mark, leaf, limits.run) for run, (leaf, _r) in zip(runs, members, strict=True)
    ]


PRELOAD = ("json", "re", "math", "collections", "string", "traceback")
"""Imported once per sandbox, not by each run's fresh interpreter: the driver's json (which
pulls in re: about 20 ms a run otherwise), its traceback on an error, and what graders import
most (a grader still imports them as usual; the import is then a lookup)."""

_GROUP_SIZE = 32
"""Responses per sandbox job at the least: enough to share a sandbox's start (about 0.1 s)."""
_GROUP_MAX = 256
"""Responses per sandbox job at the most, so that one batch does not hold a slot for long."""


def _group_size(members: int, slots: int) -> int:
    """Responses of one source per sandbox job: the source's responses spread over the slots
    (one sandbox start per slot, not one per 32 responses), within the bounds above."""
    return max(_GROUP_SIZE, min(_GROUP_MAX, -(-members // max(1, slots))))


async def resolve_python_leaves(
    graders: list[dict[str, Any]], responses: Sequence[str], executor: SandboxExecutor
) -> list[dict[str, Any]]:
    """``graders`` with every ``python`` leaf replaced by its ``precomputed`` verdict; leaves
    with the same source and limits run together, spread over the sandbox slots
    (:func:`_group_size`)."""
    groups: dict[str, list[tuple[int, Path, dict[str, Any]]]] = defaultdict(list)
    for i, grader in enumerate(graders):
        for path, leaf in leaves(grader, {"python"}):
            key = json.dumps([leaf["source"], leaf.get("timeout_s"), leaf.get("memory_mb")])
            groups[key].append((i, path, leaf))
    runner = executor.require_runner()
    chunks = [
        members[k : k + size]
        for members in groups.values()
        for size in [_group_size(len(members), executor.slots)]
        for k in range(0, len(members), size)
    ]

    async def run(chunk: list[tuple[int, Path, dict[str, Any]]]) -> list[Any]:
        first = chunk[0][2]
        asked = RunLimits(time_s=first.get("timeout_s", 10.0), memory_mb=first.get("memory_mb"))
        limits = executor.limits(asked)  # capped by the server's REFEREE_SANDBOX_MAX_*
        pairs = [(leaf, responses[i]) for i, _path, leaf in chunk]
        try:
            out: list[Any] = await executor.run_queued(
                grade_python_group,
                pairs,
                runner,
                limits,
                if_dropped=lambda reason: [_invalid(f"not run: {reason}") for _ in chunk],
            )
        except Exception as exc:  # the sandbox failed these items, not the batch
            log.error("python grader run failed", exc_info=exc)
            return [_invalid(f"the sandbox failed: {type(exc).__name__}") for _ in chunk]
        return out

    verdicts = await asyncio.gather(*(run(c) for c in chunks))
    resolved = list(graders)
    for chunk, results in zip(chunks, verdicts, strict=True):
        for (i, path, _leaf), (score, details) in zip(chunk, results, strict=True):
            node = {"type": "precomputed", "of": "python", "score": score, "details": details}
            resolved[i] = replace(resolved[i], path, node)
    return resolved
