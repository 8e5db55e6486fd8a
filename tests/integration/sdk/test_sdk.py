"""The SDK against the real server (sync and async), and its corner cases on MockTransport."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import httpx
import pytest

from referee.client import (
    AsyncRefereeClient,
    InvalidRequest,
    PayloadTooLarge,
    RefereeClient,
    RewardItem,
    ServiceUnavailable,
    TransportError,
)
from referee.client.models import MathGrader

Server = Any


def batch(n: int, group_size: int = 4) -> list[dict[str, Any]]:
    return [
        {
            "id": f"r{i}",
            "response": f"so the answer is \\boxed{{{i % 3}}}",
            "grader": {"type": "math", "reference": "1"},
            "group": f"q{i // group_size}",
        }
        for i in range(n)
    ]


def test_sync_rewards_chunked_equals_unchunked(server: Server) -> None:
    items = batch(50)
    with RefereeClient(server.url) as whole, RefereeClient(server.url, chunk_size=7) as chunked:
        a = whole.rewards(items)
        b = chunked.rewards(items)
    assert [r.id for r in b.rewards] == [f"r{i}" for i in range(50)]
    assert [r.score for r in a.rewards] == [r.score for r in b.rewards]
    assert [r.score for r in a.rewards] == [1.0 if i % 3 == 1 else 0.0 for i in range(50)]
    # groups travel whole, so their statistics agree
    assert sorted((g.group, g.pass_rate) for g in a.groups) == sorted(
        (g.group, g.pass_rate) for g in b.groups
    )
    assert len(b.groups) == 13


def test_typed_items_and_math_verify(server: Server) -> None:
    with RefereeClient(server.url) as client:
        out = client.rewards(
            [
                RewardItem(
                    id="a",
                    response="\\boxed{\\sqrt{12}}",
                    grader=MathGrader(reference="2\\sqrt{3}"),
                )
            ]
        )
        assert out.rewards[0].score == 1.0
        verdict = client.math_verify("The final answer is 50%.", "\\frac{1}{2}")
        assert verdict.score == 1.0 and verdict.extraction == "final_answer"
        assert client.health()


def test_async_client(server: Server) -> None:
    async def run() -> tuple[Any, Any]:
        async with AsyncRefereeClient(server.url, chunk_size=10, max_concurrency=3) as client:
            out = await client.rewards(batch(40, group_size=5))
            verdict = await client.math_verify("\\boxed{x \\le 3}", "(-\\infty, 3]")
            return out, verdict

    out, verdict = asyncio.run(run())
    assert [r.id for r in out.rewards] == [f"r{i}" for i in range(40)]
    assert sum(r.score for r in out.rewards) == sum(1 for i in range(40) if i % 3 == 1)
    assert verdict.score == 1.0 and verdict.method == "interval"


def test_server_errors_map_to_the_exception_tree(server: Server) -> None:
    with RefereeClient(server.url) as client:
        with pytest.raises(PayloadTooLarge, match="2001 items"):
            client.rewards(batch(2001, group_size=2001))  # one group: cannot be split
        with pytest.raises(InvalidRequest, match="grader"):
            client.rewards([{"id": "x", "response": "1", "grader": {"type": "nope"}}])


def test_connection_refused_is_a_transport_error_after_retries() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    with RefereeClient(f"http://127.0.0.1:{port}", max_retries=2, backoff_s=0.01) as client:
        with pytest.raises(TransportError, match="cannot reach"):
            client.math_verify("1", "1")


def _ok_body(request: httpx.Request) -> dict[str, Any]:
    import json

    items = json.loads(request.content)["items"]
    return {
        "rewards": [{"id": i["id"], "score": 1.0, "details": {}} for i in items],
        "groups": [],
        "mean": 1.0,
        "elapsed_ms": 1.0,
    }


def _busy(detail: str, headers: dict[str, str] | None = None) -> httpx.Response:
    """The server's 503 problem (its ``detail`` says why)."""
    problem = {"type": "service-unavailable", "title": "busy", "status": 503, "detail": detail}
    return httpx.Response(503, json=problem, headers=headers)


def test_retries_on_503_then_succeeds() -> None:
    calls = {"n": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        calls["n"] += 1
        if calls["n"] <= 2:
            return _busy("warming up", headers={"retry-after": "0"})
        return httpx.Response(200, json=_ok_body(request))

    with RefereeClient(
        "http://referee.test", transport=httpx.MockTransport(handler), backoff_s=0.001
    ) as client:
        out = client.rewards(batch(3))
    assert calls["n"] == 3 and [r.score for r in out.rewards] == [1.0] * 3


def test_gives_up_after_max_retries_with_the_servers_problem() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return _busy("no workers")

    with RefereeClient(
        "http://referee.test",
        transport=httpx.MockTransport(handler),
        max_retries=1,
        backoff_s=0.001,
    ) as client:
        with pytest.raises(ServiceUnavailable, match="no workers"):
            client.rewards(batch(1))


def test_chunking_keeps_groups_whole() -> None:
    sizes: list[list[str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        import json

        sizes.append([i["group"] for i in json.loads(request.content)["items"]])
        return httpx.Response(200, json=_ok_body(request))

    with RefereeClient(
        "http://referee.test", transport=httpx.MockTransport(handler), chunk_size=5
    ) as client:
        out = client.rewards(batch(12, group_size=4))
    assert len(out.rewards) == 12
    for chunk in sizes:
        for group in set(chunk):
            assert chunk.count(group) == 4  # never split


def test_invalid_items_are_rejected_before_sending() -> None:
    def handler(request: httpx.Request) -> httpx.Response:  # pragma: no cover - never called
        raise AssertionError("nothing should be sent")

    with RefereeClient("http://referee.test", transport=httpx.MockTransport(handler)) as client:
        with pytest.raises(InvalidRequest, match="response"):
            client.rewards([{"id": "1", "grader": {"type": "math", "reference": "1"}}])
