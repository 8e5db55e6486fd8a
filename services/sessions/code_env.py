"""The ``code`` environment: a programming task with a test tool and hidden tests.

The tool ``run_tests(code)`` runs the program on the row's visible ``tests`` on the sandbox
slots (a ``code`` grader, as ``/v1/rewards`` runs it) and shows the model each test's outcome;
a turn without a tool call is the final submission, graded on every test, the visible ones and
``hidden_tests``. Nothing of a hidden test (its input, expected output, the program's output on
it, even how many there are) is ever in a tool output or an observation: only the final reward
(``verify``, for the trainer) reads them.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from referee.client.code_models import CodeGrader
from referee.client.errors import InvalidRequest
from referee.client.models import RewardResult
from referee.services.sessions.episode import (
    EnvContext,
    OneAnswerEpisode,
    ToolResult,
    ToolSpec,
    score_one,
    task_prompt,
)

__all__ = ["RUN_TESTS_TOOL", "CodeEpisode", "visible_report"]

RUN_TESTS_TOOL = ToolSpec(
    "run_tests",
    "Run a complete program on the task's visible tests and see which pass, with the output "
    "of the failing ones. The final answer is graded on more tests than these.",
    {"code": "The whole program's source code (no markdown fence needed)."},
)
TASK_FIELDS = {
    "prompt": "The programming problem (text or chat messages).",
    "language": "The program's language (default python).",
    "tests": "The visible tests (the code grader's test shapes): run_tests runs these.",
    "hidden_tests": "Tests only the final submission is graded on; never shown.",
    "reward": "fraction (default) or all_or_nothing.",
}
_EXCERPT = 400


def _shown(spec: dict[str, Any]) -> str:
    if "fn_name" in spec:
        return f"{spec['fn_name']}(*{json.dumps(spec.get('args', []))[:_EXCERPT]})"
    if "test_code" in spec:
        return "assert test:\n" + str(spec["test_code"])[:_EXCERPT]
    return "stdin " + repr(str(spec.get("stdin", ""))[:_EXCERPT])


def visible_report(tests: list[dict[str, Any]], result: RewardResult) -> str:
    """The model's view of a run on the visible tests (all of them visible: their inputs and
    expected outputs may be shown)."""
    details = result.details
    per_test = details.get("tests")
    if not isinstance(per_test, list):  # no program, no compiler, a sandbox fault
        compiled = details.get("compile")
        text = f"the tests did not run: {details.get('outcome')}: {details.get('reason', '')}"
        if isinstance(compiled, dict) and compiled.get("stderr"):
            text += "\n" + str(compiled["stderr"])[-2000:]
        return text.rstrip() + "\n"
    lines = [f"passed {details.get('passed', 0)} of {details.get('total', len(tests))} tests"]
    compiled = details.get("compile")
    if isinstance(compiled, dict) and compiled.get("status") not in (None, "ok"):
        lines.append("compile: " + str(compiled.get("stderr", ""))[-2000:])
    for t in per_test:
        i = int(t.get("index", 0))
        spec = tests[i] if 0 <= i < len(tests) else {}
        line = f"test {i}: {t.get('outcome')}"
        if t.get("outcome") != "passed":
            line += f"\n  input: {_shown(spec)}"
            if "stdout" in spec:
                line += f"\n  expected: {str(spec['stdout'])[:_EXCERPT]!r}"
            elif "expected" in spec:
                line += f"\n  expected: {json.dumps(spec['expected'])[:_EXCERPT]}"
            for key in ("stdout", "stderr", "message"):
                if t.get(key):
                    line += f"\n  {key}: {str(t[key])[:_EXCERPT]!r}"
        lines.append(line)
    return "\n".join(lines) + "\n"


class CodeEpisode(OneAnswerEpisode):
    tools = (RUN_TESTS_TOOL,)
    no_answer_reason = "the session has no submission"

    def __init__(self, ctx: EnvContext, task: dict[str, Any]) -> None:
        self.ctx = ctx
        self.prompt = task_prompt(task, "code")
        visible = task.get("tests") or []
        hidden = task.get("hidden_tests") or []
        if not isinstance(visible, list) or not isinstance(hidden, list):
            raise InvalidRequest("task.tests and task.hidden_tests must be lists of tests")
        if not visible and not hidden:
            raise InvalidRequest("task.tests: the code environment needs tests")
        base = {
            "type": "code",
            "language": task.get("language", "python"),
            "reward": task.get("reward", "fraction"),
        }
        for key in ("comparison", "imports"):  # as the grader's (NeMo Gym's rows: LiveCodeBench's)
            if task.get(key) is not None:
                base[key] = task[key]
        try:
            final = CodeGrader.model_validate({**base, "tests": visible + hidden})
            self.visible = (
                CodeGrader.model_validate({**base, "tests": visible, "extract": "none"})
                if visible
                else None
            )
        except ValidationError as exc:
            raise InvalidRequest(f"task: not a code task ({exc.errors()[0]['msg']})") from exc
        self.grader = final.model_dump()
        self.visible_specs = [
            t.model_dump(exclude_none=True) for t in (self.visible.tests if self.visible else [])
        ]

    async def open(self) -> str | list[dict[str, Any]]:
        executor = self.ctx.scorer.sandbox
        if executor is not None:
            executor.require_runner()  # 503 now, not at the first run
        return self.prompt

    async def run_tool(self, spec: ToolSpec, args: dict[str, str]) -> ToolResult:
        if self.visible is None:
            return ToolResult("this task has no visible tests: submit your answer\n")
        result = await score_one(self.ctx, "run_tests", self.visible.model_dump(), args["code"])
        info = {
            "passed": result.details.get("passed"),
            "total": result.details.get("total"),
            "outcome": result.details.get("outcome"),
            "valid": result.valid,
        }
        return ToolResult(visible_report(self.visible_specs, result), info=info)
