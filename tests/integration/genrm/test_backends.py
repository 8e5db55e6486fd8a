"""The LLM backends on a real (tiny, random) transformers model, and the openai backend against
a real OpenAI-compatible server that serves that same model."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from referee.genrm.backend import LLMBackend, SamplingParams, StructuredOutput
from referee.genrm.openai_backend import OpenAIBackend, OpenAIBackendError
from referee.genrm.openai_server import tiny_transformers_backend
from referee.services.launcher import start_tiny_llm

CHAT = [{"role": "user", "content": "Is 2 + 2 = 4? Answer Y or N."}]


@pytest.fixture(scope="module")
def tiny() -> Any:
    return tiny_transformers_backend(seed=0)


@pytest.fixture(scope="module")
def llm_server() -> Iterator[str]:
    with start_tiny_llm() as llm:
        yield llm.url


def test_transformers_backend_batches_samples_and_logprobs(tiny: Any) -> None:
    assert isinstance(tiny, LLMBackend)
    params = SamplingParams(
        max_tokens=8,
        n=3,
        temperature=0.9,
        seed=3,
        logprobs=True,
        label_tokens=("Y", "N"),
        top_logprobs=5,
    )
    out = asyncio.run(tiny.generate(["2+2=", CHAT], params))
    assert [len(row) for row in out] == [3, 3]
    for row in out:
        for c in row:
            assert c.tokens <= 8 and c.token_logprobs is not None
            assert len(c.token_logprobs) == c.tokens
            assert all(lp <= 0 for lp in c.token_logprobs)
            assert c.label_logprobs is not None and set(c.label_logprobs) == {"Y", "N"}
            assert all(math.isfinite(v) and v < 0 for v in c.label_logprobs.values())
            assert c.first_top_logprobs is not None and len(c.first_top_logprobs) == 5
    # the label log-probabilities are the model's: the same prompt gives the same ones (up to
    # the float noise of padding it in a batch)
    again = asyncio.run(tiny.generate(["2+2="], params))
    assert again[0][0].label_logprobs == pytest.approx(out[0][0].label_logprobs, abs=1e-4)


def test_greedy_is_deterministic(tiny: Any) -> None:
    params = SamplingParams(max_tokens=6)
    a = asyncio.run(tiny.generate(["hello"], params))
    b = asyncio.run(tiny.generate(["hello"], params))
    assert a[0][0].text == b[0][0].text


def test_openai_backend_against_the_test_server(llm_server: str, tiny: Any) -> None:
    async def run() -> Any:
        backend = OpenAIBackend(llm_server + "/v1", model="tiny-llama", concurrency=4)
        try:
            chat = await backend.generate(
                [CHAT, CHAT], SamplingParams(max_tokens=6, n=2, label_tokens=("Y", "N"))
            )
            text = await backend.generate(["2+2="], SamplingParams(max_tokens=6, logprobs=True))
            return chat, text
        finally:
            await backend.close()

    chat, text = asyncio.run(run())
    assert [len(r) for r in chat] == [2, 2]
    first = chat[0][0]
    assert first.label_logprobs is not None
    assert all(v <= 0 for v in first.label_logprobs.values())
    # the server runs the same seeded tiny model: greedy text matches the in-process backend
    local = asyncio.run(tiny.generate(["2+2="], SamplingParams(max_tokens=6)))
    assert text[0][0].text == local[0][0].text
    assert text[0][0].token_logprobs is not None and len(text[0][0].token_logprobs) > 0


def _mock(handler: Any) -> OpenAIBackend:
    return OpenAIBackend(
        "http://judge.test/v1", model="m", transport=httpx.MockTransport(handler), backoff_s=0.001
    )


def test_reasoning_content_is_kept_and_structured_outputs_fall_back() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        import json

        body = json.loads(request.content)
        seen.append(body)
        if "structured_outputs" in body:
            return httpx.Response(400, text="extra fields not permitted: structured_outputs")
        msg = {"role": "assistant", "content": "", "reasoning_content": "... [RESULT] 4"}
        return httpx.Response(200, json={"choices": [{"message": msg, "finish_reason": "stop"}]})

    backend = _mock(handler)
    params = SamplingParams(structured=StructuredOutput("choice", ["A", "B"]))
    [[c]] = asyncio.run(backend.generate([CHAT], params))
    assert c.text == "" and c.reasoning == "... [RESULT] 4" and "[RESULT] 4" in c.full_text
    assert "structured_outputs" in seen[0] and "structured_outputs" not in seen[1]
    assert not backend.structured_supported


def test_server_errors_are_retried_then_raised() -> None:
    calls = {"n": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        calls["n"] += 1
        return httpx.Response(503, text="overloaded")

    with pytest.raises(OpenAIBackendError, match="503"):
        asyncio.run(_mock(handler).generate([CHAT], SamplingParams()))
    assert calls["n"] == 4


def test_openai_backend_fans_out_concurrently(llm_server: str) -> None:
    before = httpx.get(llm_server + "/stats").json()

    async def run() -> Any:
        backend = OpenAIBackend(llm_server, model="tiny-llama", concurrency=4)
        try:
            return await backend.generate(
                [f"{k} + {k} =" for k in range(12)], SamplingParams(max_tokens=24)
            )
        finally:
            await backend.close()

    out = asyncio.run(run())
    after = httpx.get(llm_server + "/stats").json()
    assert len(out) == 12 and after["requests"] - before["requests"] >= 12
    assert 2 <= after["max_in_flight"] <= 4 + 1  # overlapping, within the limit (+ this probe)
