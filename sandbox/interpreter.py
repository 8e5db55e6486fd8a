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

This module is the process: the sandbox's start, the wait under the limits, the interrupt and
the kill. The limits, the result types, the package binds and the request and answer frames are
``interpreter_cells`` (re-exported here).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import replace

from referee.sandbox.bwrap_backend import BwrapBackend
from referee.sandbox.closing import Closing
from referee.sandbox.errors import LanguageUnavailable, SandboxError
from referee.sandbox.interpreter_cells import (
    DEFAULT_PACKAGES,
    SITE_DIR,
    CellResult,
    CellStatus,
    InterpreterLimits,
    Waited,
    cell_request,
    cell_result,
    package_binds,
)
from referee.sandbox.languages import get_language
from referee.sandbox.models import ExecRequest
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

_SUPERVISOR = supervisor_source("interpreter_supervisor.py")
_POLL_S = 0.05
_ANSWER_SLACK_S = (
    8.0  # after the cell: the supervisor's kill of the rest (2 s), its readers (2 x 2 s)
)


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
        waited = Waited()
        if sandbox.send(cell_request(code, limits)):
            self._wait(sandbox, cpu_before, started, waited)
        wall = (waited.ended_at or time.monotonic()) - started
        has_cgroup = sandbox.cgroup is not None
        oom = sandbox.cgroup.oom_kills() > ooms_before if sandbox.cgroup is not None else False
        cpu_s = max(0.0, _cpu(sandbox) - cpu_before) if has_cgroup else None
        total = self._cpu_done + _cpu(sandbox) if has_cgroup else None
        result = cell_result(waited, limits, oom=oom, wall=wall, closed=self._closed)
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
        self, sandbox: SupervisedSandbox, cpu_before: float, started: float, waited: Waited
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


def _cpu(sandbox: SupervisedSandbox) -> float:
    cgroup = sandbox.cgroup
    value = cgroup.cpu_time_s() if cgroup is not None else None
    return value if value is not None else 0.0
