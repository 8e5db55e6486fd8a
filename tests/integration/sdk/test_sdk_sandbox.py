"""The SDK's sandbox calls against the real server (sync and async), and 429 retries."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from referee.client import (
    AsyncRefereeClient,
    InvalidRequest,
    RefereeClient,
    SandboxLanguages,
    SandboxRunResponse,
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
