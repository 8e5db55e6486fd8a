"""The ``vllm`` backend: vLLM in-process on GPUs (offline ``vllm.LLM``), batched across callers.

    backend = VLLMBackend("/models/judge", gpu_memory_utilization=0.8, max_model_len=8192)

Needs ``pip install 'referee[vllm]'`` (a pinned vLLM that brings its own torch and transformers:
install it in its own environment, not beside the ``genrm`` or ``train`` extras). Importing this
module never imports vLLM; constructing the backend without it raises :class:`VLLMUnavailable`.

``LLM.generate`` is synchronous and not thread-safe, so one thread owns the engine
(:class:`EngineThread`): it builds the ``LLM``, and runs every ``generate`` call that arrived while
the previous one ran as ONE ``LLM.generate`` over all their prompts (each prompt with its own
sampling parameters), so concurrent judge calls share the GPU's batch instead of queueing. A
request that vLLM rejects fails alone: a combined batch that fails is retried call by call.

The conversion between referee and vLLM is pure and tested without a GPU:

* :func:`plan_request` -- referee :class:`SamplingParams` to ``vllm.SamplingParams`` arguments.
  Greedy decoding with ``n > 1`` (which vLLM refuses) is decoded once and returned n times, as the
  transformers backend does. Label log-probabilities use ``logprob_token_ids`` (exactly the label
  tokens; the pinned vLLM 0.33 has it), else the first position's top-``max_logprobs`` (a label
  outside them gets ``-inf``, as with the openai backend); with ``top_logprobs`` asked too, labels
  are read from that top-k.
* :func:`to_completions` -- a ``RequestOutput``'s outputs to referee :class:`Completion` objects:
  ``token_logprobs`` aligned with vLLM's generated token ids (``tokens`` counts them, as vLLM's
  usage does), ``label_logprobs`` keyed by label (the
  label's first token, encoded without special tokens, as the transformers backend does),
  ``first_top_logprobs`` keyed by the token's vocabulary string.
* :func:`shape_prompt` -- text prompts go to vLLM as text (it tokenizes them, as ``vllm serve``'s
  completions do); chat prompts are rendered with the tokenizer's chat template and passed as
  token ids (no second BOS), or as role-tagged text when the tokenizer has no template.

Structured outputs (:class:`StructuredOutput`) become ``StructuredOutputsParams`` (``json``,
``regex`` or ``choice``), enforced by vLLM's grammar backend.

The backend is here; the pure conversion is in ``vllm_requests.py``, the engine thread in
``engine_thread.py`` (both re-exported here).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from referee.genrm.backend import Completion, Prompt, SamplingParams
from referee.genrm.engine_thread import EngineThread, Prepared
from referee.genrm.vllm_requests import (
    GREEDY_BELOW,
    PrepareCaches,
    RequestPlan,
    label_token_ids,
    plan_request,
    prepare_request,
    shape_prompt,
    to_completions,
)

__all__ = [
    "GREEDY_BELOW",
    "INSTALL_HINT",
    "EngineThread",
    "PrepareCaches",
    "Prepared",
    "RequestPlan",
    "VLLMBackend",
    "VLLMUnavailable",
    "import_vllm",
    "label_token_ids",
    "plan_request",
    "prepare_request",
    "shape_prompt",
    "to_completions",
]

INSTALL_HINT = (
    "the vllm judge backend needs vLLM on a CUDA host: pip install 'referee[vllm]' (in an "
    "environment of its own: it pins its own torch and transformers)"
)

R = TypeVar("R")


class VLLMUnavailable(ImportError):
    """vLLM is not installed (or cannot be imported) here."""


def import_vllm() -> Any:
    """The ``vllm`` module, or :class:`VLLMUnavailable` saying how to install it."""
    try:
        import vllm
    except ImportError as exc:
        raise VLLMUnavailable(f"{INSTALL_HINT} ({exc})") from exc
    return vllm


class VLLMBackend:
    """referee's :class:`~referee.genrm.backend.LLMBackend` on an in-process ``vllm.LLM``.

    ``model`` is a local path or a model name vLLM can load; ``engine_kwargs`` go to ``vllm.LLM``
    (``gpu_memory_utilization``, ``max_model_len``, ``dtype``, ``tensor_parallel_size``,
    ``load_format``, ...). ``max_logprobs`` is the engine's top-k limit (vLLM's default is 20).
    """

    def __init__(
        self,
        model: str,
        *,
        name: str | None = None,
        max_logprobs: int = 20,
        **engine_kwargs: Any,
    ) -> None:
        vllm = import_vllm()
        try:
            from vllm.sampling_params import StructuredOutputsParams
        except ImportError as exc:  # older than 0.12: the guided_* API
            raise VLLMUnavailable(f"this vLLM is too old for referee: {INSTALL_HINT}") from exc
        self.name = "vllm"
        self.model_name = name or model
        self.max_logprobs = max_logprobs
        self._vllm = vllm
        self._structured_cls = StructuredOutputsParams
        fields = getattr(vllm.SamplingParams, "__struct_fields__", ())
        self.token_ids_supported = "logprob_token_ids" in fields
        """This vLLM returns log-probabilities of given token ids (exact label probabilities)."""
        self._caches = PrepareCaches()
        self.tokenizer: Any = None

        def build() -> Any:
            return vllm.LLM(model=model, max_logprobs=max_logprobs, **engine_kwargs)

        self._engine: EngineThread[Any] = EngineThread(
            build, self._prepare, _run_generate, _shutdown, name="referee-vllm"
        )
        self.tokenizer = self._engine.call(lambda llm: llm.get_tokenizer())

    @property
    def llm(self) -> Any:
        """The ``vllm.LLM``; call it through :meth:`call` (it belongs to one thread)."""
        return self._engine.engine

    @property
    def batches(self) -> int:
        """``LLM.generate`` calls so far; fewer than ``generate`` calls when callers overlapped."""
        return self._engine.batches

    def call(self, fn: Callable[[Any], R]) -> R:
        """Run ``fn(llm)`` on the engine's thread (e.g. raw ``llm.generate`` in a benchmark)."""
        return self._engine.call(fn)

    async def generate(
        self, prompts: Sequence[Prompt], params: SamplingParams
    ) -> list[list[Completion]]:
        if not prompts:
            return []
        future = self._engine.submit((list(prompts), params))
        result: list[list[Completion]] = await asyncio.wrap_future(future)
        return result

    def _prepare(self, llm: Any, request: tuple[list[Prompt], SamplingParams]) -> Prepared[Any]:
        prompts, params = request
        return prepare_request(
            llm.get_tokenizer() if self.tokenizer is None else self.tokenizer,
            prompts,
            params,
            make_params=self._sampling_params,
            token_ids_supported=self.token_ids_supported,
            max_logprobs=self.max_logprobs,
            caches=self._caches,
        )

    def _sampling_params(self, plan: RequestPlan) -> Any:
        kwargs = dict(plan.sampling)
        if plan.structured is not None:
            kwargs["structured_outputs"] = self._structured_cls(**plan.structured)
        return self._vllm.SamplingParams(**kwargs)

    async def close(self) -> None:
        await asyncio.to_thread(self._engine.close)


def _run_generate(llm: Any, prompts: list[Any], params: list[Any]) -> list[Any]:
    return list(llm.generate(prompts, params, use_tqdm=False))


def _shutdown(llm: Any) -> None:
    for owner in (llm, getattr(llm, "llm_engine", None)):
        stop = getattr(owner, "shutdown", None)
        if callable(stop):
            stop()
            return
