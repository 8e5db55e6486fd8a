"""Pure parts of the persistent interpreter: limits, package binds, and the supervisor's cell
compilation and traceback text (its functions, loaded from its text without running it)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from referee.sandbox.interpreter import (
    SITE_DIR,
    CellResult,
    CellStatus,
    InterpreterLimits,
    package_binds,
)
from referee.sandbox.supervised import supervisor_source


def test_limits_validate_and_map_to_the_sandbox() -> None:
    limits = InterpreterLimits(wall_time_s=4.0, cpus=0.5, total_cpu_time_s=30.0, memory_mb=256)
    assert limits.effective_cpu_time_s == 2.0  # per call: what the CPU share allows in the wall
    assert InterpreterLimits(cpu_time_s=1.5).effective_cpu_time_s == 1.5
    box = limits.sandbox_limits()
    assert (box.memory_mb, box.cpus, box.wall_time_s) == (256, 0.5, 4.0)
    assert box.effective_cpu_time_s > limits.total_cpu_time_s  # RLIMIT_CPU: a backstop only
    for bad in (
        {"wall_time_s": 0},
        {"total_cpu_time_s": -1},
        {"cpu_time_s": 0},
        {"memory_mb": 0},
        {"output_bytes": 0},
        {"stderr_bytes": -1},
        {"interrupt_grace_s": 0},
    ):
        with pytest.raises(ValueError):
            InterpreterLimits(**bad)  # type: ignore[arg-type]


def test_cell_result_ok() -> None:
    assert CellResult(CellStatus.OK).ok
    assert not CellResult(CellStatus.TIMEOUT).ok


def test_package_binds_show_only_the_named_packages() -> None:
    binds = dict((target, source) for source, target in package_binds(["sympy", "no_such_pkg"]))
    assert list(binds) == [f"{SITE_DIR}/sympy"]
    assert binds[f"{SITE_DIR}/sympy"].endswith("/sympy")
    single = package_binds(["typing_extensions"])  # a module that is one file
    assert [t for _, t in single] == [f"{SITE_DIR}/typing_extensions.py"]
    assert package_binds(["sys", "os.path", ""]) == ()  # builtin, not top-level, empty


def test_a_wheels_vendored_libraries_are_bound_beside_it() -> None:
    pytest.importorskip("numpy")
    targets = [t for _, t in package_binds(["numpy"])]
    assert targets[0] == f"{SITE_DIR}/numpy"
    from pathlib import Path

    import numpy

    libs = Path(numpy.__file__).parent.parent / "numpy.libs"
    assert (f"{SITE_DIR}/numpy.libs" in targets) == libs.is_dir()


@pytest.fixture()
def supervisor() -> Iterator[dict[str, Any]]:
    """The interpreter supervisor's functions (its text run as a module, not as __main__)."""
    namespace: dict[str, Any] = {"__name__": "interpreter_supervisor"}
    exec(compile(supervisor_source("interpreter_supervisor.py"), "<supervisor>", "exec"), namespace)
    yield namespace
    sys.modules.pop("supervisor_common", None)


@pytest.mark.parametrize(
    ("source", "parts"),
    [
        ("x", 1),  # the expression alone, shown
        ("x = 1\nx", 2),  # the body, then the expression shown
        ("x = 1", 1),
        ("x;", 1),  # hidden
        ("x  ;  # quiet", 1),
        ("", 1),
    ],
)
def test_cells_compile_with_a_last_expression_apart(
    supervisor: dict[str, Any], source: str, parts: int
) -> None:
    assert len(supervisor["_compile"](source, "<cell-1>")) == parts


def test_the_last_expression_goes_through_displayhook(
    supervisor: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    namespace: dict[str, Any] = {}
    for code in supervisor["_compile"]("y = 6 * 7\ny\ny + 0;", "<cell-1>"):
        exec(code, namespace)
    assert capsys.readouterr().out == ""  # the last one ends with ';'
    for code in supervisor["_compile"]("y", "<cell-2>"):
        exec(code, namespace)
    assert capsys.readouterr().out == "42\n"


def test_traceback_text_starts_at_the_cell(supervisor: dict[str, Any]) -> None:
    import linecache

    source = "def f():\n    return 1 / 0\nf()"
    linecache.cache["<cell-9>"] = (len(source), None, source.splitlines(True), "<cell-9>")
    try:
        failure = supervisor["_exec"](supervisor["_compile"](source, "<cell-9>"), {})
        assert isinstance(failure, ZeroDivisionError)
        text = supervisor["_traceback_text"](failure)
    finally:
        linecache.cache.pop("<cell-9>", None)
    lines = text.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1] == '  File "<cell-9>", line 3, in <module>'
    assert "    return 1 / 0" in lines
    assert lines[-1] == "ZeroDivisionError: division by zero"
    syntax = supervisor["_traceback_text"](SyntaxError("bad", ("<cell-2>", 1, 3, "x =(\n")))
    assert syntax.startswith('  File "<cell-2>", line 1') and "Traceback" not in syntax
