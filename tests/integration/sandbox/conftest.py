"""Fixtures for the sandbox integration tests: the real bubblewrap backend, probed once.

bubblewrap is required here (CI installs it); a missing bwrap fails these tests rather than
skipping them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.sandbox import BwrapBackend, Limits


@pytest.fixture(scope="session")
def backend() -> BwrapBackend:
    return BwrapBackend.create()


@pytest.fixture(scope="session")
def fast_limits() -> Limits:
    return Limits(wall_time_s=5.0, memory_mb=256, max_processes=32)


def sandbox_pid_namespaces() -> set[str]:
    """pid-namespace links of every live host process outside our own pid namespace.

    Zombies are dead: a sandbox's init, killed with its namespace, waits as a zombie until the
    host's init reaps it."""
    own = os.readlink("/proc/self/ns/pid")
    found: set[str] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ns = os.readlink(entry / "ns" / "pid")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state in ("Z", "X"):
            continue
        if ns != own:
            found.add(ns)
    return found


CANARY = "referee-leak-canary"


def _is_canary(proc_dir: Path) -> bool:
    try:
        return (proc_dir / "cmdline").read_bytes().startswith(CANARY.encode())
    except OSError:
        return False


@pytest.fixture()
def no_leftovers(backend: BwrapBackend) -> Iterator[None]:
    """Asserts that a test leaves no sandboxed process and no run cgroup behind."""
    before = sandbox_pid_namespaces()
    yield
    # A pid namespace's last processes can take a few ms to be reaped after its init died.
    deadline = time.monotonic() + 2.0
    while (leaked := sandbox_pid_namespaces() - before) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not leaked, f"sandboxed processes survived the run: {leaked}"
    canaries = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _is_canary(p)]
    assert not canaries, f"canary processes survived the run: {canaries}"
    if backend.cgroups is not None:
        for parent in getattr(backend.cgroups, "parents", {}).values():
            mine = f"run-{os.getpid()}-"
            runs = [p.name for p in parent.iterdir() if p.name.startswith(mine)]
            assert not runs, f"run cgroups left behind: {runs}"
