"""One bwrap sandbox whose first process is a supervisor script, spoken to in frames over pipes.

The start-up shared by ``BatchSandbox`` (many test runs of one program) and
``PersistentInterpreter`` (one Python session): bwrap is started parked (``--block-fd``), its
sandbox child is moved into a fresh cgroup and given its rlimits, and only then released to run
the supervisor (``python -I -S -B -c <text>``) as uid 65534 inside the namespaces and seccomp
filter of an ordinary run. The supervisor then answers requests on its stdout, one frame per
request (8-byte big-endian length + ``marshal`` data); its first frame says it is ready.

``supervisor_source(name)`` is the text run: ``supervisor_common.py`` (framing, the guard that
refuses to run outside a sandbox, kill-every-other-process) made importable as
``supervisor_common``, then the named supervisor. ``close()`` kills bwrap (the pid namespace,
and with it every process of the sandbox, dies with it), empties and removes the cgroup; it is
idempotent and may be called from another thread while a request is waiting for its answer.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import select
import subprocess
import threading
import time
from pathlib import Path

from referee.sandbox.bwrap_backend import BwrapBackend, _read_child_pid
from referee.sandbox.cgroups import RunCgroup
from referee.sandbox.models import ExecRequest, Limits
from referee.sandbox.resource_limits import Rlimit, apply_rlimits

__all__ = ["SupervisedSandbox", "supervisor_source"]

_HERE = Path(__file__).parent
_READY_TIMEOUT_S = 10.0


def _pids() -> list[int]:
    return [int(n) for n in os.listdir("/proc") if n.isdigit()]


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def supervisor_source(name: str) -> str:
    """The ``-c`` text of the supervisor file ``name`` (``batch_supervisor.py``, ...)."""
    common = (_HERE / "supervisor_common.py").read_text(encoding="utf-8")
    own = (_HERE / name).read_text(encoding="utf-8")
    boot = (
        "import sys as _sys\n"
        "_m = type(_sys)('supervisor_common')\n"
        f"exec(compile({common!r}, 'supervisor_common.py', 'exec'), _m.__dict__)\n"
        "_sys.modules['supervisor_common'] = _m\n"
        "del _sys, _m\n"
    )
    return boot + own


class SupervisedSandbox:
    """A started sandbox running a supervisor. Build it with ``start``; one request at a time."""

    def __init__(
        self, proc: subprocess.Popen[bytes], cgroup: RunCgroup | None, child_pid: int
    ) -> None:
        self.proc: subprocess.Popen[bytes] | None = proc
        self.cgroup = cgroup
        self.child_pid = child_pid
        """Host pid of bwrap's init, the first process of the sandbox's pid namespace."""
        self.ready: dict[str, object] = {}
        self._lock = threading.Lock()
        self._readers = 0

    @classmethod
    def start(
        cls,
        backend: BwrapBackend,
        request: ExecRequest,
        rlimits: list[Rlimit],
        cgroup_limits: Limits | None = None,
    ) -> SupervisedSandbox:
        """Start ``request`` (whose argv runs a supervisor) and wait for its ready frame.

        The cgroup gets ``cgroup_limits`` (default the request's limits); the sandbox's first
        process gets ``rlimits`` before it runs anything. Raises ``OSError`` when the sandbox
        or the supervisor did not start (nothing of it is left then)."""
        cgroup: RunCgroup | None = None
        fds: list[int] = []
        sandbox: SupervisedSandbox | None = None
        try:
            if backend.cgroups is not None:
                cgroup = backend.cgroups.create(cgroup_limits or request.limits)
            proc, info_r, block_w = backend.spawn(request, stderr=subprocess.DEVNULL)
            fds += [info_r, block_w]
            child = _read_child_pid(info_r)
            sandbox = cls(proc, cgroup, child or 0)
            if child is None:
                raise OSError("bwrap did not start its sandbox")
            if cgroup is not None:
                cgroup.add(child)
            apply_rlimits(child, rlimits)
            os.write(block_w, b"1")
            ready = sandbox.recv(time.monotonic() + _READY_TIMEOUT_S)
            if not ready or not ready.get("ready"):
                raise OSError("the sandbox's supervisor did not start")
            sandbox.ready = ready
            return sandbox
        except (OSError, ValueError):
            if sandbox is not None:
                sandbox.close()
            elif cgroup is not None:
                cgroup.remove()
            raise
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

    @property
    def alive(self) -> bool:
        proc = self.proc
        return proc is not None and proc.poll() is None

    def supervisor_pid(self) -> int | None:
        """Host pid of the supervisor: the one child of bwrap's init (setpriv execs it). Read
        right after start, while it is the sandbox's only other process."""
        path = Path(f"/proc/{self.child_pid}/task/{self.child_pid}/children")
        try:
            children = [int(p) for p in path.read_text().split()]
        except OSError:  # no CONFIG_PROC_CHILDREN: look for the process whose parent it is
            children = [pid for pid in _pids() if _parent(pid) == self.child_pid]
        return children[0] if len(children) == 1 else None

    # -- framing ------------------------------------------------------------------------------

    def send(self, message: dict[str, object]) -> bool:
        proc = self.proc
        if proc is None or proc.stdin is None:
            return False
        data = marshal.dumps(message)
        try:
            proc.stdin.write(len(data).to_bytes(8, "big") + data)
            proc.stdin.flush()
        except (OSError, ValueError):
            return False
        return True

    def _read_exact(self, proc: subprocess.Popen[bytes], n: int, deadline: float) -> bytes | None:
        if proc.stdout is None:
            return None
        fd = proc.stdout.fileno()
        buf = bytearray()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                ready, _, _ = select.select([fd], [], [], min(left, 0.5))
                if not ready:
                    if self.proc is None:
                        return None
                    continue
                chunk = os.read(fd, n - len(buf))
            except (OSError, ValueError):
                return None
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    def poll(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the supervisor to write; True when a read would not
        block (an answer, or the end of the stream: the sandbox died or was closed)."""
        with self._lock:
            proc = self.proc
            if proc is None or proc.stdout is None:
                return True
            self._readers += 1
        try:
            ready, _, _ = select.select([proc.stdout.fileno()], [], [], timeout)
            return bool(ready)
        except (OSError, ValueError):
            return True
        finally:
            with self._lock:
                self._readers -= 1
            self._release(proc)

    def recv(self, deadline: float) -> dict[str, object] | None:
        """The next frame, or None: the supervisor died, stalled past ``deadline``, or sent junk."""
        with self._lock:
            proc = self.proc
            if proc is None:
                return None
            self._readers += 1
        try:
            head = self._read_exact(proc, 8, deadline)
            body = None
            if head is not None:
                body = self._read_exact(proc, int.from_bytes(head, "big"), deadline)
        finally:
            with self._lock:
                self._readers -= 1
            self._release(proc)
        if body is None:
            return None
        try:
            value = marshal.loads(body)
        except (ValueError, EOFError, TypeError):
            return None
        return value if isinstance(value, dict) else None

    # -- end ----------------------------------------------------------------------------------

    def close(self) -> None:
        """Kill the sandbox (pid namespace, cgroup, tmpfs mounts all go with it)."""
        with self._lock:
            proc, self.proc = self.proc, None
            cgroup, self.cgroup = self.cgroup, None
        if proc is not None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            if cgroup is not None:
                cgroup.kill_all()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            self._release(proc)
        if cgroup is not None:
            cgroup.remove()

    def _release(self, proc: subprocess.Popen[bytes]) -> None:
        """Close ``proc``'s stdout once closed and no reader uses it: a reader in another
        thread must never see its fd closed (and reused by another file) under it."""
        with self._lock:
            if self.proc is not None or self._readers:
                return
        if proc.stdout is not None:
            with contextlib.suppress(OSError):
                proc.stdout.close()
