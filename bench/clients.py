"""What the benches share: one ``httpx.Client`` per bench thread (they post from a thread pool,
and a client's connection pool is not shared between threads), writing a report (with or
without its figures as JSON), and the tests' ``/proc`` readings (tests/proc_tree.py)."""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx


def thread_clients(url: str, timeout: float) -> Callable[[], httpx.Client]:
    """A function that gives the calling thread its own client for ``url``, made on first use."""
    local = threading.local()

    def client() -> httpx.Client:
        if not hasattr(local, "client"):
            local.client = httpx.Client(base_url=url, timeout=timeout)
        made: httpx.Client = local.client
        return made

    return client


def publish(out: Path, name: str, text: str) -> None:
    """Print a bench's report and write it to ``out/name`` (the folder made if need be)."""
    print(text)
    out.mkdir(parents=True, exist_ok=True)
    (out / name).write_text(text + "\n")


def publish_with_figures(out: Path, stem: str, figures: dict[str, Any], text: str) -> None:
    """Write a bench's figures to ``out/stem.json`` and its report, as it is, to ``out/stem.md``
    (the folder made if need be), then print the report."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(figures, indent=2) + "\n")
    (out / f"{stem}.md").write_text(text)
    print(text)


def load_proc_tree() -> Any:
    """tests/proc_tree.py, the tests' reading of a server's processes in ``/proc`` (its process
    tree, a process's memory), loaded by its path: tests/ is not a package."""
    path = Path(__file__).resolve().parents[1] / "tests" / "proc_tree.py"
    spec = importlib.util.spec_from_file_location("proc_tree", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
