# ruff: noqa: E501 (a corpus of programs, a line each)
"""APPS-style rows get veRL's ``prime_code`` verdict, run in referee's real sandbox.

``prime_code`` (the pinned verl wheel's ``verl/utils/reward_score/prime_code``: APPS's
``testing_util`` as LiveCodeBench and PRIME carry it, veRL's default reward for the apps,
codecontests, codeforces and taco data sources) runs a solution after a block of imports
(``from typing import *``, ``from collections import *``, ``import sys``, ``from math import *``
and more) and compares a call's returned value with Python's ``==``, the expected value or its
first item. Each program of the corpus below (stdin programs and LeetCode-style methods, many of
which use ``List``, ``sys``, ``gcd``, ``deque``... without importing them, as models trained on
such prompts write them) is scored by ``prime_code.compute_score`` as veRL calls it and by
referee's code grader with the tests read from the row as the trainer adapters read them
(``fill_grader``: the ``apps`` comparison and the evaluators' imports): the verdicts must be
the same. The same programs with ``imports: "none"`` fail where they lean on the imports (the
corpus would not tell anything otherwise).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from prime_code_peer import prime_code

from referee.client.grader_specs import fill_grader
from referee.sandbox import BwrapBackend, Limits
from referee.services.execution.program import ProgramLimits
from referee.services.execution.program_tests import grade_code

SUM = {"inputs": ["3\n1 2 3\n", "2\n5 -5\n", "1\n7\n"], "outputs": ["6\n", "0\n", "7\n"]}
GCD = {"inputs": ["12 18\n", "7 5\n"], "outputs": ["6\n", "1\n"]}

STDIN_PROGRAMS = [
    # (program, tests, leans on the imports)
    ("n = int(sys.stdin.readline())\nprint(sum(map(int, sys.stdin.readline().split())))", SUM, 1),
    ("input = sys.stdin.readline\nn = int(input())\nprint(sum(map(int, input().split())))", SUM, 1),
    ("n = int(stdin.readline())\nprint(sum(map(int, stdin.readline().split())))", SUM, 1),
    ("a, b = map(int, input().split())\nprint(gcd(a, b))", GCD, 1),
    ("a, b = map(int, input().split())\nprint(math.gcd(a, b))", GCD, 1),
    ("a, b = map(int, input().split())\nprint(reduce(gcd, [a, b]))", GCD, 1),
    (
        "input()\nc = Counter(map(int, input().split()))\nprint(sum(k * v for k, v in c.items()))",
        SUM,
        1,
    ),
    ("input()\nq = deque(map(int, input().split()))\nprint(sum(q))", SUM, 1),
    (
        "input()\nh = []\nfor x in map(int, input().split()):\n    heappush(h, x)\nprint(sum(h))",
        SUM,
        1,
    ),
    (
        "input()\nxs = list(map(int, input().split()))\nprint(sum(accumulate(xs)) - sum(accumulate(xs[:-1])))",
        SUM,
        1,
    ),
    (
        "def solve(xs: List[int]) -> int:\n    return sum(xs)\ninput()\nprint(solve(list(map(int, input().split()))))",
        SUM,
        1,
    ),
    (
        "def main():\n    input()\n    print(sum(map(int, sys.stdin.readline().split())))\n\nif __name__ == '__main__':\n    main()",
        SUM,
        1,
    ),
    (
        "a, b = map(int, input().split())\nprint(int(sqrt(a * a)) and pow(a, 1, 10**9) and math.gcd(a, b))",
        GCD,
        1,
    ),
    (
        "input()\nd = defaultdict(int)\nfor x in input().split():\n    d[x] += int(x)\nprint(sum(d.values()))",
        SUM,
        1,
    ),
    ("a, b = map(int, input().split())\nprint(floor(a / b) * 0 + math.gcd(a, b))", GCD, 1),
    ("import sys\ninput()\nprint(sum(map(int, sys.stdin.readline().split())))", SUM, 0),
    ("input()\nprint(sum(map(int, input().split())) + 1)", SUM, 0),
    ("input()\nxs = list(map(int, input().split()))\nprint(sum(xs) if len(xs) > 1 else 0)", SUM, 0),
    ("a, b = map(int, input().split())\nprint(a // b)", GCD, 0),
    ("raise SystemExit(int(input().split()[0]) % 2)", GCD, 0),
]

TWO_SUM = {
    "fn_name": "twoSum",
    "inputs": ["[2, 7, 11, 15]\n9", "[3, 2, 4]\n6"],
    "outputs": ["[0, 1]", "[1, 2]"],
}
HALF = {"fn_name": "half", "inputs": ["1"], "outputs": ["0.5"]}
ADD = {"fn_name": "add", "inputs": ["0.1\n0.2"], "outputs": ["0.3"]}
IS_EVEN = {"fn_name": "isEven", "inputs": ["4", "3"], "outputs": ["1", "0"]}
PAIR = {"fn_name": "pair", "inputs": ["5"], "outputs": ["[5, 6]"]}
COUNT = {"fn_name": "count", "inputs": ['"abca"'], "outputs": ['{"a": 2, "b": 1, "c": 1}']}
NOTHING = {"fn_name": "nothing", "inputs": ["[]"], "outputs": ["null"]}

TWO_SUM_BODY = (
    "        seen = {}\n"
    "        for i, x in enumerate(nums):\n"
    "            if target - x in seen:\n"
    "                return [seen[target - x], i]\n"
    "            seen[x] = i\n"
)

CALL_PROGRAMS = [
    (
        f"class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n{TWO_SUM_BODY}",
        TWO_SUM,
        1,
    ),
    (
        f"class Solution:\n    def twoSum(self, nums: Optional[List[int]], target: int) -> Tuple[int, int]:\n{TWO_SUM_BODY.replace('[seen[target - x], i]', '(seen[target - x], i)')}",
        TWO_SUM,
        1,
    ),
    (
        f"from typing import List\n\nclass Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n{TWO_SUM_BODY}",
        TWO_SUM,
        0,
    ),
    ("class Solution:\n    def twoSum(self, nums, target):\n        return [0, 1]\n", TWO_SUM, 0),
    ("def half(x):\n    return x / 2\n", HALF, 0),
    ("def half(x):\n    return fsum([x / 4, x / 4])\n", HALF, 1),
    ("def half(x):\n    return x / 2 + 1e-12\n", HALF, 0),
    ("def add(a, b):\n    return a + b\n", ADD, 0),
    ("def add(a, b):\n    return round(a + b, 10)\n", ADD, 0),
    ("def isEven(n):\n    return n % 2 == 0\n", IS_EVEN, 0),
    ("def isEven(n):\n    return int(not n % 2)\n", IS_EVEN, 0),
    ("def isEven(n):\n    return 1\n", IS_EVEN, 0),
    ("def pair(n):\n    return [n, n + 1]\n", PAIR, 0),
    ("def pair(n):\n    return n\n", PAIR, 0),
    ("def pair(n):\n    return (n, n + 1)\n", PAIR, 0),
    ("def pair(n):\n    return [n + 1, n]\n", PAIR, 0),
    ("def count(s):\n    return dict(Counter(s))\n", COUNT, 1),
    ("def count(s):\n    return {c: s.count(c) for c in sorted(set(s))}\n", COUNT, 0),
    ("def count(s):\n    return {c: 1 for c in s}\n", COUNT, 0),
    ("def nothing(xs):\n    return None\n", NOTHING, 0),
    ("def nothing(xs):\n    return xs[0]\n", NOTHING, 0),
    (
        "class Solution:\n    def nothing(self, xs: List[int]) -> None:\n        return None\n",
        NOTHING,
        1,
    ),
]


@pytest.fixture(scope="module")
def limits() -> ProgramLimits:
    run = Limits(wall_time_s=5.0, memory_mb=512, max_processes=32)
    return ProgramLimits(run=run, compile=run)


def _theirs(program: str, tests: dict[str, Any]) -> float:
    completion = f"Here it is.\n```python\n{program}\n```"
    return float(prime_code().compute_score(completion, json.dumps(tests), continuous=True)[0])


def _ours(
    program: str, tests: dict[str, Any], backend: BwrapBackend, limits: ProgramLimits, **given: Any
) -> tuple[float, dict[str, Any]]:
    grader = fill_grader({"type": "code", "language": "python", **given}, json.dumps(tests))
    return grade_code(grader, f"Here it is.\n```python\n{program}\n```", backend, limits)


@pytest.mark.parametrize("corpus", ["stdin", "call"])
def test_verdicts_equal_prime_code(
    corpus: str, backend: BwrapBackend, limits: ProgramLimits
) -> None:
    programs = STDIN_PROGRAMS if corpus == "stdin" else CALL_PROGRAMS
    wrong, passed, leaning = [], 0, 0
    for program, tests, leans in programs:
        theirs = _theirs(program, tests)
        ours, details = _ours(program, tests, backend, limits)
        if corpus == "call":  # prime_code's per-test fallback drops fn_name: only all-pass counts
            theirs, ours = float(theirs == 1.0), float(ours == 1.0)
        if ours != pytest.approx(theirs):
            wrong.append((program, theirs, ours, details.get("tests")))
        passed += theirs == 1.0
        if leans:
            leaning += 1
            bare, _ = _ours(program, tests, backend, limits, imports="none")
            assert bare < 1.0, f"passes without the imports: {program!r}"
    assert not wrong, f"{len(wrong)} of {len(programs)} differ from prime_code: {wrong}"
    assert 0.3 * len(programs) < passed < 0.9 * len(programs)  # both verdicts are common
    assert leaning >= 5


def test_a_future_import_is_kept_first(backend: BwrapBackend, limits: ProgramLimits) -> None:
    """prime_code puts its imports before ``from __future__ import annotations`` (a
    SyntaxError there: 0 for a right program); referee moves the future import first."""
    program = "from __future__ import annotations\n\ndef solve(xs: List[int]) -> int:\n"
    program += "    return sum(xs)\ninput()\nprint(solve(list(map(int, input().split()))))"
    assert _theirs(program, SUM) == 0.0
    assert _ours(program, SUM, backend, limits)[0] == 1.0


def test_apps_list_form_counts_the_value_and_the_wrapped_value(
    backend: BwrapBackend, limits: ProgramLimits
) -> None:
    """APPS's own rows give a call's arguments as a list and wrap the return value in a list
    (``[[3]]`` for 3); APPS's testing_util takes the value or the wrapped value, nothing else
    (prime_code reads only LiveCodeBench's text form: it fails every such row)."""
    tests = {"fn_name": "add", "inputs": [[1, 2], [[1], 2]], "outputs": [[3], [[1, 2]]]}
    programs = {
        "def add(a, b):\n    return a + b if isinstance(a, int) else a + [b]\n": 1.0,
        "def add(a, b):\n    return [a + b] if isinstance(a, int) else [a + [b]]\n": 1.0,
        "def add(a, b):\n    return a + b if isinstance(a, int) else a[0]\n": 0.5,
        "def add(a, b):\n    return a + b + 1 if isinstance(a, int) else (1, 2)\n": 0.5,
    }
    for program, expected in programs.items():
        assert _ours(program, tests, backend, limits)[0] == expected, program
