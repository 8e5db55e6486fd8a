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
them. Expected values of
function-call tests never enter the sandbox: the comparison happens outside.
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


def _run_pytest(_namespace, _source):
    # the test file as pytest runs it (KodCode's check): a file of its own, importing the program
    # as `solution`; names it uses without importing are the program's (as in one namespace)
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
    _dir = _tempfile.mkdtemp(prefix="referee-pytest-", dir="/tmp")
    _path = _dir + "/test_solution.py"
    with open(_path, "w", encoding="utf-8") as _fh:
        _fh.write(_source)

    class _Failures:
        def __init__(self):
            self.first = None

        def _note(self, _report):
            if _report.failed and self.first is None:
                _crash = getattr(_report.longrepr, "reprcrash", None)
                self.first = getattr(_crash, "message", None) or str(_report.longrepr)

        def pytest_runtest_logreport(self, report):
            self._note(report)

        def pytest_collectreport(self, report):
            self._note(report)

    _failures = _Failures()
    _args = [_path, "-q", "-p", "no:cacheprovider", "--rootdir", _dir, "--no-header", "-rN"]
    with _contextlib.redirect_stdout(_sys.stderr):  # pytest's report: the run's stderr
        _code = _pytest.main(_args, plugins=[_failures])
    if _code == 0:
        return
    _message = _failures.first or ("pytest ended with exit status " + str(int(_code)))
    _first = _message.splitlines()[0] if _message else ""
    if _first.startswith(("assert", "AssertionError", "Failed")):  # pytest.raises/fail too
        raise AssertionError(_message)
    raise RuntimeError("pytest: " + _message)


def _main():
    _request = _json.loads(_sys.stdin.readline())
    _marker = "@@referee:" + _request.pop("nonce") + "@@"
    _namespace = _load_solution()
    _as_module(_namespace)
    _source = _request["test_code"]
    _entry = _request.get("entry_point")
    if not _entry and _needs_pytest(_source) and _has_pytest():
        _run_pytest(_namespace, _source)
    else:
        _before = dict(_namespace)
        exec(compile(_source, "tests.py", "exec"), _namespace)
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
