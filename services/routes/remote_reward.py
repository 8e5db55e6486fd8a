"""What OpenRLHF's and slime's remote reward routes share (``routes/openrlhf.py``,
``routes/slime.py``): the end tokens these trainers leave on a response, the grader of a
request, one sample as a reward item, and the reward as a number.

Both trainers keep special tokens (OpenRLHF decodes prompt + response with them, slime keeps the
EOS text by default), so the trailing end-of-turn tokens and padding of the common chat templates
are removed before grading. The grader, first found wins: the path
(``/openrlhf/reward/multiple_choice``: that grader type with the label as reference), the
``grader`` query parameter (a grader object as JSON), the server setting
``REFEREE_COMPAT_GRADER`` (JSON), then ``{"type": "math"}``. A reward that is not ``valid`` (a
timeout, a worker or sandbox fault, an unreadable verdict, a bad reference, a group grader given
one sample) scores 0, as these trainers need a number, and says so. Both send one sample
per request (OpenRLHF's single-turn path; slime always), so a group grader (``majority_vote``,
``length_penalty``, pairwise ``genrm``) sees a group of one and fails that way: such graders need
``/v1/rewards`` or veRL's batch reward function.
Neither trainer sends an API key: with keys set, ``REFEREE_COMPAT_WITHOUT_API_KEY=true`` serves
these routes without one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from fastapi import Query, Request
from pydantic import ValidationError

from referee.client.errors import InvalidRequest, PayloadTooLarge
from referee.client.grader_specs import fill_grader, parse_grader
from referee.client.models import RewardItem, RewardResult
from referee.services.routes.rewards import score_for_request

__all__ = [
    "GRADER_QUERY",
    "grader_of",
    "group_of",
    "item_of",
    "response_of",
    "reward_of",
    "score",
    "score_samples",
    "strip_end_tokens",
]

_END_TOKENS = (  # what the common chat templates end a turn with, and padding
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|end_of_text|>",
    "<|end|>",
    "<|return|>",
    "</s>",
    "<｜end▁of▁sentence｜>",
    "<end_of_turn>",
    "<eos>",
    "<|eos|>",
    "<pad>",
    "<|pad|>",
    "<|finetune_right_pad_id|>",
)
GRADER_QUERY = Query(None, description='A grader object as JSON, e.g. {"type": "math"}.')


def response_of(query: str, prompt: str | None) -> str:
    """The response part of an OpenRLHF query (prompt + response), end tokens stripped."""
    text = query
    if prompt:
        at = query.find(prompt)
        if at >= 0:
            text = query[at + len(prompt) :]
    return strip_end_tokens(text)


def strip_end_tokens(text: str) -> str:
    """``text`` without the end-of-turn tokens and padding it ends in (repeats included), as a
    trainer that keeps special tokens (OpenRLHF's query, slime's default) sends it."""
    stripped = True
    while stripped:
        stripped = False
        text = text.rstrip()
        for token in _END_TOKENS:
            if text.endswith(token):
                text = text[: -len(token)]
                stripped = True
    return text


def group_of(prompt: Any) -> str | None:
    """Queries of one batch with the same prompt (text, or chat messages as JSON) are one group
    (majority vote works)."""
    text = prompt if isinstance(prompt, str) else json.dumps(prompt)
    return hashlib.sha1(text.encode()).hexdigest()[:16] if text else None


def grader_of(request: Request, kind: str | None, grader: str | None) -> dict[str, Any]:
    if kind is not None:
        return {"type": kind}
    if grader is not None:
        try:
            return parse_grader(grader)
        except ValueError as exc:
            raise InvalidRequest(f"query parameter grader: {exc}") from exc
    configured = request.app.state.settings.compat_grader
    return dict(configured) if configured else {"type": "math"}


def item_of(
    n: int, prompt: Any, response: str, label: Any, grader: dict[str, Any], group: str | None
) -> RewardItem:
    try:
        return RewardItem.model_validate(
            {
                "id": str(n),
                "prompt": prompt if isinstance(prompt, str | list) else "",
                "response": response,
                "grader": fill_grader(grader, label),
                "group": group,
            }
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidRequest(f"the grader for sample {n}: {where}: {first['msg']}") from exc


async def score(request: Request, items: list[RewardItem]) -> list[RewardResult]:
    settings = request.app.state.settings
    if len(items) > settings.max_batch_items:
        raise PayloadTooLarge(
            f"{len(items)} samples in one request; the limit is {settings.max_batch_items}"
        )
    out = await score_for_request(request, items, 1.0, "samples")
    return out.rewards


def reward_of(result: RewardResult) -> tuple[float, bool]:
    """The reward these trainers need (a number: 0.0 when not valid) and whether it failed."""
    failed = result.score is None or not result.valid
    return (0.0 if failed or result.score is None else float(result.score)), failed


async def score_samples(
    request: Request, kind: str | None, grader: str | None, samples: Sequence[tuple[Any, str, Any]]
) -> list[tuple[float, bool, RewardResult]]:
    """Each sample ``(prompt, response, label)`` scored with the request's grader (those of one
    prompt a group): its reward as :func:`reward_of` gives it, whether it failed, its result."""
    spec = grader_of(request, kind, grader)
    items = [
        item_of(n, prompt, response, label, spec, group_of(prompt))
        for n, (prompt, response, label) in enumerate(samples)
    ]
    results = await score(request, items) if items else []
    return [(*reward_of(result), result) for result in results]
