"""Grader objects as trainers hand them over, and a row's reference filled in."""

from __future__ import annotations

import base64
import json
import pickle
import zlib
from pathlib import Path

import pytest

from referee.client import grader_specs
from referee.client.grader_specs import fill_grader, parse_grader


def test_parse_json_text_and_dicts() -> None:
    assert parse_grader('{"type": "math", "extract": "boxed"}') == {
        "type": "math",
        "extract": "boxed",
    }
    assert parse_grader({"type": "format", "pattern": "think_answer"})["type"] == "format"


@pytest.mark.parametrize(
    ("spec", "message"),
    [("{not json", "not valid JSON"), ('["math"]', "with a `type`"), ({"extract": "x"}, "type")],
)
def test_parse_rejects_with_a_reason(spec: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_grader(spec)


def test_reference_goes_where_it_is_needed() -> None:
    assert fill_grader({"type": "math"}, "42") == {"type": "math", "reference": "42"}
    assert fill_grader({"type": "math", "reference": "1"}, "42")["reference"] == "1"
    assert fill_grader({"type": "format", "pattern": "boxed"}, "42") == {
        "type": "format",
        "pattern": "boxed",
    }
    # a one-element list (OpenRLHF labels, veRL ground truths) is its element
    assert fill_grader({"type": "multiple_choice"}, ["C"])["reference"] == "C"
    assert fill_grader({"type": "math"}, 7)["reference"] == "7"


def test_reference_fills_nested_graders() -> None:
    grader = {
        "type": "weighted",
        "graders": [
            {"weight": 1.0, "grader": {"type": "math"}},
            {"weight": 0.1, "grader": {"type": "format", "pattern": "boxed"}},
        ],
    }
    filled = fill_grader(grader, "3")
    assert filled["graders"][0]["grader"] == {"type": "math", "reference": "3"}
    assert "reference" not in filled["graders"][1]["grader"]
    penalty = fill_grader({"type": "length_penalty", "grader": {"type": "math"}}, "3")
    assert penalty["grader"]["reference"] == "3"


def test_code_tests_from_rows() -> None:
    tests = [{"stdin": "1 2\n", "stdout": "3\n"}]
    assert fill_grader({"type": "code", "language": "python"}, None, tests)["tests"] == tests
    apps = '{"inputs": ["1 2\\n", "2 2\\n"], "outputs": ["3\\n", "4\\n"]}'
    assert fill_grader({"type": "code", "language": "python"}, apps)["tests"] == [
        {"stdin": "1 2\n", "stdout": "3\n"},
        {"stdin": "2 2\n", "stdout": "4\n"},
    ]
    assert grader_specs.tests_from_value({"inputs": ["1"], "outputs": []}) is None
    assert grader_specs.tests_from_value("not json") is None


def test_a_named_grader_carries_the_rows_reference_and_tests() -> None:
    named = {"type": "named", "name": "gsm8k"}
    assert fill_grader(named, "42") == {**named, "reference": "42"}
    assert fill_grader({**named, "reference": "7"}, "42")["reference"] == "7"  # its own wins
    io = {"inputs": ["1 2\n"], "outputs": ["3\n"]}
    filled = fill_grader(named, None, io)
    assert filled["tests"] == [{"stdin": "1 2\n", "stdout": "3\n"}]
    weighted = {"type": "weighted", "graders": [{"weight": 1, "grader": named}]}
    assert fill_grader(weighted, "5")["graders"][0]["grader"]["reference"] == "5"


def test_a_column_that_is_not_json_or_nests_too_deep_is_no_reference() -> None:
    """A row's tests, tool calls or instructions as text that does not parse (or nests past the
    parser's recursion limit) read as nothing usable, never as an exception in the trainer."""
    deep = "[" * 100_000 + "]" * 100_000
    for text in ("not json", deep):
        assert grader_specs.tests_from_value(text) is None
        assert grader_specs.tool_calls_from_value(text) is None
        assert grader_specs.instructions_from_value(text) == {}
    calls = '[{"name": "f", "arguments": {"x": 1}}]'
    assert grader_specs.tool_calls_from_value(calls) == [{"name": "f", "arguments": {"x": 1}}]
    assert grader_specs.tests_from_value('{"inputs": ["1"], "outputs": ["2"]}') == [
        {"stdin": "1", "stdout": "2"}
    ]


def test_call_based_dataset_rows_become_call_tests() -> None:
    """APPS/TACO's ``input_output`` with ``fn_name`` and LiveCodeBench's functional cases are
    calls of the function (they were read as stdin/stdout tests); stdin rows stay stdin."""
    apps = {"inputs": [[1, 2], [[3], 4]], "outputs": [[3], [[7]]], "fn_name": "add"}
    assert grader_specs.tests_from_value(apps) == [
        {"fn_name": "add", "args": [1, 2], "expected": 3, "expected_wrapped": True},
        {"fn_name": "add", "args": [[3], 4], "expected": [7], "expected_wrapped": True},
    ]
    packed = {"inputs": ["1\n2", "[1, 2]\n[3]"], "outputs": ["3", "[1, 2, 3]"], "func_name": "f"}
    assert grader_specs.tests_from_value(packed) == [
        {"fn_name": "f", "args": [1, 2], "expected": 3},
        {"fn_name": "f", "args": [[1, 2], [3]], "expected": [1, 2, 3]},
    ]
    cases = [
        {"input": "5\n", "output": "25\n", "testtype": "stdin"},
        {"input": '"ab"', "output": '"ba"', "testtype": "functional", "func_name": "rev"},
        {"input": "[2]", "output": "4", "testtype": "functional", "metadata": {"func_name": "sq"}},
    ]
    assert grader_specs.tests_from_value(cases) == [
        {"stdin": "5\n", "stdout": "25\n"},
        {"fn_name": "rev", "args": ["ab"], "expected": "ba"},
        {"fn_name": "sq", "args": [[2]], "expected": 4},
    ]
    lines = {"inputs": [["1 2", "3 4"]], "outputs": [["3", "7"]]}  # APPS stdin given as lines
    assert grader_specs.tests_from_value(lines) == [{"stdin": "1 2\n3 4", "stdout": "3\n7"}]
    for unreadable in (
        [{"input": "[1]", "output": "1", "testtype": "functional"}],  # no function named
        {"inputs": ["not json"], "outputs": ["1"], "fn_name": "f"},
        {"inputs": [[1]], "outputs": "1", "fn_name": "f"},
    ):
        assert grader_specs.tests_from_value(unreadable) is None, unreadable


def test_apps_and_livecodebench_rows_get_the_evaluators_imports() -> None:
    """APPS/TACO's packed rows get the ``apps`` comparison, LiveCodeBench's test cases the
    ``lcb`` one (each brings the evaluators' imports); others neither."""
    packed = fill_grader(
        {"type": "code", "language": "python"}, None, '{"inputs": ["1"], "outputs": ["2"]}'
    )
    assert packed["comparison"] == "apps" and "imports" not in packed
    cases = '[{"input": "5\\n", "output": "25\\n", "testtype": "stdin"}]'
    lcb = fill_grader({"type": "code", "language": "python"}, None, cases)
    assert lcb["comparison"] == "lcb" and "imports" not in lcb  # lcb brings the imports
    told = fill_grader({"type": "code", "language": "python", "comparison": "exact"}, None, cases)
    assert told["comparison"] == "exact"
    plain_tests = '[{"stdin": "1", "stdout": "1"}]'
    assert "imports" not in fill_grader({"type": "code", "language": "python"}, None, plain_tests)


def test_humaneval_and_mbpp_rows_become_assert_tests() -> None:
    humaneval = {
        "test": "def check(candidate):\n    assert candidate(1) == 2\n",
        "entry_point": "inc",
    }
    assert grader_specs.tests_from_value(humaneval) == [
        {"test_code": humaneval["test"], "entry_point": "inc"}
    ]
    mbpp = {"test_list": ["assert f(1) == 2", "assert f(2) == 3"], "test_setup_code": "import math"}
    assert grader_specs.tests_from_value(mbpp) == [
        {"test_code": "import math\nassert f(1) == 2"},
        {"test_code": "import math\nassert f(2) == 3"},
    ]
    assert grader_specs.tests_from_value('["assert f(1) == 2"]') == [
        {"test_code": "assert f(1) == 2"}
    ]


def test_a_check_function_nothing_calls_is_refused() -> None:
    """HumanEval's test defines check(candidate): without entry_point nothing calls it, and
    every program would pass."""
    from pydantic import ValidationError

    from referee.client.code_models import AssertTestSpec

    check = "def check(candidate):\n    assert candidate(1) == 2\n"
    with pytest.raises(ValidationError, match="nothing calls it"):
        AssertTestSpec(test_code=check)
    assert AssertTestSpec(test_code=check, entry_point="inc").entry_point == "inc"
    AssertTestSpec(test_code=check + "check(inc)\n")  # called by the test itself


def test_a_humaneval_prompt_is_the_programs_start() -> None:
    """HumanEval's harness runs prompt + completion: a row's prompt that is code defining its
    entry_point becomes the code grader's prefix; a prompt in words does not."""
    row = {
        "prompt": 'def inc(x):\n    """x plus one"""\n',
        "test": "def check(candidate):\n    assert candidate(1) == 2\n",
        "entry_point": "inc",
    }
    filled = fill_grader({"type": "code", "language": "python"}, row)
    assert filled["prefix"] == row["prompt"] and filled["tests"][0]["entry_point"] == "inc"
    worded = fill_grader({"type": "code", "language": "python"}, {**row, "prompt": "Write inc."})
    assert "prefix" not in worded and worded["tests"] == filled["tests"]
    assert grader_specs.code_prefix({**row, "entry_point": "dec"}) is None
    given = {"type": "code", "language": "python", "prefix": "import math\n"}
    assert fill_grader(given, row)["prefix"] == "import math\n"  # a given prefix stays


def test_a_rows_test_columns() -> None:
    """The columns code datasets keep their tests in, as TRL hands a row over."""
    io = '{"inputs": ["1\\n"], "outputs": ["2\\n"]}'
    assert grader_specs.row_tests({"tests": "[]", "input_output": io}) == "[]"
    assert grader_specs.row_tests({"input_output": io, "question": "q"}) == io
    lcb = {
        "public_test_cases": '[{"input": "1", "output": "2", "testtype": "functional"}]',
        "metadata": '{"func_name": "inc"}',
    }
    tests = grader_specs.tests_from_value(grader_specs.row_tests(lcb))
    assert tests == [{"fn_name": "inc", "args": [1], "expected": 2}]
    # LiveCodeBench grades on its public and private tests; the private ones ship packed
    private = [{"input": "5", "output": "6", "testtype": "functional"}]
    packed = base64.b64encode(zlib.compress(pickle.dumps(json.dumps(private)))).decode()
    for shipped in (packed, json.dumps(private)):
        both = grader_specs.tests_from_value(
            grader_specs.row_tests({**lcb, "private_test_cases": shipped})
        )
        assert both == [
            {"fn_name": "inc", "args": [1], "expected": 2},
            {"fn_name": "inc", "args": [5], "expected": 6},
        ]
    humaneval = {"prompt": "p", "test": "t", "entry_point": "f", "task_id": "HumanEval/0"}
    assert grader_specs.row_tests(humaneval) == {"prompt": "p", "test": "t", "entry_point": "f"}
    assert grader_specs.row_tests({"test_list": ["assert f(1)"]}) == {"test_list": ["assert f(1)"]}
    assert grader_specs.row_tests({"question": "q", "answer": "4"}) is None
    kodcode = "from solution import f\n\ndef test_f():\n    assert f(1) == 2\n"
    row = {"question": "q", "solution": "def f(x): return x + 1", "test": kodcode}
    assert grader_specs.tests_from_value(grader_specs.row_tests(row)) == [{"test_code": kodcode}]
    assert grader_specs.row_tests({"question": "q", "test": "a note, not tests"}) is None


def test_open_instruct_dataset_names_choose_the_grader() -> None:
    """open-instruct's ``dataset`` column: a verifier's name (any case) or a list of names with
    one ground truth each (a sum); a name referee does not cover is refused with the reason."""
    assert grader_specs.dataset_grader("MATH", "\\frac12") == {
        "type": "math",
        "reference": "\\frac12",
    }
    assert grader_specs.dataset_grader(["gsm8k"], ["72"]) == {"type": "math", "reference": "72"}
    both = grader_specs.dataset_grader(
        ["math", "ifeval"], ["2", '{"func_name": "validate_lowercase"}']
    )
    assert both is not None and both["type"] == "weighted" and both["normalize"] is False
    assert [p["grader"]["type"] for p in both["graders"]] == ["math", "instruction_following"]
    asserts = ["assert f(1) == 2"]
    code = grader_specs.dataset_grader("code", asserts)
    bare = {"type": "code", "language": "python", "extract": "last_or_whole"}  # as it reads one
    assert code == {**bare, "tests": [{"test_code": asserts[0]}]}
    stdio = grader_specs.dataset_grader("code_stdio", [{"input": "1\n", "output": "2\n"}])
    assert stdio is not None and stdio["comparison"] == "lcb"  # its testing_util is LCB's
    assert grader_specs.dataset_grader(None, "1") is None
    assert grader_specs.dataset_grader([], []) is None
    with pytest.raises(ValueError, match="names no verifier referee covers"):
        grader_specs.dataset_grader("max_length", "100")
    with pytest.raises(ValueError, match="2 names in `dataset` but 1 ground truths"):
        grader_specs.dataset_grader(["math", "gsm8k"], ["1"])


def _pack(value: object, protocol: int = pickle.HIGHEST_PROTOCOL) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(value, protocol=protocol))).decode()


class _Runs:
    """A pickle that would run ``os.system`` when loaded by ``pickle.loads``."""

    def __reduce__(self) -> tuple[object, tuple[str]]:
        import os

        return (os.system, ("touch /tmp/referee-packed-tests-ran",))


def test_packed_tests_are_read_as_plain_values_only() -> None:
    """open-instruct's ``encode_tests`` packing (base64 of zlib of a pickled list) and
    LiveCodeBench's (a pickled JSON text) are read; a pickle that names any callable, holds
    itself, or inflates past the cap is no packing (None), and nothing in it runs."""
    from referee.client import packed_tests

    asserts = ["assert f(1) == 2", "assert f(2) == 3"]
    assert packed_tests.unpack_tests(_pack(asserts)) == asserts
    assert packed_tests.unpack_tests(_pack(asserts, protocol=2)) == asserts
    assert packed_tests.unpack_tests(_pack(json.dumps([{"input": "1", "output": "2"}]))) == [
        {"input": "1", "output": "2"}
    ]
    assert grader_specs.tests_from_value(_pack(asserts)) == [{"test_code": a} for a in asserts]
    marker = Path("/tmp/referee-packed-tests-ran")
    marker.unlink(missing_ok=True)
    assert packed_tests.unpack_tests(_pack([_Runs()])) is None
    assert packed_tests.unpack_tests(_pack(Path("/etc"))) is None
    assert not marker.exists()
    looped: list[object] = []
    looped.append(looped)
    assert packed_tests.unpack_tests(_pack(looped)) is None
    wide: list[object] = [["x" * 1000] * 1000]
    wide = [wide[0]] * 100_000  # 100 million characters by reference, a few bytes packed
    assert packed_tests.unpack_tests(_pack(wide)) is None
    bomb = base64.b64encode(zlib.compress(b"\0" * (packed_tests.MAX_UNPACKED_BYTES + 10)))
    assert packed_tests.unpack_tests(bomb.decode()) is None
    for junk in ("not base64 at all!", "", "aGVsbG8=", "é", _pack("not json")):
        assert packed_tests.unpack_tests(junk) is None
    assert grader_specs.tests_from_value("aGVsbG8=") is None
