"""The ``openai`` backend: any OpenAI-compatible server (``vllm serve``, SGLang, ...) over httpx.

Chat prompts go to ``/v1/chat/completions``, text prompts to ``/v1/completions``. Requests run
concurrently under a limit, with retries and backoff on connection errors, 429 and 5xx. Structured
outputs use vLLM's ``structured_outputs`` field (vLLM >= 0.12; the old ``guided_*`` fields are
gone); a server that rejects it is asked again without it, once, and remembered. Reasoning models
served with a reasoning parser return their thinking in ``reasoning_content``: it is kept in
:attr:`Completion.reasoning`, so a verdict written there is still found (``full_text``). Label
log-probabilities are read from the first position's ``top_logprobs``.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Sequence
from typing import Any

import httpx

from referee.genrm.backend import Completion, Prompt, SamplingParams

__all__ = ["OpenAIBackend", "OpenAIBackendError"]

_RETRY_STATUS = {429, 500, 502, 503, 504}
_TOP_LOGPROBS = 20


class OpenAIBackendError(RuntimeError):
    """The server failed or answered something that is not a completion. ``transient``: it
    could not be reached or was overloaded (429/5xx) through every retry, so a later try may
    succeed (a job queue retries those)."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class OpenAIBackend:
    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        concurrency: int = 32,
        timeout_s: float = 300.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        top_logprobs: int = _TOP_LOGPROBS,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.name = "openai"
        self.model_name = model
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        root = base_url.rstrip("/")
        root = root[: -len("/v1")] if root.endswith("/v1") else root
        self._http = httpx.AsyncClient(
            base_url=root, headers=headers, timeout=timeout_s, transport=transport
        )
        self._limit = asyncio.Semaphore(concurrency)
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.structured_supported = True
        self.top_logprobs = top_logprobs
        """How many first-position alternatives to ask for when label probabilities are wanted
        (OpenAI allows 20; vLLM up to its --max-logprobs)."""

    async def generate(
        self, prompts: Sequence[Prompt], params: SamplingParams
    ) -> list[list[Completion]]:
        return list(await asyncio.gather(*(self._one(p, params) for p in prompts)))

    def _body(self, prompt: Prompt, params: SamplingParams) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {
            "model": self.model_name,
            "max_tokens": params.max_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "n": params.n,
        }
        if params.seed is not None:
            body["seed"] = params.seed
        if params.stop:
            body["stop"] = list(params.stop)
        want_top = bool(params.label_tokens)
        if isinstance(prompt, str):
            path = "/v1/completions"
            body["prompt"] = prompt
            if params.logprobs or want_top:
                body["logprobs"] = self.top_logprobs if want_top else 1
        else:
            path = "/v1/chat/completions"
            body["messages"] = [dict(m) for m in prompt]
            if params.logprobs or want_top:
                body["logprobs"] = True
                body["top_logprobs"] = self.top_logprobs if want_top else 0
        if params.structured is not None and self.structured_supported:
            body["structured_outputs"] = {params.structured.kind: params.structured.value}
        return path, body

    async def _one(self, prompt: Prompt, params: SamplingParams) -> list[Completion]:
        path, body = self._body(prompt, params)
        data = await self._post(path, body)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            raise OpenAIBackendError(f"{path} answered without choices: {str(data)[:200]}")
        return [_completion(c, params) for c in choices]

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        for attempt in range(self.max_retries + 1):
            try:
                async with self._limit:
                    resp = await self._http.post(path, json=body)
            except httpx.TransportError as exc:
                if attempt >= self.max_retries:
                    raise OpenAIBackendError(
                        f"cannot reach the LLM server {self._http.base_url}: {exc}", transient=True
                    ) from exc
                await asyncio.sleep(self.backoff_s * 2**attempt * (0.5 + random.random()))
                continue
            if (
                resp.status_code == 400
                and "structured_outputs" in body
                and ("structured_outputs" in resp.text or "extra" in resp.text.lower())
            ):
                self.structured_supported = False  # an older or other server: ask plainly
                body = {k: v for k, v in body.items() if k != "structured_outputs"}
                continue
            if resp.status_code in _RETRY_STATUS and attempt < self.max_retries:
                await asyncio.sleep(self.backoff_s * 2**attempt * (0.5 + random.random()))
                continue
            if resp.status_code >= 400:
                raise OpenAIBackendError(
                    f"the LLM server answered {resp.status_code}: {resp.text[:300]}",
                    transient=resp.status_code in _RETRY_STATUS,
                )
            try:
                data: dict[str, Any] = resp.json()
            except ValueError as exc:
                raise OpenAIBackendError("the LLM server answered something not JSON") from exc
            return data
        raise OpenAIBackendError("retries exhausted")

    async def close(self) -> None:
        await self._http.aclose()


def _completion(choice: dict[str, Any], params: SamplingParams) -> Completion:
    message = choice.get("message")
    if isinstance(message, dict):  # chat
        text = message.get("content") or ""
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        content = (choice.get("logprobs") or {}).get("content") or []
        token_lp = tuple(float(t.get("logprob", -math.inf)) for t in content)
        first_top = (
            {t["token"]: float(t["logprob"]) for t in (content[0].get("top_logprobs") or [])}
            if content
            else {}
        )
    else:  # completions
        text = choice.get("text") or ""
        reasoning = None
        lp = choice.get("logprobs") or {}
        token_lp = tuple(float(x) for x in (lp.get("token_logprobs") or []) if x is not None)
        tops = lp.get("top_logprobs") or []
        first_top = {k: float(v) for k, v in (tops[0] or {}).items()} if tops else {}
    labels = None
    if params.label_tokens:
        # a label's probability is that of its first token: the token the label starts with
        clean = {k.strip().lstrip("Ġ▁"): v for k, v in first_top.items()}
        labels = {}
        for label in params.label_tokens:
            matches = [v for k, v in clean.items() if k and label.startswith(k)]
            labels[label] = max(matches, default=-math.inf)
    return Completion(
        text=text,
        reasoning=reasoning,
        finish_reason=choice.get("finish_reason"),
        token_logprobs=token_lp if params.logprobs else None,
        label_logprobs=labels,
        tokens=len(token_lp),
    )
