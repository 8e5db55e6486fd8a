"""The launcher of the tests and the benchmarks (``referee.services.launcher``): a server that
dies fails at once with its log, one that never answers is killed, a ready one is stopped."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from referee.services.launcher import (
    ServerFailed,
    free_port,
    free_ports,
    launch,
    start_redis,
    start_referee,
)


@pytest.mark.slow  # about 2 s: starts a server that dies
def test_a_server_that_dies_fails_at_once_with_its_log(tmp_path: Path) -> None:
    log = tmp_path / "bad.log"
    with pytest.raises(ServerFailed, match="exited with") as failed:
        start_referee({"REFEREE_MATH_WORKERS": "many"}, log=log, timeout_s=120)
    # the reason is in the message, from the server's own log
    assert "REFEREE_MATH_WORKERS" in str(failed.value) or "math_workers" in str(failed.value)
    assert log.exists()


@pytest.mark.slow  # about 1 s: waits out a start timeout
def test_a_server_that_never_answers_is_killed(tmp_path: Path) -> None:
    argv = [sys.executable, "-c", "import time; print('starting', flush=True); time.sleep(600)"]
    with pytest.raises(ServerFailed, match="did not answer in 1 s") as failed:
        launch(argv, free_port(), lambda _: False, log=tmp_path / "mute.log", timeout_s=1.0)
    assert "starting" in str(failed.value)
    assert failed.value.process.returncode is not None  # ended and reaped, not left running


def test_a_redis_of_its_own_answers_and_stops(tmp_path: Path) -> None:
    with start_redis(tmp_path) as redis_server:
        assert redis_server.url == f"redis://127.0.0.1:{redis_server.port}/0"
        with socket.create_connection(("127.0.0.1", redis_server.port), timeout=5) as sock:
            sock.sendall(b"SET k v\r\nGET k\r\n")
            answer = b""
            while not answer.endswith(b"v\r\n"):
                chunk = sock.recv(64)
                assert chunk, answer
                answer += chunk
        assert answer == b"+OK\r\n$1\r\nv\r\n"
    assert redis_server.process.poll() is not None


def test_free_ports_are_distinct_and_never_handed_out_twice() -> None:
    """A stack told its ports before any service binds one (compose, a server started later)
    must not get the same port twice: the kernel hands the port it has just released out again."""
    ports = free_ports(150) + [free_port() for _ in range(150)]
    assert len(set(ports)) == len(ports)
    for port in ports[:5]:  # and they are free
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", port))
