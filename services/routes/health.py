"""``/healthz`` (the process answers), ``/readyz`` (checks can run), ``/metrics``."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from referee.verifiers.math import verify

__all__ = ["router"]

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="Liveness")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="Readiness: a check runs end to end on the pool")
async def readyz(request: Request) -> JSONResponse:
    pool = request.app.state.pool
    try:
        [verdict] = await pool.amap(verify, [("1", "1")], timeout_s=10.0)
        ok = getattr(verdict, "score", 0.0) == 1.0
    except RuntimeError:
        ok = False
    sandbox = request.app.state.sandbox
    body = {
        "status": "ready" if ok else "not ready",
        "components": {
            "math": "ok" if ok else "unavailable",
            # Code execution is optional: without isolation the server still serves the rest.
            "sandbox": sandbox.backend.name if sandbox.backend is not None else "unavailable",
        },
        "math_workers": pool.workers,
        "pending_checks": pool.pending,
        "sandbox_slots": sandbox.slots,
        "sandbox_in_flight": sandbox.in_flight,
    }
    return JSONResponse(body, status_code=200 if ok else 503)


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def metrics(request: Request) -> Response:
    return Response(
        generate_latest(request.app.state.metrics.registry), media_type=CONTENT_TYPE_LATEST
    )
