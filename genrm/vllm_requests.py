"""The vllm backend's pure half, tested without a GPU: a referee request shaped for vLLM
(:func:`plan_request`, :func:`shape_prompt`, :func:`label_token_ids`) and vLLM's outputs turned
into referee :class:`~referee.genrm.backend.Completion` objects (:func:`to_completions`);
:func:`prepare_request` puts them together into one :class:`~referee.genrm.engine_thread.Prepared`
engine request. Imports neither vLLM nor torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from referee.genrm.backend import Completion, Prompt, SamplingParams
from referee.genrm.engine_thread import Prepared
from referee.genrm.transformers_backend import render_prompt

__all__ = [
    "GREEDY_BELOW",
    "PrepareCaches",
    "RequestPlan",
    "label_token_ids",
    "plan_request",
    "prepare_request",
    "shape_prompt",
    "to_completions",
]

GREEDY_BELOW = 1e-5
"""vLLM decodes greedily below this temperature (and then refuses n > 1)."""


@dataclass(frozen=True, slots=True)
class RequestPlan:
    """How one referee request maps onto vLLM."""

    sampling: dict[str, Any]
    """Keyword arguments of ``vllm.SamplingParams`` (without ``structured_outputs``)."""
    structured: dict[str, Any] | None
    """Keyword arguments of ``StructuredOutputsParams``, or None."""
    copies: int
    """How many times each vLLM completion is returned (n for greedy decoding, else 1)."""
    label_ids: dict[str, int] = field(default_factory=dict)


def label_token_ids(tokenizer: Any, labels: Sequence[str]) -> dict[str, int]:
    """Each label's first token id (encoded without special tokens), as the transformers backend
    reads label probabilities."""
    ids = {}
    for label in labels:
        encoded = list(tokenizer.encode(label, add_special_tokens=False))
        if not encoded:
            raise ValueError(f"label {label!r} encodes to no token")
        ids[label] = int(encoded[0])
    return ids


def plan_request(
    params: SamplingParams,
    label_ids: dict[str, int],
    *,
    token_ids_supported: bool,
    max_logprobs: int = 20,
) -> RequestPlan:
    """The vLLM arguments for ``params``; ``token_ids_supported``: this vLLM's SamplingParams has
    ``logprob_token_ids``; ``max_logprobs``: the engine's limit on top-k log-probabilities."""
    if params.max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")
    if params.n < 1:
        raise ValueError("n must be at least 1")
    greedy = params.temperature < GREEDY_BELOW
    sampling: dict[str, Any] = {
        "n": 1 if greedy else params.n,
        "temperature": 0.0 if greedy else params.temperature,
        "top_p": 1.0 if greedy else params.top_p,
        "max_tokens": params.max_tokens,
    }
    if params.seed is not None:
        sampling["seed"] = params.seed
    if params.stop:
        sampling["stop"] = list(params.stop)
    top = min(params.top_logprobs, max_logprobs) if params.top_logprobs > 0 else 0
    if top:
        # top-k at every position (and the chosen token); labels are read from the first one
        sampling["logprobs"] = top
    elif label_ids:
        if token_ids_supported:
            sampling["logprob_token_ids"] = sorted(set(label_ids.values()))
        else:
            sampling["logprobs"] = max_logprobs
    elif params.logprobs:
        sampling["logprobs"] = 0  # the chosen token's alone
    structured: dict[str, Any] | None = None
    if params.structured is not None:
        if params.structured.kind not in ("json", "regex", "choice"):
            raise ValueError(f"unknown structured output kind {params.structured.kind!r}")
        structured = {params.structured.kind: params.structured.value}
    return RequestPlan(
        sampling=sampling,
        structured=structured,
        copies=params.n if greedy else 1,
        label_ids=dict(label_ids),
    )


def shape_prompt(tokenizer: Any, prompt: Prompt) -> str | dict[str, list[int]]:
    """A vLLM prompt: text as is; chat through the chat template, as token ids."""
    if isinstance(prompt, str):
        return prompt
    text = render_prompt(tokenizer, prompt)
    if getattr(tokenizer, "chat_template", None):
        ids = tokenizer.encode(text, add_special_tokens=False)
        return {"prompt_token_ids": [int(t) for t in ids]}
    return text


def _logprob(entry: Any) -> float:
    value = getattr(entry, "logprob", entry)
    return float(value)


def to_completions(
    outputs: Sequence[Any],
    params: SamplingParams,
    plan: RequestPlan,
    token_text: Callable[[int], str],
) -> list[Completion]:
    """Referee completions from a vLLM ``RequestOutput.outputs`` (``CompletionOutput`` objects:
    ``index``, ``text``, ``token_ids``, ``logprobs`` -- a list of ``{token_id: Logprob}`` per
    generated position, or vLLM's ``FlatLogprobs``, which indexes the same way --,
    ``finish_reason``). ``token_text`` names a token id in ``first_top_logprobs``."""
    result: list[Completion] = []
    for out in sorted(outputs, key=lambda o: getattr(o, "index", 0)):
        ids = [int(t) for t in (out.token_ids or ())]
        positions = out.logprobs if out.logprobs is not None else []
        first: Any = positions[0] if len(positions) > 0 else None
        token_lp = None
        if params.logprobs and (len(positions) > 0 or not ids):
            chosen = []
            for pos, tid in enumerate(ids):
                entry = positions[pos].get(tid) if pos < len(positions) else None
                chosen.append(_logprob(entry) if entry is not None else -math.inf)
            token_lp = tuple(chosen)
        labels = None
        if plan.label_ids and first is not None:
            labels = {
                label: _logprob(first[tid]) if tid in first else -math.inf
                for label, tid in plan.label_ids.items()
            }
        top = None
        if params.top_logprobs and first is not None:
            k = params.top_logprobs
            ranked = sorted(
                (
                    (entry.rank, tid, _logprob(entry))
                    for tid, entry in first.items()
                    if getattr(entry, "rank", None) is not None and entry.rank <= k
                ),
            )
            top = {token_text(tid): lp for _rank, tid, lp in ranked[:k]}
        completion = Completion(
            text=out.text or "",
            finish_reason=out.finish_reason,
            token_logprobs=token_lp,
            label_logprobs=labels,
            first_top_logprobs=top,
            tokens=len(ids),
        )
        result.extend([completion] * plan.copies)
    return result


@dataclass(slots=True)
class PrepareCaches:
    """Per-tokenizer look-ups kept between requests (used on the engine's thread only)."""

    labels: dict[tuple[str, ...], dict[str, int]] = field(default_factory=dict)
    token_text: dict[int, str] = field(default_factory=dict)


def prepare_request(
    tokenizer: Any,
    prompts: Sequence[Prompt],
    params: SamplingParams,
    *,
    make_params: Callable[[RequestPlan], Any],
    token_ids_supported: bool,
    max_logprobs: int = 20,
    caches: PrepareCaches | None = None,
) -> Prepared[list[list[Completion]]]:
    """One ``generate`` call made ready for the engine: vLLM prompts, one parameter object per
    prompt (``make_params(plan)``: ``vllm.SamplingParams`` in the backend), and the conversion of
    the engine's ``RequestOutput`` objects (``.outputs``) into referee completions."""
    caches = caches if caches is not None else PrepareCaches()
    labels = params.label_tokens
    if labels and labels not in caches.labels:
        caches.labels[labels] = label_token_ids(tokenizer, labels)
    plan = plan_request(
        params,
        caches.labels[labels] if labels else {},
        token_ids_supported=token_ids_supported,
        max_logprobs=max_logprobs,
    )
    engine_params = make_params(plan)
    shaped = [shape_prompt(tokenizer, p) for p in prompts]
    names = caches.token_text

    def token_text(tid: int) -> str:
        if tid not in names:
            names[tid] = str(tokenizer.convert_ids_to_tokens([tid])[0])
        return names[tid]

    def finish(outputs: list[Any]) -> list[list[Completion]]:
        return [to_completions(o.outputs, params, plan, token_text) for o in outputs]

    return Prepared(shaped, [engine_params] * len(shaped), finish)
