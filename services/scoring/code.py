"""The ``code`` stage of a batch: every ``code`` and ``python`` leaf of an item runs on the sandbox
slots, and a ``precomputed`` node with its score and details takes its place, so that the rest
of the grader (math leaves, say) is scored by :func:`referee.verifiers.registry.score_item` on
the check pool as before. The program's tests run where the executor's code runner runs them
(here: ``execution.program_tests``; or on a sandbox node).
"""

from __future__ import annotations

from typing import Any

from referee.client.models import RunLimits
from referee.services.execution.program_tests import no_score
from referee.services.execution.slots import SandboxExecutor
from referee.verifiers.tree import amap_leaves, iter_leaves

__all__ = ["has_code", "resolve_code_leaves"]


SANDBOX_TYPES = frozenset({"code", "python"})
"""Leaves that run in the sandbox: model-written programs, and user grader code."""


def has_code(grader: dict[str, Any]) -> bool:
    kind = grader["type"]
    if kind != "weighted" and kind != "multi":  # a leaf (the common case: no walk)
        return kind in SANDBOX_TYPES
    return any(_runs_code(leaf) for leaf in iter_leaves(grader))


def _runs_code(leaf: dict[str, Any]) -> bool:
    if leaf["type"] == "multi":  # OpenAI's, before it is lowered to weighted
        return any(has_code(g) for g in leaf["graders"].values())
    return leaf["type"] in SANDBOX_TYPES


def _not_run(reason: str) -> tuple[float, dict[str, Any]]:
    """A program whose caller went away before a slot was free: never started."""
    return no_score("error", f"not run: {reason}")


async def resolve_code_leaves(
    grader: dict[str, Any], response: str, executor: SandboxExecutor
) -> dict[str, Any]:
    """``grader`` with each ``code`` node replaced by ``{"type": "precomputed", "of": "code",
    "score", "details"}``, run on the sandbox executor (waiting for free slots)."""
    return await amap_leaves(grader, lambda leaf: _resolve_leaf(leaf, response, executor))


async def _resolve_leaf(
    grader: dict[str, Any], response: str, executor: SandboxExecutor
) -> dict[str, Any]:
    if grader["type"] == "code":
        runner = executor.require_runner()
        limits = executor.limits(_asked(grader))
        score, details = await executor.run_queued(
            runner.grade_code, grader, response, limits, if_dropped=_not_run
        )
        return {"type": "precomputed", "of": "code", "score": score, "details": details}
    if grader["type"] == "python":
        from referee.services.scoring.python import grade_python

        runner = executor.require_runner()
        asked = RunLimits(time_s=grader.get("timeout_s", 10.0), memory_mb=grader.get("memory_mb"))
        limits = executor.limits(asked)  # capped by the server's REFEREE_SANDBOX_MAX_*
        verdict: tuple[float | None, dict[str, Any]] = await executor.run_queued(
            grade_python, grader, response, runner, limits
        )
        return {"type": "precomputed", "of": "python", "score": verdict[0], "details": verdict[1]}
    return grader


def _asked(grader: dict[str, Any]) -> RunLimits | None:
    raw = grader.get("limits")
    return RunLimits.model_validate(raw) if raw else None
