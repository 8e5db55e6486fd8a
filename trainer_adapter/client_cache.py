"""One :class:`~referee.client.sdk.RefereeClient` per server, API key and process, for reward
functions that a trainer calls as plain functions (veRL's ``compute_score``): the HTTP
connections are kept between calls, and a process forked from one that had a client (veRL's
reward workers are Ray processes) gets a client of its own, never the parent's sockets."""

from __future__ import annotations

import os
import threading

from referee.client.sdk import RefereeClient

__all__ = ["ClientCache"]


class ClientCache:
    """``cache.get(url, api_key)``: the client for that server and key in this process;
    ``cache.reset()`` closes them all (tests; a long-lived process that changes servers)."""

    def __init__(self, max_retries: int) -> None:
        self.max_retries = max_retries
        self._clients: dict[tuple[str, str | None, int], RefereeClient] = {}
        self._lock = threading.Lock()

    def get(self, url: str, api_key: str | None = None) -> RefereeClient:
        key = (url, api_key, os.getpid())
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = RefereeClient(url, api_key=api_key, max_retries=self.max_retries)
                self._clients[key] = client
            return client

    def reset(self) -> None:
        with self._lock:
            for client in self._clients.values():
                client.close()
            self._clients.clear()
