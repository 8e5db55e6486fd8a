"""A small OpenAI-compatible server in front of any :class:`LLMBackend`.

It serves a model for real (a tiny one built from a config in tests and benchmarks, or local
weights) at ``/v1/chat/completions``, ``/v1/completions`` and ``/v1/models``, so the ``openai``
backend can be tested and measured against an actual server. With ``reasoning=True`` it acts like
a reasoning-parser server: text inside ``<think>...</think>`` is returned as
``reasoning_content``. Structured outputs (``structured_outputs``) are accepted and ignored: the
response's ``referee`` field and ``/stats`` say so; with ``structured="reject"`` the server acts
like one that predates them and answers 400.

    uvicorn --factory referee.genrm.openai_server:create_tiny_app --port 8001

Tests and benchmarks start it with ``referee.services.launcher.start_tiny_llm``.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Literal

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from referee.genrm.backend import Completion, LLMBackend, SamplingParams

__all__ = ["create_app", "create_tiny_app", "tiny_transformers_backend"]


class _Request(BaseModel):
    model_config = ConfigDict(extra="allow")
    model: str = ""
    messages: list[dict[str, str]] | None = None
    prompt: str | None = None
    max_tokens: int = 64
    temperature: float = 0.0
    top_p: float = 1.0
    n: int = 1
    seed: int | None = None
    stop: list[str] | str | None = None
    logprobs: bool | int | None = None
    top_logprobs: int | None = None


def _params(req: _Request, chat: bool) -> SamplingParams:
    if chat:
        top = req.top_logprobs or 0
        want_lp = bool(req.logprobs)
    else:
        top = int(req.logprobs or 0) if not isinstance(req.logprobs, bool) else 0
        want_lp = req.logprobs is not None and req.logprobs is not False
    stop = (req.stop,) if isinstance(req.stop, str) else tuple(req.stop or ())
    return SamplingParams(
        max_tokens=req.max_tokens,
        temperature=req.temperature,
        top_p=req.top_p,
        n=req.n,
        seed=req.seed,
        stop=stop,
        logprobs=want_lp,
        top_logprobs=top,
    )


def _split_reasoning(text: str) -> tuple[str | None, str]:
    if "</think>" in text:
        head, _, tail = text.partition("</think>")
        return head.replace("<think>", "").strip(), tail.strip()
    return None, text


def create_app(
    backend: LLMBackend,
    reasoning: bool = False,
    structured: Literal["ignore", "reject"] = "ignore",
) -> FastAPI:
    app = FastAPI(title="referee test LLM server")
    load = {"in_flight": 0, "max_in_flight": 0, "requests": 0, "structured": 0, "rejected": 0}

    def refuse(req: _Request) -> JSONResponse | None:
        """Count requests that carry structured_outputs; refuse them in ``reject`` mode."""
        if "structured_outputs" not in (req.model_extra or {}):
            return None
        load["structured"] += 1
        if structured == "ignore":
            return None
        load["rejected"] += 1
        detail = "extra fields not permitted: structured_outputs"
        return JSONResponse({"error": {"message": detail, "type": "BadRequestError"}}, 400)

    @app.middleware("http")
    async def count(request: Any, call_next: Any) -> Any:
        # how many generation requests overlap: shows whether a client fans out concurrently
        load["in_flight"] += 1
        load["requests"] += 1
        load["max_in_flight"] = max(load["max_in_flight"], load["in_flight"])
        try:
            return await call_next(request)
        finally:
            load["in_flight"] -= 1

    @app.get("/stats")
    async def stats() -> dict[str, int]:
        return dict(load)

    def envelope(
        kind: str, choices: list[dict[str, Any]], comps: list[Completion], req: _Request
    ) -> Any:
        ignored = "structured_outputs" in (req.model_extra or {})
        return {
            "id": f"{kind}-{uuid.uuid4().hex[:12]}",
            "object": kind,
            "created": int(time.time()),
            "model": backend.model_name,
            "choices": choices,
            "usage": {"completion_tokens": sum(c.tokens for c in comps)},
            "referee": {"structured_outputs": "ignored" if ignored else None},
        }

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": backend.model_name, "object": "model"}]}

    @app.post("/v1/chat/completions")
    async def chat(req: _Request) -> Any:
        if (refused := refuse(req)) is not None:
            return refused
        params = _params(req, chat=True)
        [comps] = await backend.generate([req.messages or []], params)
        choices = []
        for i, c in enumerate(comps):
            thinking, text = _split_reasoning(c.text) if reasoning else (None, c.text)
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if thinking is not None:
                message["reasoning_content"] = thinking
            choice: dict[str, Any] = {
                "index": i,
                "message": message,
                "finish_reason": c.finish_reason,
            }
            if params.logprobs:
                lps = list(c.token_logprobs or ())
                content = [{"token": "", "logprob": lp, "top_logprobs": []} for lp in lps]
                if content and c.first_top_logprobs:
                    content[0]["top_logprobs"] = [
                        {"token": t, "logprob": v} for t, v in c.first_top_logprobs.items()
                    ]
                choice["logprobs"] = {"content": content}
            choices.append(choice)
        return envelope("chat.completion", choices, comps, req)

    @app.post("/v1/completions")
    async def completions(req: _Request) -> Any:
        if (refused := refuse(req)) is not None:
            return refused
        params = _params(req, chat=False)
        [comps] = await backend.generate([req.prompt or ""], params)
        choices = []
        for i, c in enumerate(comps):
            choice: dict[str, Any] = {"index": i, "text": c.text, "finish_reason": c.finish_reason}
            if params.logprobs:
                choice["logprobs"] = {
                    "token_logprobs": list(c.token_logprobs or ()),
                    "top_logprobs": [c.first_top_logprobs or {}],
                }
            choices.append(choice)
        return envelope("text_completion", choices, comps, req)

    return app


def tiny_transformers_backend(seed: int = 0) -> Any:
    """A 2-layer Llama with random weights and ByT5's file-free byte tokenizer (no download)."""
    from transformers import ByT5Tokenizer

    from referee.genrm.tiny_model import tiny_llama
    from referee.genrm.transformers_backend import TransformersBackend

    tok = ByT5Tokenizer()
    model = tiny_llama(tok, hidden=64, max_positions=4096, seed=seed)
    return TransformersBackend(model, tok, name="tiny-llama")


def create_tiny_app() -> FastAPI:
    return create_app(tiny_transformers_backend())
