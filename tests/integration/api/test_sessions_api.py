"""/v1/sessions on a real server: the real bubblewrap sandbox behind the python environment's
persistent interpreter, real reasoning-gym behind the procedural one, the sandbox slots behind
the code one, and the SDK."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from proc_tree import alive, children

from referee.client import AsyncRefereeClient, RefereeClient
from referee.services.launcher import Server

MATH = {"prompt": "What is 2**100 mod 7?", "reference": "2"}


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory, referee_server_factory: Any) -> Iterator[Server]:
    env = {"REFEREE_SESSIONS_MAX_LIVE": "3", "REFEREE_SANDBOX_SLOTS": "2"}
    server: Server = referee_server_factory(tmp_path_factory.mktemp("sessions"), env, "sessions")
    yield server
    left = _server_bwraps(server)
    server.stop()  # closes the sessions left open: no traceback on the way out
    assert "Traceback" not in server.log_tail(10**7), server.log_tail()
    assert not [pid for pid in left if alive(pid)]


@pytest.fixture()
def url(srv: Server) -> Iterator[str]:
    base = str(srv.url)
    yield base
    assert httpx.get(f"{base}/healthz", timeout=10).status_code == 200, srv.log_tail()


def _open(url: str, env: str, task: dict[str, Any], **more: Any) -> dict[str, Any]:
    r = httpx.post(f"{url}/v1/sessions", json={"env": env, "task": task, **more}, timeout=120)
    assert r.status_code == 200, r.text
    return dict(r.json())


def _tool(url: str, sid: str, code: str, request_id: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"arguments": {"code": code}}
    if request_id:
        body["request_id"] = request_id
    r = httpx.post(f"{url}/v1/sessions/{sid}/tools/python", json=body, timeout=120)
    assert r.status_code == 200, r.text
    return dict(r.json())


def _close(url: str, sid: str) -> None:
    r = httpx.delete(f"{url}/v1/sessions/{sid}", timeout=60)
    assert r.status_code == 200, r.text


def _server_bwraps(srv: Server) -> list[int]:
    """Sandboxes (bwrap processes) the server process started."""
    return children(srv.process.pid, "bwrap")


def test_environments_are_listed_with_their_tool_schemas(url: str) -> None:
    r = httpx.get(f"{url}/v1/sessions/environments", timeout=30)
    assert r.status_code == 200, r.text
    body = r.json()
    envs = {e["name"]: e for e in body["environments"]}
    assert set(envs) == {"python", "procedural", "code"}
    [tool] = envs["python"]["tools"]
    assert tool["type"] == "function"
    assert tool["function"]["name"] == "python"
    assert tool["function"]["parameters"]["required"] == ["code"]
    assert body["max_live"] == 3


def test_python_variables_survive_tool_calls_then_verify_right_and_wrong(url: str) -> None:
    opened = _open(url, "python", MATH, group={"id": "q1", "attempt": 2})
    sid = opened["session_id"]
    assert opened["observation"] == MATH["prompt"]
    assert opened["info"]["group"]["attempt"] == 2
    assert [t["function"]["name"] for t in opened["tools"]] == ["python"]
    assert _tool(url, sid, "x = pow(2, 100, 7)\ny = x * 10")["output"] == "(no output)\n"
    out = _tool(url, sid, "print(x)\ny")
    assert out["output"] == "2\n20\n"
    assert out["done"] is False
    # an error is the model's to read, and the state survives it
    assert "ZeroDivisionError" in _tool(url, sid, "1/0")["output"]
    assert _tool(url, sid, "x")["output"] == "2\n"

    right = httpx.post(
        f"{url}/v1/sessions/{sid}/verify", json={"response": "It is \\boxed{2}."}, timeout=60
    ).json()
    assert right["score"] == 1.0 and right["valid"] is True and right["id"] == sid
    wrong = httpx.post(
        f"{url}/v1/sessions/{sid}/verify", json={"response": "\\boxed{3}"}, timeout=60
    ).json()
    assert wrong["score"] == 0.0 and wrong["valid"] is True
    state = httpx.get(f"{url}/v1/sessions/{sid}", timeout=10).json()
    assert state["state"] == "done"  # verified: its interpreter is freed
    assert state["tool_calls"] == 4
    _close(url, sid)
    gone = httpx.get(f"{url}/v1/sessions/{sid}", timeout=10).json()
    assert gone["state"] == "closed" and gone["reason"] == "closed by the caller"


def test_step_runs_tool_calls_and_a_final_answer_ends_the_episode(url: str) -> None:
    sid = _open(url, "python", MATH, max_turns=4)["session_id"]
    message = {
        "content": "Let me compute.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "python", "arguments": '{"code": "r = pow(2, 100, 7)\\nr"}'},
            },
            {"id": "c2", "type": "function", "function": {"name": "python", "arguments": "{}"}},
            {"id": "c3", "type": "function", "function": {"name": "calc", "arguments": "{}"}},
        ],
    }
    step = httpx.post(f"{url}/v1/sessions/{sid}/step", json={"response": message}, timeout=60)
    assert step.status_code == 200, step.text
    body = step.json()
    outputs = {o["call_id"]: o["output"] for o in body["tool_outputs"]}
    assert outputs["c1"] == "2\n"
    assert "missing 'code'" in outputs["c2"]  # an argument error is text for the model
    assert "no tool 'calc'" in outputs["c3"]
    assert body["reward"] == 0.0 and not body["terminated"] and not body["truncated"]
    final = httpx.post(
        f"{url}/v1/sessions/{sid}/step", json={"response": "\\boxed{2}"}, timeout=60
    ).json()
    assert final["terminated"] is True and final["reward"] == 1.0
    verified = httpx.post(f"{url}/v1/sessions/{sid}/verify", json={}, timeout=60).json()
    assert verified["score"] == 1.0
    assert [(t["index"], t["reward"]) for t in verified["turns"]] == [(0, 0.0), (1, 1.0)]
    assert verified["total"] == 1.0
    again = httpx.post(f"{url}/v1/sessions/{sid}/step", json={"response": "x"}, timeout=60)
    assert again.status_code == 409
    assert again.headers["content-type"].startswith("application/problem+json")
    _close(url, sid)


def test_a_tool_call_repeated_with_its_request_id_runs_once(url: str) -> None:
    sid = _open(url, "python", MATH)["session_id"]
    _tool(url, sid, "n = 0")
    first = _tool(url, sid, "n += 1\nn", request_id="r-1")
    again = _tool(url, sid, "n += 1\nn", request_id="r-1")
    assert first == again and first["output"] == "1\n"
    assert _tool(url, sid, "n")["output"] == "1\n"  # the retry did not run the cell
    clash = httpx.post(
        f"{url}/v1/sessions/{sid}/tools/python",
        json={"arguments": {"code": "n"}, "request_id": "r-1"},
        timeout=60,
    )
    assert clash.status_code == 409
    _close(url, sid)


def test_hostile_cells_are_contained_and_sessions_cannot_see_each_other(
    url: str, srv: Server
) -> None:
    a = _open(url, "python", MATH)["session_id"]
    b = _open(url, "python", MATH)["session_id"]
    _tool(url, a, "secret = 'a-only'\nopen('/tmp/a.txt', 'w').write('mine')")
    fork = _tool(
        url,
        a,
        "import os\nwhile True:\n    try:\n        os.fork()\n"
        "    except OSError:\n        break\n'forks stopped'",
    )
    assert "forks stopped" in fork["output"] or fork["info"]["status"] != "ok"
    hog = _tool(url, a, "blob = bytearray(4 * 1024**3)")
    assert hog["info"]["status"] in ("memory", "error"), hog
    _tool(url, a, "import subprocess\nsubprocess.Popen(['sleep', '600'])")
    after = _tool(url, a, "import os\nsorted(p for p in os.listdir('/proc') if p.isdigit())")
    assert "sleep" not in after["output"]
    assert after["info"]["status"] == "ok"
    # session b sees none of a's variables, files or processes
    peek = _tool(url, b, "import os\nprint(os.path.exists('/tmp/a.txt'))\nsecret")
    assert peek["output"].startswith("False\n") and "NameError" in peek["output"]
    procs = _tool(url, b, "import os\nlen([p for p in os.listdir('/proc') if p.isdigit()])")
    assert int(procs["output"]) <= 3
    assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
    assert _tool(url, b, "1 + 1")["output"] == "2\n"
    _close(url, a)
    _close(url, b)
    assert _server_bwraps(srv) == []


def test_live_sessions_are_bounded_with_retry_after(url: str) -> None:
    sids = [_open(url, "python", MATH)["session_id"] for _ in range(3)]
    r = httpx.post(f"{url}/v1/sessions", json={"env": "python", "task": MATH}, timeout=60)
    assert r.status_code == 503, r.text
    assert int(r.headers["retry-after"]) >= 1
    assert r.json()["type"] == "service-unavailable"
    _close(url, sids[0])
    sids[0] = _open(url, "python", MATH)["session_id"]  # a freed place is taken again
    for sid in sids:
        _close(url, sid)


def test_a_bad_task_row_is_422_and_an_unknown_env_404(url: str) -> None:
    r = httpx.post(
        f"{url}/v1/sessions", json={"env": "python", "task": {"prompt": "x"}}, timeout=30
    )
    assert r.status_code == 422 and "reference" in r.json()["detail"]
    r = httpx.post(f"{url}/v1/sessions", json={"env": "chess", "task": {}}, timeout=30)
    assert r.status_code == 404
    r = httpx.post(f"{url}/v1/sessions/s-0bad/step", json={"response": "1"}, timeout=30)
    assert r.status_code == 404


def test_procedural_feedback_turns_with_per_turn_rewards_and_the_curriculum(url: str) -> None:
    seed = 11
    r = httpx.post(
        f"{url}/v1/environments/basic_arithmetic/problems", json={"n": 1, "seed": seed}, timeout=120
    )
    assert r.status_code == 200, r.text
    [problem] = r.json()["problems"]
    opened = _open(url, "procedural", {"task": "basic_arithmetic"}, seed=seed, max_turns=3)
    assert problem["question"] in opened["observation"]
    assert opened["tools"] == []
    sid = opened["session_id"]
    first = httpx.post(
        f"{url}/v1/sessions/{sid}/step", json={"response": "<answer>zzz</answer>"}, timeout=120
    ).json()
    assert first["reward"] == 0.0 and not first["terminated"] and not first["truncated"]
    assert "not correct" in first["observation"] and "2 attempts left" in first["observation"]
    right = f"<answer>{problem['answer']}</answer>"
    second = httpx.post(
        f"{url}/v1/sessions/{sid}/step", json={"response": right}, timeout=120
    ).json()
    assert second["reward"] == 1.0 and second["terminated"] is True
    verified = httpx.post(f"{url}/v1/sessions/{sid}/verify", json={}, timeout=60).json()
    assert verified["score"] == 1.0
    assert [t["reward"] for t in verified["turns"]] == [0.0, 1.0]
    curriculum = httpx.get(f"{url}/v1/curriculum", timeout=60).json()
    [task] = [t for t in curriculum["tasks"] if t["task"] == "basic_arithmetic"]
    assert sum(level["n"] for level in task["per_level"]) == 1  # the episode, once
    _close(url, sid)


def test_procedural_runs_out_of_turns_truncated(url: str) -> None:
    sid = _open(url, "procedural", {"task": "basic_arithmetic", "index": 2}, seed=5, max_turns=2)[
        "session_id"
    ]
    steps = [
        httpx.post(
            f"{url}/v1/sessions/{sid}/step", json={"response": "<answer>no</answer>"}, timeout=120
        ).json()
        for _ in range(2)
    ]
    assert steps[0]["truncated"] is False and steps[0]["observation"]
    step = steps[1]
    assert step["truncated"] is True and step["terminated"] is False
    assert step["observation"] is None
    _close(url, sid)


CODE_TASK = {
    "prompt": "Read two integers and print their sum.",
    "tests": [{"stdin": "1 2\n", "stdout": "3\n"}],
    "hidden_tests": [
        {"stdin": "40 2\n", "stdout": "42\n"},
        {"stdin": "1000000 2345\n", "stdout": "1002345\n"},
    ],
}


def test_code_env_runs_visible_tests_and_never_shows_hidden_ones(url: str) -> None:
    sid = _open(url, "code", CODE_TASK)["session_id"]
    wrong = "a, b = map(int, input().split())\nprint(a - b)\n"
    out = httpx.post(
        f"{url}/v1/sessions/{sid}/tools/run_tests", json={"arguments": {"code": wrong}}, timeout=120
    ).json()
    assert out["output"].startswith("passed 0 of 1 tests"), out
    assert "'3\\n'" in out["output"]  # the visible test's expected output is shown
    for secret in ("40 2", "42", "1000000", "1002345"):
        assert secret not in out["output"]
    assert out["info"]["total"] == 1
    cheat = "print(3)\n"
    step = httpx.post(
        f"{url}/v1/sessions/{sid}/step",
        json={"response": f"```python\n{cheat}```"},
        timeout=120,
    ).json()
    assert step["terminated"] is True
    assert abs(step["reward"] - 1 / 3) < 1e-9  # graded on every test
    assert "1002345" not in str(step)
    left_open = _open(url, "python", MATH)["session_id"]  # closed by the server's shutdown
    assert _tool(url, left_open, "1")["output"] == "1\n"
    right = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
    verified = httpx.post(
        f"{url}/v1/sessions/{sid}/verify", json={"response": right}, timeout=120
    ).json()
    assert verified["score"] == 1.0 and verified["details"]["total"] == 3
    _close(url, sid)


def test_sdk_round_trip_sync_and_async(url: str) -> None:
    with RefereeClient(url) as referee:
        assert {e.name for e in referee.session_environments().environments} >= {"python"}
        opened = referee.open_session("python", MATH, max_turns=3)
        out = referee.session_tool(opened.session_id, "python", {"code": "k = 7\nk * 6"})
        assert out.output == "42\n"
        step = referee.session_step(
            opened.session_id,
            {
                "content": None,
                "tool_calls": [
                    {"id": "t", "function": {"name": "python", "arguments": {"code": "k"}}}
                ],
            },
        )
        assert step.tool_outputs[0].output == "7\n"
        assert referee.session_step(opened.session_id, "\\boxed{2}").reward == 1.0
        reward = referee.session_verify(opened.session_id)
        assert reward.score == 1.0 and reward.total == 1.0 and len(reward.turns) == 2
        assert referee.session(opened.session_id).turns == 2
        assert referee.close_session(opened.session_id).state == "closed"

    async def run() -> float:
        async with AsyncRefereeClient(url) as referee:
            opened = await referee.open_session("python", MATH)
            await referee.session_tool(opened.session_id, "python", {"code": "z = 2"})
            reward = await referee.session_verify(
                opened.session_id, [{"role": "assistant", "content": "\\boxed{2}"}]
            )
            await referee.close_session(opened.session_id)
            return reward.score or 0.0

    assert asyncio.run(run()) == 1.0


def test_idle_sessions_are_reaped_with_their_interpreter(
    tmp_path: Path, referee_server_factory: Any
) -> None:
    env = {"REFEREE_SESSIONS_IDLE_TIMEOUT_S": "1", "REFEREE_MATH_WORKERS": "1"}
    reaping: Server = referee_server_factory(tmp_path, env, "reaping")
    base = str(reaping.url)
    sid = _open(base, "python", MATH)["session_id"]
    _tool(base, sid, "v = 1")
    assert len(_server_bwraps(reaping)) == 1  # the session's interpreter
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # nobody calls it again: the reaper closes it
        state = httpx.get(f"{base}/v1/sessions/{sid}", timeout=10).json()
        if state["state"] == "closed":
            break
        time.sleep(0.2)
    assert state["state"] == "closed" and "idle" in state["reason"]
    assert _server_bwraps(reaping) == []
    r = httpx.post(
        f"{base}/v1/sessions/{sid}/tools/python", json={"arguments": {"code": "v"}}, timeout=30
    )
    assert r.status_code == 404 and "idle" in r.json()["detail"]
    assert os.path.exists(f"/proc/{reaping.process.pid}")
