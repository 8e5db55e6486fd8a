"""Python drivers that run inside the sandbox for function-call and assert-based tests.

The driver reads one JSON line from stdin (a per-run random nonce and the call to make), then
executes the model's program (``/code/main.py``) as a module named ``__solution__`` (so its
``if __name__ == "__main__":`` block does not run). A function-call driver calls ``fn_name``
(a top-level function, or a method of ``Solution`` as in LeetCode-style tasks) and prints the
JSON of the returned value after a line ``@@referee:<nonce>@@``; an assert driver runs the test
code, then the test functions it defines as pytest collects them (``test*`` functions,
``Test*`` classes' ``test*`` methods, ``unittest.TestCase`` classes by unittest; the program is
importable as ``solution``, as KodCode's test files import it) and ``check(entry_point)``, and
prints the marker only if they complete: a test file of functions is not passed by defining
them. The program cannot rig the assert driver's tests in the common ways (an object equal to
anything, patched unittest or pytest, pytest's environment or ini files, a module of its own on
the import path): the import system, builtins and ``PYTEST*`` variables are put back after it
loads, the frameworks imported afresh, and the test code's ``==`` and ``in`` checked (see
docs/sandbox.md). Expected values of function-call tests never enter the sandbox: the comparison
happens outside.
"""

from __future__ import annotations

import json
import re
import secrets

__all__ = [
    "ASSERT_DRIVER",
    "ASSERT_DRIVER_NAME",
    "CALL_DRIVER",
    "CALL_DRIVER_NAME",
    "make_nonce",
    "parse_marked_result",
    "request_line",
]

CALL_DRIVER_NAME = "referee_call_driver.py"
ASSERT_DRIVER_NAME = "referee_assert_driver.py"

_COMMON = r"""
import json as _json
import sys as _sys


def _load_solution():
    _namespace = {"__name__": "__solution__", "__builtins__": __builtins__}
    with open("/code/main.py", encoding="utf-8") as _fh:
        _code = compile(_fh.read(), "main.py", "exec")
    exec(_code, _namespace)
    return _namespace
"""

CALL_DRIVER = (
    _COMMON
    + r"""

def _jsonable(value):
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, set | frozenset):
        return sorted((_jsonable(v) for v in value), key=repr)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def _main():
    _request = _json.loads(_sys.stdin.readline())
    _marker = "@@referee:" + _request.pop("nonce") + "@@"
    _namespace = _load_solution()
    _name = _request["fn_name"]
    _fn = _namespace.get(_name)
    if not callable(_fn) and isinstance(_namespace.get("Solution"), type):
        _fn = getattr(_namespace["Solution"](), _name, None)
    if not callable(_fn):
        raise NameError(f"function {_name!r} is not defined")
    _args = _request["args"]
    _result = _fn(**_args) if isinstance(_args, dict) else _fn(*_args)
    _text = _json.dumps(_jsonable(_result))
    _sys.stdout.flush()
    _sys.stdout.write("\n" + _marker + "\n" + _text + "\n")
    _sys.stdout.flush()


_main()
"""
)

ASSERT_DRIVER = (
    _COMMON
    + r"""

# -- what the program may not change for the tests -------------------------------------------
# The program runs first, in the tests' process, so it could rig them: return an object whose
# __eq__ holds it equal to anything, patch unittest or pytest, set PYTEST_ADDOPTS, leave a
# pytest.ini in /tmp, put a module of its own on the import path. The driver keeps the import
# system, the builtins and the environment as they were before the program ran, imports the test
# frameworks afresh after it, and sends the test code's `==` and `in` through a check that a
# value the program made does not compare equal to an object it has never seen.
_PLAIN = frozenset({int, float, complex, str, bytes, bool, type(None), list, tuple, dict, set,
                    frozenset})
_FRAMEWORKS = frozenset({"unittest", "pytest", "_pytest", "pluggy", "iniconfig", "doctest"})
_BEFORE = {}


def _keep_state():
    import builtins as _builtins
    import os as _os

    _BEFORE["path"] = list(_sys.path)
    _BEFORE["meta_path"] = list(_sys.meta_path)
    _BEFORE["path_hooks"] = list(_sys.path_hooks)
    _BEFORE["builtins"] = dict(_builtins.__dict__)
    _BEFORE["environ"] = {k: v for k, v in _os.environ.items() if k.startswith("PYTEST")}


def _restore_state():
    import builtins as _builtins
    import os as _os

    _sys.path[:] = _BEFORE["path"]
    _sys.meta_path[:] = _BEFORE["meta_path"]
    _sys.path_hooks[:] = _BEFORE["path_hooks"]
    _sys.path_importer_cache.clear()
    _builtins.__dict__.update(_BEFORE["builtins"])  # a name the program added stays its own
    for _k in [_k for _k in _os.environ if _k.startswith("PYTEST")]:
        del _os.environ[_k]
    _os.environ.update(_BEFORE["environ"])
    for _name in [_n for _n in _sys.modules if _n.split(".")[0] in _FRAMEWORKS]:
        del _sys.modules[_name]


class _Unseen:
    __slots__ = ()


def _program_eq(_cls, _type=type, _getattr=getattr, _isinstance=isinstance):
    # whether the __eq__ that instances of _cls use is the program's (its file, or code it
    # compiled itself), not the test file's nor a library's
    for _k in _cls.__mro__:
        if "__eq__" in _k.__dict__:
            if _k is object or _k in _PLAIN:
                return False
            _code = _getattr(_k.__dict__["__eq__"], "__code__", None)
            if _code is None:
                return _getattr(_k, "__module__", None) == "__solution__"
            _file = _code.co_filename
            return _isinstance(_file, str) and (_file == "main.py" or _file.startswith("<"))
    return False


def _unequal_to(_v, _type=type):
    # values of _v's type that are not equal to it
    _t = _type(_v)
    if _t is bool:
        return (not _v,)
    if _t is int or _t is complex:
        return (_v + 1,)
    if _t is float:
        if _v - _v != 0:  # inf, nan
            return (0.0,)
        return (_v + 1.0,) if -1e15 < _v < 1e15 else (_v * 2,)
    if _t is str:
        return (_v + "\x00",)
    if _t is bytes:
        return (_v + b"\x00",)
    if _t is list or _t is tuple:
        return (_v + _t((_Unseen(),)),)
    if _t is dict:
        _d = dict(_v)
        _d[_Unseen()] = 0
        return (_d,)
    if _t is set or _t is frozenset:
        return (_t(_v) | {_Unseen()},)
    return ()


def _holds_anything_equal(_p, _q, _bool=bool):
    try:
        if _bool(_p == _Unseen()):
            return True
        for _v in _unequal_to(_q):
            if _bool(_p == _v):
                return True
    except Exception:
        return False
    return False


def _rigged(_a, _b, _budget, _type=type, _len=len, _zip=zip):
    # a pair in the two values (walking lists, tuples and dicts) that is equal only because a
    # value the program made holds itself equal to anything
    import itertools as _itertools

    _stack = [(_a, _b)]
    while _stack and _budget[0] > 0:
        _budget[0] -= 1
        _x, _y = _stack.pop()
        _tx, _ty = _type(_x), _type(_y)
        if _tx in _PLAIN and _ty in _PLAIN:
            if (_tx is list or _tx is tuple) and (_ty is list or _ty is tuple):
                if _len(_x) == _len(_y):
                    _stack.extend(_itertools.islice(_zip(_x, _y), _budget[0]))
            elif _tx is dict and _ty is dict and _len(_x) == _len(_y):
                _pairs = ((_x[_k], _y[_k]) for _k in _x if _k in _y)
                _stack.extend(_itertools.islice(_pairs, _budget[0]))
            continue
        for _p, _q in ((_x, _y), (_y, _x)):
            if _type(_q) in _PLAIN and _type(_p) not in _PLAIN and _program_eq(_type(_p)):
                if _holds_anything_equal(_p, _q):
                    return True
    return False


_RIGGED = (
    "a value the program made compares equal to anything: its __eq__ holds it equal to an "
    "object it has never seen ({!r:.80} == {!r:.80})"
)


_SCALAR = frozenset({int, float, complex, str, bytes, bool, type(None)})


def _guarded_eq(_a, _b, _bool=bool, _type=type):
    _r = _a == _b
    if _type(_a) in _SCALAR and _type(_b) in _SCALAR:
        return _r  # nothing the program made
    try:
        _held = _bool(_r)
    except Exception:
        return _r
    if _held and _rigged(_a, _b, [100_000]):
        raise AssertionError(_RIGGED.format(_a, _b))
    return _r


def _guarded_in(_a, _b, _type=type):
    # a list or tuple: the element `in` found equal (index finds the same one); a set or dict
    # finds by hash, so only a value of the program's that holds itself equal to anything
    _r = _a in _b
    if not _r:
        return _r
    _tb = _type(_b)
    if _tb is list or _tb is tuple:
        try:
            _e = _b[_b.index(_a)]
        except Exception:
            return _r
        if _rigged(_a, _e, [100_000]):
            raise AssertionError(_RIGGED.format(_a, _e))
    elif _tb is set or _tb is frozenset or _tb is dict:
        if _type(_a) not in _PLAIN and _program_eq(_type(_a)):
            if _holds_anything_equal(_a, None):
                raise AssertionError(_RIGGED.format(_a, _b))
    return _r


def _guard_tests(_source):
    # the test code with each `a == b` and `a in b` as __referee_eq__(a, b) / __referee_in__(a, b)
    import ast as _ast

    class _Guard(_ast.NodeTransformer):
        def visit_FunctionDef(self, node):
            # a test class's own __eq__ (a ListNode's, recursive) is the test's, as written
            if node.name.startswith("__") and node.name.endswith("__"):
                return node
            self.generic_visit(node)
            return node

        visit_AsyncFunctionDef = visit_FunctionDef

        def visit_Compare(self, node):
            self.generic_visit(node)
            if len(node.ops) != 1:
                return node
            if isinstance(node.ops[0], _ast.Eq):
                _name = "__referee_eq__"
            elif isinstance(node.ops[0], _ast.In):
                _name = "__referee_in__"
            else:
                return node
            _call = _ast.Call(_ast.Name(_name, _ast.Load()), [node.left, node.comparators[0]], [])
            return _ast.copy_location(_call, node)

    return _ast.fix_missing_locations(_Guard().visit(_ast.parse(_source)))


def _guards():
    return {"__referee_eq__": _guarded_eq, "__referee_in__": _guarded_in}


def _guard_unittest():
    # unittest's own comparisons (assertEqual's `first == second`) through the same check
    import unittest as _unittest

    _case = _unittest.TestCase

    def _checked(_name):
        _original = getattr(_case, _name)

        def _check(self, first, second, *args, **kwargs):
            if _rigged(first, second, [100_000]):
                raise self.failureException(_RIGGED.format(first, second))
            return _original(self, first, second, *args, **kwargs)

        _check.__name__ = _name
        setattr(_case, _name, _check)

    for _name in (
        "assertEqual", "assertListEqual", "assertTupleEqual", "assertDictEqual",
        "assertSequenceEqual", "assertAlmostEqual", "assertCountEqual",
    ):  # fmt: skip
        _checked(_name)
    _original_in = _case.assertIn

    def assertIn(self, member, container, msg=None):
        try:
            _guarded_in(member, container)
        except AssertionError as _e:
            raise self.failureException(str(_e)) from None
        except Exception:
            pass  # what is wrong with the arguments, assertIn itself says
        return _original_in(self, member, container, msg)

    _case.assertIn = assertIn


def _as_module(_namespace):
    # pytest-style test files (KodCode's) import the program: `from solution import f`
    import types as _types

    _module = _types.ModuleType("solution")
    _module.__dict__.update({k: v for k, v in _namespace.items() if k != "__name__"})
    _sys.modules["solution"] = _module


def _defined_here(_obj):
    _code = getattr(_obj, "__code__", None)
    return _code is not None and _code.co_filename == "tests.py"


def _pytest_file(_source):
    # a file of imports, definitions and constants only (pytest's shape), not one whose own
    # statements assert and call: there a test* function that takes arguments is a helper
    import ast as _ast

    _kinds = (
        _ast.Import, _ast.ImportFrom, _ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef,
        _ast.Assign, _ast.AnnAssign, _ast.If,
    )
    try:
        _body = _ast.parse(_source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    for _node in _body:
        _doc = isinstance(_node, _ast.Expr) and isinstance(_node.value, _ast.Constant)
        if not (_doc or isinstance(_node, _kinds)):
            return False
    return True


def _has_pytest():
    import importlib.util as _util

    return _util.find_spec("pytest") is not None


def _required(_fn):
    _code = _fn.__code__
    _kw = _code.co_kwonlyargcount - len(_fn.__kwdefaults__ or {})
    return _code.co_argcount - len(_fn.__defaults__ or ()) + _kw


def _call_test(_fn):
    import inspect as _inspect

    if _inspect.iscoroutinefunction(_fn):  # an async test: run to its end, not left unawaited
        import asyncio as _asyncio

        return _asyncio.run(_fn())
    return _fn()


def _run_test_functions(_namespace, _before, _source):
    # what pytest collects from a test file: its functions named test*, its classes named
    # Test* (their test* methods, a unittest.TestCase by unittest), in the file's order
    import unittest as _unittest

    _ran = 0
    _pure = None
    for _name, _obj in list(_namespace.items()):
        if _before.get(_name) is _obj or not _name.lower().startswith("test"):
            continue
        if _name.startswith("test") and callable(_obj) and _defined_here(_obj):
            if _required(_obj):  # pytest's fixtures: none here, so it fails, in a pytest file
                _pure = _pytest_file(_source) if _pure is None else _pure
                if not _pure:
                    continue
            _call_test(_obj)
            _ran += 1
        elif _name.startswith("Test") and isinstance(_obj, type):
            if not any(_defined_here(_v) for _v in vars(_obj).values()):
                continue  # the program's own class, not the test file's
            if issubclass(_obj, _unittest.TestCase):
                _suite = _unittest.defaultTestLoader.loadTestsFromTestCase(_obj)
                _result = _unittest.TestResult()
                _suite.run(_result)
                _ran += _result.testsRun
                if not _result.wasSuccessful():
                    _failed = (_result.failures + _result.errors)[0]
                    raise AssertionError(str(_failed[0]) + "\n" + _failed[1])
                continue
            for _method in [m for m in vars(_obj) if m.startswith("test")]:
                _instance = _obj()
                if callable(getattr(_instance, "setup_method", None)):
                    _instance.setup_method(getattr(_instance, _method))
                _call_test(getattr(_instance, _method))
                _ran += 1
    return _ran


def _needs_pytest(_source):
    # a pytest file that only pytest runs as written: it imports pytest (raises, approx, marks)
    # or a test of it takes arguments (fixtures, parametrize); other test files run here
    import ast as _ast

    if not _pytest_file(_source):
        return False
    _tree = _ast.parse(_source)  # parses: _pytest_file did
    for _node in _ast.walk(_tree):
        if isinstance(_node, _ast.Import) and any(
            _a.name.split(".")[0] in ("pytest", "_pytest") for _a in _node.names
        ):
            return True
        if isinstance(_node, _ast.ImportFrom) and (_node.module or "").split(".")[0] in (
            "pytest", "_pytest",
        ):
            return True
    for _node in _tree.body:
        _fns = [_node]
        if isinstance(_node, _ast.ClassDef) and _node.name.startswith("Test"):
            _defs = (_ast.FunctionDef, _ast.AsyncFunctionDef)
            _fns = [_f for _f in _node.body if isinstance(_f, _defs)]
            _self = 1
        else:
            _self = 0
        for _fn in _fns:
            if not isinstance(_fn, _ast.FunctionDef | _ast.AsyncFunctionDef):
                continue
            if not _fn.name.startswith("test"):
                continue
            _args = _fn.args
            _positional = len(_args.posonlyargs) + len(_args.args) - len(_args.defaults) - _self
            _kw = sum(1 for _d in _args.kw_defaults if _d is None)
            if _positional > 0 or _kw > 0:
                return True
    return False


def _run_pytest(_namespace, _source, _tree):
    # the test file as pytest runs it (KodCode's check): a file of its own, importing the program
    # as `solution`; names it uses without importing are the program's (as in one namespace)
    import ast as _ast
    import builtins as _builtins
    import contextlib as _contextlib
    import os as _os
    import tempfile as _tempfile

    _os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    import pytest as _pytest

    # not over a builtin: pytest's own code reads them too (`input = sys.stdin.readline`, a
    # program's own `len`, would break pytest, not the program)
    _builtins.__dict__.update(
        {
            _k: _v
            for _k, _v in _namespace.items()
            if not _k.startswith("__") and _k not in _builtins.__dict__
        }
    )
    _builtins.__dict__.update(_guards())
    _dir = _tempfile.mkdtemp(prefix="referee-pytest-", dir="/tmp")
    _path = _dir + "/test_solution.py"
    try:
        _text = _source if _tree is None else _ast.unparse(_tree)
    except Exception:  # what ast cannot write back runs unguarded, as written
        _text = _source
    with open(_path, "w", encoding="utf-8") as _fh:
        _fh.write(_text)
    with open(_dir + "/pytest.ini", "w", encoding="utf-8") as _fh:
        _fh.write("[pytest]\n")  # this file's settings only: no pytest.ini the program left

    class _Report:
        def __init__(self):
            self.first = None
            self.items = self.passed = self.skipped = 0

        def _note(self, _report):
            if _report.failed and self.first is None:
                _crash = getattr(_report.longrepr, "reprcrash", None)
                self.first = getattr(_crash, "message", None) or str(_report.longrepr)

        def pytest_collection_finish(self, session):
            self.items = len(session.items)

        def pytest_runtest_logreport(self, report):
            self._note(report)
            self.passed += report.when == "call" and report.passed
            self.skipped += report.skipped

        def pytest_collectreport(self, report):
            self._note(report)

    _report = _Report()
    _args = [
        _path, "-q", "-c", _dir + "/pytest.ini", "--rootdir", _dir, "--confcutdir", _dir,
        "-p", "no:cacheprovider", "--no-header", "-rN",
    ]  # fmt: skip
    with _contextlib.redirect_stdout(_sys.stderr):  # pytest's report: the run's stderr
        _code = _pytest.main(_args, plugins=[_report])
    if _code == 0 and 0 < _report.items == _report.passed + _report.skipped:
        return
    _message = _report.first or (
        "pytest ended with exit status " + str(int(_code)) + " having run "
        + str(_report.passed + _report.skipped) + " of " + str(_report.items) + " tests"
    )  # fmt: skip
    _first = _message.splitlines()[0] if _message else ""
    if _first.startswith(("assert", "AssertionError", "Failed")):  # pytest.raises/fail too
        raise AssertionError(_message)
    raise RuntimeError("pytest: " + _message)


def _main():
    _request = _json.loads(_sys.stdin.readline())
    _marker = "@@referee:" + _request.pop("nonce") + "@@"
    _source = _request["test_code"]
    _entry = _request.get("entry_point")
    _pytest_mode = not _entry and _needs_pytest(_source) and _has_pytest()
    try:
        _tree = _guard_tests(_source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        _tree = None  # compiled as it is below, which says what is wrong with it
    _keep_state()
    _namespace = _load_solution()
    _restore_state()
    if "unittest" in _source:
        _guard_unittest()
    _as_module(_namespace)
    if _pytest_mode:
        _run_pytest(_namespace, _source, _tree)
    else:
        _before = dict(_namespace)
        _namespace.update(_guards())
        exec(compile(_source if _tree is None else _tree, "tests.py", "exec"), _namespace)
        _run_test_functions(_namespace, _before, _source)
        if _entry:
            _namespace["check"](_namespace[_entry])
    _sys.stdout.flush()
    _sys.stdout.write("\n" + _marker + "\n")
    _sys.stdout.flush()


_main()
"""
)


def make_nonce() -> str:
    return secrets.token_hex(16)


def parse_marked_result(stdout: str, nonce: str) -> tuple[bool, str, str]:
    """``(found, text_before_marker, text_after_marker)`` of the last marker in ``stdout``."""
    marker = f"\n@@referee:{re.escape(nonce)}@@\n"
    matches = list(re.finditer(marker, stdout))
    if not matches:
        return False, stdout, ""
    last = matches[-1]
    return True, stdout[: last.start()], stdout[last.end() :]


def request_line(nonce: str, payload: dict[str, object]) -> bytes:
    return (json.dumps({"nonce": nonce, **payload}) + "\n").encode()
