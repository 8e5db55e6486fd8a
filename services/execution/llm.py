"""Building the LLM backends the settings name: the judge (``rubric``, ``genrm`` graders) and
the policy model behind ``prm_mc`` graders.

``REFEREE_JUDGE_BACKEND`` / ``REFEREE_POLICY_BACKEND`` is ``openai`` (any OpenAI-compatible
server: ``vllm serve``, SGLang), ``vllm`` (in-process on GPUs), ``transformers`` (a local path,
in-process) or ``none``; the model ``tiny-random`` is a randomly initialised 2-layer model for
tests and demos (transformers).
"""

from __future__ import annotations

from typing import Any

from referee.genrm.backend import LLMBackend
from referee.services.settings import Settings

__all__ = ["build_backend", "build_judge", "build_policy"]


def build_backend(
    kind: str,
    model: str | None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    concurrency: int = 32,
    top_logprobs: int = 20,
    vllm_options: dict[str, Any] | None = None,
    torch_threads: int | None = None,
    what: str = "POLICY",
) -> LLMBackend | None:
    """The backend ``kind`` serving ``model`` (None for ``none``). ``torch_threads`` caps the
    intra-op threads of an in-process ``transformers`` model (torch's setting is per process)."""
    if kind == "none":
        return None
    if not model:
        raise ValueError(f"REFEREE_{what}_MODEL is required when REFEREE_{what}_BACKEND is set")
    if kind == "openai":
        from referee.genrm.openai_backend import OpenAIBackend

        if not base_url:
            raise ValueError(f"REFEREE_{what}_BASE_URL is required for the openai backend")
        return OpenAIBackend(
            base_url, model, api_key=api_key, concurrency=concurrency, top_logprobs=top_logprobs
        )
    if kind == "vllm":
        from referee.genrm.vllm_backend import VLLMBackend

        options = dict(vllm_options or {})
        max_logprobs = int(options.pop("max_logprobs", top_logprobs))
        return VLLMBackend(model, max_logprobs=max_logprobs, **options)
    if kind != "transformers":
        raise ValueError(f"unknown backend {kind!r}")
    if torch_threads:
        import torch

        torch.set_num_threads(torch_threads)
    if model == "tiny-random":
        from referee.genrm.openai_server import tiny_transformers_backend

        backend: LLMBackend = tiny_transformers_backend()
        return backend
    from referee.genrm.transformers_backend import TransformersBackend

    return TransformersBackend.from_pretrained(model)


def build_judge(settings: Settings) -> LLMBackend | None:
    """The judge backend the settings name, or None (judge graders then answer 503)."""
    return build_backend(
        settings.judge_backend,
        settings.judge_model,
        base_url=settings.judge_base_url,
        api_key=settings.judge_api_key,
        concurrency=settings.judge_concurrency,
        top_logprobs=settings.judge_top_logprobs,
        vllm_options=settings.judge_vllm_options,
        torch_threads=settings.torch_threads,
        what="JUDGE",
    )


def build_policy(settings: Settings) -> LLMBackend | None:
    return build_backend(
        settings.policy_backend,
        settings.policy_model,
        base_url=settings.policy_base_url,
        api_key=settings.policy_api_key,
        concurrency=settings.policy_concurrency,
        vllm_options=settings.judge_vllm_options,
        torch_threads=settings.torch_threads,
    )
