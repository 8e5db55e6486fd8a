"""The ``remote`` sandbox backend: code runs on sandbox nodes, other referee servers, over HTTP.

    REFEREE_SANDBOX_BACKEND=remote REFEREE_SANDBOX_URL=http://sandbox:8001 referee serve

A sandbox node is a plain ``referee serve`` whose own backend isolates programs (bubblewrap, in
a container that has the privileges bubblewrap needs). The API servers and workers that forward
to it need no privilege at all and no toolchain: they hold a :class:`RemoteSandbox` where a
local server holds a bubblewrap backend.

What is forwarded is a whole program, not single commands: one ``POST /v1/sandbox/run`` per
program run once (``/v1/sandbox/run``, SandboxFusion's ``/run_code``, ``referee run``), one
``POST /v1/sandbox/grade`` per ``code`` grader of a reward item (the node compiles once and runs
every test). So the language recipes stay where the toolchains are, a compiled binary never
crosses the network, and a node keeps nothing between requests: any node can serve any request.
Several nodes (``REFEREE_SANDBOX_URL=http://a:8001,http://b:8001``) are used in turn.

Faults: a node that cannot be reached (refused, reset, restarting) or answers 502/503/504 is
retried, on the next node, for up to ``REFEREE_SANDBOX_REMOTE_RETRY_S``, and skipped by the
calls of the next ``DOWN_S`` seconds while another node answers (a node whose host is gone would
otherwise cost a connect timeout to every call it is first in line for); grading is a pure
function of its inputs, so a retried request is harmless. Then the call fails with
``ServiceUnavailable``; a node's 504 (no slot came free in its queue wait) and its 503 (its
queue is full) are retried the same way. A node's 422 (an unknown language) is passed on as it
is. Every call has a deadline: the program's own limits plus
``REFEREE_SANDBOX_REMOTE_WAIT_S`` for a free slot.

It is a :class:`~referee.services.execution.runners.CodeRunner`, as the local runner is; it is
not an isolation backend (no single commands).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Sequence
from typing import Any

import httpx

from referee.client.errors import (
    APIError,
    InvalidRequest,
    ServiceUnavailable,
    TooManyRequests,
    error_for_problem,
)
from referee.client.models import (
    CodeGradeResponse,
    SandboxLanguages,
    SandboxRunResponse,
)
from referee.sandbox import RunResult
from referee.sandbox.languages import normalize_language
from referee.services.execution.program import Program, ProgramLimits
from referee.services.execution.program_tests import code_deadline_s
from referee.services.execution.wire import limits_dict, to_run_result
from referee.services.settings import Settings

__all__ = ["CONNECT_RETRY_S", "DOWN_S", "RemoteSandbox"]

CONNECT_RETRY_S = 30.0
_RETRY_STATUS = {502, 503, 504}
_SLACK_S = 30.0  # set-up, transfer and tear-down on top of a run's own limits
DOWN_S = 10.0  # an unreachable node is skipped this long while another one answers


class RemoteSandbox:
    """Sandbox nodes reached over HTTP. Thread-safe (one connection pool); blocking calls, made
    from the sandbox executor's threads."""

    name = "remote"

    def __init__(
        self,
        urls: Sequence[str],
        *,
        api_key: str | None = None,
        wait_s: float = 300.0,
        connect_retry_s: float = CONNECT_RETRY_S,
        max_connections: int = 64,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.urls = [u.strip().rstrip("/") for u in urls if u.strip()]
        if not self.urls:
            raise ValueError("the remote sandbox backend needs REFEREE_SANDBOX_URL")
        for url in self.urls:
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"REFEREE_SANDBOX_URL: {url!r} is not an http(s) URL")
        self.wait_s = wait_s
        self.connect_retry_s = connect_retry_s
        headers = {"user-agent": "referee-remote-sandbox/0.1"}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        self._http = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(60.0, connect=5.0),
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
            transport=transport,
        )
        self._turn = itertools.count()
        self._lock = threading.Lock()
        self._down_at: dict[str, float] = {}  # node -> monotonic time it was unreachable

    @classmethod
    def from_settings(cls, settings: Settings) -> RemoteSandbox:
        return cls(
            (settings.sandbox_url or "").split(","),
            api_key=settings.sandbox_api_key,
            wait_s=settings.sandbox_remote_wait_s,
            connect_retry_s=settings.sandbox_remote_retry_s,
            max_connections=settings.sandbox_slots,
        )

    def close(self) -> None:
        self._http.close()

    # -- what is forwarded --------------------------------------------------------------------
    def node_languages(self) -> SandboxLanguages:
        """The languages of a node (``GET /v1/sandbox/languages``)."""
        data = self._call("GET", "/v1/sandbox/languages", None, 30.0)
        return SandboxLanguages.model_validate(data)

    def languages(self, slots: int) -> SandboxLanguages:
        node = self.node_languages()
        return node.model_copy(update={"backend": f"remote ({node.backend})", "slots": slots})

    def check_language(self, language: str) -> str:
        """The canonical name; the node checks the language is installed (a 422 if not)."""
        return normalize_language(language)

    def run_once(self, program: Program, stdin: str) -> tuple[RunResult | None, RunResult]:
        """Compile (if needed) and run once on a node: ``(compile_result, run_result)``, as
        :class:`~referee.services.execution.runners.LocalRunner` answers here."""
        limits = program.limits
        body = {
            "code": program.code,
            "language": program.language,
            "stdin": stdin,
            "limits": limits_dict(limits.run),
            "compile_time_s": limits.compile.wall_time_s,
        }
        deadline = limits.compile.wall_time_s + limits.run.wall_time_s + _SLACK_S
        answer = SandboxRunResponse.model_validate(
            self._call("POST", "/v1/sandbox/run", body, deadline)
        )
        compiled = to_run_result(answer.compile) if answer.compile is not None else None
        if compiled is not None and not compiled.ok:
            return compiled, compiled
        return compiled, to_run_result(answer)

    def run_each(
        self, program: Program, stdins: Sequence[str], preload: Sequence[str] = ()
    ) -> list[RunResult]:
        """One run per input, each a ``/v1/sandbox/run`` of its own (any node may take it;
        ``preload`` is the node's concern: each run there is a sandbox of its own)."""
        return [self.run_once(program, x)[1] for x in stdins]

    def grade_code(
        self, grader: dict[str, Any], response: str, limits: ProgramLimits
    ) -> tuple[float, dict[str, Any]]:
        """Score one response with one ``code`` grader on a node (compile once, every test);
        the node's deadline is :func:`code_deadline_s`, waiting for its slot on top."""
        body = {
            "grader": {**grader, "limits": limits_dict(limits.run)},
            "response": response,
            "compile_time_s": limits.compile.wall_time_s,
        }
        deadline = code_deadline_s(grader, limits) + self.wait_s + _SLACK_S
        answer = CodeGradeResponse.model_validate(
            self._call("POST", "/v1/sandbox/grade", body, deadline)
        )
        return answer.score, answer.details

    # -- transport ----------------------------------------------------------------------------
    def down_nodes(self) -> list[str]:
        """The nodes skipped for now: unreachable at their last call, less than
        ``DOWN_S`` ago."""
        with self._lock:
            return [url for url in self.urls if self._is_down(url)]

    def _is_down(self, url: str) -> bool:
        at = self._down_at.get(url)
        return at is not None and time.monotonic() - at < DOWN_S

    def _next_url(self) -> str:
        """The next node in turn, skipping those that were just unreachable (unless all were)."""
        with self._lock:
            for _ in range(len(self.urls)):
                url = self.urls[next(self._turn) % len(self.urls)]
                if not self._is_down(url):
                    return url
            return self.urls[next(self._turn) % len(self.urls)]

    def _mark(self, url: str, *, down: bool) -> None:
        with self._lock:
            if down:
                self._down_at[url] = time.monotonic()
            else:
                self._down_at.pop(url, None)

    def _call(self, method: str, path: str, body: Any, timeout_s: float) -> Any:
        give_up = time.monotonic() + self.connect_retry_s
        delay = 0.2
        tries = 0
        while True:
            url = self._next_url()
            tries += 1
            try:
                response = self._http.request(
                    method,
                    url + path,
                    json=body,
                    timeout=httpx.Timeout(timeout_s, connect=5.0),
                )
            except httpx.ReadTimeout as exc:
                raise ServiceUnavailable(
                    f"the sandbox node {url} gave no answer within {timeout_s:g} s"
                ) from exc
            except httpx.TransportError as exc:
                reason = f"cannot reach the sandbox node {url}: {exc or type(exc).__name__}"
                self._mark(url, down=True)
            else:
                self._mark(url, down=False)
                if response.status_code < 400:
                    return response.json()
                error = _node_error(url, response)
                if response.status_code not in _RETRY_STATUS:
                    raise error
                reason = str(error)
            if tries % len(self.urls):
                continue  # every node once before waiting
            if time.monotonic() + delay > give_up:
                raise ServiceUnavailable(reason)
            time.sleep(delay)
            delay = min(delay * 2, 2.0)


def _node_error(url: str, response: httpx.Response) -> APIError:
    """The error to raise for a node's problem answer (its own type where the caller caused it)."""
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    error = error_for_problem(response.status_code, body)
    if isinstance(error, InvalidRequest | TooManyRequests):
        return error
    return ServiceUnavailable(f"the sandbox node {url} answered {response.status_code}: {error}")
