"""In-sandbox helpers shared by the sandbox supervisors (``batch_supervisor.py``,
``interpreter_supervisor.py``): the control-pipe frames, the guard, killing every other process,
emptying directories and removing System V IPC objects.

Not imported by the package and never run on the host: ``supervised.supervisor_source`` puts
this file's text in ``sys.modules["supervisor_common"]`` ahead of a supervisor's own text, and
the whole runs with ``python -I -S -B -c`` as a sandbox's first process (uid 65534). Frames on
the control pipes are an 8-byte big-endian length and ``marshal`` data. It imports only builtin
modules, so a process forked from a supervisor starts with no more state than a fresh
``python -I -S``.
"""

import marshal
import os
import signal
import time

__all__ = [
    "empty_dir",
    "guard",
    "kill_others",
    "others",
    "read_exact",
    "recv",
    "remove_sysv",
    "send",
    "set_dumpable",
    "sysv_left",
]


def guard(name: str) -> None:
    """Exit unless this is a sandbox's first process, not root.

    ``kill(-1)`` reaches every process this one may signal. That is the sandbox only when this
    is the first process of a fresh pid namespace (bwrap's init is pid 1) and not root; anywhere
    else (run by hand on a host, as root) it would be every process of the machine: refuse."""
    if os.getuid() == 0 or os.geteuid() == 0 or os.getpid() > 3:
        os.write(2, f"{name}: only runs as a sandbox's first process, not as root\n".encode())
        os._exit(70)


def set_dumpable(value: int) -> None:
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(4, value, 0, 0, 0)  # PR_SET_DUMPABLE


def read_exact(fd: int, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


def recv(fd: int) -> dict | None:  # type: ignore[type-arg]
    """The next request from the host, or None at the end of its stream."""
    try:
        size = int.from_bytes(read_exact(fd, 8), "big")
        return marshal.loads(read_exact(fd, size))  # type: ignore[no-any-return]
    except EOFError:
        return None


def send(fd: int, answer: dict) -> None:  # type: ignore[type-arg]
    data = marshal.dumps(answer)
    view = memoryview(len(data).to_bytes(8, "big") + data)
    while view:
        view = view[os.write(fd, view) :]


def others() -> list[int]:
    """Pids of the sandbox's processes but this one and bwrap's init."""
    me = os.getpid()
    return [int(n) for n in os.listdir("/proc") if n.isdigit() and int(n) not in (1, me)]


def kill_others() -> bool:
    """Kill every process of the sandbox but this one (and bwrap's init); True once none is left.

    ``kill(-1, SIGKILL)`` reaches all of them, daemons and double forks included; only ever
    called after ``guard``."""
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        while True:  # reap what was ours
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        if not others():
            return True
        time.sleep(0.002)
    return False


def empty_dir(path: str) -> None:
    """Remove everything in ``path`` (read-only subdirectories included), keep ``path``."""
    for entry in os.scandir(path):
        full = entry.path
        if entry.is_dir(follow_symlinks=False):
            os.chmod(full, 0o700)
            empty_dir(full)
            os.rmdir(full)
        else:
            os.unlink(full)


def sysv_left() -> bool:
    """Whether a System V IPC object (shared memory, message queue, semaphore) exists."""
    for kind in ("shm", "msg", "sem"):
        try:
            with open(f"/proc/sysvipc/{kind}", "rb") as f:
                if len(f.read().splitlines()) > 1:
                    return True
        except OSError:
            pass
    return False


def remove_sysv() -> None:
    """Remove System V IPC objects, in a helper child (ctypes stays out of this interpreter)."""
    pid = os.fork()
    if pid == 0:
        try:
            import ctypes

            libc = ctypes.CDLL(None)
            for kind, rm in (("shm", libc.shmctl), ("msg", libc.msgctl), ("sem", libc.semctl)):
                with open(f"/proc/sysvipc/{kind}", "rb") as f:
                    for line in f.read().splitlines()[1:]:
                        ident = int(line.split()[1])
                        rm(ident, 0, None) if kind != "sem" else rm(ident, 0, 0, None)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
