"""The reward functions' client cache: one client per server and key, kept between calls, and
a forked process never reuses its parent's client (nor its sockets)."""

from __future__ import annotations

import os

from referee.trainer_adapter.client_cache import ClientCache


def test_one_client_per_server_and_key_until_reset() -> None:
    cache = ClientCache(max_retries=3)
    a = cache.get("http://127.0.0.1:9")
    assert cache.get("http://127.0.0.1:9") is a
    assert cache.get("http://127.0.0.1:9", "key") is not a
    assert cache.get("http://127.0.0.1:10") is not a
    cache.reset()
    assert cache.get("http://127.0.0.1:9") is not a


def test_a_forked_process_gets_a_client_of_its_own() -> None:
    cache = ClientCache(max_retries=3)
    parent = cache.get("http://127.0.0.1:9")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer whether it was handed the parent's client
        try:
            child = cache.get("http://127.0.0.1:9")
            again = cache.get("http://127.0.0.1:9")
            os.write(write, b"own" if child is not parent and again is child else b"shared")
        finally:
            os._exit(0)
    os.close(write)
    try:
        answer = os.read(read, 16)
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    assert answer == b"own"
    assert cache.get("http://127.0.0.1:9") is parent
    cache.reset()
