"""The interface every isolation backend implements, and the shared mapping to a status.

A backend runs one ``ExecRequest`` and returns a ``RunResult``; it never raises for anything
the program did. ``classify`` turns what was observed (exit status, deadline, output cap, OOM,
CPU time) into a ``RunStatus`` the same way for every backend; ``finished_result`` is that for
a finished process's ``RawOutcome``. ``communicate_request`` runs a process's I/O under the
request's limits, ``looks_like_oom`` reads allocation failures off stderr where no memory cgroup
says, and ``StartCounter`` counts the runs and compile steps a backend started.
"""

from __future__ import annotations

import signal as _signal
import subprocess
import threading
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from referee.sandbox.models import ExecRequest, Limits, RunResult, RunStatus
from referee.sandbox.process_io import RawOutcome, communicate, decode_output

__all__ = [
    "OOM_MARKERS",
    "SandboxBackend",
    "StartCounter",
    "classify",
    "communicate_request",
    "finished_result",
    "looks_like_oom",
    "split_exit_status",
]

_CPU_SLACK = 0.95
OOM_MARKERS = (b"MemoryError", b"std::bad_alloc", b"out of memory", b"OutOfMemoryError")
"""What runtimes write to stderr when an allocation fails (RLIMIT_AS instead of a cgroup)."""


@runtime_checkable
class SandboxBackend(Protocol):
    """Runs one request in isolation. Implementations are safe to call from many threads."""

    name: str

    def run(self, request: ExecRequest) -> RunResult: ...


class StartCounter:
    """``runs_started`` and ``compiles_started`` of a backend (thread-safe): a base class."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.runs_started = 0
        self.compiles_started = 0

    def count_start(self, request: ExecRequest) -> None:
        with self._lock:
            if request.kind == "compile":
                self.compiles_started += 1
            else:
                self.runs_started += 1


def communicate_request(
    proc: subprocess.Popen[bytes],
    request: ExecRequest,
    *,
    started: float,
    kill: Callable[[], None],
) -> RawOutcome:
    """``communicate`` with the request's stdin and limits: stdout capped at ``output_bytes``,
    stderr kept to ``stderr_bytes`` and the program stopped past ``output_bytes`` of it."""
    limits = request.limits
    return communicate(
        proc,
        request.stdin,
        started=started,
        wall_time_s=limits.wall_time_s,
        stdout_cap=limits.output_bytes,
        stderr_cap=limits.stderr_bytes,
        stderr_stop=limits.output_bytes,
        kill=kill,
    )


def looks_like_oom(raw: RawOutcome, markers: tuple[bytes, ...] = OOM_MARKERS) -> bool:
    """Without a memory cgroup, RLIMIT_AS turns OOM into allocation failures: spot them (one
    of ``markers`` in the last 4 KiB of a failed run's stderr)."""
    if raw.returncode == 0:
        return False
    tail = raw.stderr[-4096:]
    return any(marker in tail for marker in markers)


def split_exit_status(
    returncode: int | None, *, shell_style: bool
) -> tuple[int | None, int | None]:
    """``(exit_code, signal)`` from a return code.

    ``subprocess`` reports death by signal N as ``-N``. Wrappers that exit on their child's
    behalf (bwrap's init, ``sh``) report it as ``128 + N`` (``shell_style``); a program exiting
    with 129–192 by itself is then read as a signal, as shells do.
    """
    if returncode is None:
        return None, None
    if returncode < 0:
        return None, -returncode
    if shell_style and 128 < returncode <= 128 + 64:
        return None, returncode - 128
    return returncode, None


def classify(
    raw: RawOutcome,
    limits: Limits,
    *,
    exit_code: int | None,
    signal: int | None,
    oom_killed: bool,
    cpu_time_s: float | None,
    memory_peak_bytes: int | None,
) -> RunResult:
    """The ``RunResult`` of a finished run (precedence: output, time, memory, exit)."""
    cpu_limit = limits.effective_cpu_time_s
    cpu_exhausted = signal in (_signal.SIGXCPU, _signal.SIGKILL) and (
        cpu_time_s is not None and cpu_time_s >= cpu_limit * _CPU_SLACK
    )
    if signal == _signal.SIGXCPU:
        cpu_exhausted = True
    message = ""
    if raw.stdout_overflow:
        status = RunStatus.OUTPUT_LIMIT
        message = f"stdout exceeded {limits.output_bytes} bytes; the program was stopped"
    elif raw.stderr_overflow:
        status = RunStatus.OUTPUT_LIMIT
        message = f"stderr exceeded {limits.output_bytes} bytes; the program was stopped"
    elif raw.timed_out or cpu_exhausted:
        status = RunStatus.TIME_LIMIT
        if raw.timed_out:
            message = f"wall-clock limit of {limits.wall_time_s:g} s exceeded"
        else:
            message = f"CPU-time limit of {cpu_limit:g} s exceeded"
    elif oom_killed:
        status = RunStatus.MEMORY_LIMIT
        message = f"memory limit of {limits.memory_mb} MiB exceeded"
    elif exit_code == 0 and signal is None:
        status = RunStatus.OK
    else:
        status = RunStatus.RUNTIME_ERROR
        if signal is not None:
            try:
                message = f"killed by signal {signal} ({_signal.Signals(signal).name})"
            except ValueError:
                message = f"killed by signal {signal}"
        else:
            message = f"exited with code {exit_code}"
    return RunResult(
        status=status,
        exit_code=exit_code,
        signal=signal,
        stdout=decode_output(raw.stdout),
        stderr=decode_output(raw.stderr),
        truncated=raw.stdout_overflow,
        stderr_truncated=raw.stderr_truncated,
        wall_time_s=raw.wall_time_s,
        cpu_time_s=cpu_time_s,
        memory_peak_bytes=memory_peak_bytes,
        message=message,
    )


def finished_result(
    raw: RawOutcome,
    limits: Limits,
    *,
    shell_style: bool,
    oom_killed: bool,
    cpu_time_s: float | None = None,
    memory_peak_bytes: int | None = None,
) -> RunResult:
    """The ``RunResult`` of a finished process: its return code split as ``split_exit_status``
    does (``shell_style``), then ``classify``."""
    exit_code, sig = split_exit_status(raw.returncode, shell_style=shell_style)
    return classify(
        raw,
        limits,
        exit_code=exit_code,
        signal=sig,
        oom_killed=oom_killed,
        cpu_time_s=cpu_time_s,
        memory_peak_bytes=memory_peak_bytes,
    )
