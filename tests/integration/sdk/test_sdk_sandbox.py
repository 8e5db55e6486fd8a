"""The SDK's sandbox calls against the real server (sync and async), and what it retries: 429,
and 503/504 only when they carry Retry-After."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.client import (
    AsyncRefereeClient,
    GatewayTimeout,
    InvalidRequest,
    RefereeClient,
    SandboxLanguages,
    SandboxRunResponse,
    ServiceUnavailable,
    TooManyRequests,
)

Server = Any


def test_sync_sandbox_run_and_languages(server: Server) -> None:
    with RefereeClient(server.url) as client:
        out = client.sandbox_run("print(input() * 2)", "python", "ab\n", time_limit_s=2)
        assert isinstance(out, SandboxRunResponse)
        assert out.status == "ok" and out.stdout == "abab\n" and out.limits.time_s == 2
        slow = client.sandbox_run("while True: pass", "py", time_limit_s=0.3)
        assert slow.status == "time_limit"
        langs = client.sandbox_languages()
        assert isinstance(langs, SandboxLanguages) and "python" in {x.name for x in langs.languages}
        with pytest.raises(InvalidRequest, match="cobol"):
            client.sandbox_run("x", "cobol")
        code = client.rewards(
            [
                {
                    "id": "c",
                    "response": "```python\nprint(int(input()) + 1)\n```",
                    "grader": {
                        "type": "code",
                        "language": "python",
                        "tests": [{"stdin": "1", "stdout": "2"}, {"stdin": "5", "stdout": "7"}],
                    },
                }
            ]
        )
        assert code.rewards[0].score == 0.5


def test_async_sandbox_run(server: Server) -> None:
    async def go() -> tuple[SandboxRunResponse, SandboxLanguages]:
        async with AsyncRefereeClient(server.url) as client:
            out = await client.sandbox_run("int main(){return 4;}", "c")
            return out, await client.sandbox_languages()

    out, langs = asyncio.run(go())
    assert out.status == "runtime_error" and out.exit_code == 4
    assert out.compile is not None and out.compile.status == "ok"
    assert langs.available


def test_429_is_retried_then_raised() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        problem = {"type": "too-many-requests", "title": "t", "status": 429, "detail": "busy"}
        return httpx.Response(429, json=problem, headers={"retry-after": "0"})

    transport = httpx.MockTransport(handler)
    with RefereeClient("http://x", transport=transport, max_retries=2, backoff_s=0) as client:
        with pytest.raises(TooManyRequests, match="busy"):
            client.sandbox_run("print(1)", "python")
    assert calls == ["/v1/sandbox/run"] * 3


def problem(status: int, kind: str, headers: dict[str, str]) -> httpx.Response:
    body = {"type": kind, "title": "t", "status": status, "detail": f"{kind} detail"}
    return httpx.Response(status, json=body, headers=headers)


@pytest.mark.parametrize(
    ("status", "kind", "headers", "error", "tries"),
    [
        (504, "gateway-timeout", {"retry-after": "0"}, GatewayTimeout, 3),
        (503, "service-unavailable", {"retry-after": "0"}, ServiceUnavailable, 3),
        (503, "service-unavailable", {}, ServiceUnavailable, 1),  # no isolation: not retried
        (504, "gateway-timeout", {}, GatewayTimeout, 1),
    ],
)
def test_503_504_are_retried_only_when_the_server_asks(
    status: int, kind: str, headers: dict[str, str], error: type[Exception], tries: int
) -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        return problem(status, kind, headers)

    with RefereeClient(
        "http://x", transport=httpx.MockTransport(handler), max_retries=2, backoff_s=0
    ) as client:
        with pytest.raises(error, match="detail"):
            client.sandbox_run("print(1)", "python")
    assert len(calls) == tries

    async def go() -> None:
        async with AsyncRefereeClient(
            "http://x", transport=httpx.MockTransport(handler), max_retries=2, backoff_s=0
        ) as client:
            with pytest.raises(error, match="detail"):
                await client.sandbox_run("print(1)", "python")

    calls.clear()
    asyncio.run(go())
    assert len(calls) == tries


def test_sdk_rides_out_a_busy_server(referee_server_factory: Any, tmp_path: Path) -> None:
    """A real 1-slot server that answers 504 after 0.3 s of waiting: the SDK retries after its
    Retry-After and gets the result once the slot is free."""
    env = {"REFEREE_SANDBOX_SLOTS": "1", "REFEREE_SANDBOX_QUEUE_WAIT_S": "0.3"}
    srv = referee_server_factory(tmp_path, env, "busy")
    blocker = threading.Thread(
        target=lambda: httpx.post(
            srv.url + "/v1/sandbox/run",
            json={"code": "import time; time.sleep(2)", "language": "python"},
            timeout=60,
        )
    )
    blocker.start()
    deadline = time.monotonic() + 60
    while httpx.get(srv.url + "/readyz").json()["sandbox_in_flight"] < 1:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    first = httpx.post(srv.url + "/v1/sandbox/run", json={"code": "1", "language": "python"})
    assert first.status_code == 504 and "retry-after" in first.headers
    with RefereeClient(srv.url, max_retries=20) as client:
        assert client.sandbox_run("print(7)", "python").stdout == "7\n"

    async def go() -> list[str]:
        async with AsyncRefereeClient(srv.url, max_retries=20, max_concurrency=8) as client:
            outs = await asyncio.gather(
                *(client.sandbox_run(f"print({i})", "python") for i in range(8))
            )
        return [o.stdout for o in outs]

    assert asyncio.run(go()) == [f"{i}\n" for i in range(8)]
    blocker.join()
