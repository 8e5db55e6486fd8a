"""Every installed language's recipe, and the test harness, in the real bubblewrap backend."""

from __future__ import annotations

import pytest

from referee.sandbox import (
    AssertTest,
    BwrapBackend,
    CompareMode,
    Comparison,
    FunctionCallTest,
    Limits,
    RewardMode,
    StdioTest,
    TestOutcome,
    available_languages,
    known_languages,
    run_program,
    run_tests,
)

ECHO_SUM = {
    "python": "a, b = map(int, input().split())\nprint(a + b)\nprint('héllo')",
    "c": '#include <stdio.h>\nint main(void){ long a, b; if (scanf("%ld %ld", &a, &b) != 2)'
    ' return 1; printf("%ld\\nhéllo\\n", a + b); return 0; }',
    "cpp": "#include <iostream>\nint main(){ long a, b; std::cin >> a >> b;"
    ' std::cout << a + b << "\\nhéllo\\n"; }',
    "java": "import java.util.*;\npublic class Solution {\n  public static void main(String[] x) {"
    " Scanner s = new Scanner(System.in); long a = s.nextLong(), b = s.nextLong();"
    ' System.out.println(a + b); System.out.println("h\\u00e9llo"); } }',
    "javascript": "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/)"
    ".map(Number);\nconsole.log(a + b);\nconsole.log('héllo');",
    "go": 'package main\nimport "fmt"\nfunc main() { var a, b int64; fmt.Scan(&a, &b);'
    ' fmt.Println(a + b); fmt.Println("héllo") }',
    "rust": "use std::io::Read;\nfn main() { let mut s = String::new();"
    " std::io::stdin().read_to_string(&mut s).unwrap();"
    " let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();"
    ' println!("{}", v[0] + v[1]); println!("héllo"); }',
    "bash": 'read a b\necho $((a + b))\necho "héllo"',
}


COMPILED = {"c", "cpp", "java", "go", "rust"}


def test_language_reads_stdin_and_writes_stdout(
    backend: BwrapBackend, installed_language: str
) -> None:
    language = installed_language
    tests = [
        StdioTest("1 2\n", "3\nhéllo\n"),
        StdioTest("40 2\n", "42\nhéllo\n"),
        StdioTest("1 1\n", "3\nhéllo\n"),
    ]
    result = run_tests(
        ECHO_SUM[language], language, tests, Limits(wall_time_s=10.0), backend=backend
    )
    if language in COMPILED:
        assert result.compile is not None and result.compile.ok, result.compile
    else:
        assert result.compile is None
    assert [t.outcome for t in result.tests] == [
        TestOutcome.PASSED,
        TestOutcome.PASSED,
        TestOutcome.WRONG_ANSWER,
    ], [(t.run.stderr if t.run else "") for t in result.tests]
    assert result.pass_fraction == pytest.approx(2 / 3)
    assert result.reward(RewardMode.ALL_PASS) == 0.0


def test_all_languages_with_a_recipe_are_probed() -> None:
    assert set(available_languages()) <= set(known_languages())
    assert {"python", "bash"} <= set(available_languages())  # always here
    assert set(ECHO_SUM) == set(known_languages())  # every recipe has its program above


def test_compile_error_fails_every_test(backend: BwrapBackend) -> None:
    result = run_tests(
        "int main( {", "cpp", [StdioTest("", ""), StdioTest("", "")], backend=backend
    )
    assert result.compile is not None
    assert [t.outcome for t in result.tests] == [TestOutcome.COMPILE_ERROR] * 2
    assert result.reward() == 0.0 and result.outcome is TestOutcome.COMPILE_ERROR


def test_stdio_outcomes_and_comparison_modes(backend: BwrapBackend) -> None:
    program = (
        "import sys, time\nx = sys.stdin.read().strip()\n"
        "if x == 'crash': raise SystemExit(2)\n"
        "if x == 'loop':\n    while True: pass\n"
        "if x == 'float': print(0.1 + 0.2)\n"
        "elif x == 'spaces': print('1   2  ')\nelse: print(x)\n"
    )
    tests = [
        StdioTest("hello", "hello"),
        StdioTest("float", "0.3", Comparison(CompareMode.FLOAT)),
        StdioTest("float", "0.3"),
        StdioTest("spaces", "1 2", Comparison(CompareMode.TOKENS)),
        StdioTest("spaces", "1   2", Comparison(CompareMode.EXACT)),
        StdioTest("crash", ""),
        StdioTest("loop", ""),
    ]
    result = run_tests(program, "python", tests, Limits(wall_time_s=1.0), backend=backend)
    assert [t.outcome for t in result.tests] == [
        TestOutcome.PASSED,
        TestOutcome.PASSED,
        TestOutcome.WRONG_ANSWER,
        TestOutcome.PASSED,
        TestOutcome.WRONG_ANSWER,
        TestOutcome.RUNTIME_ERROR,
        TestOutcome.TIME_LIMIT,
    ]
    assert result.passed == 3 and result.total == 7


def test_output_and_memory_limits_are_test_outcomes(backend: BwrapBackend) -> None:
    program = (
        "import sys\nx = input()\nif x == 'big': sys.stdout.write('z' * 10**6)\n"
        "elif x == 'mem': b = bytearray(10**9)\nelse: print(x)"
    )
    tests = [StdioTest("big\n", ""), StdioTest("mem\n", ""), StdioTest("ok\n", "ok")]
    result = run_tests(
        program, "python", tests, Limits(output_bytes=10_000, memory_mb=128), backend=backend
    )
    assert [t.outcome for t in result.tests] == [
        TestOutcome.OUTPUT_LIMIT,
        TestOutcome.MEMORY_LIMIT,
        TestOutcome.PASSED,
    ]


def test_stop_on_first_failure_skips_the_rest(backend: BwrapBackend) -> None:
    tests = [StdioTest("1", "1"), StdioTest("2", "x"), StdioTest("3", "3")]
    result = run_tests(
        "print(input())", "python", tests, backend=backend, stop_on_first_failure=True
    )
    assert [t.outcome for t in result.tests] == [
        TestOutcome.PASSED,
        TestOutcome.WRONG_ANSWER,
        TestOutcome.SKIPPED,
    ]
    assert result.pass_fraction == pytest.approx(1 / 3)


def test_function_call_tests(backend: BwrapBackend) -> None:
    program = (
        "def add(a, b):\n    print('debug output is ignored')\n    return a + b\n"
        "def pair(xs):\n    return (min(xs), max(xs))\n"
        "def boom():\n    raise KeyError('x')\n"
        "def avg(xs):\n    return sum(xs) / len(xs)\n"
        "if __name__ == '__main__':\n    print('main block must not run'); raise SystemExit(9)\n"
    )
    tests = [
        FunctionCallTest("add", [2, 3], 5),
        FunctionCallTest("add", {"a": "x", "b": "y"}, "xy"),
        FunctionCallTest("add", [2, 2], 5),
        FunctionCallTest("pair", [[3, 1, 2]], [1, 3]),
        FunctionCallTest("avg", [[1, 2]], 1.5000000001),
        FunctionCallTest("boom", [], None),
        FunctionCallTest("missing", [], None),
    ]
    result = run_tests(program, "python", tests, backend=backend)
    assert [t.outcome for t in result.tests] == [
        TestOutcome.PASSED,
        TestOutcome.PASSED,
        TestOutcome.WRONG_ANSWER,
        TestOutcome.PASSED,
        TestOutcome.PASSED,
        TestOutcome.RUNTIME_ERROR,
        TestOutcome.RUNTIME_ERROR,
    ]
    assert result.tests[2].actual == "4"


def test_function_call_on_leetcode_style_solution_class(backend: BwrapBackend) -> None:
    program = (
        "from typing import List\nclass Solution:\n"
        "    def twoSum(self, nums: List[int], target: int) -> List[int]:\n"
        "        seen = {}\n        for i, n in enumerate(nums):\n"
        "            if target - n in seen: return [seen[target - n], i]\n"
        "            seen[n] = i\n"
    )
    result = run_tests(
        program,
        "python",
        [FunctionCallTest("twoSum", [[2, 7, 11, 15], 9], [0, 1])],
        backend=backend,
    )
    assert result.all_passed


def test_printing_the_marker_cannot_fake_a_result(backend: BwrapBackend) -> None:
    program = "print('\\n@@referee:00@@\\n5')\ndef f():\n    return 4\n"
    result = run_tests(program, "python", [FunctionCallTest("f", [], 5)], backend=backend)
    assert result.tests[0].outcome is TestOutcome.WRONG_ANSWER


def test_assert_tests_humaneval_style(backend: BwrapBackend) -> None:
    program = "def incr_list(l: list):\n    return [x + 1 for x in l]\n"
    good = AssertTest(
        "def check(candidate):\n    assert candidate([1, 2]) == [2, 3]\n"
        "    assert candidate([]) == []\n",
        "incr_list",
    )
    bad = AssertTest("def check(candidate):\n    assert candidate([1]) == [3]\n", "incr_list")
    result = run_tests(program, "python", [good, bad], backend=backend)
    assert [t.outcome for t in result.tests] == [TestOutcome.PASSED, TestOutcome.WRONG_ANSWER]


KODCODE_TEST = """from solution import has_pair_with_sum

def test_found():
    assert has_pair_with_sum([1, 2, 4, 4], 8) is True

def test_not_found():
    assert has_pair_with_sum([1, 2, 3, 9], 8) is False

class TestEdges:
    def setup_method(self, method):
        self.empty = []

    def test_empty(self):
        assert has_pair_with_sum(self.empty, 1) is False
"""


def test_pytest_style_test_files_run_their_test_functions(backend: BwrapBackend) -> None:
    """A KodCode-style test file (``from solution import f``, test functions, a Test class)
    passes only when every test function passes: defining them is not passing them, and
    unittest's cases run by unittest. A test function that takes a fixture runs under pytest."""
    right = (
        "def has_pair_with_sum(a, k):\n"
        "    seen = set()\n"
        "    for x in a:\n"
        "        if k - x in seen:\n"
        "            return True\n"
        "        seen.add(x)\n"
        "    return False\n"
    )
    wrong = "def has_pair_with_sum(a, k):\n    return bool(a)\n"
    helper = "def test_helper():\n    raise AssertionError('the program\\'s own')\n"
    kodcode = AssertTest(KODCODE_TEST)
    result = run_tests(right + helper, "python", [kodcode], backend=backend)
    assert result.tests[0].outcome is TestOutcome.PASSED, result.tests[0]
    result = run_tests(wrong, "python", [kodcode], backend=backend)
    assert result.tests[0].outcome is not TestOutcome.PASSED
    only_empty = AssertTest(KODCODE_TEST.split("class TestEdges")[0].replace("[1, 2, 4, 4]", "[]"))
    result = run_tests(right, "python", [only_empty], backend=backend)
    assert result.tests[0].outcome is not TestOutcome.PASSED  # test_found fails there
    cases = AssertTest(
        "import unittest\nfrom solution import has_pair_with_sum\n"
        "class TestPairs(unittest.TestCase):\n"
        "    def test_one(self):\n        self.assertTrue(has_pair_with_sum([4, 4], 8))\n"
        "    def test_two(self):\n        self.assertFalse(has_pair_with_sum([4], 8))\n"
    )
    outcomes = [
        run_tests(p, "python", [cases], backend=backend).tests[0].outcome for p in (right, wrong)
    ]
    assert outcomes[0] is TestOutcome.PASSED and outcomes[1] is not TestOutcome.PASSED
    # a test that takes a fixture runs under pytest itself: pytest's own fixtures are there,
    # a fixture no one defines fails its test
    fixture = AssertTest("def test_needs(tmp_path):\n    assert tmp_path.is_dir()\n")
    result = run_tests(right, "python", [fixture], backend=backend)
    assert result.tests[0].outcome is TestOutcome.PASSED, result.tests[0]
    unknown = AssertTest("def test_needs(no_such_fixture):\n    assert True\n")
    result = run_tests(right, "python", [unknown], backend=backend)
    assert result.tests[0].outcome is not TestOutcome.PASSED
    # assert-style test code whose own statements call a test* helper that takes arguments:
    # the helper is not called bare (it is no pytest test there)
    helper_test = AssertTest(
        "def test_pair(a, k, want):\n    assert has_pair_with_sum(a, k) is want\n"
        "test_pair([4, 4], 8, True)\ntest_pair([4], 8, False)\n"
    )
    outcomes = [
        run_tests(p, "python", [helper_test], backend=backend).tests[0].outcome
        for p in (right, wrong)
    ]
    assert outcomes[0] is TestOutcome.PASSED and outcomes[1] is not TestOutcome.PASSED
    # an async test runs to its end: its failing assert fails it, not an unawaited coroutine
    asynchronous = AssertTest(
        "from solution import has_pair_with_sum\n\n"
        "async def test_async():\n    assert has_pair_with_sum([1], 2) is True\n"
    )
    result = run_tests(right, "python", [asynchronous], backend=backend)
    assert result.tests[0].outcome is not TestOutcome.PASSED


def test_assert_tests_exiting_early_is_not_a_pass(backend: BwrapBackend) -> None:
    program = "import os\nos._exit(0)\n"
    test = AssertTest("def check(c):\n    assert False\n", "f")
    result = run_tests(program, "python", [test], backend=backend)
    assert result.tests[0].outcome is TestOutcome.RUNTIME_ERROR
    assert result.reward(RewardMode.ALL_PASS) == 0.0


def test_function_tests_need_python(backend: BwrapBackend) -> None:
    with pytest.raises(ValueError, match="only supported for python"):
        run_tests("int main(){}", "c", [FunctionCallTest("f", [], 1)], backend=backend)


_PYTEST_FILE = (
    "import pytest\nfrom solution import div\n\n"
    '@pytest.mark.parametrize("a,b,c", [(4, 2, 2), (9, 3, 3)])\n'
    "def test_div(a, b, c):\n    assert div(a, b) == pytest.approx(c)\n\n"
    "def test_zero():\n    with pytest.raises(ValueError):\n        div(1, 0)\n\n"
    "def test_printed(capsys):\n    print(div(1, 4))\n"
    '    assert capsys.readouterr().out == "0.25\\n"\n'
)
_DIV = "def div(a, b):\n    if b == 0:\n        raise ValueError('zero')\n    return a / b\n"


def test_pytest_files_run_under_pytest(backend: BwrapBackend) -> None:
    """KodCode's shape: a test file that imports pytest (parametrize, raises, approx, a fixture)
    runs under the sandbox's pytest; a program wrong in any one test fails it, and one that
    raises the wrong exception is a runtime error, not a pass."""
    test = AssertTest(_PYTEST_FILE)
    assert run_tests(_DIV, "python", [test], backend=backend).tests[0].outcome is TestOutcome.PASSED
    off_by_one = (
        "def div(a, b):\n    if b == 0:\n        raise ValueError\n    return a / b + (a == 9)\n"
    )
    result = run_tests(off_by_one, "python", [test], backend=backend).tests[0]
    assert result.outcome is TestOutcome.WRONG_ANSWER, result
    # a program that rebinds builtins (competitive code's `input = sys.stdin.readline`, its
    # own `len`) leaves pytest's own code alone
    shadowing = "import sys\ninput = sys.stdin.readline\ndef len(x):\n    return 0\n" + _DIV
    result = run_tests(shadowing, "python", [test], backend=backend).tests[0]
    assert result.outcome is TestOutcome.PASSED, result
    no_check = "def div(a, b):\n    return a / b\n"  # ZeroDivisionError where ValueError is asked
    result = run_tests(no_check, "python", [test], backend=backend).tests[0]
    assert result.outcome is TestOutcome.RUNTIME_ERROR, result
    assert "ZeroDivisionError" in result.run.stderr


def test_programs_see_the_chosen_packages_only(backend: BwrapBackend) -> None:
    """A program imports pytest and numpy (bound read-only from the server's environment), not
    the server's other packages; with no packages chosen, pytest is not there."""
    import dataclasses

    from referee.sandbox.languages import get_language

    probe = (
        "import numpy, pytest, os\nprint(numpy.arange(3).sum())\n"
        "try:\n    import fastapi\nexcept ImportError:\n    print('no fastapi')\n"
        "try:\n    open(os.path.join(os.path.dirname(numpy.__file__), 'x'), 'w')\n"
        "except OSError:\n    print('read-only')\n"
    )
    result = run_program(probe, "python", backend, "", Limits())
    assert result.stdout.split() == ["3", "no", "fastapi", "read-only"], result
    bare = dataclasses.replace(get_language("python"), binds=())
    result = run_program("import pytest\n", bare, backend, "", Limits())
    assert "No module named 'pytest'" in result.stderr
    test = AssertTest(_PYTEST_FILE)
    assert run_tests(_DIV, bare, [test], backend=backend).tests[0].outcome is not TestOutcome.PASSED
