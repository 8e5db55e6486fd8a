"""The referee HTTP API.

Run it with ``referee serve`` or ``uvicorn --factory referee.services.app:create_app``.
Everything runs in one process: math checks and the other verifiers in its check pool, code in
the sandbox executor's slots (``execution/slots.py``). No Redis, no GPU, nothing to configure.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI

from referee.services.auth import open_paths, require_api_key
from referee.services.errors import install_error_handlers
from referee.services.execution.llm import build_judge
from referee.services.jobs.manager import build_jobs
from referee.services.metrics import Metrics
from referee.services.middleware import RequestGuard
from referee.services.openapi_doc import install_openapi
from referee.services.routes import (
    environments,
    health,
    jobs,
    judge,
    nemo_gym,
    openai_graders,
    openrlhf,
    rewards,
    sandbox,
    sandbox_fusion,
    sessions,
    slime,
)
from referee.services.scoring.named import GraderRegistry
from referee.services.scoring.scorer import Scorer
from referee.services.settings import Settings

__all__ = ["build_judge", "create_app"]

VERSION = "0.1.0"
GC_THRESHOLDS = (50_000, 20, 20)
"""Python's collector after start-up: a collection after 50,000 new container objects rather
than 700. A batch builds several objects per item (its request, grader and result models), so
with the default the collector ran about every hundred items, and each older-generation pass
walked everything the server holds: a quarter of the server's own time per cheap item. Memory
is freed by reference counting as before; only cycles wait longer."""


def _settle_gc() -> None:
    """After start-up: collect once, move what start-up built (modules, models, the app) out of
    the collector's reach (``gc.freeze``: it is kept for the process's life anyway), and collect
    less often (:data:`GC_THRESHOLDS`)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        scorer = await asyncio.to_thread(
            Scorer.from_settings, settings, graders=app.state.graders, metrics=app.state.metrics
        )
        app.state.scorer = scorer  # every scoring route calls this one object
        # the other routes use its parts: /v1/math/verify and the environments the pool, the
        # sandbox routes its executor, /v1/judge the judge, /v1/curriculum the curriculum
        app.state.pool, app.state.sandbox = scorer.pool, scorer.sandbox
        app.state.judge, app.state.policy = scorer.judge, scorer.policy
        app.state.curriculum = scorer.curriculum
        app.state.jobs = build_jobs(settings, scorer)  # embedded jobs share it
        await scorer.start()
        _settle_gc()
        try:
            yield
        finally:
            await app.state.jobs.close()
            await scorer.close()

    app = FastAPI(
        title="referee",
        version=VERSION,
        description="Reward and verifier services for reinforcement learning of reasoning models.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.graders = GraderRegistry.from_settings(settings)  # a bad registry stops the start
    app.state.metrics = Metrics()
    install_error_handlers(app)
    app.include_router(health.router)
    app.include_router(sandbox_fusion.ping_router)
    app.include_router(rewards.router, dependencies=[Depends(require_api_key)])
    app.include_router(judge.router, dependencies=[Depends(require_api_key)])
    app.include_router(jobs.router, dependencies=[Depends(require_api_key)])
    app.include_router(sandbox.router, dependencies=[Depends(require_api_key)])
    app.include_router(environments.router, dependencies=[Depends(require_api_key)])
    sessions.install(app)  # /v1/sessions and the session manager's life
    app.include_router(nemo_gym.router, dependencies=[Depends(require_api_key)])
    app.include_router(openai_graders.router, dependencies=[Depends(require_api_key)])
    # veRL's SandboxFusion client sends no key: the operator may leave /run_code open.
    compat_deps = [] if settings.compat_without_api_key else [Depends(require_api_key)]
    app.include_router(sandbox_fusion.router, dependencies=compat_deps)
    app.include_router(openrlhf.router, dependencies=compat_deps)
    app.include_router(slime.router, dependencies=compat_deps)
    # The key, the body's size and depth are checked before the app reads a byte of the body.
    public = [health.router, sandbox_fusion.ping_router]
    if settings.compat_without_api_key:
        public += [sandbox_fusion.router, openrlhf.router, slime.router]
    patterns = open_paths(app, public)
    app.add_middleware(
        RequestGuard, settings=settings, open_paths=patterns, metrics=app.state.metrics
    )
    # The document says what the guard and the error handlers answer too.
    install_openapi(app, lambda path: not any(p.match(path) for p in patterns))

    return app
