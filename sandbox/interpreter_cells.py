"""A persistent interpreter's calls as data: the session's limits, what one call returns, the
package binds, and the two frames of the host-supervisor protocol (the request the host sends
for a cell, and the reading of the supervisor's answer into a ``CellResult``).

Nothing here starts or signals a process; ``interpreter.PersistentInterpreter`` runs the
sandbox and the wait, and re-exports these names.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from referee.sandbox.models import Limits
from referee.sandbox.process_io import decode_output

__all__ = [
    "DEFAULT_PACKAGES",
    "SITE_DIR",
    "CellResult",
    "CellStatus",
    "InterpreterLimits",
    "Waited",
    "cell_request",
    "cell_result",
    "package_binds",
]

DEFAULT_PACKAGES = ("numpy", "sympy", "mpmath")
SITE_DIR = "/opt/referee/site"


class CellStatus(StrEnum):
    """How one call ended. Each is a result for the model to see, not a fault of the service."""

    OK = "ok"
    ERROR = "error"  # the cell raised: ``traceback`` has the text a REPL prints
    TIMEOUT = "timeout"  # past the per-call wall time
    CPU_LIMIT = "cpu_limit"  # past the per-call CPU time, or the session's total
    MEMORY = "memory"  # an OOM kill in the sandbox (or a MemoryError)
    CRASHED = "crashed"  # the interpreter died (os._exit, a segfault, a killed supervisor)
    CLOSED = "closed"  # the interpreter was closed before or during the call


@dataclass(frozen=True, slots=True)
class InterpreterLimits:
    """Limits of one session. ``cpu_time_s`` (per call) defaults to ``wall_time_s * cpus``."""

    wall_time_s: float = 10.0
    cpu_time_s: float | None = None
    total_cpu_time_s: float = 120.0
    memory_mb: int = 1024
    max_processes: int = 64
    output_bytes: int = 64 * 1024
    stderr_bytes: int = 64 * 1024
    file_size_mb: int = 64
    work_dir_mb: int = 64
    open_files: int = 256
    cpus: float = 1.0
    interrupt_grace_s: float = 2.0

    def __post_init__(self) -> None:
        for name in ("wall_time_s", "total_cpu_time_s", "cpus", "interrupt_grace_s"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0")
        if self.cpu_time_s is not None and self.cpu_time_s <= 0:
            raise ValueError("cpu_time_s must be > 0")
        for name in ("memory_mb", "max_processes", "output_bytes", "file_size_mb"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0")
        if self.stderr_bytes < 0:
            raise ValueError("stderr_bytes must be >= 0")

    @property
    def effective_cpu_time_s(self) -> float:
        return self.cpu_time_s if self.cpu_time_s is not None else self.wall_time_s * self.cpus

    def sandbox_limits(self) -> Limits:
        """The sandbox's limits (cgroup, rlimits, tmpfs sizes); RLIMIT_CPU is the session's
        total, a backstop behind the host's reading of the cgroup."""
        return Limits(
            wall_time_s=self.wall_time_s,
            cpu_time_s=self.total_cpu_time_s + 1.0,
            memory_mb=self.memory_mb,
            max_processes=self.max_processes,
            output_bytes=self.output_bytes,
            stderr_bytes=self.stderr_bytes,
            file_size_mb=self.file_size_mb,
            work_dir_mb=self.work_dir_mb,
            open_files=self.open_files,
            cpus=self.cpus,
        )


@dataclass(frozen=True, slots=True)
class CellResult:
    """What one ``run`` produced. Text is UTF-8 with invalid bytes replaced.

    ``state_lost``: this call ended the interpreter (killed after an interrupt it ignored, OOM,
    crash, CPU budget spent, unkillable leftovers); its variables are gone. ``restarted``: an
    earlier call lost the state, this one ran in a fresh interpreter. ``calls``: the calls of
    this session so far, this one included. ``cpu_s``: CPU time of this call (all its
    processes), ``total_cpu_s`` of the session; None without a cgroup."""

    status: CellStatus
    stdout: str = ""
    stderr: str = ""
    traceback: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    wall_s: float = 0.0
    cpu_s: float | None = None
    total_cpu_s: float | None = None
    state_lost: bool = False
    restarted: bool = False
    calls: int = 0
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status is CellStatus.OK


def package_binds(names: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``(host path, sandbox path)`` binds showing the installed top-level packages ``names``
    of this environment under ``SITE_DIR`` (``find_spec`` locates them without importing)."""
    binds: list[tuple[str, str]] = []
    for name in names:
        if not name.isidentifier():  # top-level names only: "a.b" would import "a"
            continue
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        if spec.submodule_search_locations:
            path = os.path.realpath(next(iter(spec.submodule_search_locations)))
        elif spec.origin and spec.origin.endswith(".py"):
            path = os.path.realpath(spec.origin)
        else:
            continue
        binds.append((path, f"{SITE_DIR}/{os.path.basename(path)}"))
        libs = Path(path).parent / f"{name}.libs"  # a manylinux wheel's vendored libraries
        if libs.is_dir():
            binds.append((str(libs), f"{SITE_DIR}/{libs.name}"))
    return tuple(binds)


def cell_request(code: str, limits: InterpreterLimits) -> dict[str, object]:
    """The frame the host sends the supervisor to run one cell."""
    return {
        "code": code,
        "stdout_cap": limits.output_bytes,
        "stderr_cap": limits.stderr_bytes,
    }


@dataclass(slots=True)
class Waited:
    """How the wait for one answer ended."""

    answer: dict[str, object] | None = None
    reason: CellStatus | None = None  # the limit that interrupted or killed the cell
    killed: bool = False  # the sandbox must go: the state is lost
    ended_at: float | None = None


def cell_result(
    waited: Waited, limits: InterpreterLimits, *, oom: bool, wall: float, closed: bool
) -> CellResult:
    """The result of a call from the supervisor's answer (None: no answer came)."""
    answer, reason = waited.answer, waited.reason
    if answer is None or not isinstance(answer.get("stdout"), bytes):
        if oom:
            status, message = CellStatus.MEMORY, "out of memory: the interpreter was killed"
        elif reason is CellStatus.TIMEOUT:
            status, message = (
                reason,
                "did not stop when interrupted: the interpreter was killed",
            )
        elif reason is CellStatus.CPU_LIMIT:
            status, message = reason, "CPU time limit: the interpreter was killed"
        elif closed:
            status, message = CellStatus.CLOSED, "closed during the call"
        else:
            status, message = CellStatus.CRASHED, "the interpreter died"
        return CellResult(status, wall_s=wall, state_lost=True, message=message)
    stdout, stderr = _bytes(answer.get("stdout")), _bytes(answer.get("stderr"))
    status = CellStatus.ERROR if answer.get("error") else CellStatus.OK
    message = ""
    if reason is not None and answer.get("interrupted"):
        status = reason
        message = (
            f"interrupted: past the call's time limit of {limits.wall_time_s:g} s"
            if reason is CellStatus.TIMEOUT
            else f"interrupted: past the call's CPU time limit of {limits.effective_cpu_time_s:g} s"
        )
    elif oom or answer.get("memory_error"):
        # the interpreter answered: what the kernel killed was a process the call started
        status = CellStatus.MEMORY
        message = (
            "out of memory"
            if answer.get("memory_error")
            else ("out of memory: a process of the call was killed")
        )
    clean = bool(answer.get("clean"))
    if not clean:
        message = (message + "; " if message else "") + "leftover processes: state lost"
    return CellResult(
        status,
        stdout=decode_output(stdout),
        stderr=decode_output(stderr),
        traceback=str(answer.get("traceback") or ""),
        stdout_truncated=_int(answer.get("stdout_seen")) > len(stdout),
        stderr_truncated=_int(answer.get("stderr_seen")) > len(stderr),
        wall_s=wall,
        state_lost=not clean or waited.killed,
        message=message,
    )


def _bytes(value: object) -> bytes:
    return value if isinstance(value, bytes) else b""


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0
