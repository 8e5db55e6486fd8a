"""``POST /v1/rewards`` (a batch, any grader) and ``POST /v1/math/verify`` (one check)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from fastapi import Request

from referee.client.errors import PayloadTooLarge
from referee.client.models import (
    GradersResponse,
    MathVerifyRequest,
    MathVerifyResponse,
    RewardItem,
    RewardsRequest,
    RewardsResponse,
)
from referee.services.openapi_doc import api_key_router
from referee.services.scoring.scorer import Scorer
from referee.verifiers import TimedOut, WorkerFailed
from referee.verifiers.math import verify

__all__ = ["router", "score_for_request"]

router = api_key_router(
    "/v1",
    "rewards",
    {
        413: "Too many items or too large a body",
        422: "Invalid request (malformed JSON, wrong field, ...)",
    },
)


@router.post("/rewards", response_model=RewardsResponse, summary="Score a batch of rollouts")
async def rewards(body: RewardsRequest, request: Request) -> RewardsResponse:
    """One reward per item, in the order given, with per-group statistics.

    A failure on one item (a check that overran its deadline, a worker that ran out of memory)
    is reported on that item: score 0 and `details.outcome` `timeout` or `error`.
    """
    settings = request.app.state.settings
    if len(body.items) > settings.max_batch_items:
        raise PayloadTooLarge(
            f"{len(body.items)} items in one request; the limit is {settings.max_batch_items}: "
            "split the batch (the Python SDK chunks large batches for you)"
        )
    return await score_for_request(request, body.items, body.pass_threshold)


async def score_for_request(
    request: Request, items: Sequence[RewardItem], pass_threshold: float, where: str = "items"
) -> RewardsResponse:
    """A batch scored by the app's :class:`~referee.services.scoring.scorer.Scorer` (named graders
    expanded, the synchronous PRM budget, the deadlines, the curriculum fed). The compatibility
    routes (OpenRLHF, slime) score through here too."""
    scorer: Scorer = request.app.state.scorer
    return await scorer.score(items, pass_threshold, where)


@router.get("/graders", response_model=GradersResponse, summary="Graders registered by name")
async def graders(request: Request) -> GradersResponse:
    """The graders this server registered (`REFEREE_GRADERS`, `REFEREE_GRADERS_FILE`), usable
    as `{"type": "named", "name": ..., "reference": ...}` wherever a grader goes."""
    return GradersResponse(graders=request.app.state.graders.specs)


@router.post(
    "/math/verify",
    response_model=MathVerifyResponse,
    summary="Check one response against a reference answer",
)
async def math_verify(body: MathVerifyRequest, request: Request) -> MathVerifyResponse:
    from referee.verifiers.registry import math_config

    start = time.perf_counter()
    settings = request.app.state.settings
    config = math_config(body.model_dump())
    [outcome] = await request.app.state.pool.amap(
        verify, [(body.response, body.reference, config)], timeout_s=settings.math_timeout_s
    )
    elapsed = (time.perf_counter() - start) * 1000
    if isinstance(outcome, TimedOut):
        return MathVerifyResponse(
            score=0.0,
            outcome="timeout",
            elapsed_ms=elapsed,
            reason=f"the check did not finish within {outcome.timeout_s:g} s",
        )
    if isinstance(outcome, WorkerFailed):
        return MathVerifyResponse(
            score=0.0, outcome="error", reason=outcome.reason, elapsed_ms=elapsed
        )
    return MathVerifyResponse(**outcome.to_dict(), elapsed_ms=elapsed)
