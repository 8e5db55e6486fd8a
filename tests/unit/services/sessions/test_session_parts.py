"""The pieces of the session environments that need no server: a tool call's argument checks
(the model's text), the final answer read from messages, what a cell and a test run show."""

from __future__ import annotations

from typing import Any

import pytest

from referee.client.models import RewardResult
from referee.sandbox.interpreter import CellResult, CellStatus
from referee.services.sessions.code_env import visible_report
from referee.services.sessions.episode import ToolSpec, check_arguments, final_text
from referee.services.sessions.procedural_env import feedback
from referee.services.sessions.python_env import PYTHON_TOOL, cell_text

SPEC = ToolSpec("python", "run code", {"code": "the code"})


@pytest.mark.parametrize(
    ("arguments", "args", "says"),
    [
        ({"code": "1"}, {"code": "1"}, ""),
        ('{"code": "1"}', {"code": "1"}, ""),  # OpenAI's JSON string
        ("{not json", None, "not valid JSON"),
        ("[1]", None, "must be a JSON object"),
        ({}, None, "missing 'code'"),
        ("", None, "missing 'code'"),
        ({"code": "1", "timeout": 3}, None, "unknown 'timeout'"),
        ({"code": 12}, None, "'code' of python must be a string"),
    ],
)
def test_arguments_are_checked_into_text_for_the_model(
    arguments: Any, args: dict[str, str] | None, says: str
) -> None:
    got, text = check_arguments(SPEC, arguments)
    assert got == args
    assert says in text
    if args is None:
        assert text.startswith("error: ")


def test_the_tool_schema_is_openai_function_calling() -> None:
    schema = PYTHON_TOOL.schema().model_dump()
    assert schema["type"] == "function"
    params = schema["function"]["parameters"]
    assert params["required"] == ["code"] and params["properties"]["code"]["type"] == "string"
    assert params["additionalProperties"] is False


@pytest.mark.parametrize(
    ("response", "text"),
    [
        ("\\boxed{2}", "\\boxed{2}"),
        ([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}], "a"),
        (
            [
                {"role": "assistant", "content": "first"},
                {"role": "tool", "content": "out"},
                {"role": "assistant", "content": [{"type": "text", "text": "last"}]},
            ],
            "last",
        ),
        ([{"role": "user", "content": "q"}], ""),
    ],
)
def test_the_final_answer_is_the_last_assistant_text(response: Any, text: str) -> None:
    assert final_text(response) == text


def test_a_cell_shows_output_traceback_and_how_it_ended() -> None:
    assert cell_text(CellResult(CellStatus.OK, stdout="4\n")) == "4\n"
    assert cell_text(CellResult(CellStatus.OK)) == "(no output)\n"
    err = cell_text(CellResult(CellStatus.ERROR, traceback="ZeroDivisionError: x"))
    assert err == "ZeroDivisionError: x\n"
    timed = cell_text(
        CellResult(CellStatus.TIMEOUT, stdout="partial", message="interrupted: past the limit")
    )
    assert timed == "partial\n[timeout: interrupted: past the limit]\n"
    assert "[output truncated]" in cell_text(CellResult(CellStatus.OK, stdout_truncated=True))
    assert cell_text(CellResult(CellStatus.CRASHED)) == "[crashed]\n"


def test_a_test_run_shows_the_failing_visible_tests() -> None:
    tests = [{"stdin": "1 2\n", "stdout": "3\n"}, {"stdin": "2 2\n", "stdout": "4\n"}]
    result = RewardResult(
        id="t",
        score=0.5,
        details={
            "outcome": "wrong_answer",
            "passed": 1,
            "total": 2,
            "tests": [
                {"index": 0, "outcome": "passed"},
                {"index": 1, "outcome": "wrong_answer", "stdout": "0\n"},
            ],
        },
    )
    text = visible_report(tests, result)
    assert text.splitlines()[0] == "passed 1 of 2 tests"
    assert "test 1: wrong_answer" in text and "expected: '4\\n'" in text
    assert "stdout: '0\\n'" in text
    assert "1 2" not in text  # a passed test's input is not repeated
    broken = RewardResult(id="t", score=0.0, details={"outcome": "no_code", "reason": "none"})
    assert visible_report(tests, broken).startswith("the tests did not run: no_code")


def test_feedback_says_what_was_read_and_the_turns_left() -> None:
    wrong = RewardResult(id="t", score=0.0, details={"outcome": "wrong", "extracted": "7"})
    assert feedback(wrong, 2).startswith("Your answer '7' is not correct. Try again: 2 attempts")
    none = RewardResult(id="t", score=0.0, details={"outcome": "no_answer"})
    assert feedback(none, 1).startswith("No answer was found") and "1 attempt left" in feedback(
        none, 1
    )
    partial = RewardResult(id="t", score=0.5, details={"outcome": "partial", "extracted": "x"})
    assert "partial credit 0.50" in feedback(partial, 1)
