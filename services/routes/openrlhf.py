"""OpenRLHF's remote reward model: ``--reward.remote_url http://HOST:8000/openrlhf/reward``
(``/get_reward``, the path of OpenRLHF's own example server, is an alias): ``POST {"query",
"prompts", "labels"}`` -> ``{"rewards", "scores", "extra_logs"}``. The response graded is the
query minus its prompt; labels are the references. A reward that is not valid is 0 with
``extra_logs.referee_failed`` 1 (``referee_valid`` 0). Grader choice, end tokens and group
graders: ``remote_reward``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from referee.client.compat_models import OpenRLHFRewardRequest, OpenRLHFRewardResponse
from referee.client.errors import InvalidRequest
from referee.services.routes.remote_reward import (
    GRADER_QUERY,
    grader_of,
    group_of,
    item_of,
    response_of,
    reward_of,
    score,
)

__all__ = ["router"]

router = APIRouter(tags=["compat"])


async def _openrlhf(
    body: OpenRLHFRewardRequest, request: Request, kind: str | None, grader: str | None
) -> OpenRLHFRewardResponse:
    n = len(body.query)
    for name, values in (("prompts", body.prompts), ("labels", body.labels)):
        if values is not None and len(values) != n:
            raise InvalidRequest(f"{len(values)} {name} for {n} queries: send one per query")
    spec = grader_of(request, kind, grader)
    prompts = body.prompts or [""] * n
    labels = body.labels or [None] * n
    items = [
        item_of(i, prompts[i], response_of(body.query[i], prompts[i]), labels[i], spec, group_of(p))
        for i, p in enumerate(prompts)
    ]
    results = await score(request, items) if items else []
    rewards, failed = [], []
    for result in results:
        reward, bad = reward_of(result)
        rewards.append(reward)
        failed.append(1.0 if bad else 0.0)
    return OpenRLHFRewardResponse(
        rewards=rewards,
        scores=[min(max(r, 0.0), 1.0) for r in rewards],
        extra_logs={"referee_failed": failed, "referee_valid": [1.0 - f for f in failed]},
    )


async def openrlhf_reward(
    body: OpenRLHFRewardRequest, request: Request, grader: str | None = GRADER_QUERY
) -> OpenRLHFRewardResponse:
    return await _openrlhf(body, request, None, grader)


router.add_api_route(
    "/openrlhf/reward",
    openrlhf_reward,
    methods=["POST"],
    response_model=OpenRLHFRewardResponse,
    summary="OpenRLHF remote reward model (--reward.remote_url)",
)
router.add_api_route(  # the path of OpenRLHF's own example server
    "/get_reward",
    openrlhf_reward,
    methods=["POST"],
    response_model=OpenRLHFRewardResponse,
    summary="OpenRLHF remote reward model (alias of /openrlhf/reward)",
)


@router.post(
    "/openrlhf/reward/{grader_type}",
    response_model=OpenRLHFRewardResponse,
    summary="OpenRLHF remote reward model, grader type in the path",
)
async def openrlhf_reward_typed(
    grader_type: str, body: OpenRLHFRewardRequest, request: Request
) -> OpenRLHFRewardResponse:
    return await _openrlhf(body, request, grader_type, None)
