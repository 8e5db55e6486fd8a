"""A persistent, sandboxed Python interpreter: one per multi-turn session, state kept between calls.

Tool-integrated reasoning calls ``python(code)`` many times in one episode and expects variables
to survive, as in a REPL or a Jupyter cell::

    interp = PersistentInterpreter(backend, InterpreterLimits(wall_time_s=5, total_cpu_time_s=60))
    interp.run("import sympy as sp\\nx = sp.Symbol('x')")
    interp.run("sp.factor(x**2 - 1)").stdout        # '(x - 1)*(x + 1)\\n'
    interp.close()

It is one bubblewrap sandbox (``supervised.SupervisedSandbox``: the namespaces, seccomp filter,
uid 65534, cgroup and private tmpfs /work, /tmp and /dev/shm of an ordinary run) whose first
process, ``interpreter_supervisor.py``, runs each cell in one kept namespace. What a call gets:

* ``wall_time_s`` / ``cpu_time_s`` per call: past either, the host sends SIGINT (the cell gets
  KeyboardInterrupt, its state is kept; status ``timeout`` or ``cpu_limit``). A cell that does
  not stop within ``interrupt_grace_s`` (it swallows KeyboardInterrupt, or sits in C code) has
  its whole sandbox killed: ``state_lost=True``, and the next ``run`` starts a fresh interpreter
  (``restarted=True`` in its result);
* ``total_cpu_time_s`` for the whole session, read from the session's cgroup: once spent, the
  sandbox is killed (status ``cpu_limit``, ``state_lost``) and every later call answers
  ``cpu_limit`` without running;
* memory, processes and CPU share from the cgroup: an OOM kill of the interpreter is status
  ``memory`` with ``state_lost``;
* ``output_bytes`` / ``stderr_bytes`` per call: the rest is dropped, ``*_truncated`` says so;
* after each call every other process of the sandbox is killed: nothing outlives a call.

Which packages: the sandbox's Python is the server's base interpreter (its own site-packages
hidden, as for every run). ``packages`` (default numpy, sympy, mpmath) names top-level packages
of the server's environment to show, read-only, at ``/opt/referee/site`` (each package's
directory, and a wheel's ``<name>.libs`` beside it), not the whole site-packages: the sandbox
sees those packages and nothing else of the server. Names not installed are left out
(``interp.packages`` lists the ones bound).

``run`` and ``close`` are thread-safe: calls run one at a time, and ``close`` (a reaper thread's
idle timeout) may come while a call runs; that call then answers ``closed``. Idle and total
lifetimes are the caller's business.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path

from referee.sandbox.bwrap_backend import BwrapBackend
from referee.sandbox.closing import Closing
from referee.sandbox.errors import LanguageUnavailable, SandboxError
from referee.sandbox.languages import get_language
from referee.sandbox.models import ExecRequest, Limits
from referee.sandbox.process_io import decode_output
from referee.sandbox.resource_limits import rlimits_for
from referee.sandbox.supervised import SupervisedSandbox, supervisor_source

__all__ = [
    "DEFAULT_PACKAGES",
    "SITE_DIR",
    "CellResult",
    "CellStatus",
    "InterpreterLimits",
    "PersistentInterpreter",
    "package_binds",
]

DEFAULT_PACKAGES = ("numpy", "sympy", "mpmath")
SITE_DIR = "/opt/referee/site"
_SUPERVISOR = supervisor_source("interpreter_supervisor.py")
_POLL_S = 0.05
_ANSWER_SLACK_S = (
    8.0  # after the cell: the supervisor's kill of the rest (2 s), its readers (2 x 2 s)
)


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


class PersistentInterpreter(Closing):
    """One sandboxed Python interpreter whose state lasts across ``run`` calls."""

    def __init__(
        self,
        backend: BwrapBackend,
        limits: InterpreterLimits | None = None,
        *,
        packages: Sequence[str] = DEFAULT_PACKAGES,
    ) -> None:
        self.backend = backend
        self.limits = limits or InterpreterLimits()
        self._binds = package_binds(packages)
        self.packages = tuple(
            os.path.basename(t) for _, t in self._binds if not t.endswith(".libs")
        )
        self.calls = 0
        self._cpu_done = 0.0  # CPU time of the sandboxes already gone
        self._sandbox: SupervisedSandbox | None = None
        self._supervisor_pid: int | None = None
        self._state_lock = threading.Lock()  # guards _sandbox and _closed
        self._run_lock = threading.Lock()  # one call at a time
        self._closed = False
        self._spent = False
        self._lost = False  # the state of earlier calls is gone; the next start says so
        self._started_once = False

    # -- life ---------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def alive(self) -> bool:
        sandbox = self._sandbox
        return sandbox is not None and sandbox.alive

    @property
    def cpu_used_s(self) -> float:
        """CPU time of the whole session so far (every sandbox it had)."""
        sandbox = self._sandbox
        return self._cpu_done + (_cpu(sandbox) if sandbox is not None else 0.0)

    def start(self) -> None:
        """Start the sandbox now (``run`` starts it when needed). Raises ``SandboxError`` when
        it cannot start; does nothing when it runs already or was closed."""
        with self._run_lock:
            self._ensure_started()

    def close(self) -> None:
        """End the session: the sandbox's processes, pid namespace, cgroup and tmpfs go. Safe to
        call more than once and from another thread while a call runs."""
        with self._state_lock:
            self._closed = True
            sandbox, self._sandbox = self._sandbox, None
        if sandbox is not None:
            self._retire(sandbox)

    def _ensure_started(self) -> SupervisedSandbox | None:
        with self._state_lock:
            if self._closed or self._spent:
                return None
            if self._sandbox is not None and self._sandbox.alive:
                return self._sandbox
        sandbox = self._start_sandbox()
        with self._state_lock:
            if self._closed:
                closed = True
            else:
                closed = False
                self._sandbox = sandbox
                self._started_once = True
        if closed:
            sandbox.close()
            return None
        return sandbox

    def _start_sandbox(self) -> SupervisedSandbox:
        try:
            python = get_language("python")
        except LanguageUnavailable as exc:
            raise SandboxError(f"no Python for the interpreter: {exc}") from exc
        limits = self.limits.sandbox_limits()
        no_cgroup = self.backend.cgroups is None
        request = ExecRequest(
            argv=(python.run_argv("x", limits)[0], "-I", "-S", "-B", "-c", _SUPERVISOR),
            limits=limits,
            env={**python.full_env(), "REFEREE_SITE_DIR": SITE_DIR},
            toolchain_dirs=python.toolchain_dirs,
            hidden_dirs=python.hidden_dirs,
            binds=self._binds,
        )
        rlimits = rlimits_for(limits, address_space=no_cgroup, nproc=no_cgroup)
        try:
            sandbox = SupervisedSandbox.start(self.backend, request, rlimits)
        except (OSError, ValueError) as exc:
            raise SandboxError(f"the interpreter's sandbox did not start: {exc}") from exc
        self._supervisor_pid = sandbox.supervisor_pid()
        return sandbox

    def _retire(self, sandbox: SupervisedSandbox) -> None:
        """Close ``sandbox`` and add its CPU time to the session's."""
        used = _cpu(sandbox)
        sandbox.close()
        with self._state_lock:
            self._cpu_done += used
            if self._sandbox is sandbox:
                self._sandbox = None

    # -- one call -----------------------------------------------------------------------------

    def run(self, code: str) -> CellResult:
        """Run one cell; see the module docstring for every way it can end."""
        with self._run_lock:
            gone = self._sandbox
            if gone is not None and not gone.alive:  # died between calls (a thread of a cell)
                self._retire(gone)
                self._lost = True
            restarted = self._lost
            sandbox = self._ensure_started()
            if sandbox is None:
                return self._refused()
            self._lost = False
            self.calls += 1
            result = self._call(sandbox, code)
            if result.state_lost:
                self._lost = True
            if restarted:
                note = "a fresh interpreter: the state of earlier calls was lost"
                message = f"{note}; {result.message}" if result.message else note
                result = replace(result, restarted=True, message=message)
            return result

    def _refused(self) -> CellResult:
        """What ``run`` answers once the session is closed or its CPU time spent."""
        if self._spent and not self._closed:
            return CellResult(
                CellStatus.CPU_LIMIT,
                calls=self.calls,
                total_cpu_s=self._cpu_done,
                message="the session's CPU time is spent; it is over",
            )
        return CellResult(CellStatus.CLOSED, calls=self.calls, message="the interpreter is closed")

    def _call(self, sandbox: SupervisedSandbox, code: str) -> CellResult:
        limits = self.limits
        cpu_before = _cpu(sandbox)
        # the group's OOM counter only grows: a kill in an earlier call is not this one's
        ooms_before = sandbox.cgroup.oom_kills() if sandbox.cgroup is not None else 0
        started = time.monotonic()
        request: dict[str, object] = {
            "code": code,
            "stdout_cap": limits.output_bytes,
            "stderr_cap": limits.stderr_bytes,
        }
        waited = _Waited()
        if sandbox.send(request):
            self._wait(sandbox, cpu_before, started, waited)
        wall = (waited.ended_at or time.monotonic()) - started
        has_cgroup = sandbox.cgroup is not None
        oom = sandbox.cgroup.oom_kills() > ooms_before if sandbox.cgroup is not None else False
        cpu_s = max(0.0, _cpu(sandbox) - cpu_before) if has_cgroup else None
        total = self._cpu_done + _cpu(sandbox) if has_cgroup else None
        result = self._shape(waited, oom=oom, wall=wall)
        result = replace(result, cpu_s=cpu_s, total_cpu_s=total, calls=self.calls)
        if total is not None and total > limits.total_cpu_time_s:
            with self._state_lock:
                self._spent = True
            result = replace(
                result,
                status=CellStatus.CPU_LIMIT,
                state_lost=True,
                message="the session's CPU time is spent; it is over",
            )
        if result.state_lost or self._closed:
            self._retire(sandbox)
        return result

    def _wait(
        self, sandbox: SupervisedSandbox, cpu_before: float, started: float, waited: _Waited
    ) -> None:
        """Wait for the answer to the request just sent, enforcing the per-call and session
        limits meanwhile (read from the cgroup every ``_POLL_S``)."""
        limits = self.limits
        deadline = started + limits.wall_time_s
        interrupted_at: float | None = None
        while True:
            if sandbox.poll(_POLL_S):
                frame = sandbox.recv(time.monotonic() + _ANSWER_SLACK_S)
                if frame is not None and frame.get("ended") and waited.ended_at is None:
                    waited.ended_at = time.monotonic()
                    continue
                waited.answer = frame
                return
            now = time.monotonic()
            if waited.ended_at is not None:  # the limits of the cell no longer apply
                if now - waited.ended_at > _ANSWER_SLACK_S:
                    waited.killed = True  # it could not kill what the cell left, or stalled
                    return
                continue
            cpu = _cpu(sandbox) - cpu_before
            if self._cpu_done + cpu_before + cpu > limits.total_cpu_time_s:
                waited.reason, waited.killed = CellStatus.CPU_LIMIT, True
                return
            if interrupted_at is None:
                if now >= deadline:
                    waited.reason = CellStatus.TIMEOUT
                elif cpu > limits.effective_cpu_time_s:
                    waited.reason = CellStatus.CPU_LIMIT
                if waited.reason is not None:
                    interrupted_at = now
                    self._interrupt()
            elif now - interrupted_at > limits.interrupt_grace_s:
                waited.killed = True  # it ignored the interrupt, or is stuck in C code
                return

    def _interrupt(self) -> None:
        pid = self._supervisor_pid
        if pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGINT)

    def _shape(self, waited: _Waited, *, oom: bool, wall: float) -> CellResult:
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
            elif self._closed:
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
                f"interrupted: past the call's time limit of {self.limits.wall_time_s:g} s"
                if reason is CellStatus.TIMEOUT
                else "interrupted: past the call's CPU time limit of "
                f"{self.limits.effective_cpu_time_s:g} s"
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


@dataclass(slots=True)
class _Waited:
    """How the wait for one answer ended."""

    answer: dict[str, object] | None = None
    reason: CellStatus | None = None  # the limit that interrupted or killed the cell
    killed: bool = False  # the sandbox must go: the state is lost
    ended_at: float | None = None


def _cpu(sandbox: SupervisedSandbox) -> float:
    cgroup = sandbox.cgroup
    value = cgroup.cpu_time_s() if cgroup is not None else None
    return value if value is not None else 0.0


def _bytes(value: object) -> bytes:
    return value if isinstance(value, bytes) else b""


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0
