"""One ``httpx.Client`` per bench thread: the benches post from a thread pool, and a client (its
connection pool) is not shared between threads."""

from __future__ import annotations

import threading
from collections.abc import Callable

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
