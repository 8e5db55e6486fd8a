"""The asynchronous SDK client, :class:`AsyncRefereeClient`: the twin of
:class:`~referee.client.sdk.RefereeClient` (same calls, same retries), on ``httpx.AsyncClient``,
with the chunks of a large batch sent concurrently (at most ``max_concurrency`` requests at
once)."""

from __future__ import annotations

import asyncio
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
from referee.client.sdk_base import (
    M,
    Sent,
    _as_items,
    _Base,
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
from referee.client.sdk_sessions import AsyncSessionCalls

__all__ = ["AsyncRefereeClient"]


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
        chunks = list(group_chunks(parsed, self.chunk_size))

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
        path, payload = _problems_call(task, n, seed, start, config, level, instruction)
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
        payload = _curriculum_payload(n, tasks, seed, instruction)
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
