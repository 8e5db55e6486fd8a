"""A server's process tree read from ``/proc`` (Linux): the processes it started, below it, and
whether one is still alive. For the tests and the benchmark (bench/sessions.py, which loads this
file by its path) that check a server's sandboxes, and measure them, without psutil.

A plain module, not ``conftest``: a test that imports ``conftest`` gets whichever conftest of the
run came first on ``sys.path``."""

from __future__ import annotations

from pathlib import Path

__all__ = ["alive", "children", "descendants"]


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
