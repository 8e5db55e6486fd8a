"""POSIX rlimits of a run: the second line of defence behind cgroups and namespaces.

``rlimits_for(limits, ...)`` turns ``Limits`` into ``(resource, soft, hard)`` triples;
``apply_rlimits(pid, ...)`` sets them on another process with ``prlimit(2)`` (the bwrap backend
does this while the sandbox's first process is parked before it runs anything), and
``preexec_rlimits(...)`` returns a function for ``subprocess``'s ``preexec_fn`` (the unsafe local
backend only).

RLIMIT_AS is only used when no memory cgroup exists: address-space limits break runtimes that
reserve large virtual ranges (JVM, Go, V8) and turn an out-of-memory into an ordinary runtime
error. RLIMIT_NPROC counts every process of a uid on the machine, so it is only used when no pids
cgroup exists.
"""

from __future__ import annotations

import math
import resource
from collections.abc import Callable

from referee.sandbox.models import MIB, Limits

__all__ = ["Rlimit", "apply_rlimits", "preexec_rlimits", "rlimits_for"]

Rlimit = tuple[int, int, int]

_MAX_STACK = 256 * MIB


def rlimits_for(
    limits: Limits, *, address_space: bool = False, nproc: bool = False
) -> list[Rlimit]:
    """The rlimits of a run with these limits."""
    cpu = max(1, math.ceil(limits.effective_cpu_time_s))
    fsize = limits.file_size_mb * MIB
    stack = min(limits.memory_mb * MIB, _MAX_STACK)
    out: list[Rlimit] = [
        (resource.RLIMIT_CPU, cpu, cpu + 1),
        (resource.RLIMIT_FSIZE, fsize, fsize),
        (resource.RLIMIT_NOFILE, limits.open_files, limits.open_files),
        (resource.RLIMIT_CORE, 0, 0),
        (resource.RLIMIT_STACK, stack, stack),
    ]
    if address_space:
        mem = limits.memory_mb * MIB
        out.append((resource.RLIMIT_AS, mem, mem))
    if nproc:
        out.append((resource.RLIMIT_NPROC, limits.max_processes, limits.max_processes))
    return out


def apply_rlimits(pid: int, rlimits: list[Rlimit]) -> None:
    """Set rlimits on process ``pid`` (needs CAP_SYS_RESOURCE over it, i.e. root here)."""
    for res, soft, hard in rlimits:
        resource.prlimit(pid, res, (soft, hard))


def preexec_rlimits(rlimits: list[Rlimit]) -> Callable[[], None]:
    """A ``preexec_fn`` that sets these rlimits in the child before it execs."""
    setrlimit = resource.setrlimit

    def _preexec() -> None:
        for res, soft, hard in rlimits:
            setrlimit(res, (soft, hard))

    return _preexec
