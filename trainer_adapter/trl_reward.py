"""The synchronous TRL reward function, :class:`RefereeReward`, and what its ``async def`` twin
(``trl_async.py``) inherits: TRL's batch (prompts, completions, dataset columns) turned into
referee items with their graders and groups, and referee's answer turned into rewards (None or
0.0 for a reward that is not ``valid``) and into TRL's completions table and metrics. The
module docstring of :mod:`referee.trainer_adapter.trl` describes the behaviour.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from referee.client.errors import RefereeError
from referee.client.grader_specs import (
    dataset_grader,
    fill_grader,
    fill_item,
    parse_grader,
    row_tests,
    tool_call_blocks,
)
from referee.client.models import INVALID_OUTCOMES, RewardItem, RewardsResponse
from referee.client.sdk import AsyncRefereeClient, RefereeClient

__all__ = [
    "FAILED_OUTCOMES",
    "REFERENCE_COLUMNS",
    "Client",
    "GraderSpec",
    "RefereeReward",
    "completion_text",
]

REFERENCE_COLUMNS = ("reference", "answer", "solution", "ground_truth", "label")
FAILED_OUTCOMES = INVALID_OUTCOMES | {"invalid"}
_TRL_KWARGS = frozenset({"trainer_state", "log_extra", "log_metric", "environments"})

GraderSpec = Mapping[str, Any] | BaseModel | Callable[[dict[str, Any]], Any] | None
Client = RefereeClient | AsyncRefereeClient | str
_C = TypeVar("_C", RefereeClient, AsyncRefereeClient)


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multimodal parts: keep the text ones
        return "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, Mapping) and "text" in p
        )
    return "" if content is None else str(content)


def completion_text(completion: Any) -> str:
    """The text to grade: a plain completion as is; a conversational one's assistant content,
    each message's parsed ``tool_calls`` after its content as Hermes ``<tool_call>`` blocks (with
    a tokenizer that has a response schema, TRL hands the calls over parsed, not in the text)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        completion = [completion]
    parts = []
    for m in completion or []:
        if isinstance(m, Mapping) and m.get("role", "assistant") == "assistant":
            text = _message_text(m.get("content"))
            blocks = tool_call_blocks(m.get("tool_calls"))
            parts.append(
                "\n".join([text, *blocks]) if blocks and text else text or "\n".join(blocks)
            )
    return "\n".join(parts)


def _prompt_for_item(prompt: Any) -> str | list[dict[str, Any]]:
    """A prompt as referee's wire schema takes it: text, or messages reduced to role + text."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        return [
            {"role": str(m.get("role", "user")), "content": _message_text(m.get("content"))}
            for m in prompt
            if isinstance(m, Mapping)
        ]
    return str(prompt)


def _group_key(prompt: Any) -> str:
    blob = json.dumps(prompt, sort_keys=True, default=str).encode()
    return hashlib.sha1(blob).hexdigest()[:16]


@dataclass
class _Built:
    items: list[RewardItem] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    errors: dict[int, str] = field(default_factory=dict)
    start: float = field(default_factory=time.perf_counter)
    """When the reward call began (its wait is logged and counted in ``wait_s``)."""


class RefereeReward:
    """A synchronous TRL reward function backed by referee (see
    :mod:`referee.trainer_adapter.trl`)."""

    def __init__(
        self,
        client_or_url: Client,
        grader: GraderSpec = None,
        *,
        reference_columns: Sequence[str] = REFERENCE_COLUMNS,
        api_key: str | None = None,
        chunk_size: int = 1024,
        timeout: float = 300.0,
        max_retries: int = 4,
        pass_threshold: float = 1.0,
        failures: Literal["none", "zero"] = "none",
        on_error: Literal["raise", "none"] = "raise",
        log_details: bool = True,
        name: str = "referee",
    ) -> None:
        if failures not in ("none", "zero") or on_error not in ("raise", "none"):
            raise ValueError("failures is 'none' or 'zero'; on_error is 'raise' or 'none'")
        self.__name__ = name
        self._grader = grader.model_dump() if isinstance(grader, BaseModel) else grader
        self.reference_columns = tuple(reference_columns)
        self.chunk_size = chunk_size
        self.timeout = timeout
        self.max_retries = max_retries
        self.pass_threshold = pass_threshold
        self.failures = failures
        self.on_error = on_error
        self.log_details = log_details
        self._client: Any = None
        self._owns_client = isinstance(client_or_url, str)  # a given client stays the caller's
        if isinstance(client_or_url, str):
            self.url, self.api_key = client_or_url, api_key
        else:
            self._client = client_or_url
            self.url = client_or_url.base_url
            auth = client_or_url.headers.get("authorization", "")
            self.api_key = api_key or (auth[len("Bearer ") :] if auth else None)
        self.calls = 0
        self.wait_s = 0.0
        """Reward calls made and the seconds spent waiting for them (for benchmarks)."""

    # -- pickling (TRL may pickle reward functions): clients are re-created on demand ------
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def _open(self, cls: type[_C]) -> _C:
        """A client (sync or async) with this function's settings."""
        return cls(
            self.url,
            api_key=self.api_key,
            timeout=self.timeout,
            max_retries=self.max_retries,
            chunk_size=self.chunk_size,
        )

    def _sync_client(self) -> RefereeClient:
        if not isinstance(self._client, RefereeClient):
            self._client = self._open(RefereeClient)
        return self._client

    def close(self) -> None:
        """Close the HTTP client this function opened (not one it was given)."""
        if self._owns_client and isinstance(self._client, RefereeClient):
            self._client.close()
            self._client = None

    # -- building the items ------------------------------------------------------------------
    def _row(self, columns: Mapping[str, Any], i: int) -> dict[str, Any]:
        row: dict[str, Any] = {}
        for key, values in columns.items():
            if key in _TRL_KWARGS or not isinstance(values, list | tuple):
                continue
            if i < len(values):
                row[key] = values[i]
        return row

    def _grader_for(self, row: dict[str, Any], prompt: Any) -> dict[str, Any]:
        spec = self._grader
        if spec is None:
            spec = row.get("grader")
            if spec is None and row.get("dataset") is not None and "ground_truth" in row:
                found = dataset_grader(row["dataset"], row["ground_truth"])  # open-instruct's
                if found is not None:
                    return fill_item(found, row)
            if spec is None:
                raise ValueError(
                    "no grader: pass grader=..., give the dataset a grader column, or a "
                    "dataset column naming an open-instruct verifier (gsm8k, math, ifeval...)"
                )
        elif callable(spec):
            spec = spec(row)
        reference = next(
            (row[c] for c in self.reference_columns if row.get(c) not in (None, "")), None
        )
        # a code grader's tests: a tests column, APPS/LiveCodeBench's, HumanEval's or MBPP's; a
        # HumanEval prompt (code the completion continues) is the program's start
        tests = row_tests({**row, "prompt": prompt} if isinstance(prompt, str) else row)
        return fill_item(fill_grader(parse_grader(spec), reference, tests), row)

    def _build(
        self, prompts: Sequence[Any], completions: Sequence[Any], columns: Mapping[str, Any]
    ) -> _Built:
        if len(prompts) != len(completions):
            raise ValueError(f"{len(prompts)} prompts but {len(completions)} completions")
        built = _Built()
        for i, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
            row = self._row(columns, i)
            try:
                grader = self._grader_for(row, prompt)
                item = RewardItem.model_validate(
                    {
                        "id": str(i),
                        "prompt": _prompt_for_item(prompt),
                        "response": completion_text(completion),
                        "grader": grader,
                        "group": _group_key(prompt),
                    }
                )
            except (ValidationError, ValueError, TypeError) as exc:
                if isinstance(exc, ValidationError):
                    first = exc.errors()[0]
                    where = ".".join(str(p) for p in first["loc"])
                    message = f"{where}: {first['msg']}"
                else:
                    message = str(exc)
                built.errors[i] = f"invalid item: {message}"[:300]
                continue
            built.items.append(item)
            built.positions.append(i)
        return built

    # -- shaping the answer ------------------------------------------------------------------
    def _failed(self) -> float | None:
        return 0.0 if self.failures == "zero" else None

    def _finish(
        self,
        n: int,
        built: _Built,
        response: RewardsResponse | None,
        error: str | None,
        columns: Mapping[str, Any],
    ) -> list[float | None]:
        elapsed_s = time.perf_counter() - built.start
        self.calls += 1
        self.wait_s += elapsed_s
        rewards: list[float | None] = [self._failed()] * n
        outcomes: list[str] = ["invalid" if i in built.errors else "error" for i in range(n)]
        extracted: list[str | None] = [None] * n
        parts: dict[str, list[float | None]] = {}
        if response is not None:
            for pos, result in zip(built.positions, response.rewards, strict=True):
                outcome = str(result.details.get("outcome", "unknown"))
                outcomes[pos] = outcome
                value = result.details.get("extracted")
                extracted[pos] = None if value is None else str(value)[:200]
                if result.score is not None and result.valid:
                    rewards[pos] = result.score
                for part in result.details.get("parts", []) or []:
                    if isinstance(part, Mapping) and "type" in part:
                        column = parts.setdefault(f"referee_{part['type']}", [None] * n)
                        column[pos] = part.get("score")
        if self.log_details:
            self._log(columns, n, outcomes, extracted, parts, response, error, elapsed_s)
        return rewards

    def _log(
        self,
        columns: Mapping[str, Any],
        n: int,
        outcomes: list[str],
        extracted: list[str | None],
        parts: dict[str, list[float | None]],
        response: RewardsResponse | None,
        error: str | None,
        elapsed_s: float,
    ) -> None:
        log_extra = columns.get("log_extra")
        log_metric = columns.get("log_metric")
        if callable(log_extra):
            log_extra("referee_outcome", outcomes)
            log_extra("referee_extracted", extracted)
            for column, values in sorted(parts.items()):
                log_extra(column, values)
        if callable(log_metric):
            failed = sum(1 for o in outcomes if o in FAILED_OUTCOMES)  # None by a vote: no fault
            log_metric("referee/failed", failed / n if n else 0.0)
            log_metric("referee/latency_s", elapsed_s)
            groups = response.groups if response is not None else []
            if groups:
                log_metric("referee/pass_rate", sum(g.pass_rate for g in groups) / len(groups))
                log_metric("referee/all_correct", sum(g.all_pass for g in groups) / len(groups))
                log_metric("referee/all_wrong", sum(g.all_fail for g in groups) / len(groups))
            if error is not None:
                log_metric("referee/call_failed", 1.0)

    def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        completion_ids: Sequence[Any] | None = None,
        **columns: Any,
    ) -> list[float | None]:
        built = self._build(prompts, completions, columns)
        response, error = None, None
        if built.items:
            try:
                client = self._client
                if isinstance(client, AsyncRefereeClient):
                    raise TypeError("an AsyncRefereeClient needs asynchronous=True")
                response = self._sync_client().rewards(
                    built.items, pass_threshold=self.pass_threshold
                )
            except RefereeError as exc:
                if self.on_error == "raise":
                    raise
                error = str(exc)
        return self._finish(len(prompts), built, response, error, columns)
