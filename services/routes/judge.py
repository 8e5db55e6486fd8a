"""``POST /v1/judge``: a model judge on the responses to one prompt, for direct use."""

from __future__ import annotations

import time

from fastapi import Request

from referee.client.models import JudgeRequest, JudgeResponse, JudgeResult, RewardItem
from referee.services.openapi_doc import api_key_router
from referee.services.scoring.judge import require_judge, resolve_judge_leaves

__all__ = ["router"]

router = api_key_router(
    "/v1",
    "judge",
    {422: "Invalid request", 503: "No judge model is configured"},
)


@router.post("/judge", response_model=JudgeResponse, summary="Judge responses with a model")
async def judge(body: JudgeRequest, request: Request) -> JudgeResponse:
    """Rubric or GenRM verdicts for each response; pairwise mode compares them with each other.
    An unreadable verdict gives that response `score: null` with the reason."""
    start = time.perf_counter()
    backend = require_judge(request.app.state.judge)
    grader = body.grader.model_dump()
    items = [
        RewardItem(id=str(k), prompt=body.prompt, response=r, grader=body.grader, group="judge")
        for k, r in enumerate(body.responses)
    ]
    resolved = await resolve_judge_leaves(
        [grader] * len(items), items, backend, request.app.state.settings.judge_templates_dir
    )
    return JudgeResponse(
        results=[JudgeResult(score=g["score"], details=g["details"]) for g in resolved],
        elapsed_ms=(time.perf_counter() - start) * 1000,
    )
