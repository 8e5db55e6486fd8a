"""One interface to the LLMs every model-based reward uses (judges, GenRM, Monte Carlo PRM).

A backend generates completions for a batch of prompts (text or chat messages) with sampling
parameters and ``n`` samples each, and reports log-probabilities: of the tokens it chose, and of
given label tokens at the first position (``P("Yes")`` vs ``P("No")`` for a verdict from the
judge's own probabilities). Backends:

* :mod:`referee.genrm.transformers_backend` -- in-process, CPU or one GPU; small judges, tests;
* :mod:`referee.genrm.openai_backend` -- any OpenAI-compatible server over async httpx;
* :mod:`referee.genrm.vllm_backend` -- in-process vLLM on GPUs (``pip install 'referee[vllm]'``).

Structured outputs (:attr:`SamplingParams.structured`) are enforced by the vllm backend and sent
by the openai backend (which falls back to a plain request where a server refuses them); the
transformers backend ignores them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = ["Completion", "LLMBackend", "Message", "Prompt", "SamplingParams", "StructuredOutput"]

Message = dict[str, str]  # {"role": ..., "content": ...}
Prompt = str | Sequence[Message]


@dataclass(frozen=True, slots=True)
class StructuredOutput:
    """Constrain the output (servers that support it; others ignore it and say so)."""

    kind: Literal["json", "regex", "choice"]
    value: Any  # a JSON schema, a regex, or a list of choices


@dataclass(frozen=True, slots=True)
class SamplingParams:
    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    n: int = 1
    seed: int | None = None
    stop: tuple[str, ...] = ()
    logprobs: bool = False
    """Return the log-probability of every generated token."""
    label_tokens: tuple[str, ...] = ()
    """Return the log-probability of each of these (first token of each) at the first position."""
    top_logprobs: int = 0
    """Return the k most likely tokens at the first position with their log-probabilities."""
    structured: StructuredOutput | None = None


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    """The answer text (for reasoning models: the part after the reasoning)."""
    reasoning: str | None = None
    """What a reasoning-parser server returned separately (``reasoning_content``)."""
    finish_reason: str | None = None
    token_logprobs: tuple[float, ...] | None = None
    label_logprobs: dict[str, float] | None = None
    first_top_logprobs: dict[str, float] | None = None
    tokens: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def full_text(self) -> str:
        """Reasoning and answer together: a verdict may stand in either."""
        return f"{self.reasoning}\n{self.text}" if self.reasoning else self.text


@runtime_checkable
class LLMBackend(Protocol):
    name: str
    """The backend kind: transformers, openai, vllm."""
    model_name: str

    async def generate(
        self, prompts: Sequence[Prompt], params: SamplingParams
    ) -> list[list[Completion]]:
        """``params.n`` completions for each prompt, in order."""
        ...

    async def close(self) -> None: ...
