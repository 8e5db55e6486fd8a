"""Remote reward models as OpenRLHF and slime call them, so their users point at referee as is.

- OpenRLHF ``--reward.remote_url http://HOST:8000/openrlhf/reward`` (``/get_reward``, the path
  of OpenRLHF's own example server, is an alias): ``POST {"query", "prompts", "labels"}`` →
  ``{"rewards", "scores", "extra_logs"}``. The response graded is the query minus its prompt;
  labels are the references.
- slime ``--rm-type remote_rm --rm-url http://HOST:8000/slime/reward``: ``POST {"prompt",
  "response", "label"}`` → the reward as a bare number (``?details=true``: ``{"reward", "acc",
  "valid", "outcome", "details"}``, for ``--reward-key reward``).

Both trainers keep special tokens (OpenRLHF decodes prompt + response with them, slime keeps the
EOS text by default), so the trailing end-of-turn tokens and padding of the common chat templates
are removed before grading. The grader, first found wins: the path
(``/openrlhf/reward/multiple_choice``: that grader type with the label as reference), the
``grader`` query parameter (a grader object as JSON), the server setting
``REFEREE_COMPAT_GRADER`` (JSON), then ``{"type": "math"}``. A reward that is not ``valid`` (a
timeout, a worker or sandbox fault, an unreadable verdict, a bad reference, a group grader given
one sample) scores 0, as these trainers need a number, and says so: ``extra_logs.referee_failed``
1 (``referee_valid`` 0) on OpenRLHF, ``valid`` false in slime's details. Both send one sample
per request (OpenRLHF's single-turn path; slime always), so a group grader (``majority_vote``,
``length_penalty``, pairwise ``genrm``) sees a group of one and fails that way: such graders need
``/v1/rewards`` or veRL's batch reward function.
Neither trainer sends an API key: with keys set, ``REFEREE_COMPAT_WITHOUT_API_KEY=true`` serves
these routes without one.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from fastapi import APIRouter, Query, Request
from pydantic import ValidationError

from referee.client.compat_models import (
    OpenRLHFRewardRequest,
    OpenRLHFRewardResponse,
    SlimeRewardRequest,
)
from referee.client.errors import InvalidRequest, PayloadTooLarge
from referee.client.grader_specs import fill_grader, parse_grader
from referee.client.models import RewardItem, RewardResult
from referee.services.routes.rewards import score_for_request

__all__ = ["response_of", "router", "strip_end_tokens"]

router = APIRouter(tags=["compat"])

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
_GRADER_QUERY = Query(None, description='A grader object as JSON, e.g. {"type": "math"}.')


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


def _group(prompt: str) -> str | None:
    """Queries of one batch with the same prompt are one group (majority vote works)."""
    return hashlib.sha1(prompt.encode()).hexdigest()[:16] if prompt else None


def _grader(request: Request, kind: str | None, grader: str | None) -> dict[str, Any]:
    if kind is not None:
        return {"type": kind}
    if grader is not None:
        try:
            return parse_grader(grader)
        except ValueError as exc:
            raise InvalidRequest(f"query parameter grader: {exc}") from exc
    configured = request.app.state.settings.compat_grader
    return dict(configured) if configured else {"type": "math"}


def _item(
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


async def _score(request: Request, items: list[RewardItem]) -> list[RewardResult]:
    settings = request.app.state.settings
    if len(items) > settings.max_batch_items:
        raise PayloadTooLarge(
            f"{len(items)} samples in one request; the limit is {settings.max_batch_items}"
        )
    out = await score_for_request(request, items, 1.0, "samples")
    return out.rewards


def _reward(result: RewardResult) -> tuple[float, bool]:
    """The reward these trainers need (a number: 0.0 when not valid) and whether it failed."""
    failed = result.score is None or not result.valid
    return (0.0 if failed or result.score is None else float(result.score)), failed


async def _openrlhf(
    body: OpenRLHFRewardRequest, request: Request, kind: str | None, grader: str | None
) -> OpenRLHFRewardResponse:
    n = len(body.query)
    for name, values in (("prompts", body.prompts), ("labels", body.labels)):
        if values is not None and len(values) != n:
            raise InvalidRequest(f"{len(values)} {name} for {n} queries: send one per query")
    spec = _grader(request, kind, grader)
    prompts = body.prompts or [""] * n
    labels = body.labels or [None] * n
    items = [
        _item(i, prompts[i], response_of(body.query[i], prompts[i]), labels[i], spec, _group(p))
        for i, p in enumerate(prompts)
    ]
    results = await _score(request, items) if items else []
    rewards, failed = [], []
    for result in results:
        reward, bad = _reward(result)
        rewards.append(reward)
        failed.append(1.0 if bad else 0.0)
    return OpenRLHFRewardResponse(
        rewards=rewards,
        scores=[min(max(r, 0.0), 1.0) for r in rewards],
        extra_logs={"referee_failed": failed, "referee_valid": [1.0 - f for f in failed]},
    )


@router.post(
    "/openrlhf/reward",
    response_model=OpenRLHFRewardResponse,
    summary="OpenRLHF remote reward model (--reward.remote_url)",
)
async def openrlhf_reward(
    body: OpenRLHFRewardRequest, request: Request, grader: str | None = _GRADER_QUERY
) -> OpenRLHFRewardResponse:
    return await _openrlhf(body, request, None, grader)


@router.post(
    "/get_reward",
    response_model=OpenRLHFRewardResponse,
    summary="OpenRLHF remote reward model (alias of /openrlhf/reward)",
)
async def get_reward(
    body: OpenRLHFRewardRequest, request: Request, grader: str | None = _GRADER_QUERY
) -> OpenRLHFRewardResponse:
    return await _openrlhf(body, request, None, grader)


@router.post(
    "/openrlhf/reward/{grader_type}",
    response_model=OpenRLHFRewardResponse,
    summary="OpenRLHF remote reward model, grader type in the path",
)
async def openrlhf_reward_typed(
    grader_type: str, body: OpenRLHFRewardRequest, request: Request
) -> OpenRLHFRewardResponse:
    return await _openrlhf(body, request, grader_type, None)


async def _slime(
    body: SlimeRewardRequest, request: Request, kind: str | None, grader: str | None, details: bool
) -> Any:
    spec = _grader(request, kind, grader)
    prompt = body.prompt if isinstance(body.prompt, str) else json.dumps(body.prompt)
    response = strip_end_tokens(body.response)  # slime keeps the EOS text by default
    item = _item(0, body.prompt, response, body.label, spec, _group(prompt))
    [result] = await _score(request, [item])
    reward, failed = _reward(result)
    if not details:
        return reward
    return {
        "reward": reward,
        "acc": 1.0 if not failed and reward >= 1.0 else 0.0,
        "valid": not failed,
        "outcome": str(result.details.get("outcome", "unknown")),
        "details": json.loads(json.dumps(result.details, default=str)),
    }


_DETAILS = Query(False, description="Answer {reward, acc, outcome, details} instead of a number.")


@router.post("/slime/reward", summary="slime remote reward model (--rm-url)")
async def slime_reward(
    body: SlimeRewardRequest,
    request: Request,
    grader: str | None = _GRADER_QUERY,
    details: bool = _DETAILS,
) -> Any:
    return await _slime(body, request, None, grader, details)


@router.post("/slime/reward/{grader_type}", summary="slime remote reward model, grader in path")
async def slime_reward_typed(
    grader_type: str, body: SlimeRewardRequest, request: Request, details: bool = _DETAILS
) -> Any:
    return await _slime(body, request, grader_type, None, details)
