"""slime's remote reward model: ``--rm-type remote_rm --rm-url http://HOST:8000/slime/reward``:
``POST {"prompt", "response", "label"}`` -> the reward as a bare number (``?details=true``:
``{"reward", "acc", "valid", "outcome", "details"}``, for ``--reward-key reward``). slime keeps
the EOS text by default: it is stripped. Grader choice and group graders: ``remote_reward``.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Query, Request

from referee.client.compat_models import SlimeRewardRequest
from referee.services.json_body import FastJSONRoute
from referee.services.routes.remote_reward import GRADER_QUERY, score_samples, strip_end_tokens

__all__ = ["router"]

router = APIRouter(tags=["compat"], route_class=FastJSONRoute)


async def _slime(
    body: SlimeRewardRequest, request: Request, kind: str | None, grader: str | None, details: bool
) -> Any:
    response = strip_end_tokens(body.response)  # slime keeps the EOS text by default
    [(reward, failed, result)] = await score_samples(
        request, kind, grader, [(body.prompt, response, body.label)]
    )
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
    grader: str | None = GRADER_QUERY,
    details: bool = _DETAILS,
) -> Any:
    return await _slime(body, request, None, grader, details)


@router.post("/slime/reward/{grader_type}", summary="slime remote reward model, grader in path")
async def slime_reward_typed(
    grader_type: str, body: SlimeRewardRequest, request: Request, details: bool = _DETAILS
) -> Any:
    return await _slime(body, request, grader_type, None, details)
