"""Running a Python source in the bubblewrap backend, as test_sandbox_runs.py and
test_sandbox_hostile.py do: ``py`` returns the run whatever its status, ``py_ok`` requires it
to end ``ok`` (the failure names the run's message and stderr) and, given ``stdout``, to print
exactly that."""

from __future__ import annotations

from referee.sandbox import BwrapBackend, Limits, RunResult, RunStatus, run_program


def py(
    backend: BwrapBackend, source: str, *, stdin: str = "", limits: Limits | None = None
) -> RunResult:
    """``source`` run as python with ``stdin``; ``limits`` default to 5 s of wall time."""
    return run_program(source, "python", backend, stdin, limits or Limits(wall_time_s=5.0))


def py_ok(
    backend: BwrapBackend,
    source: str,
    *,
    stdout: str | None = None,
    stdin: str = "",
    limits: Limits | None = None,
) -> RunResult:
    """``py`` whose run must end ``ok`` and, when ``stdout`` is given, print exactly it: the run,
    for the rest of its output to be checked."""
    result = py(backend, source, stdin=stdin, limits=limits)
    assert result.status is RunStatus.OK, (result.message, result.stderr)
    if stdout is not None:
        assert result.stdout == stdout, f"printed {result.stdout!r}, not {stdout!r}"
    return result
