"""Building the LLM backends the settings name: the policy model behind ``prm_mc`` graders.

``REFEREE_POLICY_BACKEND`` is ``openai`` (any OpenAI-compatible server: ``vllm serve``, SGLang),
``transformers`` (a local path, in-process) or ``none``; ``REFEREE_POLICY_MODEL=tiny-random``
is a randomly initialised 2-layer model for tests and demos.
"""

from __future__ import annotations

from referee.genrm.backend import LLMBackend
from referee.services.settings import Settings

__all__ = ["build_backend", "build_policy"]


def build_backend(
    kind: str,
    model: str | None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    concurrency: int = 32,
    what: str = "POLICY",
) -> LLMBackend | None:
    """The backend ``kind`` serving ``model`` (None for ``none``)."""
    if kind == "none":
        return None
    if not model:
        raise ValueError(f"REFEREE_{what}_MODEL is required when REFEREE_{what}_BACKEND is set")
    if kind == "openai":
        from referee.genrm.openai_backend import OpenAIBackend

        if not base_url:
            raise ValueError(f"REFEREE_{what}_BASE_URL is required for the openai backend")
        return OpenAIBackend(base_url, model, api_key=api_key, concurrency=concurrency)
    if kind != "transformers":
        raise ValueError(f"unknown backend {kind!r}")
    if model == "tiny-random":
        from referee.genrm.openai_server import tiny_transformers_backend

        backend: LLMBackend = tiny_transformers_backend()
        return backend
    from referee.genrm.transformers_backend import TransformersBackend

    return TransformersBackend.from_pretrained(model)


def build_policy(settings: Settings) -> LLMBackend | None:
    return build_backend(
        settings.policy_backend,
        settings.policy_model,
        base_url=settings.policy_base_url,
        api_key=settings.policy_api_key,
        concurrency=settings.policy_concurrency,
    )
