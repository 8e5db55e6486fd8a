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
from referee.services.json_body import FastJSONRoute
from referee.services.routes.remote_reward import GRADER_QUERY, response_of, score_samples

__all__ = ["router"]

router = APIRouter(tags=["compat"], route_class=FastJSONRoute)


async def _openrlhf(
    body: OpenRLHFRewardRequest, request: Request, kind: str | None, grader: str | None
) -> OpenRLHFRewardResponse:
    n = len(body.query)
    for name, values in (("prompts", body.prompts), ("labels", body.labels)):
        if values is not None and len(values) != n:
            raise InvalidRequest(f"{len(values)} {name} for {n} queries: send one per query")
    prompts = body.prompts or [""] * n
    labels = body.labels or [None] * n
    samples = [
        (p, response_of(q, p), label)
        for p, q, label in zip(prompts, body.query, labels, strict=True)
    ]
    rewards, failed = [], []
    for reward, bad, _result in await score_samples(request, kind, grader, samples):
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
