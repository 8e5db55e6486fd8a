"""/v1/sandbox/run, /v1/sandbox/languages and SandboxFusion's /run_code on a real server with the
real bubblewrap sandbox: statuses, hostile programs, slots, and a server without isolation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.sandbox import available_languages

Server = Any


def run(server: Server, code: str, language: str = "python", **body: Any) -> dict[str, Any]:
    resp = httpx.post(
        server.url + "/v1/sandbox/run",
        json={"code": code, "language": language, **body},
        timeout=120,
    )
    assert resp.status_code == 200, resp.text
    out: dict[str, Any] = resp.json()
    return out


def assert_healthy(server: Server) -> None:
    ready = httpx.get(server.url + "/readyz", timeout=30)
    assert ready.status_code == 200, ready.text
    assert ready.json()["components"]["sandbox"] == "bwrap"
    assert run(server, "print('still here')")["stdout"] == "still here\n"


HELLO = {
    "python": "print(input())",
    "c": '#include <stdio.h>\nint main(void){ char s[64]; scanf("%63s", s); puts(s); }',
    "cpp": "#include <iostream>\nint main(){ std::string s; std::cin >> s;"
    " std::cout << s << std::endl; }",
    "java": "import java.util.*;\npublic class Main { public static void main(String[] a) {"
    " System.out.println(new Scanner(System.in).next()); } }",
    "javascript": "console.log(require('fs').readFileSync(0, 'utf8').trim());",
    "go": 'package main\nimport "fmt"\nfunc main() { var s string; fmt.Scan(&s); fmt.Println(s) }',
    "rust": "fn main() { let mut s = String::new(); std::io::stdin().read_line(&mut s).unwrap();"
    ' println!("{}", s.trim()); }',
    "bash": "read s\necho $s",
}


def test_languages_endpoint(server: Server) -> None:
    body = httpx.get(server.url + "/v1/sandbox/languages").json()
    assert body["available"] is True and body["backend"] == "bwrap"
    names = {lang["name"]: lang["compiled"] for lang in body["languages"]}
    assert set(names) == set(available_languages())
    assert names["python"] is False and names.get("cpp", True) is True
    assert body["slots"] >= 1


def test_every_installed_language_runs(server: Server, installed_language: str) -> None:
    language = installed_language
    out = run(server, HELLO[language], language, stdin="héllo\n", limits={"time_s": 20})
    assert out["status"] == "ok", out
    assert out["stdout"] == "héllo\n" and out["exit_code"] == 0
    assert out["language"] == language
    assert (out["compile"] is not None) == (language in ("c", "cpp", "java", "go", "rust"))


def test_statuses(server: Server) -> None:
    ok = run(server, "import sys\nprint(sys.stdin.read()[::-1])", stdin="abc")
    assert ok["status"] == "ok" and ok["stdout"] == "cba\n" and ok["wall_time_s"] > 0
    assert ok["limits"] == {"time_s": 5.0, "memory_mb": 512}

    err = run(server, "import sys\nprint('partial')\nsys.exit(3)")
    assert err["status"] == "runtime_error" and err["exit_code"] == 3
    assert err["stdout"] == "partial\n"

    raised = run(server, "raise ValueError('boom')")
    assert raised["status"] == "runtime_error" and "ValueError: boom" in raised["stderr"]

    slow = run(server, "while True: pass", limits={"time_s": 0.5})
    assert slow["status"] == "time_limit" and slow["limits"]["time_s"] == 0.5

    big = run(server, "x = bytearray(1 << 30)\nprint(len(x))", limits={"memory_mb": 64})
    assert big["status"] == "memory_limit", big

    flood = run(server, "import sys\nsys.stdout.write('x' * (64 << 20))")
    assert flood["status"] == "output_limit" and flood["stdout_truncated"] is True

    bad = run(server, "int main( {", "cpp")
    assert bad["status"] == "compile_error"
    assert bad["compile"]["status"] == "compile_error" and "error" in bad["compile"]["stderr"]


def test_limits_are_capped_by_the_server(server: Server) -> None:
    out = run(server, "print(1)", limits={"time_s": 3000, "memory_mb": 60000})
    assert out["limits"] == {"time_s": 60.0, "memory_mb": 4096}


def test_unknown_language_is_422(server: Server) -> None:
    resp = httpx.post(
        server.url + "/v1/sandbox/run", json={"code": "x", "language": "cobol"}, timeout=30
    )
    assert resp.status_code == 422
    assert resp.headers["content-type"].startswith("application/problem+json")
    assert "cobol" in resp.json()["detail"]


@pytest.mark.parametrize(
    "code",
    [
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
        "while True:\n    pass\n",
        # a double-forked daemon that outlives the program
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        "        time.sleep(3600)\n    os._exit(0)\nprint('parent done')\n",
    ],
    ids=["fork_bomb", "infinite_loop", "daemon"],
)
def test_server_stays_healthy_after_hostile_programs(server: Server, code: str) -> None:
    out = run(server, code, limits={"time_s": 1})
    assert out["status"] in ("ok", "time_limit", "runtime_error", "memory_limit"), out
    assert_healthy(server)


def verl_passes(api_response: dict[str, Any], expected: str) -> bool | int:
    """The decision veRL's SandboxFusion client makes, written from its documented behaviour:
    SandboxError -> -1; Failed -> -4 compile error, -3 timeout, -2 runtime error; Success with a
    Finished run -> stdout.rstrip('\\n') == expected.rstrip('\\n')."""
    status = api_response.get("status")
    compile_result, run_result = api_response.get("compile_result"), api_response.get("run_result")
    if status == "SandboxError":
        return -1
    if status == "Failed":
        if compile_result and (
            compile_result.get("status") in ("Error", "TimeLimitExceeded")
            or (compile_result.get("status") == "Finished" and compile_result.get("return_code"))
        ):
            return -4
        if run_result:
            if run_result.get("status") == "TimeLimitExceeded":
                return -3
            return -2
        return -1
    if status == "Success" and run_result and run_result.get("status") == "Finished":
        return str(run_result.get("stdout") or "").rstrip("\n") == expected.rstrip("\n")
    return -1


def run_code(server: Server, **body: Any) -> dict[str, Any]:
    payload = {"compile_timeout": 10, "run_timeout": 10, "files": {}, "fetch_files": [], **body}
    resp = httpx.post(server.url + "/run_code", json=payload, timeout=60)
    assert resp.status_code == 200, resp.text
    out: dict[str, Any] = resp.json()
    return out


def test_run_code_is_what_verl_reads(server: Server) -> None:
    assert httpx.get(server.url + "/v1/ping").status_code == 200
    add = "a, b = map(int, input().split())\nprint(a + b)"
    ok = run_code(server, code=add, language="python", stdin="1 2\n", memory_limit_MB=256)
    assert ok["status"] == "Success" and ok["compile_result"] is None
    assert set(ok["run_result"]) >= {"status", "execution_time", "return_code", "stdout", "stderr"}
    assert ok["run_result"]["status"] == "Finished" and ok["run_result"]["return_code"] == 0
    assert verl_passes(ok, "3\n\n") is True
    assert verl_passes(ok, "4") is False

    crash = run_code(server, code="raise SystemExit(2)", language="python", stdin="")
    assert crash["status"] == "Failed" and crash["run_result"]["return_code"] == 2
    assert verl_passes(crash, "") == -2

    slow = run_code(server, code="while True: pass", language="python", stdin="", run_timeout=1)
    assert slow["run_result"]["status"] == "TimeLimitExceeded"
    assert verl_passes(slow, "") == -3

    cpp = "#include <iostream>\nint main(){ int a, b; std::cin >> a >> b; std::cout << a + b; }"
    built = run_code(server, code=cpp, language="cpp", stdin="2 2")
    assert built["status"] == "Success" and built["compile_result"]["status"] == "Finished"
    assert verl_passes(built, "4") is True

    broken = run_code(server, code="int main( {", language="cpp", stdin="")
    assert broken["status"] == "Failed" and broken["run_result"] is None
    assert broken["compile_result"]["return_code"] != 0
    assert verl_passes(broken, "") == -4

    node = run_code(server, code="console.log(6 * 7)", language="nodejs", stdin="")
    assert verl_passes(node, "42") is True

    unknown = run_code(server, code="x", language="lean", stdin="")
    assert unknown["status"] == "SandboxError" and verl_passes(unknown, "") == -1


def test_no_isolation_is_503_with_how_to_enable(
    referee_server_factory: Any, tmp_path: Path
) -> None:
    env = {"REFEREE_SANDBOX_BACKEND": "docker", "DOCKER_HOST": "unix:///nonexistent.sock"}
    srv = referee_server_factory(tmp_path, env, "no-sandbox")
    resp = httpx.post(
        srv.url + "/v1/sandbox/run", json={"code": "print(1)", "language": "python"}, timeout=30
    )
    assert resp.status_code == 503
    assert resp.headers["content-type"].startswith("application/problem+json")
    assert "REFEREE_SANDBOX_ALLOW_UNSAFE_LOCAL" in resp.json()["detail"]
    assert httpx.post(srv.url + "/run_code", json={"code": "print(1)"}).status_code == 503
    item = {
        "id": "c",
        "response": "```python\nprint(1)\n```",
        "grader": {"type": "code", "language": "python", "tests": [{"stdout": "1"}]},
    }
    assert httpx.post(srv.url + "/v1/rewards", json={"items": [item]}).status_code == 503
    langs = httpx.get(srv.url + "/v1/sandbox/languages").json()
    assert langs["available"] is False and "bubblewrap" in langs["reason"]
    ready = httpx.get(srv.url + "/readyz")
    assert ready.status_code == 200 and ready.json()["components"]["sandbox"] == "unavailable"


def test_unsafe_local_only_when_allowed(referee_server_factory: Any, tmp_path: Path) -> None:
    env = {"REFEREE_SANDBOX_BACKEND": "unsafe_local"}
    refused = referee_server_factory(tmp_path, env, "unsafe-refused")
    resp = httpx.post(refused.url + "/v1/sandbox/run", json={"code": "print(1)", "language": "py"})
    assert resp.status_code == 503
    allowed = referee_server_factory(
        tmp_path, {**env, "REFEREE_SANDBOX_ALLOW_UNSAFE_LOCAL": "true"}, "unsafe-allowed"
    )
    out = run(allowed, "print(1)", "py")
    assert out["status"] == "ok" and out["stdout"] == "1\n"
    langs = httpx.get(allowed.url + "/v1/sandbox/languages").json()
    assert langs["backend"] == "unsafe_local"
