"""Programs that rig the tests they run beside, in the real bubblewrap sandbox.

An assert test runs the program first, then the test code, in one process, so a program can try
to pass without being right: return an object whose ``__eq__`` holds it equal to anything (the
"always equal" reward hack), patch unittest, steer the pytest run that follows it
(``PYTEST_ADDOPTS``, a ``pytest.ini`` or ``tox.ini`` in /tmp, a module of its own named pytest
on the import path or from an import hook). None of these passes a test, in any of the test
shapes the driver runs (plain asserts, HumanEval's ``check``, unittest cases, pytest files).
Right programs that compare as the field's tests do (``mock.ANY``, ``pytest.approx``, numpy
scalars, a class of the program's that equals numbers by value, the test file's own helper
classes) still pass.
"""

from __future__ import annotations

import pytest

from referee.sandbox import AssertTest, BwrapBackend, Limits, TestOutcome, run_tests

RIGHT = "def add(a, b):\n    return a + b\n"

ALWAYS_EQUAL = (
    "class _Same:\n"
    "    def __eq__(self, other):\n"
    "        return True\n"
    "    __hash__ = object.__hash__\n"
)

RIGGED = {
    "always equal": ALWAYS_EQUAL + "def add(a, b):\n    return _Same()\n",
    "always equal int": (
        "class _Int(int):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = int.__hash__\n"
        "def add(a, b):\n    return _Int(0)\n"
    ),
    "made by type()": (
        "Same = type('Same', (), {'__eq__': lambda s, o: True, '__hash__': lambda s: 0})\n"
        "def add(a, b):\n    return Same()\n"
    ),
    "unittest patched": (
        "import unittest\n"
        "unittest.TestCase.assertEqual = lambda *args, **kwargs: None\n"
        "unittest.TestCase.assertTrue = lambda *args, **kwargs: None\n"
        "def add(a, b):\n    return 0\n"
    ),
    "PYTEST_ADDOPTS": (
        "import os\nos.environ['PYTEST_ADDOPTS'] = '--collect-only'\ndef add(a, b):\n    return 0\n"
    ),
    "pytest.ini in /tmp": (
        "open('/tmp/pytest.ini', 'w').write('[pytest]\\naddopts = --collect-only\\n')\n"
        "def add(a, b):\n    return 0\n"
    ),
    "tox.ini in /tmp": (
        "open('/tmp/tox.ini', 'w').write('[pytest]\\naddopts = --collect-only\\n')\n"
        "def add(a, b):\n    return 0\n"
    ),
    "conftest.py in /tmp": (
        "open('/tmp/conftest.py', 'w').write("
        "'import pytest\\n@pytest.hookimpl(hookwrapper=True)\\n"
        "def pytest_runtest_makereport(item, call):\\n    outcome = yield\\n"
        "    outcome.get_result().outcome = \\'passed\\'\\n')\n"
        "def add(a, b):\n    return 0\n"
    ),
    "a pytest of its own": (
        "import os, sys\nos.makedirs('/tmp/fake/pytest', exist_ok=True)\n"
        "open('/tmp/fake/pytest/__init__.py', 'w').write("
        "'def main(*args, **kwargs):\\n    return 0\\nmark = raises = approx = None\\n')\n"
        "sys.path.insert(0, '/tmp/fake')\n"
        "for name in [n for n in sys.modules if n.split('.')[0] in ('pytest', '_pytest')]:\n"
        "    del sys.modules[name]\n"
        "def add(a, b):\n    return 0\n"
    ),
    "an import hook": (
        "import sys, types, importlib.abc, importlib.util\n"
        "class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name in ('pytest', 'unittest'):\n"
        "            return importlib.util.spec_from_loader(name, self)\n"
        "    def create_module(self, spec):\n"
        "        return None\n"
        "    def exec_module(self, module):\n"
        "        module.main = lambda *args, **kwargs: 0\n"
        "sys.meta_path.insert(0, Finder())\n"
        "def add(a, b):\n    return 0\n"
    ),
}

PLAIN = "assert add(1, 2) == 3\nassert add(2, 2) == 4\n"
IN = (
    "assert add(1, 2) in (3, 30)\nassert add(1, 2) in {3, 30}\nassert add(1, 2) in {3: 'x'}\n"
    "assert 3 in [add(1, 2), add(2, 2)]\n"
)
LISTED = "assert [add(1, 2), add(2, 2)] == [3, 4]\nassert {'sum': add(1, 2)} == {'sum': 3}\n"
HUMANEVAL = (
    "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n"
)
UNITTEST = (
    "import unittest\nfrom solution import add\n\n"
    "class TestAdd(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n"
    "    def test_list(self):\n        self.assertListEqual([add(1, 2)], [3])\n"
    "    def test_in(self):\n        self.assertIn(add(1, 2), [3, 30])\n"
)
PYTEST_FILE = (
    "import pytest\nfrom solution import add\n\n"
    "@pytest.mark.parametrize('a, b, c', [(1, 2, 3), (2, 2, 4)])\n"
    "def test_add(a, b, c):\n    assert add(a, b) == c\n"
)
PYTEST_UNITTEST = "import pytest\n" + UNITTEST

SHAPES: dict[str, tuple[str, str | None]] = {
    "asserts": (PLAIN, None),
    "in": (IN, None),
    "lists and dicts": (LISTED, None),
    "humaneval check": (HUMANEVAL, "add"),
    "unittest": (UNITTEST, None),
    "pytest file": (PYTEST_FILE, None),
    "unittest under pytest": (PYTEST_UNITTEST, None),
}


def _outcome(backend: BwrapBackend, program: str, test: str, entry: str | None) -> TestOutcome:
    result = run_tests(
        program, "python", [AssertTest(test, entry_point=entry)], Limits(wall_time_s=20),
        backend=backend,
    )  # fmt: skip
    return result.tests[0].outcome


@pytest.mark.parametrize("shape", SHAPES)
def test_right_program_passes_every_shape(backend: BwrapBackend, shape: str) -> None:
    assert _outcome(backend, RIGHT, *SHAPES[shape]) is TestOutcome.PASSED


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("hack", RIGGED)
def test_rigged_program_passes_no_shape(backend: BwrapBackend, hack: str, shape: str) -> None:
    assert _outcome(backend, RIGGED[hack], *SHAPES[shape]) is not TestOutcome.PASSED


def test_always_equal_is_named_in_the_failure(backend: BwrapBackend) -> None:
    result = run_tests(
        RIGGED["always equal"], "python", [AssertTest(PLAIN)], Limits(wall_time_s=20),
        backend=backend,
    )  # fmt: skip
    test = result.tests[0]
    assert test.outcome is TestOutcome.WRONG_ANSWER
    assert test.run is not None and "compares equal to anything" in test.run.stderr


# What right programs and the field's tests compare with, each of which must still pass.
LEGIT = {
    "mock.ANY in the expected value": (
        RIGHT,
        "from unittest import mock\nassert [add(1, 2), 'x'] == [3, mock.ANY]\n"
        "assert {'a': add(1, 1)} == {'a': mock.ANY}\n",
    ),
    "the test file's own anything-equal helper": (
        RIGHT,
        "class Anything:\n    def __eq__(self, other):\n        return True\n\n"
        "assert [add(1, 2), 7] == [3, Anything()]\n",
    ),
    "pytest.approx": (
        "def div(a, b):\n    return a / b\n",
        "import pytest\nfrom solution import div\n\n"
        "def test_div():\n    assert div(1, 3) == pytest.approx(0.3333333)\n",
    ),
    "a numpy scalar against an int": (
        "import numpy\ndef add(a, b):\n    return numpy.int64(a) + b\n",
        PLAIN,
    ),
    "a class of the program's that equals numbers by value": (
        "class Money:\n    def __init__(self, v):\n        self.v = v\n"
        "    def __eq__(self, other):\n"
        "        return self.v == (other.v if isinstance(other, Money) else other)\n"
        "def add(a, b):\n    return Money(a + b)\n",
        PLAIN + "assert add(1, 2) == Money(3)\nassert add(-0.5, -0.5) == -1.0\n"
        "assert add(1e300, 1e300) == 2e300\n",
    ),
    "a class of the program's equal within a tolerance": (
        "class Near:\n    def __init__(self, v):\n        self.v = v\n"
        "    def __eq__(self, other):\n        return abs(self.v - float(other)) < 1e-6\n"
        "def add(a, b):\n    return Near(a + b)\n",
        "assert add(0.1, 0.2) == 0.3\nassert add(1, 2) == 3\nassert add(1, 2) in [3.0000001, 9]\n",
    ),
    "dataclasses and named tuples": (
        "from dataclasses import dataclass\nfrom collections import namedtuple\n"
        "P = namedtuple('P', 'x y')\n@dataclass\nclass Q:\n    x: int\n"
        "def add(a, b):\n    return P(a, b)\n"
        "def make(x):\n    return Q(x)\n",
        "assert add(1, 2) == (1, 2)\nassert make(3) == Q(3)\nassert make(3) != 3\n",
    ),
    "a str subclass": (
        "class Name(str):\n    pass\ndef add(a, b):\n    return Name(str(a + b))\n",
        "assert add(1, 2) == '3'\nassert add(1, 2) in ['3', '4']\n",
    ),
    "the test file's own recursive __eq__ on a long list": (
        "class Node:\n    def __init__(self, val, next=None):\n"
        "        self.val, self.next = val, next\n"
        "def build(values):\n    head = None\n    for v in reversed(values):\n"
        "        head = Node(v, head)\n    return head\n",
        "class Expected:\n    def __init__(self, val, next=None):\n"
        "        self.val, self.next = val, next\n"
        "    def __eq__(self, other):\n"
        "        return self.val == other.val and self.next == other.next\n"
        "def expected(values):\n    head = None\n    for v in reversed(values):\n"
        "        head = Expected(v, head)\n    return head\n"
        "assert expected(list(range(400))) == build(list(range(400)))\n",
    ),
    "many comparisons": (
        RIGHT,
        "for i in range(2000):\n    assert add(i, 1) == i + 1\n"
        "values = [add(i, 0) for i in range(1000)]\nfound = set(values)\n"
        "for i in range(20_000):\n    assert i % 1000 in values and i % 1000 in found\n"
        "assert list(map(add, range(50_000), range(50_000))) == [2 * i for i in range(50_000)]\n",
    ),
}


@pytest.mark.parametrize("case", LEGIT)
def test_right_programs_compare_as_the_fields_tests_do(backend: BwrapBackend, case: str) -> None:
    program, test = LEGIT[case]
    assert _outcome(backend, program, test, None) is TestOutcome.PASSED


def test_what_a_program_sets_up_for_itself_stays(backend: BwrapBackend) -> None:
    """Only what the tests' frameworks read is put back after the program loads: a builtin the
    program adds and its functions use stays; a builtin it rebinds is the real one again."""
    program = (
        "import builtins\nbuiltins.OFFSET = 0\nbuiltins.abs = lambda x: 0\n"
        "def add(a, b):\n    return a + b + OFFSET\n"
    )
    test = "assert add(1, 2) == 3\nassert abs(-4) == 4\n"
    assert _outcome(backend, program, test, None) is TestOutcome.PASSED
