"""A server's process tree read from ``/proc`` (Linux): the processes it started, below it,
whether one is still alive, and how much memory a process holds (now, and at its peak while a
block runs). For the tests and the benchmarks (bench/sessions.py and bench/reliability.py, which
load this file by its path: ``bench.clients.load_proc_tree``) that check a server's sandboxes or
its memory, and measure them, without psutil.

A plain module, not ``conftest``: a test that imports ``conftest`` gets whichever conftest of the
run came first on ``sys.path``."""

from __future__ import annotations

import threading
import time
from pathlib import Path

__all__ = ["PeakRss", "alive", "children", "descendants", "rss_mb"]


def _stat(pid: int | str) -> tuple[str, str, int] | None:
    """``(comm, state, ppid)`` of a process, or None when it is gone. ``comm`` is read up to the
    last ``)``: a program may put spaces and parentheses in its name."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
    return stat[stat.index("(") + 1 : stat.rindex(")")], state, int(ppid)


def _tree() -> dict[int, list[tuple[int, str]]]:
    """Every process's children, ``(pid, comm)``, from one pass over ``/proc``."""
    tree: dict[int, list[tuple[int, str]]] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and (stat := _stat(proc.name)) is not None:
            comm, _, ppid = stat
            tree.setdefault(ppid, []).append((int(proc.name), comm))
    return tree


def children(pid: int, comm: str | None = None) -> list[int]:
    """The processes whose parent is ``pid`` (named ``comm`` only, if given: ``"bwrap"``)."""
    return [kid for kid, name in _tree().get(pid, []) if comm is None or name == comm]


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``: its children, theirs, and so on."""
    tree = _tree()
    found, todo = [], [pid]
    while todo:
        kids = [kid for kid, _ in tree.get(todo.pop(), [])]
        found += kids
        todo += kids
    return found


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (dead, waiting for its parent to reap it)."""
    stat = _stat(pid)
    return stat is not None and stat[1] != "Z"


def rss_mb(pid: int) -> float:
    """The resident memory of process ``pid`` (``VmRSS``), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


class PeakRss:
    """``with PeakRss(pid, every_s) as rss: ...``: ``rss.before``, the resident memory (MB) of
    process ``pid`` on entering, and ``rss.peak``, the most of it seen while the block ran
    (sampled every ``every_s`` by a thread, stopped and joined when the block ends)."""

    def __init__(self, pid: int, every_s: float) -> None:
        self.pid = pid
        self.every_s = every_s
        self._done = threading.Event()
        self._sampler = threading.Thread(target=self._sample)

    def __enter__(self) -> PeakRss:
        self.before = self.peak = rss_mb(self.pid)
        self._sampler.start()
        return self

    def _sample(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, rss_mb(self.pid))
            time.sleep(self.every_s)

    def __exit__(self, *exc_info: object) -> None:
        self._done.set()
        self._sampler.join()
