"""Single runs (/v1/sandbox/run, /run_code) wait their turn for a sandbox slot on a real server
with the real bubblewrap sandbox: callers past the slots queue instead of being turned away, a
run that waits too long is 504 with Retry-After, a full queue is 503 with Retry-After, and a
client that hangs up takes its run out of the queue."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

Server = Any
SLEEP = "import time\ntime.sleep({s})\nprint('woke')"


@pytest.fixture(scope="module")
def short_wait(referee_server_factory: Any, tmp_path_factory: pytest.TempPathFactory) -> Server:
    """One slot; a single run waits at most 0.5 s for it."""
    env = {"REFEREE_SANDBOX_SLOTS": "1", "REFEREE_SANDBOX_QUEUE_WAIT_S": "0.5"}
    return referee_server_factory(tmp_path_factory.mktemp("short-wait"), env, "short-wait")


@pytest.fixture(scope="module")
def one_waiting(
    referee_server_factory: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """One slot and room for one waiting run; the wait is long (the tests never reach it)."""
    env = {
        "REFEREE_SANDBOX_SLOTS": "1",
        "REFEREE_SANDBOX_QUEUE_WAIT_S": "120",
        "REFEREE_SANDBOX_QUEUE_DEPTH": "1",
    }
    srv = referee_server_factory(tmp_path_factory.mktemp("one-waiting"), env, "one-waiting")
    yield srv
    assert "Traceback" not in srv.log.read_text(errors="replace"), srv.log_tail()


def in_flight(server: Server) -> int:
    return int(httpx.get(server.url + "/readyz", timeout=30).json()["sandbox_in_flight"])


def wait_in_flight(server: Server, n: int) -> None:
    deadline = time.monotonic() + 60
    while in_flight(server) != n:
        assert time.monotonic() < deadline, f"never {n} runs in flight"
        time.sleep(0.02)


def post_run(server: Server, code: str, time_s: float = 5.0) -> httpx.Response:
    body = {"code": code, "language": "python", "limits": {"time_s": time_s}}
    return httpx.post(server.url + "/v1/sandbox/run", json=body, timeout=180)


def start_blocker(server: Server, seconds: float) -> tuple[threading.Thread, list[int]]:
    """A run that holds the one slot for ``seconds``; returns once it is in flight."""
    statuses: list[int] = []
    thread = threading.Thread(
        target=lambda: statuses.append(post_run(server, SLEEP.format(s=seconds), 60).status_code)
    )
    thread.start()
    wait_in_flight(server, 1)
    return thread, statuses


def test_callers_past_the_slots_wait_their_turn(
    referee_server_factory: Any, tmp_path: Path
) -> None:
    # 16 callers on 1 slot, each a run at once (as veRL sends them): every one is served.
    env = {"REFEREE_SANDBOX_SLOTS": "1", "REFEREE_SANDBOX_QUEUE_WAIT_S": "120"}
    srv = referee_server_factory(tmp_path, env, "deep-queue")
    codes = [f"print({i} * {i})" for i in range(16)]
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda c: post_run(srv, c), codes))
    assert [a.status_code for a in answers] == [200] * 16
    assert [a.json()["stdout"] for a in answers] == [f"{i * i}\n" for i in range(16)]
    compat = [{"code": f"print({i} + 1)", "language": "python"} for i in range(16)]
    with ThreadPoolExecutor(16) as pool:
        runs = list(
            pool.map(lambda b: httpx.post(srv.url + "/run_code", json=b, timeout=180), compat)
        )
    assert [r.status_code for r in runs] == [200] * 16
    assert [r.json()["run_result"]["stdout"] for r in runs] == [f"{i + 1}\n" for i in range(16)]


def test_a_run_that_waits_too_long_is_504_with_retry_after(short_wait: Server) -> None:
    thread, statuses = start_blocker(short_wait, 5)
    late = post_run(short_wait, "print(1)")
    compat = httpx.post(short_wait.url + "/run_code", json={"code": "print(1)"}, timeout=60)
    thread.join()
    assert statuses == [200]
    for answer in (late, compat):
        assert answer.status_code == 504, answer.text
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert answer.json()["type"] == "gateway-timeout"
        assert "REFEREE_SANDBOX_QUEUE_WAIT_S" in answer.json()["detail"]
        assert int(answer.headers["retry-after"]) >= 1
    # the runs that timed out left the queue: nothing is left in flight, the slot serves again
    wait_in_flight(short_wait, 0)
    assert post_run(short_wait, "print(2)").json()["stdout"] == "2\n"


def test_a_full_queue_is_503_with_retry_after(one_waiting: Server) -> None:
    thread, statuses = start_blocker(one_waiting, 4)
    queued: list[httpx.Response] = []
    waiter = threading.Thread(target=lambda: queued.append(post_run(one_waiting, "print(3)")))
    waiter.start()
    wait_in_flight(one_waiting, 2)
    full = post_run(one_waiting, "print(4)")
    assert full.status_code == 503, full.text
    assert full.json()["type"] == "service-unavailable"
    assert "REFEREE_SANDBOX_QUEUE_DEPTH" in full.json()["detail"]
    assert int(full.headers["retry-after"]) >= 1
    thread.join()
    waiter.join()
    assert statuses == [200]
    assert [q.status_code for q in queued] == [200] and queued[0].json()["stdout"] == "3\n"


def hang_up_after_sending(server: Server, path: str, body: bytes) -> None:
    """POST ``body`` on a raw socket, then close it without reading the answer."""
    parts = urlsplit(server.url)
    assert parts.hostname is not None and parts.port is not None
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        sock.sendall(head.encode() + body)
        # the server has taken the request in once two runs are in flight
        wait_in_flight(server, 2)


@pytest.mark.parametrize("path", ["/v1/sandbox/run", "/run_code"])
def test_a_client_that_hangs_up_leaves_the_queue(one_waiting: Server, path: str) -> None:
    thread, statuses = start_blocker(one_waiting, 10)
    hang_up_after_sending(one_waiting, path, b'{"code": "print(5)", "language": "python"}')
    # The hung-up run leaves the queue while the blocker still holds the slot: the count
    # drops back to 1 before the blocker's answer arrives, and the queue has room again.
    while in_flight(one_waiting) != 1:
        assert thread.is_alive(), "the hung-up run stayed queued until the slot came free"
        time.sleep(0.02)
    assert thread.is_alive()
    queued: list[httpx.Response] = []
    waiter = threading.Thread(target=lambda: queued.append(post_run(one_waiting, "print(6)")))
    waiter.start()
    wait_in_flight(one_waiting, 2)  # taken into the queue, not refused with 503
    thread.join()
    waiter.join()
    assert statuses == [200]
    assert [q.status_code for q in queued] == [200] and queued[0].json()["stdout"] == "6\n"
    wait_in_flight(one_waiting, 0)
