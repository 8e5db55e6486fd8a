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
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from referee.client.environment_models import (
    CurriculumProblemsRequest,
    CurriculumResponse,
    EnvironmentsResponse,
    ProblemsRequest,
    ProblemsResponse,
)
from referee.client.errors import (
    InvalidRequest,
    RequestTimeout,
    ServiceUnavailable,
    TransportError,
    error_for_problem,
)
from referee.client.job_models import JobStatus
from referee.client.models import (
    GradersResponse,
    JudgeRequest,
    JudgeResponse,
    MathVerifyRequest,
    MathVerifyResponse,
    RewardItem,
    RewardsResponse,
    RunLimits,
    SandboxLanguages,
    SandboxRunRequest,
    SandboxRunResponse,
)
from referee.client.sdk_sessions import AsyncSessionCalls, SessionCalls, checked_body

__all__ = ["AsyncRefereeClient", "RefereeClient"]

M = TypeVar("M", bound=BaseModel)
_RETRY_ALWAYS = {429}
_RETRY_WHEN_ASKED = {502, 503, 504}  # only with Retry-After: the server says waiting helps


def _retryable(response: httpx.Response) -> bool:
    status = response.status_code
    return status in _RETRY_ALWAYS or (
        status in _RETRY_WHEN_ASKED and "retry-after" in response.headers
    )


def _run_payload(
    code: str, language: str, stdin: str, time_limit_s: float | None, memory_mb: int | None
) -> dict[str, Any]:
    limits = RunLimits(time_s=time_limit_s, memory_mb=memory_mb)
    body = SandboxRunRequest(code=code, language=language, stdin=stdin, limits=limits)
    return body.model_dump(exclude_none=True)


def _validated(model: type[M], where: str, **fields: Any) -> dict[str, Any]:
    """A request body checked here first, so a mistake is named before anything is sent."""
    return checked_body(model, where, fields, exclude_none=True)


def _judge_payload(
    prompt: str | Sequence[Mapping[str, Any]],
    responses: Sequence[str],
    grader: BaseModel | Mapping[str, Any],
) -> dict[str, Any]:
    raw = grader.model_dump() if isinstance(grader, BaseModel) else dict(grader)
    return _validated(JudgeRequest, "judge", prompt=prompt, responses=list(responses), grader=raw)


def _as_items(items: Iterable[RewardItem | Mapping[str, Any]]) -> list[RewardItem]:
    parsed = []
    for n, item in enumerate(items):
        try:
            parsed.append(item if isinstance(item, RewardItem) else RewardItem.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise InvalidRequest(f"items.{n}.{where}: {first['msg']}") from exc
    return parsed


def _chunks(items: list[RewardItem], size: int) -> Iterator[list[RewardItem]]:
    """Chunks of at most ``size`` items (more only when one group is larger), groups kept whole."""
    order: dict[str | None, list[RewardItem]] = {}
    singles: list[list[RewardItem]] = []
    for item in items:
        if item.group is None:
            singles.append([item])
        else:
            order.setdefault(item.group, []).append(item)
    units = list(order.values()) + singles
    chunk: list[RewardItem] = []
    for unit in units:
        if chunk and len(chunk) + len(unit) > size:
            yield chunk
            chunk = []
        chunk.extend(unit)
    if chunk:
        yield chunk


def _job_payload(
    items: Sequence[RewardItem | Mapping[str, Any]],
    job_id: str | None,
    pass_threshold: float,
    chunk_size: int | None,
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "items": [i.model_dump(mode="json") for i in _as_items(items)],
        "pass_threshold": pass_threshold,
    }
    if job_id is not None:
        payload["id"] = job_id
    if chunk_size is not None:
        payload["chunk_size"] = chunk_size
    return payload


def _payload(chunk: list[RewardItem], pass_threshold: float) -> dict[str, Any]:
    return {"items": [i.model_dump(mode="json") for i in chunk], "pass_threshold": pass_threshold}


Sent = tuple[list[RewardItem], RewardsResponse]


def _merge(items: list[RewardItem], parts: list[Sent], elapsed_ms: float) -> RewardsResponse:
    """Put chunk answers back in the caller's order."""
    by_position: dict[int, Any] = {}
    position = {id(item): i for i, item in enumerate(items)}
    groups = []
    for sent, part in parts:
        for item, result in zip(sent, part.rewards, strict=True):
            by_position[position[id(item)]] = result
        groups.extend(part.groups)
    rewards = [by_position[i] for i in range(len(items))]
    scored = [r.score for r in rewards if r.score is not None and r.valid]
    mean = sum(scored) / len(scored) if scored else 0.0
    return RewardsResponse(rewards=rewards, groups=groups, mean=mean, elapsed_ms=elapsed_ms)


class _Base:
    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        timeout: float,
        max_retries: int,
        backoff_s: float,
        chunk_size: int,
    ) -> None:
        if chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")
        self.base_url = base_url.rstrip("/")
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.chunk_size = chunk_size
        self.timeout = timeout
        self.headers = {"user-agent": "referee-sdk/0.1"}
        if api_key:
            self.headers["authorization"] = f"Bearer {api_key}"

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            after = response.headers.get("retry-after", "")
            if after.replace(".", "", 1).isdigit():
                return min(float(after), 60.0)
        return float(self.backoff_s * (2**attempt) * (0.5 + random.random()))

    @staticmethod
    def _parse(response: httpx.Response, model: type[M]) -> M:
        if response.status_code >= 400:
            try:
                body: Any = response.json()
            except ValueError:
                body = response.text
            error = error_for_problem(response.status_code, body)
            after = response.headers.get("retry-after", "")
            if after.replace(".", "", 1).isdigit():  # how long the server asks to wait
                error.retry_after_s = float(after)
            raise error
        return model.model_validate(response.json())


class RefereeClient(SessionCalls, _Base):
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
        for chunk in _chunks(parsed, self.chunk_size):
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
        payload = _validated(
            ProblemsRequest,
            "problems",
            n=n,
            seed=seed,
            start=start,
            config=dict(config) if config is not None else None,
            level=level,
            instruction=instruction,
        )
        path = f"/v1/environments/{quote(task, safe='')}/problems"
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
        payload = _validated(
            CurriculumProblemsRequest,
            "curriculum_problems",
            n=n,
            tasks=list(tasks) if tasks is not None else None,
            seed=seed,
            instruction=instruction,
        )
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

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RefereeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncRefereeClient(AsyncSessionCalls, _Base):
    """Asynchronous client; chunks of a large batch are sent concurrently."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        api_key: str | None = None,
        timeout: float = 300.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        chunk_size: int = 1024,
        max_concurrency: int = 4,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout, max_retries, backoff_s, chunk_size)
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=self.headers, timeout=timeout, transport=transport
        )
        self._limit = asyncio.Semaphore(max_concurrency)

    async def _post(self, path: str, payload: dict[str, Any], model: type[M]) -> M:
        return await self._send("POST", path, payload, model)

    async def _send(
        self, method: str, path: str, payload: dict[str, Any] | None, model: type[M]
    ) -> M:
        for attempt in range(self.max_retries + 1):
            try:
                async with self._limit:
                    response = await self._http.request(method, path, json=payload)
            except httpx.TimeoutException as exc:
                if attempt >= self.max_retries:
                    raise RequestTimeout(f"no answer from {self.base_url}{path} in time") from exc
                await asyncio.sleep(self._delay(attempt, None))
                continue
            except httpx.TransportError as exc:
                if attempt >= self.max_retries:
                    raise TransportError(f"cannot reach {self.base_url}{path}: {exc}") from exc
                await asyncio.sleep(self._delay(attempt, None))
                continue
            if _retryable(response) and attempt < self.max_retries:
                await asyncio.sleep(self._delay(attempt, response))
                continue
            return self._parse(response, model)
        raise ServiceUnavailable("retries exhausted")  # pragma: no cover

    async def _get(self, path: str, model: type[M]) -> M:
        try:
            response = await self._http.get(path)
        except httpx.TimeoutException as exc:
            raise RequestTimeout(f"no answer from {self.base_url}{path} in time") from exc
        except httpx.TransportError as exc:
            raise TransportError(f"cannot reach {self.base_url}{path}: {exc}") from exc
        return self._parse(response, model)

    async def rewards(
        self, items: Sequence[RewardItem | Mapping[str, Any]], *, pass_threshold: float = 1.0
    ) -> RewardsResponse:
        start = time.perf_counter()
        parsed = _as_items(items)
        chunks = list(_chunks(parsed, self.chunk_size))

        async def send(chunk: list[RewardItem]) -> Sent:
            payload = _payload(chunk, pass_threshold)
            return chunk, await self._post("/v1/rewards", payload, RewardsResponse)

        parts = list(await asyncio.gather(*(send(c) for c in chunks)))
        return _merge(parsed, parts, (time.perf_counter() - start) * 1000)

    async def math_verify(
        self, response: str, reference: str, **options: Any
    ) -> MathVerifyResponse:
        body = MathVerifyRequest(response=response, reference=reference, **options)
        return await self._post("/v1/math/verify", body.model_dump(), MathVerifyResponse)

    async def judge(
        self,
        prompt: str | Sequence[Mapping[str, Any]],
        responses: Sequence[str],
        grader: BaseModel | Mapping[str, Any],
    ) -> JudgeResponse:
        payload = _judge_payload(prompt, responses, grader)
        return await self._post("/v1/judge", payload, JudgeResponse)

    async def sandbox_run(
        self,
        code: str,
        language: str,
        stdin: str = "",
        *,
        time_limit_s: float | None = None,
        memory_mb: int | None = None,
    ) -> SandboxRunResponse:
        payload = _run_payload(code, language, stdin, time_limit_s, memory_mb)
        return await self._post("/v1/sandbox/run", payload, SandboxRunResponse)

    async def sandbox_languages(self) -> SandboxLanguages:
        return await self._get("/v1/sandbox/languages", SandboxLanguages)

    async def graders(self) -> GradersResponse:
        return await self._get("/v1/graders", GradersResponse)

    async def environments(self) -> EnvironmentsResponse:
        return await self._get("/v1/environments", EnvironmentsResponse)

    async def problems(
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
        payload = _validated(
            ProblemsRequest,
            "problems",
            n=n,
            seed=seed,
            start=start,
            config=dict(config) if config is not None else None,
            level=level,
            instruction=instruction,
        )
        path = f"/v1/environments/{quote(task, safe='')}/problems"
        return await self._post(path, payload, ProblemsResponse)

    async def curriculum(self) -> CurriculumResponse:
        return await self._get("/v1/curriculum", CurriculumResponse)

    async def curriculum_problems(
        self,
        n: int = 16,
        *,
        tasks: Sequence[str] | None = None,
        seed: int | None = None,
        instruction: str | None = None,
    ) -> ProblemsResponse:
        payload = _validated(
            CurriculumProblemsRequest,
            "curriculum_problems",
            n=n,
            tasks=list(tasks) if tasks is not None else None,
            seed=seed,
            instruction=instruction,
        )
        return await self._post("/v1/curriculum/problems", payload, ProblemsResponse)

    async def submit(
        self,
        items: Sequence[RewardItem | Mapping[str, Any]],
        *,
        job_id: str | None = None,
        pass_threshold: float = 1.0,
        chunk_size: int | None = None,
    ) -> JobStatus:
        payload = _job_payload(items, job_id, pass_threshold, chunk_size)
        return await self._send("POST", "/v1/jobs", payload, JobStatus)

    async def job(self, job_id: str) -> JobStatus:
        return await self._send("GET", f"/v1/jobs/{job_id}", None, JobStatus)

    async def cancel(self, job_id: str) -> JobStatus:
        return await self._send("DELETE", f"/v1/jobs/{job_id}", None, JobStatus)

    async def wait(
        self,
        job: str | JobStatus,
        *,
        progress: Callable[[JobStatus], None] | None = None,
        poll_s: float = 0.5,
        timeout_s: float | None = None,
    ) -> JobStatus:
        job_id = job if isinstance(job, str) else job.id
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            status = await self.job(job_id)
            if progress is not None:
                progress(status)
            if status.state.finished:
                return status
            if deadline is not None and time.monotonic() > deadline:
                raise RequestTimeout(f"job {job_id} did not finish within {timeout_s:g} s")
            await asyncio.sleep(poll_s)

    async def health(self) -> bool:
        try:
            return (await self._http.get("/healthz")).status_code == 200
        except httpx.HTTPError:
            return False

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncRefereeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
