"""``/healthz`` (the process answers), ``/readyz`` (checks can run, answered at once), and
``/metrics``."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from referee.services.openapi_doc import problem_responses
from referee.verifiers import CheckPool
from referee.verifiers.check_pool import PoolHealth
from referee.verifiers.math import verify

__all__ = ["router"]

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="Liveness")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


_PROBE_S = 2.0


async def _math_ready(pool: CheckPool, health: PoolHealth) -> tuple[bool, str]:
    """Whether the check pool works, and how that was found out, without waiting behind work:
    an idle pool (as ``health`` found it) runs one check end to end; a busy one is judged by its
    own counters (its managers alive, no check past its deadline, results still coming)."""
    if not health.managers_alive:
        return False, "the check pool is closed or lost a manager thread"
    if health.overdue:
        return False, f"{health.overdue} checks ran past their deadline and were not stopped"
    if health.queued == 0 and health.running == 0:
        try:
            [verdict] = await asyncio.wait_for(
                pool.amap(verify, [("1", "1")], timeout_s=_PROBE_S), _PROBE_S + 1.0
            )
        except (RuntimeError, TimeoutError):
            return False, "a probe check did not come back"
        if getattr(verdict, "score", 0.0) != 1.0:
            return False, f"a probe check failed: {verdict}"
        return True, "probe"
    stalled = health.running == 0 and (health.since_last_result_s or 0.0) > 10.0
    if stalled:
        return False, "checks are queued but no worker takes them"
    return True, "busy"


@router.get(
    "/readyz",
    summary="Readiness: the check pool works (never waits behind batches)",
    responses=problem_responses({503: "Not ready: the body says what is not"}),
)
async def readyz(request: Request) -> JSONResponse:
    """Answers at once, also under load: an idle pool runs a probe check, a busy one is judged
    by its counters. The sandbox is reported but optional (without isolation the server still
    serves everything else)."""
    pool: CheckPool = request.app.state.pool
    health = pool.health()  # one reading: the counters below are the ones the verdict read
    ok, how = await _math_ready(pool, health)
    sandbox = request.app.state.sandbox
    body = {
        "status": "ready" if ok else "not ready",
        "components": {
            "math": "ok" if ok else "unavailable",
            "sandbox": sandbox.runner.name if sandbox.runner is not None else "unavailable",
        },
        "math_check": how,
        "math_workers": pool.workers,
        "pending_checks": health.queued,
        "running_checks": health.running,
        "dropped_checks": health.dropped,
        "sandbox_slots": sandbox.slots,
        "sandbox_in_flight": sandbox.in_flight,
    }
    return JSONResponse(body, status_code=200 if ok else 503)


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def metrics(request: Request) -> Response:
    return Response(
        generate_latest(request.app.state.metrics.registry), media_type=CONTENT_TYPE_LATEST
    )
