"""The first thing every HTTP request meets: its API key, its body's size and depth, its client.

A pure ASGI middleware (no ``BaseHTTPMiddleware``), so nothing is read before it decides:

1. **The API key first.** Routes that need one (every route but health, ping, the OpenAPI
   document and, with ``REFEREE_COMPAT_WITHOUT_API_KEY``, the compatibility routes) are refused
   with 401 from the headers alone, before a byte of the body is read; the connection is closed
   after the answer, so the rest of an unauthenticated upload is never taken in.
2. **The body limit counts bytes as they arrive**, whatever the transfer encoding: a declared
   ``Content-Length`` over ``REFEREE_MAX_BODY_BYTES`` is refused at once, and a chunked body is
   refused (413, connection closed) as soon as its running count passes the limit.
3. **JSON nested deeper than** ``REFEREE_MAX_JSON_DEPTH`` levels is refused (422) before it is
   parsed: Python's parser, pydantic's serializer and the graders' walks each have a recursion
   limit of their own, and a body past them would fail somewhere inside. So are ``NaN`` and
   ``Infinity``, which Python's parser takes although they are not JSON.
4. **The client is watched while its request is served.** Every math check the request queues
   goes into a lane of its own in the check pool (served in turn with the other requests'
   lanes); when the client hangs up, its lane is dropped: its checks still waiting are never
   run and the one running is stopped.
5. Per-route request counts and latency go to the Prometheus metrics; after a large body the
   freed memory is handed back to the system (glibc's ``malloc_trim``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import json
import re
import time
from collections.abc import Callable
from typing import Any

from referee.client.errors import APIError, InvalidRequest, PayloadTooLarge
from referee.services.auth import api_key_problem
from referee.services.json_body import PARSED, parse_for_guard
from referee.verifiers.check_pool import Lane, current_lane

__all__ = ["RequestGuard", "json_problem"]

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[Message], Any]

_CONSTANT = re.compile(rb"(?<![A-Za-z0-9_.])-?(?:NaN|Infinity)(?![A-Za-z0-9_])")
# bytes.translate's arguments: ``{`` read as ``[`` and ``}`` as ``]``; every byte but a quote or
# a bracket deleted
_BRACKETS = bytes.maketrans(b"{}", b"[]")
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')
_TRIM_AFTER_BYTES = 8 * 1024 * 1024
_THREAD_AFTER_BYTES = 1024 * 1024


def _outside_strings(body: bytes) -> bytes:
    """What of the JSON text ``body`` lies outside its strings. Split at the quotes; where the
    strings are long (a database's SQL, a document), the pieces are walked, a quote after an odd
    run of backslashes going on with its string; where they are short, the escapes that could
    hide a quote (``\\\\`` and ``\\"``) are removed first and every other piece is kept (a
    walk per quote would cost more than a few more passes of C)."""
    if b'"' not in body:
        return body
    head = min(len(body), _SAMPLE_BYTES)  # the strings' length, judged from the start
    if body.count(b'"', 0, head) * _BYTES_A_QUOTE > head:
        if b'\\"' in body:  # else no quote follows a backslash: every quote opens or closes one
            body = body.replace(b"\\\\", b"").replace(b'\\"', b"")
        return b"".join(body.split(b'"')[::2])
    parts = body.split(b'"')
    outside = [parts[0]]
    in_string = False
    before = parts[0]  # what precedes the quote now read
    for part in parts[1:]:
        if in_string and before.endswith(b"\\") and (len(before) - len(before.rstrip(b"\\"))) % 2:
            before = part  # an escaped quote: the string goes on
            continue
        in_string = not in_string
        if not in_string:
            outside.append(part)
        before = part
    return b"".join(outside)


_BYTES_A_QUOTE = 48
_SAMPLE_BYTES = 64 * 1024
"""Below this many bytes a quote on average, a body's strings are short: removing the escapes
in C beats walking the pieces in Python."""


def json_problem(body: bytes, depth_limit: int) -> str | None:
    """What makes the JSON text ``body`` unfit to parse, or None: arrays and objects nested more
    than ``depth_limit`` deep, or ``NaN``/``Infinity`` (which Python's parser takes, but which
    are not JSON and no limit or score may be).

    Both are read off what lies outside the strings, in a few passes of C over the body: the
    escapes that could hide a quote (``\\\\`` and ``\\"``) are removed, then the strings (what
    lies between two quotes), which leaves a few bytes an item; there ``NaN``/``Infinity`` are
    looked for, every byte but the brackets is deleted (one ``bytes.translate``, which also reads
    ``{}`` as ``[]``), and the innermost pairs ``[]`` are removed one level per pass: brackets
    still there after ``depth_limit`` passes nest deeper than that. Malformed JSON is left to the
    parser."""
    text = _outside_strings(body)  # a few bytes an item
    if (b"NaN" in text or b"Infinity" in text) and _CONSTANT.search(text):
        return "NaN and Infinity are not JSON numbers: send a finite number"
    if text.count(b"[") + text.count(b"{") <= depth_limit:
        return None
    text = text.translate(_BRACKETS, _NOT_STRUCTURE)
    if b"[" * (depth_limit + 1) not in text:  # else deeper at once (a bomb: no passes)
        for _ in range(depth_limit):
            shorter = text.replace(b"[]", b"")
            if len(shorter) == len(text):
                return None  # balanced and shallow enough, or unbalanced: the parser says
            text = shorter
            if not text:
                return None
        if b"[]" not in text:
            return None
    return _too_deep(depth_limit)


def _json_problem(scope: Scope, body: bytes, depth_limit: int) -> str | None:
    """:func:`json_problem`, read off orjson's parse of the body where orjson reads it (the
    value then left in ``scope`` for the route, which parses it no more); the scan of the text
    where it does not (bad JSON, ``NaN``, a BOM, an integer past 64 bits): the same answer
    either way, a test holds, in less than half the time of the scan (which came before a
    parse of its own)."""
    read, too_deep, value = parse_for_guard(body, depth_limit)
    if not read:
        return json_problem(body, depth_limit)
    if too_deep:
        return _too_deep(depth_limit)
    scope[PARSED] = (body, value)
    return None


def _too_deep(depth_limit: int) -> str:
    return (
        f"the JSON body nests arrays and objects more than {depth_limit} levels deep; "
        "flatten it (no request of this API needs that depth)"
    )


def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        trim = getattr(libc, "malloc_trim", None)
    except OSError:
        return None
    return trim


class _Refused(Exception):
    def __init__(self, error: APIError) -> None:
        self.error = error


class RequestGuard:
    """``app.add_middleware(RequestGuard, settings=..., open_paths=..., metrics=...)``."""

    def __init__(
        self,
        app: Callable[[Scope, Receive, Send], Any],
        settings: Any,
        open_paths: list[re.Pattern[str]],
        metrics: Any = None,
    ) -> None:
        self.app = app
        self.settings = settings
        self.open_paths = open_paths
        self.metrics = metrics
        self._trim = _malloc_trim()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = [0]

        async def send_counted(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        size = 0
        try:
            self._check_key(scope)
            body = await self._read_body(scope, receive)
            if body is None:  # the client left before it finished sending
                return
            size = len(body)
            await self._check_json(scope, body)
            await self._serve(scope, receive, send_counted, body)
        except _Refused as refused:
            await self._refuse(send_counted, refused.error)
        except Exception:
            status[0] = status[0] or 500  # answered by the server-error handler outside
            raise
        finally:
            self._record(scope, status[0], time.perf_counter() - start)
            if size >= _TRIM_AFTER_BYTES and self._trim is not None:
                await asyncio.to_thread(self._trim, 0)

    # -- before the app ---------------------------------------------------------------------
    def _headers(self, scope: Scope) -> dict[str, str]:
        return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}

    def _check_key(self, scope: Scope) -> None:
        keys: list[str] = self.settings.api_keys
        if not keys or scope["method"] == "OPTIONS":
            return
        path = scope.get("path", "")
        if any(p.match(path) for p in self.open_paths):
            return
        problem = api_key_problem(self._headers(scope), keys)
        if problem is not None:
            raise _Refused(problem)

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes | None:
        limit: int = self.settings.max_body_bytes
        declared = self._headers(scope).get("content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > limit:
            raise _Refused(
                PayloadTooLarge(f"the body has {int(declared)} bytes; the limit is {limit}")
            )
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise _Refused(
                    PayloadTooLarge(
                        f"the body is larger than the limit of {limit} bytes "
                        f"({size} bytes received when it was refused)"
                    )
                )
            if chunk:
                chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def _check_json(self, scope: Scope, body: bytes) -> None:
        kind = self._headers(scope).get("content-type", "")
        if not body or (kind and "json" not in kind):
            return
        limit: int = self.settings.max_json_depth
        if len(body) > _THREAD_AFTER_BYTES:
            problem = await asyncio.to_thread(_json_problem, scope, body, limit)
        else:
            problem = _json_problem(scope, body, limit)
        if problem is not None:
            raise _Refused(InvalidRequest(problem))

    async def _refuse(self, send: Send, error: APIError) -> None:
        body = json.dumps(error.to_problem(), separators=(",", ":")).encode()
        headers = [
            (b"content-type", b"application/problem+json"),
            (b"content-length", str(len(body)).encode()),
            # the rest of the body is not wanted: the connection ends with this answer
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": error.status_code, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    # -- the app, with its client watched ---------------------------------------------------
    async def _serve(self, scope: Scope, receive: Receive, send: Send, body: bytes) -> None:
        lane = Lane(f"{scope['method']} {scope.get('path', '')}")
        gone = asyncio.Event()
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def watch() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    gone.set()
                    lane.drop("the client disconnected")
                    return

        watcher = asyncio.create_task(watch())
        token = current_lane.set(lane)
        try:
            await self.app(scope, replay, send)
        finally:
            current_lane.reset(token)
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watcher

    def _record(self, scope: Scope, status: int, elapsed_s: float) -> None:
        if self.metrics is None or not status:
            return
        route = scope.get("route")
        path = getattr(route, "path", "unmatched")
        self.metrics.requests.labels(scope["method"], path, str(status)).inc()
        self.metrics.latency.labels(path).observe(elapsed_s)
