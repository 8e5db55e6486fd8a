"""Per-run control groups: memory, pids and CPU limits, OOM detection, kill-all, removal.

Both layouts are supported:

* cgroup v1 (separate hierarchies ``/sys/fs/cgroup/{memory,pids,cpu,cpuacct}``): one child group
  per run in each hierarchy, under ``referee/``;
* cgroup v2 (unified): one child group per run under a ``referee.sandbox`` group whose
  ``cgroup.subtree_control`` enables memory, pids and cpu.

``detect_cgroups()`` returns ``None`` when neither is usable (not root, read-only
cgroupfs, controllers missing); runs then rely on namespaces and rlimits alone.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Protocol

from referee.sandbox.models import MIB, Limits

__all__ = [
    "CgroupManager",
    "CgroupV1Manager",
    "CgroupV2Manager",
    "RunCgroup",
    "detect_cgroups",
]

_V1_CONTROLLERS = ("memory", "pids", "cpu", "cpuacct")
_CPU_PERIOD_US = 100_000
_counter = itertools.count()


def _write(path: Path, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _read_int(path: Path) -> int | None:
    text = _read(path).strip()
    try:
        return int(text)
    except ValueError:
        return None


def _kill_pids(procs_files: list[Path]) -> None:
    """SIGKILL every process listed until the groups are empty (forks racing the kill too)."""
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        pids = {int(p) for f in procs_files for p in _read(f).split() if p.strip()}
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.002)


def _rmdir(path: Path) -> None:
    deadline = time.monotonic() + 2.0
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.002)


def _sweep_stale(parent: Path) -> None:
    """Remove run groups left by processes that died mid-run (their pid is in the name)."""
    with contextlib.suppress(OSError):
        for child in parent.iterdir():
            parts = child.name.split("-")
            if len(parts) < 2 or parts[0] != "run" or not parts[1].isdigit():
                continue
            if not Path(f"/proc/{parts[1]}").exists():
                with contextlib.suppress(OSError):
                    child.rmdir()


def _run_name() -> str:
    return f"run-{os.getpid()}-{next(_counter)}-{uuid.uuid4().hex[:8]}"


class RunCgroup(Protocol):
    """The cgroup of one run."""

    def add(self, pid: int) -> None: ...
    def oom_kills(self) -> int: ...
    def oom_killed(self) -> bool: ...
    def memory_peak_bytes(self) -> int | None: ...
    def cpu_time_s(self) -> float | None: ...
    def kill_all(self) -> None: ...
    def remove(self) -> None: ...


class CgroupManager(Protocol):
    version: int

    def create(self, limits: Limits) -> RunCgroup: ...


def detect_cgroups(root: Path = Path("/sys/fs/cgroup")) -> CgroupManager | None:
    """The usable cgroup layout of this machine (v2 preferred), or ``None``."""
    v2 = CgroupV2Manager.probe(root)
    if v2 is not None:
        return v2
    return CgroupV1Manager.probe(root)


class _V1Run:
    def __init__(self, dirs: dict[str, Path]) -> None:
        self.dirs = dirs

    def add(self, pid: int) -> None:
        for d in self.dirs.values():
            _write(d / "cgroup.procs", str(pid))

    def oom_kills(self) -> int:
        """OOM kills in the group so far (a persistent interpreter compares two readings)."""
        for line in _read(self.dirs["memory"] / "memory.oom_control").splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value or 0)
        # Old kernels without the oom_kill counter: fall back to failcnt.
        return _read_int(self.dirs["memory"] / "memory.failcnt") or 0

    def oom_killed(self) -> bool:
        return self.oom_kills() > 0

    def memory_peak_bytes(self) -> int | None:
        return _read_int(self.dirs["memory"] / "memory.max_usage_in_bytes")

    def cpu_time_s(self) -> float | None:
        ns = _read_int(self.dirs["cpuacct"] / "cpuacct.usage")
        return None if ns is None else ns / 1e9

    def kill_all(self) -> None:
        _kill_pids([d / "cgroup.procs" for d in self.dirs.values()])

    def remove(self) -> None:
        self.kill_all()
        for d in self.dirs.values():
            _rmdir(d)


class CgroupV1Manager:
    """cgroup v1: one group per run in each of the memory, pids, cpu and cpuacct hierarchies."""

    version = 1

    def __init__(self, parents: dict[str, Path]) -> None:
        self.parents = parents

    @classmethod
    def probe(cls, root: Path) -> CgroupV1Manager | None:
        parents: dict[str, Path] = {}
        for ctrl in _V1_CONTROLLERS:
            hier = root / ctrl
            if not (hier / "cgroup.procs").exists():
                return None
            parent = hier / "referee"
            try:
                parent.mkdir(exist_ok=True)
            except OSError:
                return None
            if not os.access(parent, os.W_OK):
                return None
            _sweep_stale(parent)
            parents[ctrl] = parent
        return cls(parents)

    def create(self, limits: Limits) -> _V1Run:
        name = _run_name()
        dirs: dict[str, Path] = {}
        try:
            for ctrl, parent in self.parents.items():
                d = parent / name
                d.mkdir()
                dirs[ctrl] = d
            mem = str(limits.memory_mb * MIB)
            _write(dirs["memory"] / "memory.limit_in_bytes", mem)
            memsw = dirs["memory"] / "memory.memsw.limit_in_bytes"
            if memsw.exists():
                _write(memsw, mem)  # no swapping past the limit
            with contextlib.suppress(OSError):
                _write(dirs["memory"] / "memory.swappiness", "0")
            _write(dirs["pids"] / "pids.max", str(limits.max_processes))
            _write(dirs["cpu"] / "cpu.cfs_period_us", str(_CPU_PERIOD_US))
            _write(dirs["cpu"] / "cpu.cfs_quota_us", str(int(limits.cpus * _CPU_PERIOD_US)))
        except OSError:
            for d in dirs.values():
                _rmdir(d)
            raise
        return _V1Run(dirs)


class _V2Run:
    def __init__(self, path: Path) -> None:
        self.path = path

    def add(self, pid: int) -> None:
        _write(self.path / "cgroup.procs", str(pid))

    def oom_kills(self) -> int:
        """OOM kills in the group so far (a persistent interpreter compares two readings)."""
        for line in _read(self.path / "memory.events").splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value or 0)
        return 0

    def oom_killed(self) -> bool:
        return self.oom_kills() > 0

    def memory_peak_bytes(self) -> int | None:
        return _read_int(self.path / "memory.peak")

    def cpu_time_s(self) -> float | None:
        for line in _read(self.path / "cpu.stat").splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1e6
        return None

    def kill_all(self) -> None:
        kill_file = self.path / "cgroup.kill"
        if kill_file.exists():
            with contextlib.suppress(OSError):
                _write(kill_file, "1")
        _kill_pids([self.path / "cgroup.procs"])

    def remove(self) -> None:
        self.kill_all()
        _rmdir(self.path)


class CgroupV2Manager:
    """cgroup v2: one group per run under ``referee.sandbox`` with memory, pids and cpu on."""

    version = 2

    def __init__(self, parent: Path) -> None:
        self.parent = parent

    @classmethod
    def probe(cls, root: Path) -> CgroupV2Manager | None:
        controllers = set(_read(root / "cgroup.controllers").split())
        if not {"memory", "pids"} <= controllers:
            return None
        parent = root / "referee.sandbox"
        try:
            parent.mkdir(exist_ok=True)
            wanted = [c for c in ("memory", "pids", "cpu") if c in controllers]
            with contextlib.suppress(OSError):
                _write(root / "cgroup.subtree_control", " ".join(f"+{c}" for c in wanted))
            _write(parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in wanted))
        except OSError:
            return None
        if not {"memory", "pids"} <= set(_read(parent / "cgroup.subtree_control").split()):
            return None
        _sweep_stale(parent)
        return cls(parent)

    def create(self, limits: Limits) -> _V2Run:
        path = self.parent / _run_name()
        path.mkdir()
        try:
            _write(path / "memory.max", str(limits.memory_mb * MIB))
            with contextlib.suppress(OSError):
                _write(path / "memory.swap.max", "0")
            with contextlib.suppress(OSError):
                _write(path / "memory.oom.group", "1")
            _write(path / "pids.max", str(limits.max_processes))
            with contextlib.suppress(OSError):
                quota = int(limits.cpus * _CPU_PERIOD_US)
                _write(path / "cpu.max", f"{quota} {_CPU_PERIOD_US}")
        except OSError:
            _rmdir(path)
            raise
        return _V2Run(path)
