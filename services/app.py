"""The referee HTTP API.

Run it with ``referee serve`` or ``uvicorn --factory referee.services.app:create_app``.
Everything runs in one process: math checks and the other verifiers in its check pool, code in
the sandbox executor's slots (``sandbox_executor``). No Redis, no GPU, nothing to configure.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI

from referee.genrm.prm import MemoryRolloutCache
from referee.services.auth import open_paths, require_api_key
from referee.services.curriculum import curriculum_from_settings
from referee.services.errors import install_error_handlers
from referee.services.job_runner import Components
from referee.services.jobs import build_jobs
from referee.services.llm_backends import build_judge, build_policy
from referee.services.metrics import Metrics
from referee.services.middleware import RequestGuard
from referee.services.named_graders import GraderRegistry
from referee.services.openapi_doc import install_openapi
from referee.services.routes import (
    compat,
    environments,
    health,
    jobs,
    judge,
    rewards,
    sandbox,
    trainer_compat,
)
from referee.services.sandbox_executor import SandboxExecutor
from referee.services.settings import Settings
from referee.verifiers import CheckPool
from referee.verifiers.math import verify

__all__ = ["build_judge", "create_app"]

VERSION = "0.1.0"


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        pool = CheckPool(
            workers=settings.math_workers,
            timeout_s=settings.math_timeout_s,
            memory_mb=settings.math_memory_mb,
        )
        app.state.pool = pool
        executor = SandboxExecutor(settings)
        app.state.sandbox = executor
        app.state.judge = await asyncio.to_thread(build_judge, settings)
        app.state.policy = await asyncio.to_thread(build_policy, settings)
        app.state.prm_cache = MemoryRolloutCache()
        app.state.curriculum = curriculum_from_settings(settings)  # shared with embedded jobs
        app.state.jobs = build_jobs(
            settings,
            Components(
                settings=settings,
                pool=pool,
                sandbox=executor,
                judge=app.state.judge,
                policy=app.state.policy,
                prm_cache=app.state.prm_cache,
                metrics=app.state.metrics,
                curriculum=app.state.curriculum,
            ),
        )
        # Start every worker now, so the first batch does not pay for it; probe the sandbox.
        await asyncio.gather(
            pool.amap(verify, [("1", "1")] * settings.math_workers, timeout_s=60.0),
            asyncio.to_thread(executor.start),
        )
        try:
            yield
        finally:
            await app.state.jobs.close()
            if getattr(app.state, "curriculum", None) is not None:
                await app.state.curriculum.close()
            executor.close()
            pool.close()
            if app.state.judge is not None:
                await app.state.judge.close()
            if app.state.policy is not None:
                await app.state.policy.close()

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
    app.include_router(compat.ping_router)
    app.include_router(rewards.router, dependencies=[Depends(require_api_key)])
    app.include_router(judge.router, dependencies=[Depends(require_api_key)])
    app.include_router(jobs.router, dependencies=[Depends(require_api_key)])
    app.include_router(sandbox.router, dependencies=[Depends(require_api_key)])
    app.include_router(environments.router, dependencies=[Depends(require_api_key)])
    # veRL's SandboxFusion client sends no key: the operator may leave /run_code open.
    compat_deps = [] if settings.compat_without_api_key else [Depends(require_api_key)]
    app.include_router(compat.router, dependencies=compat_deps)
    app.include_router(trainer_compat.router, dependencies=compat_deps)  # OpenRLHF, slime
    # The key, the body's size and depth are checked before the app reads a byte of the body.
    public = [health.router, compat.ping_router]
    if settings.compat_without_api_key:
        public += [compat.router, trainer_compat.router]
    patterns = open_paths(app, public)
    app.add_middleware(
        RequestGuard, settings=settings, open_paths=patterns, metrics=app.state.metrics
    )
    # The document says what the guard and the error handlers answer too.
    install_openapi(app, lambda path: not any(p.match(path) for p in patterns))

    return app
