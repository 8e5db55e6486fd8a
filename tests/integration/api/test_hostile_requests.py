"""Hostile and unlucky requests against a real server: limits hold before any work is done.

* an unauthenticated chunked upload of 600 MB is refused with 401 and leaves the server's
  memory where it was (the key is checked before the body is read; measured on the uvicorn
  process's RSS while the upload runs);
* a chunked body over REFEREE_MAX_BODY_BYTES is refused with 413 as the bytes arrive;
* every bad input the reliability issue listed is a 4xx problem document that says what is
  wrong (replayed one by one);
* a client that hangs up has its queued checks dropped (the pool's counter says how many);
* /readyz answers from the pool's counters while batches keep every worker busy.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from proc_tree import PeakRss

KEY = {"x-api-key": "k1"}
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory, referee_server_factory: Any) -> Any:
    return referee_server_factory(
        Path(tmp_path_factory.mktemp("guarded")),
        {"REFEREE_API_KEYS": "k1", "REFEREE_MAX_BODY_BYTES": str(MIB), "REFEREE_MATH_WORKERS": "1"},
        "guarded",
    )


def chunks(total: int, size: int = MIB) -> Iterator[bytes]:
    block = b"x" * size
    for _ in range(total // size):
        yield block


def test_an_unauthenticated_600_mb_chunked_upload_costs_no_memory(guarded: Any) -> None:
    with PeakRss(guarded.process.pid, every_s=0.01) as rss:
        r = httpx.post(
            guarded.url + "/v1/rewards",
            content=chunks(600 * MIB),
            headers={"content-type": "application/json"},
            timeout=120,
        )
    assert r.status_code == 401 and r.headers["content-type"] == "application/problem+json"
    assert r.json()["type"] == "unauthorized"
    assert rss.peak - rss.before < 50, (rss.before, rss.peak)


def test_a_chunked_body_over_the_limit_is_refused_as_it_arrives(guarded: Any) -> None:
    r = httpx.post(
        guarded.url + "/v1/rewards",
        content=chunks(2 * MIB, 64 * 1024),
        headers={"content-type": "application/json", **KEY},
        timeout=60,
    )
    assert r.status_code == 413 and "limit of 1048576 bytes" in r.json()["detail"]
    # and a body under it is served
    item = {"id": "1", "response": "\\boxed{1}", "grader": {"type": "math", "reference": "1"}}
    ok = httpx.post(guarded.url + "/v1/rewards", json={"items": [item]}, headers=KEY, timeout=60)
    assert ok.status_code == 200 and ok.json()["rewards"][0]["score"] == 1.0


def _nested_grader(depth: int) -> str:
    grader = '{"type":"math"}'
    for _ in range(depth):
        grader = '{"type":"weighted","graders":[{"weight":1,"grader":' + grader + "}]}"
    return grader


def _nested_prompt(depth: int) -> str:
    value = '"x"'
    for _ in range(depth):
        value = '{"a":' + value + "}"
    item = '{"id":"a","prompt":[{"role":"user","content":"hi","extra":' + value + "}],"
    return '{"items":[' + item + '"response":"1","grader":{"type":"math","reference":"1"}}]}'


RUN = '{"code":"print(1)","language":"python"'
BAD_INPUTS = [
    ("POST", "/run_code", None, RUN + ',"run_timeout":4000}', "run_timeout"),
    ("POST", "/run_code", None, RUN + ',"run_timeout":Infinity}', "Infinity"),
    ("POST", "/run_code", None, RUN + ',"memory_limit_MB":1}', "memory_limit_MB"),
    ("POST", "/run_code", None, RUN + ',"memory_limit_MB":15}', "memory_limit_MB"),
    ("POST", "/run_code", None, RUN + ',"memory_limit_MB":70000}', "memory_limit_MB"),
    ("POST", "/run_code", None, RUN + ',"compile_timeout":1e6}', "compile_timeout"),
    ("POST", "/openrlhf/reward", _nested_grader(400), '{"query":["1"],"labels":["1"]}', "deep"),
    ("POST", "/slime/reward", _nested_grader(400), '{"response":"1","label":"1"}', "deep"),
    ("POST", "/v1/jobs", None, _nested_prompt(300), "levels deep"),
    ("POST", "/v1/rewards", None, _nested_prompt(300), "levels deep"),
    ("POST", "/v1/rewards", None, b'{"items": [\xff\xfe]}', "JSON"),
]


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory, referee_server_factory: Any) -> Any:
    return referee_server_factory(
        Path(tmp_path_factory.mktemp("plain")), {"REFEREE_MATH_WORKERS": "1"}, "plain"
    )


@pytest.mark.parametrize(("method", "path", "grader", "body", "says"), BAD_INPUTS)
def test_each_bad_input_is_a_4xx_problem_that_says_what_is_wrong(
    plain: Any, method: str, path: str, grader: str | None, body: str | bytes, says: str
) -> None:
    r = httpx.request(
        method,
        plain.url + path,
        params={"grader": grader} if grader else None,
        content=body,
        headers={"content-type": "application/json"},
        timeout=60,
    )
    assert 400 <= r.status_code < 500, r.text[:500]
    assert r.headers["content-type"] == "application/problem+json"
    problem = r.json()
    assert (
        set(problem) >= {"type", "title", "status", "detail"} and problem["status"] == r.status_code
    )
    assert says in problem["detail"], problem["detail"]
    assert "Traceback" not in plain.log.read_text(errors="replace"), plain.log_tail()


def test_a_long_url_sent_in_small_writes_is_read_whole(plain: Any) -> None:
    """A 400-deep ``?grader=`` makes a request line of some 35 KB: over h11's own 16 KiB, which
    the server would answer by itself in text/plain when the line arrives in pieces, as it does
    on a real network. Written here in 2 KB writes, it reaches referee and gets its problem."""
    query = httpx.QueryParams({"grader": _nested_grader(400)})
    body = b'{"query":["1"],"labels":["1"]}'
    head = (
        f"POST /openrlhf/reward?{query} HTTP/1.1\r\nHost: x\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    assert len(head) > 32 * 1024
    with socket.create_connection(("127.0.0.1", int(plain.url.rsplit(":", 1)[1]))) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for start in range(0, len(head), 2048):
            sock.sendall(head[start : start + 2048])
            time.sleep(0.002)
        sock.sendall(body)
        sock.settimeout(60)
        answer = b""
        while b"\r\n\r\n" not in answer:
            piece = sock.recv(65536)
            assert piece, answer
            answer += piece
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line.split()[1] == b"422", answer[:500]
    assert b"content-type: application/problem+json" in rest.lower(), answer[:500]


def _ready(server: Any) -> dict[str, Any]:
    r = httpx.get(server.url + "/readyz", timeout=30)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_a_client_that_hangs_up_has_its_queued_checks_dropped(plain: Any) -> None:
    items = [
        {"id": str(i), "response": f"\\boxed{{{i}}}", "grader": {"type": "math", "reference": "7"}}
        for i in range(3000)
    ]
    body = json.dumps({"items": items}).encode()
    dropped_before = _ready(plain)["dropped_checks"]
    sock = socket.create_connection(("127.0.0.1", int(plain.url.rsplit(":", 1)[1])))
    head = (
        "POST /v1/rewards HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock.sendall(head + body)
    for _ in range(600):  # until its checks are queued
        if _ready(plain)["pending_checks"] > 0:
            break
        time.sleep(0.05)
    sock.close()
    for _ in range(600):
        now = _ready(plain)
        if now["pending_checks"] == 0 and now["running_checks"] == 0:
            break
        time.sleep(0.05)
    assert now["dropped_checks"] - dropped_before > 0, now
    item = {"id": "a", "response": "\\boxed{7}", "grader": {"type": "math", "reference": "7"}}
    after = httpx.post(plain.url + "/v1/rewards", json={"items": [item]}, timeout=60)
    assert after.json()["rewards"][0]["score"] == 1.0  # the pool serves the next caller


def test_readyz_does_not_queue_behind_batches(plain: Any) -> None:
    items = [
        {
            "id": str(i),
            "response": f"\\boxed{{{i % 9}}}",
            "grader": {"type": "math", "reference": "3"},
        }
        for i in range(3000)
    ]

    def batch() -> None:
        httpx.post(plain.url + "/v1/rewards", json={"items": items}, timeout=300)

    threads = [threading.Thread(target=batch) for _ in range(2)]
    for t in threads:
        t.start()
    seen = []
    while any(t.is_alive() for t in threads):
        seen.append(_ready(plain))
        time.sleep(0.05)
    for t in threads:
        t.join()
    busy = [s for s in seen if s["pending_checks"] > 0]
    assert busy, "the batches never kept the pool busy"
    assert all(s["status"] == "ready" and s["math_check"] == "busy" for s in busy)


def test_a_run_answer_is_cut_to_the_output_cap_as_json_and_says_so(plain: Any) -> None:
    """8 MiB of newlines, within the stdout cap, would be a 16 MiB JSON body."""
    code = "import sys\nsys.stdout.write('\\n' * (8 * 1024 * 1024 - 1))\n"
    r = httpx.post(
        plain.url + "/v1/sandbox/run",
        json={"code": code, "language": "python", "limits": {"time_s": 30}},
        timeout=120,
    )
    assert r.status_code == 200, r.text[:500]
    assert len(r.content) < 9 * MIB
    body = r.json()
    assert body["status"] == "ok" and body["output_cut"] is True
    assert 3 * MIB < len(body["stdout"]) < 8 * MIB
    sf = httpx.post(plain.url + "/run_code", json={"code": code, "language": "python"}, timeout=120)
    assert sf.status_code == 200 and len(sf.content) < 9 * MIB
    assert "output cut" in sf.json()["run_result"]["stderr"]
