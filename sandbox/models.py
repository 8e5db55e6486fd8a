"""Plain data types of the sandbox: limits, run requests, run results, statuses.

These are frozen dataclasses, not the wire schema (that lives in ``referee.client``); the service
layer converts between the two. Everything here is cheap to build and safe to share between
threads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

__all__ = [
    "MIB",
    "SANDBOX_UID",
    "ExecRequest",
    "Limits",
    "RunResult",
    "RunStatus",
]

MIB = 1024 * 1024
SANDBOX_UID = 65534  # "nobody": the uid and gid every sandboxed program runs as


class RunStatus(StrEnum):
    """How one sandboxed run ended. Every value is a *result*, not a fault of the service."""

    OK = "ok"
    RUNTIME_ERROR = "runtime_error"
    COMPILE_ERROR = "compile_error"
    TIME_LIMIT = "time_limit"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    SANDBOX_ERROR = "sandbox_error"


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits of one run.

    ``cpu_time_s`` defaults to ``wall_time_s``. ``output_bytes`` caps stdout: a program that
    writes more is stopped and reported as ``output_limit`` with ``truncated=True`` (never
    silently cut). ``stderr_bytes`` caps what is kept of stderr; stderr past it is drained and
    dropped without failing the run. ``work_dir_mb`` sizes the private tmpfs work dir (and /tmp);
    tmpfs pages are also charged to the run's memory cgroup.
    """

    wall_time_s: float = 10.0
    cpu_time_s: float | None = None
    memory_mb: int = 512
    max_processes: int = 64
    output_bytes: int = 1 * MIB
    stderr_bytes: int = 64 * 1024
    file_size_mb: int = 64
    work_dir_mb: int = 64
    open_files: int = 256
    cpus: float = 1.0

    def __post_init__(self) -> None:
        if self.wall_time_s <= 0:
            raise ValueError("wall_time_s must be > 0")
        if self.cpu_time_s is not None and self.cpu_time_s <= 0:
            raise ValueError("cpu_time_s must be > 0")
        for name in (
            "memory_mb",
            "max_processes",
            "output_bytes",
            "file_size_mb",
            "work_dir_mb",
            "open_files",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0")
        if self.stderr_bytes < 0:
            raise ValueError("stderr_bytes must be >= 0")
        if self.cpus <= 0:
            raise ValueError("cpus must be > 0")

    @property
    def effective_cpu_time_s(self) -> float:
        return self.cpu_time_s if self.cpu_time_s is not None else self.wall_time_s

    def with_(self, **changes: object) -> Limits:
        """A copy with some fields changed (``limits.with_(wall_time_s=2)``)."""
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class ExecRequest:
    """One command to run in isolation.

    ``program_dir`` is a host directory shown inside the sandbox at ``/code``: read-only for
    test runs, writable for a compile step (``program_dir_writable``). The command's working
    directory is ``cwd`` (default the private tmpfs ``/work``). ``toolchain_dirs`` are extra
    host paths bound read-only at the same path (an interpreter outside /usr, a Rust sysroot).
    ``limit_address_space=False`` spares runtimes that reserve large virtual ranges (JVM, Go, V8)
    from RLIMIT_AS, which is only used where no memory cgroup exists.
    """

    argv: tuple[str, ...]
    stdin: bytes = b""
    limits: Limits = field(default_factory=Limits)
    env: Mapping[str, str] = field(default_factory=dict)
    program_dir: Path | None = None
    program_dir_writable: bool = False
    cwd: str = "/work"
    toolchain_dirs: tuple[str, ...] = ()
    hidden_dirs: tuple[str, ...] = ()
    """Directories inside the bound toolchains shown empty (an interpreter's site-packages)."""
    binds: tuple[tuple[str, str], ...] = ()
    """``(host path, sandbox path)`` pairs bound read-only elsewhere than at the same path
    (chosen packages of the server's environment, for the persistent interpreter)."""
    limit_address_space: bool = True
    kind: str = "run"  # "run" or "compile"; informational (stats, logs)


@dataclass(frozen=True, slots=True)
class RunResult:
    """What one run produced. ``stdout``/``stderr`` are text; invalid UTF-8 is replaced."""

    status: RunStatus
    exit_code: int | None = None
    signal: int | None = None
    stdout: str = ""
    stderr: str = ""
    truncated: bool = False
    stderr_truncated: bool = False
    wall_time_s: float = 0.0
    cpu_time_s: float | None = None
    memory_peak_bytes: int | None = None
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status is RunStatus.OK
