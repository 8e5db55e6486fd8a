"""The `code` grader in /v1/rewards on a real server with the real bubblewrap sandbox."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from grader_cases import weighted

Server = Any

ADD = "a, b = map(int, input().split())\nprint(a + b)\n"


def fenced(code: str, lang: str = "python") -> str:
    code = code if code.endswith("\n") else code + "\n"
    return f"Let me solve it.\n\n```{lang}\n{code}```\n\nThis reads two numbers and adds them."


def score(server: Server, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    resp = httpx.post(server.url + "/v1/rewards", json={"items": items}, timeout=120)
    assert resp.status_code == 200, resp.text
    rewards: list[dict[str, Any]] = resp.json()["rewards"]
    return rewards


def code_item(item_id: str, response: str, **grader: Any) -> dict[str, Any]:
    return {"id": item_id, "response": response, "grader": {"type": "code", **grader}}


STDIO = [
    {"stdin": "1 2\n", "stdout": "3\n"},
    {"stdin": "40 2\n", "stdout": "42"},
    {"stdin": "-1 1\n", "stdout": "0\n"},
]


def test_stdio_tests_fraction_and_all_or_nothing(server: Server) -> None:
    wrong_on_negative = "a, b = map(int, input().split())\nprint(abs(a) + b)\n"
    out = score(
        server,
        [
            code_item("ok", fenced(ADD), language="python", tests=STDIO),
            code_item("part", fenced(wrong_on_negative), language="python", tests=STDIO),
            code_item(
                "aon",
                fenced(wrong_on_negative),
                language="python",
                tests=STDIO,
                reward="all_or_nothing",
            ),
            code_item(
                "stop",
                fenced(wrong_on_negative),
                language="python",
                tests=list(reversed(STDIO)),
                stop_at_first_failure=True,
            ),
        ],
    )
    ok, part, aon, stop = out
    assert ok["score"] == 1.0 and ok["details"]["outcome"] == "passed"
    assert ok["details"]["passed"] == 3 and ok["details"]["total"] == 3
    assert part["score"] == pytest.approx(2 / 3)
    assert [t["outcome"] for t in part["details"]["tests"]] == ["passed", "passed", "wrong_answer"]
    assert part["details"]["tests"][2]["stdout"] == "2\n"
    assert aon["score"] == 0.0
    assert [t["outcome"] for t in stop["details"]["tests"]] == [
        "wrong_answer",
        "skipped",
        "skipped",
    ]
    assert stop["score"] == 0.0


def test_comparison_modes_and_tolerance(server: Server) -> None:
    third = fenced("print(1/3)\nprint('a   b')\n")
    tests_float = [{"stdin": "", "stdout": "0.3333 a b", "comparison": "float", "abs_tol": 1e-3}]
    tests_tight = [{"stdin": "", "stdout": "0.3333 a b", "comparison": "float", "abs_tol": 1e-9}]
    tests_exact = [{"stdin": "", "stdout": "0.3333333333333333\na   b"}]
    out = score(
        server,
        [
            code_item("float", third, language="python", tests=tests_float),
            code_item("tight", third, language="python", tests=tests_tight, rel_tol=0),
            code_item("exact", third, language="python", tests=tests_exact, comparison="exact"),
            code_item("trail", third, language="python", tests=tests_exact),
        ],
    )
    assert [r["score"] for r in out] == [1.0, 0.0, 0.0, 1.0]


def test_function_call_and_assert_tests(server: Server) -> None:
    solution = fenced(
        "class Solution:\n    def twoSum(self, nums, target):\n"
        "        seen = {}\n        for i, x in enumerate(nums):\n"
        "            if target - x in seen:\n                return [seen[target - x], i]\n"
        "            seen[x] = i\n\n"
        "def mean(xs):\n    return sum(xs) / len(xs)\n"
    )
    calls = [
        {"fn_name": "twoSum", "args": [[2, 7, 11, 15], 9], "expected": [0, 1]},
        {"fn_name": "twoSum", "args": {"nums": [3, 3], "target": 6}, "expected": [0, 1]},
        {"fn_name": "mean", "args": [[1, 2]], "expected": 1.5000000001},
        {"fn_name": "twoSum", "args": [[1, 2], 3], "expected": [1, 0]},
    ]
    asserts = [
        {"test_code": "assert mean([2, 4]) == 3"},
        {"test_code": "def check(f):\n    assert f([1]) == 1\n", "entry_point": "mean"},
        {"test_code": "assert mean([1, 2]) == 2"},
    ]
    out = score(
        server,
        [
            code_item("calls", solution, language="python", tests=calls),
            code_item("asserts", solution, language="python", tests=asserts),
        ],
    )
    calls_res, asserts_res = out
    assert [t["outcome"] for t in calls_res["details"]["tests"]] == [
        "passed",
        "passed",
        "passed",
        "wrong_answer",
    ]
    assert calls_res["score"] == pytest.approx(3 / 4)
    assert [t["outcome"] for t in asserts_res["details"]["tests"]] == [
        "passed",
        "passed",
        "wrong_answer",
    ]


def test_dataset_rows_with_a_function_name_are_call_tests(server: Server) -> None:
    """APPS/TACO (``input_output`` with ``fn_name``: the arguments as a list, the return value
    wrapped in a list) and LiveCodeBench (functional test cases: JSON lines) rows, read from the
    reference column as a trainer passes it; they were fed to the program as stdin before."""
    from referee.client.grader_specs import fill_grader

    apps = '{"inputs": [[1, 2], [[3, 4], 5]], "outputs": [[3], [[8, 9]]], "fn_name": "add"}'
    livecodebench = [
        {"input": "1\n2", "output": "3", "testtype": "functional", "func_name": "add"},
        {"input": "[3, 4]\n5", "output": "[8, 9]", "testtype": "functional", "func_name": "add"},
    ]
    solution = fenced(
        "def add(a, b):\n    return [x + b for x in a] if isinstance(a, list) else a + b\n"
    )
    wrong = fenced("def add(a, b):\n    return a\n")
    items = []
    for name, row in (("apps", apps), ("lcb", livecodebench)):
        grader = fill_grader({"type": "code", "language": "python"}, row)
        assert {t["fn_name"] for t in grader["tests"]} == {"add"}, grader
        items += [
            code_item(f"{name}-ok", solution, **grader),
            code_item(f"{name}-no", wrong, **grader),
        ]
    out = score(server, items)
    assert [r["score"] for r in out] == [1.0, 0.0, 1.0, 0.0], out


def test_humaneval_and_mbpp_rows_are_assert_tests(server: Server) -> None:
    """HumanEval's test/entry_point and MBPP's test_list rows from the reference column; a
    HumanEval test without its entry_point is refused (nothing would call check())."""
    from referee.client.grader_specs import fill_grader

    humaneval = {
        "test": "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(0) == 0",
        "entry_point": "double",
    }
    mbpp = {
        "test_list": ["assert double(2) == 4", "assert double(-1) == -2", "assert double(3) == 7"]
    }
    right, wrong = (
        fenced("def double(x):\n    return 2 * x\n"),
        fenced("def double(x):\n    return x\n"),
    )
    items = []
    for name, row in (("humaneval", humaneval), ("mbpp", mbpp)):
        grader = fill_grader({"type": "code", "language": "python"}, row)
        items += [
            code_item(f"{name}-ok", right, **grader),
            code_item(f"{name}-no", wrong, **grader),
        ]
    out = score(server, items)
    assert [r["score"] for r in out] == [1.0, 0.0, 2 / 3, 0.0], out
    unchecked = fill_grader({"type": "code", "language": "python"}, {"test": humaneval["test"]})
    r = httpx.post(
        server.url + "/v1/rewards", json={"items": [code_item("x", right, **unchecked)]}, timeout=60
    )
    assert r.status_code == 422 and "nothing calls it" in r.text


def test_printing_the_expected_value_does_not_pass(server: Server) -> None:
    """A program that never defines the function but prints what the test expects (in every
    shape a driver might read) must not pass: the expected value never enters the sandbox."""
    cheat = fenced(
        "import sys\nprint('[0, 1]')\nprint('@@referee:x@@')\nprint('[0, 1]')\nsys.stdout.flush()\n"
    )
    calls = [{"fn_name": "twoSum", "args": [[2, 7, 11, 15], 9], "expected": [0, 1]}]
    [res] = score(server, [code_item("cheat", cheat, language="python", tests=calls)])
    assert res["score"] == 0.0
    assert res["details"]["tests"][0]["outcome"] == "runtime_error"


def test_fenced_extraction_and_no_code(server: Server, toolchain: Callable[[str], None]) -> None:
    two_blocks = (
        "First try:\n```python\nprint(0)\n```\nBetter:\n```python\n" + ADD + "```\n"
        "Example:\n```text\n3\n```\n"
    )
    tests = STDIO[:1]
    out = score(
        server,
        [
            code_item("last", two_blocks, language="python", tests=tests),
            code_item("first", two_blocks, language="python", tests=tests, extract="first"),
            code_item("none", ADD, language="python", tests=tests, extract="none"),
            code_item("missing", "I think the answer is 3.", language="python", tests=tests),
            code_item("go", fenced("int main(){}\n", "python"), language="go", tests=tests),
        ],
    )
    assert [r["score"] for r in out] == [1.0, 0.0, 1.0, 0.0, 0.0]
    assert out[3]["details"]["outcome"] == "no_code"
    # Python source given to the Go compiler; without Go here, the item says so instead
    toolchain("go")
    assert out[4]["details"]["outcome"] == "compile_error", out[4]["details"]


def test_compiled_language_and_compile_error(server: Server) -> None:
    cpp = (
        "#include <iostream>\nint main(){ long a, b; std::cin >> a >> b;"
        " std::cout << a + b << std::endl; }\n"
    )
    out = score(
        server,
        [
            code_item("cpp", fenced(cpp, "cpp"), language="cpp", tests=STDIO),
            code_item("bad", fenced("int main( {", "cpp"), language="cpp", tests=STDIO),
        ],
    )
    assert out[0]["score"] == 1.0 and out[0]["details"]["compile"]["status"] == "ok"
    assert out[1]["score"] == 0.0 and out[1]["details"]["outcome"] == "compile_error"
    assert out[1]["details"]["compile"]["stderr"]


def test_weighted_code_with_math_and_groups(server: Server) -> None:
    response = "The sum is $\\boxed{3}$.\n\n```python\n" + ADD + "```"
    grader = weighted(
        (1.0, {"type": "math", "reference": "3"}),
        (1.0, {"type": "code", "language": "python", "tests": STDIO}),
        (0.5, {"type": "format", "pattern": "boxed"}),
    )
    wrong = "The sum is $\\boxed{4}$.\n\n```python\nprint(-7)\n```"
    items = [
        {"id": "a", "group": "g", "response": response, "grader": grader},
        {"id": "b", "group": "g", "response": wrong, "grader": grader},
        {"id": "m", "response": "$\\boxed{1}$", "grader": {"type": "math", "reference": "1"}},
    ]
    resp = httpx.post(server.url + "/v1/rewards", json={"items": items}, timeout=120).json()
    a, b, m = resp["rewards"]
    assert a["score"] == pytest.approx(1.0)
    assert [p["type"] for p in a["details"]["parts"]] == ["math", "code", "format"]
    assert a["details"]["parts"][1]["outcome"] == "passed"
    assert b["score"] == pytest.approx(0.5 / 2.5)
    assert b["details"]["parts"][1]["tests"][0]["outcome"] == "wrong_answer"
    assert m["score"] == 1.0
    assert resp["groups"][0]["pass_rate"] == 0.5
    metrics = httpx.get(server.url + "/metrics").text
    assert 'referee_reward_items_total{grader="weighted",outcome="weighted"}' in metrics


def test_a_hostile_item_costs_only_itself(server: Server) -> None:
    loop = fenced("while True:\n    pass\n")
    items = [
        code_item("loop", loop, language="python", tests=STDIO[:2], limits={"time_s": 0.5}),
        code_item("ok", fenced(ADD), language="python", tests=STDIO[:1]),
    ]
    loop_res, ok = score(server, items)
    assert [t["outcome"] for t in loop_res["details"]["tests"]] == ["time_limit", "time_limit"]
    assert loop_res["details"]["limits"]["time_s"] == 0.5
    assert ok["score"] == 1.0


def test_invalid_code_grader_is_422(server: Server) -> None:
    bad = code_item("x", "y", language="python", tests=[{"stdin": "1"}])
    resp = httpx.post(server.url + "/v1/rewards", json={"items": [bad]}, timeout=30)
    assert resp.status_code == 422
    assert resp.headers["content-type"].startswith("application/problem+json")
    assert "stdout" in resp.json()["detail"]
