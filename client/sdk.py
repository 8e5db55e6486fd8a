"""The Python SDK: :class:`RefereeClient` and :class:`AsyncRefereeClient` on httpx.

    from referee.client import RefereeClient
    with RefereeClient("http://127.0.0.1:8000") as referee:
        item = {"id": "0", "response": "... \\\\boxed{2}", "group": "q1",
                "grader": {"type": "math", "reference": "2"}}
        out = referee.rewards([item])
        print(out.rewards[0].score, out.groups[0].pass_rate)

Large batches are split into chunks of whole groups (a group's rollouts always travel together,
so its statistics are computed on all of them); what the server asks to be retried is retried
(``max_retries`` times, waiting its ``Retry-After`` or an exponential backoff): 429, and 503 or
504 that carry ``Retry-After`` (a full sandbox queue, no slot in time), and connection failures
and timeouts. A 503 without it (no isolation, no judge) is raised at once. Every fault is raised
as a :mod:`referee.client.errors` class. ``sandbox_run`` and ``sandbox_languages`` reach the
sandbox.

:class:`RefereeClient` is here; :class:`AsyncRefereeClient`, its twin, is in ``sdk_async.py``
(re-exported here), what both share in ``sdk_base.py``, their session calls in
``sdk_sessions.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx
from pydantic import BaseModel

from referee.client.environment_models import (
    CurriculumResponse,
    EnvironmentsResponse,
    ProblemsResponse,
)
from referee.client.errors import RequestTimeout, ServiceUnavailable, TransportError
from referee.client.job_models import JobStatus
from referee.client.models import (
    GradersResponse,
    JudgeResponse,
    MathVerifyRequest,
    MathVerifyResponse,
    RewardItem,
    RewardsResponse,
    SandboxLanguages,
    SandboxRunResponse,
)
from referee.client.sdk_async import AsyncRefereeClient
from referee.client.sdk_base import (
    M,
    Sent,
    _as_items,
    _Base,
    _Closing,
    _curriculum_payload,
    _job_payload,
    _judge_payload,
    _merge,
    _payload,
    _problems_call,
    _retryable,
    _run_payload,
    group_chunks,
)
from referee.client.sdk_sessions import SessionCalls

__all__ = ["AsyncRefereeClient", "RefereeClient"]


class RefereeClient(SessionCalls, _Closing, _Base):
    """Synchronous client. Thread-safe (one httpx connection pool)."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        api_key: str | None = None,
        timeout: float = 300.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        chunk_size: int = 1024,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout, max_retries, backoff_s, chunk_size)
        self._http = httpx.Client(
            base_url=self.base_url, headers=self.headers, timeout=timeout, transport=transport
        )

    def _post(self, path: str, payload: dict[str, Any], model: type[M]) -> M:
        return self._send("POST", path, payload, model)

    def _send(self, method: str, path: str, payload: dict[str, Any] | None, model: type[M]) -> M:
        for attempt in range(self.max_retries + 1):
            try:
                response = self._http.request(method, path, json=payload)
            except httpx.TimeoutException as exc:
                if attempt >= self.max_retries:
                    raise RequestTimeout(f"no answer from {self.base_url}{path} in time") from exc
                time.sleep(self._delay(attempt, None))
                continue
            except httpx.TransportError as exc:
                if attempt >= self.max_retries:
                    raise TransportError(f"cannot reach {self.base_url}{path}: {exc}") from exc
                time.sleep(self._delay(attempt, None))
                continue
            if _retryable(response) and attempt < self.max_retries:
                time.sleep(self._delay(attempt, response))
                continue
            return self._parse(response, model)
        raise ServiceUnavailable("retries exhausted")  # pragma: no cover - loop always returns

    def _get(self, path: str, model: type[M]) -> M:
        try:
            response = self._http.get(path)
        except httpx.TimeoutException as exc:
            raise RequestTimeout(f"no answer from {self.base_url}{path} in time") from exc
        except httpx.TransportError as exc:
            raise TransportError(f"cannot reach {self.base_url}{path}: {exc}") from exc
        return self._parse(response, model)

    def rewards(
        self, items: Sequence[RewardItem | Mapping[str, Any]], *, pass_threshold: float = 1.0
    ) -> RewardsResponse:
        """Score items (any size: sent in chunks of whole groups), results in the given order."""
        start = time.perf_counter()
        parsed = _as_items(items)
        parts: list[Sent] = []
        for chunk in group_chunks(parsed, self.chunk_size):
            payload = _payload(chunk, pass_threshold)
            parts.append((chunk, self._post("/v1/rewards", payload, RewardsResponse)))
        return _merge(parsed, parts, (time.perf_counter() - start) * 1000)

    def math_verify(self, response: str, reference: str, **options: Any) -> MathVerifyResponse:
        body = MathVerifyRequest(response=response, reference=reference, **options)
        return self._post("/v1/math/verify", body.model_dump(), MathVerifyResponse)

    def judge(
        self,
        prompt: str | Sequence[Mapping[str, Any]],
        responses: Sequence[str],
        grader: BaseModel | Mapping[str, Any],
    ) -> JudgeResponse:
        """A ``rubric`` or ``genrm`` judge on the responses to one prompt (``POST /v1/judge``;
        pairwise compares them with each other). A verdict that cannot be read is a result
        with ``score=None`` and the reason in ``details``."""
        payload = _judge_payload(prompt, responses, grader)
        return self._post("/v1/judge", payload, JudgeResponse)

    def sandbox_run(
        self,
        code: str,
        language: str,
        stdin: str = "",
        *,
        time_limit_s: float | None = None,
        memory_mb: int | None = None,
    ) -> SandboxRunResponse:
        """Run one program in the server's sandbox (compiled first if the language needs it)."""
        payload = _run_payload(code, language, stdin, time_limit_s, memory_mb)
        return self._post("/v1/sandbox/run", payload, SandboxRunResponse)

    def sandbox_languages(self) -> SandboxLanguages:
        """The languages the server can run, and its isolation backend."""
        return self._get("/v1/sandbox/languages", SandboxLanguages)

    def graders(self) -> GradersResponse:
        """The graders the server registered by name (use ``{"type": "named", "name": ...}``)."""
        return self._get("/v1/graders", GradersResponse)

    def environments(self) -> EnvironmentsResponse:
        """The procedural task families: config fields, difficulty attributes and levels."""
        return self._get("/v1/environments", EnvironmentsResponse)

    def problems(
        self,
        task: str,
        n: int = 16,
        *,
        seed: int = 0,
        start: int = 0,
        config: Mapping[str, Any] | None = None,
        level: int | None = None,
        instruction: str | None = None,
    ) -> ProblemsResponse:
        """``n`` problems of ``task`` (same seed and config: same problems), each with its
        prompt and the ``procedural`` grader that scores a response to it."""
        path, payload = _problems_call(task, n, seed, start, config, level, instruction)
        return self._post(path, payload, ProblemsResponse)

    def curriculum(self) -> CurriculumResponse:
        """Pass rates per task and level, each task's current level and its weight in draws."""
        return self._get("/v1/curriculum", CurriculumResponse)

    def curriculum_problems(
        self,
        n: int = 16,
        *,
        tasks: Sequence[str] | None = None,
        seed: int | None = None,
        instruction: str | None = None,
    ) -> ProblemsResponse:
        """``n`` problems drawn by the curriculum: tasks weighted by failure rate, each at its
        current level."""
        payload = _curriculum_payload(n, tasks, seed, instruction)
        return self._post("/v1/curriculum/problems", payload, ProblemsResponse)

    def submit(
        self,
        items: Sequence[RewardItem | Mapping[str, Any]],
        *,
        job_id: str | None = None,
        pass_threshold: float = 1.0,
        chunk_size: int | None = None,
    ) -> JobStatus:
        """Submit a reward batch as a job (``prm_mc`` graders, very large batches). With
        ``job_id``, submitting again returns the same job (safe to retry)."""
        payload = _job_payload(items, job_id, pass_threshold, chunk_size)
        return self._send("POST", "/v1/jobs", payload, JobStatus)

    def job(self, job_id: str) -> JobStatus:
        return self._send("GET", f"/v1/jobs/{job_id}", None, JobStatus)

    def cancel(self, job_id: str) -> JobStatus:
        return self._send("DELETE", f"/v1/jobs/{job_id}", None, JobStatus)

    def wait(
        self,
        job: str | JobStatus,
        *,
        progress: Callable[[JobStatus], None] | None = None,
        poll_s: float = 0.5,
        timeout_s: float | None = None,
    ) -> JobStatus:
        """Poll until the job has finished (succeeded, failed or cancelled) and return it;
        ``progress`` is called with each status seen. A job the server no longer knows raises
        :class:`NotFound`; no end within ``timeout_s`` raises :class:`RequestTimeout`."""
        job_id = job if isinstance(job, str) else job.id
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            status = self.job(job_id)
            if progress is not None:
                progress(status)
            if status.state.finished:
                return status
            if deadline is not None and time.monotonic() > deadline:
                raise RequestTimeout(f"job {job_id} did not finish within {timeout_s:g} s")
            time.sleep(poll_s)

    def health(self) -> bool:
        try:
            return self._http.get("/healthz").status_code == 200
        except httpx.HTTPError:
            return False
