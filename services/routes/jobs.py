"""``/v1/jobs``: submit a long reward batch (``prm_mc`` graders, thousands of items), follow its
progress, fetch its result, cancel it. Jobs run on Celery workers when a broker is configured,
in the API process otherwise; the API is the same either way."""

from __future__ import annotations

from fastapi import Request, Response

from referee.client.errors import PayloadTooLarge
from referee.client.job_models import JobRequest, JobStatus
from referee.services.openapi_doc import api_key_router
from referee.services.scoring.sql_files import resolve_sql_databases, uses_database_files

__all__ = ["router"]

_MAY_NAME_FILES = frozenset({"sql", "weighted", "length_penalty"})
"""Grader types that are, or may hold, an ``sql`` grader naming a database file."""

router = api_key_router(
    "/v1/jobs",
    "jobs",
    {
        404: "No such job",
        409: "The id is taken by a different request",
        413: "Too many items or too large a body",
        422: "Invalid request",
        503: "The job store or queue is unreachable",
    },
)


@router.post(
    "",
    response_model=JobStatus,
    status_code=202,
    responses={200: {"model": JobStatus, "description": "Submitted before (same id, request)"}},
    summary="Submit a job (a reward batch; PRM graders without a rollout budget)",
)
async def submit(body: JobRequest, request: Request, response: Response) -> JobStatus:
    """Answers 202 with the new job, or 200 with the job already there when the same `id` and
    request were submitted before (idempotent); 409 when the id holds a different request."""
    limit = request.app.state.settings.max_job_items
    if len(body.items) > limit:
        raise PayloadTooLarge(
            f"{len(body.items)} items in one job; the limit is {limit}: split it into jobs"
        )
    items = request.app.state.graders.expand_items(body.items)
    if any(item.grader.type in _MAY_NAME_FILES for item in items):  # else nothing to dump
        graders = [item.grader.model_dump() for item in items]
        if any(map(uses_database_files, graders)):  # a 422 now, not a failed job later
            resolve_sql_databases(graders, request.app.state.settings.sql_databases_dir)
    if any(a is not b for a, b in zip(items, body.items, strict=True)):
        body = body.model_copy(update={"items": items})  # workers see concrete graders only
    status, created = await request.app.state.jobs.submit(body)
    response.headers["Location"] = f"/v1/jobs/{status.id}"
    if not created:
        response.status_code = 200
    return status  # type: ignore[no-any-return]


@router.get("/{job_id}", response_model=JobStatus, summary="A job's state, progress and result")
async def get(job_id: str, request: Request) -> JobStatus:
    return await request.app.state.jobs.get(job_id)  # type: ignore[no-any-return]


@router.delete("/{job_id}", response_model=JobStatus, summary="Cancel a job")
async def cancel(job_id: str, request: Request) -> JobStatus:
    """A queued job never starts; a running one stops at its next check (between chunks, or
    between batches of PRM rollouts). A finished job is answered as it is."""
    return await request.app.state.jobs.cancel(job_id)  # type: ignore[no-any-return]
