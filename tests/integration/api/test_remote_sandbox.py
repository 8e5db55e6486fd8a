"""The ``remote`` sandbox backend with two real servers: a sandbox node (bubblewrap, an API key)
and an API server that forwards every program to it. The API server runs with an empty PATH, so
it has no toolchain of its own: a C++ program that compiles and runs went through the node."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.services.execution import remote as remote_sandbox
from referee.services.execution.remote import RemoteSandbox

Server = Any
KEY = "node-key"
ADD_CPP = (
    "#include <iostream>\nint main() { long a, b; std::cin >> a >> b; "
    "std::cout << a + b << std::endl; }\n"
)
TESTS = [{"stdin": "1 2\n", "stdout": "3\n"}, {"stdin": "40 2\n", "stdout": "41\n"}]


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory, referee_server_factory: Any) -> Server:
    env = {"REFEREE_API_KEYS": KEY, "REFEREE_MATH_WORKERS": "1", "REFEREE_SANDBOX_SLOTS": "2"}
    return referee_server_factory(tmp_path_factory.mktemp("node"), env, "node")


def api_env(node_urls: str, **extra: str) -> dict[str, str]:
    return {
        "PATH": "/nonexistent",
        "REFEREE_MATH_WORKERS": "1",
        "REFEREE_SANDBOX_BACKEND": "remote",
        "REFEREE_SANDBOX_URL": node_urls,
        "REFEREE_SANDBOX_API_KEY": KEY,
        **extra,
    }


@pytest.fixture(scope="module")
def api(
    tmp_path_factory: pytest.TempPathFactory, referee_server_factory: Any, node: Server
) -> Iterator[Server]:
    # A dead node first in the list: every call must fail over to the live one.
    dead = "http://127.0.0.1:9"
    env = api_env(f"{dead},{node.url}")
    yield referee_server_factory(tmp_path_factory.mktemp("api"), env, "api")


def post(server: Server, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(server.url + path, json=body, timeout=120)


def test_languages_are_the_nodes(api: Server) -> None:
    out = httpx.get(api.url + "/v1/sandbox/languages", timeout=30).json()
    assert out["available"] is True
    assert out["backend"] == "remote (bwrap)"
    names = {lang["name"] for lang in out["languages"]}
    assert {"python", "cpp"} <= names


def test_a_cpp_program_compiles_and_runs_on_the_node(api: Server) -> None:
    resp = post(api, "/v1/sandbox/run", {"code": ADD_CPP, "language": "c++", "stdin": "20 22\n"})
    assert resp.status_code == 200, resp.text
    out = resp.json()
    assert (out["status"], out["stdout"], out["language"]) == ("ok", "42\n", "cpp")
    assert out["compile"]["status"] == "ok"


def test_a_compile_error_is_a_result(api: Server) -> None:
    out = post(api, "/v1/sandbox/run", {"code": "int main( {", "language": "cpp"}).json()
    assert out["status"] == "compile_error"
    assert "error" in out["compile"]["stderr"]


def test_code_rewards_are_graded_on_the_node(api: Server) -> None:
    items = [
        {
            "id": "cpp",
            "response": f"```cpp\n{ADD_CPP}```",
            "grader": {"type": "code", "language": "cpp", "tests": TESTS},
        },
        {
            "id": "py",
            "response": "```python\nprint(sum(map(int, input().split())))\n```",
            "grader": {
                "type": "weighted",
                "graders": [
                    {"weight": 1, "grader": {"type": "code", "language": "python", "tests": TESTS}},
                    {"weight": 1, "grader": {"type": "string_check", "reference": "x"}},
                ],
            },
        },
        {
            "id": "cobol",
            "response": "```cobol\nDISPLAY 'HI'.\n```",
            "grader": {"type": "code", "language": "cobol", "tests": TESTS},
        },
    ]
    resp = post(api, "/v1/rewards", {"items": items})
    assert resp.status_code == 200, resp.text
    cpp, py, cobol = resp.json()["rewards"]
    assert cpp["score"] == 0.5
    assert [t["outcome"] for t in cpp["details"]["tests"]] == ["passed", "wrong_answer"]
    assert cpp["details"]["compile"]["status"] == "ok"
    assert py["score"] == pytest.approx(0.25)  # half the tests, weighted with a failed check
    assert cobol["score"] == 0.0
    assert cobol["details"]["outcome"] == "language_unavailable"


def test_sandbox_grade_on_the_node_needs_its_key(node: Server) -> None:
    body = {
        "grader": {"type": "code", "language": "python", "tests": TESTS},
        "response": "```python\nprint(3)\n```",
    }
    assert post(node, "/v1/sandbox/grade", body).status_code == 401
    resp = httpx.post(
        node.url + "/v1/sandbox/grade", json=body, headers={"x-api-key": KEY}, timeout=60
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["score"] == 0.5


def test_unknown_language_is_a_422_and_run_code_says_so(api: Server) -> None:
    resp = post(api, "/v1/sandbox/run", {"code": "x", "language": "cobol"})
    assert resp.status_code == 422
    assert "cobol" in resp.json()["detail"]
    out = post(api, "/run_code", {"code": "x", "language": "cobol"}).json()
    assert out["status"] == "SandboxError" and "cobol" in out["message"]
    ok = post(api, "/run_code", {"code": "print(input())", "language": "python", "stdin": "hi"})
    assert ok.json()["run_result"]["stdout"] == "hi\n"


def test_the_program_has_no_network_and_cannot_write_outside(api: Server) -> None:
    port = api.url.rsplit(":", 1)[1]
    code = (
        "import socket\ns = socket.socket()\ns.settimeout(2)\ntry:\n"
        f"    s.connect(('127.0.0.1', {port})); print('ESCAPED net')\n"
        "except OSError:\n    print('no network')\n"
        "for path in ('/usr/escaped', '/escaped'):\n    try:\n"
        "        open(path, 'w').write('x'); print('ESCAPED', path)\n"
        "    except OSError:\n        pass\n"
    )
    out = post(api, "/v1/sandbox/run", {"code": code, "language": "python"}).json()
    assert out["status"] == "ok", out
    assert out["stdout"] == "no network\n"
    assert not Path("/usr/escaped").exists() and not Path("/escaped").exists()


def test_a_node_that_is_down_is_a_clear_503(
    tmp_path_factory: pytest.TempPathFactory, referee_server_factory: Any
) -> None:
    env = api_env("http://127.0.0.1:9", REFEREE_SANDBOX_REMOTE_RETRY_S="1")
    lonely = referee_server_factory(tmp_path_factory.mktemp("lonely"), env, "lonely")
    resp = post(lonely, "/v1/sandbox/run", {"code": "print(1)", "language": "python"})
    assert resp.status_code == 503
    assert "cannot reach the sandbox node http://127.0.0.1:9" in resp.json()["detail"]
    item = {
        "id": "a",
        "response": "```python\nprint(3)\n```",
        "grader": {"type": "code", "language": "python", "tests": TESTS},
    }
    out = post(lonely, "/v1/rewards", {"items": [item]}).json()["rewards"][0]
    assert out["score"] == 0.0 and "ServiceUnavailable" in str(out["details"])


def test_a_wrong_key_is_a_503_naming_the_node(
    tmp_path_factory: pytest.TempPathFactory, referee_server_factory: Any, node: Server
) -> None:
    env = api_env(node.url, REFEREE_SANDBOX_API_KEY="wrong")
    api = referee_server_factory(tmp_path_factory.mktemp("wrongkey"), env, "wrongkey")
    resp = post(api, "/v1/sandbox/run", {"code": "print(1)", "language": "python"})
    assert resp.status_code == 503
    assert f"the sandbox node {node.url} answered 401" in resp.json()["detail"]


class SlammingNode:
    """A real TCP endpoint that accepts each connection and closes it at once (a node whose
    server is gone while its host is up), counting the connections it got."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


def test_an_unreachable_node_is_skipped_for_a_while(
    node: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = SlammingNode()
    remote = RemoteSandbox([gone.url, node.url], api_key=KEY)
    try:
        monkeypatch.setattr(remote_sandbox, "DOWN_S", 3600.0)
        for _ in range(6):
            assert remote.node_languages().available
        assert gone.connections == 1  # tried once, then skipped
        assert remote.down_nodes() == [gone.url]
        monkeypatch.setattr(remote_sandbox, "DOWN_S", 0.0)  # as if the window had passed
        assert remote.down_nodes() == []
        for _ in range(4):
            assert remote.node_languages().available
        assert gone.connections >= 2  # tried again (and failed over to the live node)
    finally:
        remote.close()
        gone.close()
