"""What :class:`~referee.client.sdk.RefereeClient` and
:class:`~referee.client.sdk_async.AsyncRefereeClient` share: which answers are retried, the
request bodies (checked here before anything is sent), a batch cut into chunks of whole groups
and the chunks' answers merged back in the caller's order, and ``_Base`` (the settings, the
backoff between tries, an answer read into its model or raised as a
:mod:`referee.client.errors` class)."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Self, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from referee.client.environment_models import CurriculumProblemsRequest, ProblemsRequest
from referee.client.errors import InvalidRequest, error_for_problem
from referee.client.models import (
    JudgeRequest,
    RewardItem,
    RewardsResponse,
    RunLimits,
    SandboxRunRequest,
)
from referee.client.sdk_sessions import checked_body

__all__ = [
    "M",
    "Sent",
    "_Base",
    "_Closing",
    "_as_items",
    "_curriculum_payload",
    "_job_payload",
    "_judge_payload",
    "_merge",
    "_payload",
    "_problems_call",
    "_retryable",
    "_run_payload",
    "_validated",
    "group_chunks",
]

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


def _problems_call(
    task: str,
    n: int,
    seed: int,
    start: int,
    config: Mapping[str, Any] | None,
    level: int | None,
    instruction: str | None,
) -> tuple[str, dict[str, Any]]:
    """The path and body of a ``problems`` call."""
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
    return f"/v1/environments/{quote(task, safe='')}/problems", payload


def _curriculum_payload(
    n: int, tasks: Sequence[str] | None, seed: int | None, instruction: str | None
) -> dict[str, Any]:
    return _validated(
        CurriculumProblemsRequest,
        "curriculum_problems",
        n=n,
        tasks=list(tasks) if tasks is not None else None,
        seed=seed,
        instruction=instruction,
    )


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


def group_chunks(items: list[RewardItem], size: int) -> Iterator[list[RewardItem]]:
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


class _Closing:
    """An object that owns a sync ``httpx.Client`` (``_http``): ``close()`` closes it, and so
    does the end of a ``with`` block."""

    _http: httpx.Client

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
