"""Sessions across processes, on real servers: uvicorn with two worker processes (a call for a
session reaches whichever worker the kernel gives the connection, and is passed to the one that
holds the session), an api whose sessions live on a sandbox node (and a second api replica that
never saw the session), and the loss of the holder: a killed worker, a stopped node."""

from __future__ import annotations

import os
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from proc_tree import alive, children, descendants
from server_env import TEST_SERVER_ENV

from referee.client import RefereeClient
from referee.client.errors import ServiceUnavailable
from referee.services.launcher import Server, start_uvicorn
from referee.services.sessions.router import owner_of

TASK = {"prompt": "What is 41 + 1?", "reference": "42"}
KEY = "routing-test-key"


def _uds(sock: Path) -> httpx.Client:
    return httpx.Client(
        base_url="http://referee",
        transport=httpx.HTTPTransport(uds=str(sock)),
        headers={"authorization": f"Bearer {KEY}"},
        timeout=120,
    )


def _listening_pid(sock: Path, candidates: list[int]) -> int:
    """The process among ``candidates`` that holds the listening Unix socket ``sock``."""
    inodes = set()
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 8 and parts[7] == str(sock):
            inodes.add(parts[6])
    for pid in candidates:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                return pid
    raise AssertionError(f"no process of {candidates} listens on {sock}")


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    """referee under ``uvicorn --workers 2``, its sibling sockets in a folder of its own."""
    tmp = tmp_path_factory.mktemp("two-workers")
    sockets = Path(tempfile.mkdtemp(prefix="rs-"))  # short: a socket path has 107 bytes
    env = {
        "REFEREE_MATH_WORKERS": "1",
        "REFEREE_MATH_TIMEOUT_S": "2",
        "REFEREE_API_KEYS": KEY,
        "REFEREE_SESSIONS_SOCKET_DIR": str(sockets),
        "REFEREE_SESSIONS_PYTHON_CALL_S": "1.5",
        "REFEREE_SESSIONS_PYTHON_OUTPUT_KB": "1",
    }
    server = start_uvicorn(
        "referee.services.app:create_app",
        env=env,
        log=tmp / "server.log",
        cwd=tmp,
        name="two-workers",
        extra_args=["--workers", "2"],
        group=True,
        timeout_s=120,
    )
    for _ in range(600):  # both workers up: each has put its socket there
        if len(list(sockets.glob("*.sock"))) == 2:
            break
        time.sleep(0.1)
    yield server, sockets
    server.stop()
    assert "Traceback" not in server.log_tail(10**7), server.log_tail()


def test_a_session_is_served_by_whichever_worker_the_call_reaches(
    two_workers: tuple[Server, Path],
) -> None:
    server, sockets = two_workers
    a, b = sorted(sockets.glob("*.sock"))
    with _uds(a) as on_a, _uds(b) as on_b:
        opened = on_a.post("/v1/sessions", json={"env": "python", "task": TASK}).json()
        sid = opened["session_id"]
        assert owner_of(sid) == a.stem == opened["info"]["node"]
        # through the other worker: passed to the holder, the interpreter's state kept
        r = on_b.post(f"/v1/sessions/{sid}/tools/python", json={"arguments": {"code": "x = 41"}})
        assert r.status_code == 200 and r.json()["output"] == "(no output)\n", r.text
        assert on_b.get("/v1/sessions/environments").json()["node"] == b.stem
        # errors pass through unchanged: an unknown tool is text, a reused request id a 409
        bad = on_b.post(f"/v1/sessions/{sid}/tools/nope", json={"arguments": {}}).json()
        assert "unknown tool" in bad["output"].lower() or "no tool" in bad["output"].lower()
        body = {"arguments": {"code": "y = 1"}, "request_id": "r1"}
        assert on_b.post(f"/v1/sessions/{sid}/tools/python", json=body).status_code == 200
        body["arguments"] = {"code": "y = 2"}
        assert on_b.post(f"/v1/sessions/{sid}/tools/python", json=body).status_code == 409
    # over TCP, a new connection each time: whichever worker accepts it answers alike
    client = RefereeClient(server.url, api_key=KEY, max_retries=0)
    try:
        for k in range(6):
            with RefereeClient(server.url, api_key=KEY, max_retries=0) as fresh:
                out = fresh.session_tool(sid, "python", {"code": f"x + 1 + {k} - {k}"})
            assert out.output == "42\n"
        step = client.session_step(sid, "so \\boxed{42}")
        assert step.terminated and step.reward == 1.0
        reward = client.session_verify(sid)
        assert reward.valid and reward.score == 1.0
        assert client.session(sid).state == "done"
        assert client.close_session(sid).state == "closed"
        missing = httpx.get(
            f"{server.url}/v1/sessions/s-{'0' * 32}",
            headers={"authorization": f"Bearer {KEY}"},
            timeout=30,
        )
        assert missing.status_code == 404, missing.text
    finally:
        client.close()


def test_the_python_limits_are_the_server_s_settings(two_workers: tuple[Server, Path]) -> None:
    server, _ = two_workers
    with RefereeClient(server.url, api_key=KEY, max_retries=0) as client:
        sid = client.open_session("python", TASK).session_id
        loud = client.session_tool(sid, "python", {"code": "print('x' * 5000)"})
        assert loud.output.startswith("x" * 1024) and "x" * 1025 not in loud.output
        assert "[output truncated]" in loud.output
        spin = client.session_tool(sid, "python", {"code": "n = 7\nwhile True: pass"})
        assert spin.info["status"] == "timeout", spin
        assert "time limit of 1.5 s" in spin.output, spin
        assert client.session_tool(sid, "python", {"code": "n"}).output == "7\n"
        client.close_session(sid)


def test_a_killed_worker_loses_its_sessions_and_their_sandboxes(
    two_workers: tuple[Server, Path],
) -> None:
    server, sockets = two_workers
    a, b = sorted(sockets.glob("*.sock"))
    holder = _listening_pid(a, children(server.process.pid))
    with _uds(a) as on_a, _uds(b) as on_b:
        sid = on_a.post("/v1/sessions", json={"env": "python", "task": TASK}).json()["session_id"]
        assert (
            on_a.post(
                f"/v1/sessions/{sid}/tools/python", json={"arguments": {"code": "x = 1"}}
            ).status_code
            == 200
        )
        sandboxes = descendants(holder)
        assert sandboxes  # the session's interpreter
        os.kill(holder, signal.SIGKILL)
        for _ in range(300):
            if not any(alive(p) for p in [holder, *sandboxes]):
                break
            time.sleep(0.1)
        assert not [p for p in [holder, *sandboxes] if alive(p)], "sandboxes outlived their holder"
        reward = on_b.post(f"/v1/sessions/{sid}/verify", json={}).json()
        assert reward["valid"] is False and reward["details"]["outcome"] == "session_lost"
        assert "is gone" in reward["details"]["reason"]
        tool = on_b.post(f"/v1/sessions/{sid}/tools/python", json={"arguments": {"code": "x"}})
        assert tool.status_code == 200 and tool.json()["done"] is True
        assert tool.json()["info"]["error"] == "session_lost"
        state = on_b.get(f"/v1/sessions/{sid}")
        assert state.status_code == 200 and state.json()["state"] == "closed", state.text
        assert "is gone" in state.json()["reason"]
        assert not a.exists()  # the dead socket was put away


# -- sandbox nodes ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def node_and_api(
    tmp_path_factory: pytest.TempPathFactory, referee_server_factory: Any
) -> Iterator[tuple[Server, Server, Server]]:
    """A sandbox node (bubblewrap, its own key, 2 sessions at most) and two api replicas whose
    programs, and so sessions, run there."""
    tmp = tmp_path_factory.mktemp("nodes")
    node = referee_server_factory(
        tmp, {"REFEREE_API_KEYS": "node-key", "REFEREE_SESSIONS_MAX_LIVE": "2"}, "node"
    )
    remote = {
        "REFEREE_SANDBOX_BACKEND": "remote",
        "REFEREE_SANDBOX_URL": node.url,
        "REFEREE_SANDBOX_API_KEY": "node-key",
        "REFEREE_SANDBOX_REMOTE_RETRY_S": "1",
    }
    api = referee_server_factory(tmp, remote, "api")
    replica = referee_server_factory(tmp, remote, "replica")
    yield node, api, replica


def test_sessions_of_an_api_live_on_its_sandbox_node(
    node_and_api: tuple[Server, Server, Server],
) -> None:
    node, api, replica = node_and_api
    with RefereeClient(api.url, max_retries=0) as client:
        assert client.session_environments().node is None  # this api holds none itself
        opened = client.open_session("python", TASK)
        sid = opened.session_id
        node_tag = httpx.get(
            f"{node.url}/v1/sessions/environments",
            headers={"authorization": "Bearer node-key"},
            timeout=30,
        ).json()["node"]
        assert owner_of(sid) == node_tag
        assert client.session_tool(sid, "python", {"code": "x = 41"}).output == "(no output)\n"
        # a replica that never saw the session finds it on the node
        with RefereeClient(replica.url, max_retries=0) as other:
            assert other.session_tool(sid, "python", {"code": "x + 1"}).output == "42\n"
        # the node's limit reaches the caller as its 503 and Retry-After
        second = client.open_session("procedural", {"task": "basic_arithmetic"}, seed=1)
        with pytest.raises(ServiceUnavailable) as full:
            client.open_session("procedural", {"task": "basic_arithmetic"}, seed=2)
        assert full.value.retry_after_s is not None and full.value.retry_after_s >= 1
        client.close_session(second.session_id)
        reward = client.session_verify(sid, "\\boxed{42}")
        assert reward.valid and reward.score == 1.0
        client.close_session(sid)


def test_a_lost_node_ends_its_sessions_with_valid_false(
    node_and_api: tuple[Server, Server, Server],
) -> None:
    node, api, _ = node_and_api
    with RefereeClient(api.url, max_retries=0) as client:
        sid = client.open_session("python", TASK).session_id
        assert client.session_tool(sid, "python", {"code": "x = 1"}).output == "(no output)\n"
        node.stop()
        reward = client.session_verify(sid, "\\boxed{42}")
        assert reward.valid is False and reward.details["outcome"] == "session_lost"
        assert node.url in reward.details["reason"]
        step = client.session_step(sid, "\\boxed{42}")
        assert step.truncated and step.info["error"] == "session_lost"
        assert client.session(sid).state == "closed"
        with pytest.raises(ServiceUnavailable, match="no sandbox node answers"):
            client.open_session("python", TASK)


def test_a_node_restarted_on_its_url_ends_the_sessions_it_held(tmp_path: Path) -> None:
    """The node comes back at the same address, as a new process that never held the session
    (it answers 404): the api tells that from an unknown id by the node's tag, and the session
    ends with ``valid: false`` saying the node restarted."""
    from referee.services.launcher import free_port, start_referee

    port = free_port()
    node_env = {**TEST_SERVER_ENV, "REFEREE_API_KEYS": "node-key"}

    def start_node(name: str) -> Server:
        return start_uvicorn(
            "referee.services.app:create_app",
            env=node_env,
            port=port,
            log=tmp_path / f"{name}.log",
            cwd=tmp_path,
            name=name,
        )

    node = start_node("node")
    remote = {
        **TEST_SERVER_ENV,
        "REFEREE_SANDBOX_BACKEND": "remote",
        "REFEREE_SANDBOX_URL": node.url,
        "REFEREE_SANDBOX_API_KEY": "node-key",
        "REFEREE_SANDBOX_REMOTE_RETRY_S": "1",
    }
    api = start_referee(remote, log=tmp_path / "api.log", cwd=tmp_path, name="api")
    again: Server | None = None
    try:
        with RefereeClient(api.url, max_retries=0) as client:
            sid = client.open_session("python", TASK).session_id
            assert client.session_tool(sid, "python", {"code": "x = 1"}).output == "(no output)\n"
            node.stop()
            again = start_node("node-again")
            assert again.url == node.url
            reward = client.session_verify(sid, "\\boxed{42}")
            assert reward.valid is False and reward.details["outcome"] == "session_lost"
            assert "restarted" in reward.details["reason"], reward.details
            assert client.session(sid).state == "closed"
            # new sessions open on the restarted node
            fresh = client.open_session("python", TASK).session_id
            assert client.session_tool(fresh, "python", {"code": "6 * 7"}).output == "42\n"
            client.close_session(fresh)
    finally:
        api.stop()
        node.stop()
        if again is not None:
            again.stop()
