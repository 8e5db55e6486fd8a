"""Where the server runs sandboxed programs: a bounded thread pool in the server process.

Why threads here and not the check pool's worker processes (where math checks run):

* The check pool's workers run under an address-space cap (RLIMIT_AS, ``math_memory_mb``) that
  every child inherits. bwrap, the compilers and the programs would start under it: a JVM, Go or
  V8 program that reserves a large virtual range (the recipes spare them RLIMIT_AS on purpose,
  their memory is bounded by the run's cgroup instead) would fail, and a compile needs more than
  a check does.
* The check pool kills a worker that overruns a deadline. A worker killed while it waits on
  bwrap would orphan the run (its cgroup, its temporary directory) instead of letting the
  backend's own deadline kill the whole process tree and clean up.
* Waiting on a sandboxed program costs no CPU in the server: the thread sleeps on pipes while
  the program runs in its own processes, limited by its own cgroup and rlimits. Every run
  already has a hard wall-clock deadline enforced by the backend, so a thread can never hang.

``sandbox_slots`` threads run programs; that is the server's concurrency limit. A single run
(``/v1/sandbox/run``, ``/run_code``) is *admitted* only when a slot is free, else answered 429 at
once (no queue to hang in). Reward items wait for a slot instead: a batch of hundreds of code
items is normal and must not be rejected; its size is bounded by ``max_batch_items``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from referee.client.errors import RefereeError, ServiceUnavailable, TooManyRequests
from referee.client.models import RunLimits
from referee.sandbox import (
    Limits,
    SandboxBackend,
    SandboxUnavailable,
    available_languages,
    select_backend,
)
from referee.sandbox.languages import COMPILE_LIMITS
from referee.services.settings import Settings

__all__ = ["SandboxExecutor"]

log = logging.getLogger("referee.sandbox")
T = TypeVar("T")


class SandboxExecutor:
    """The isolation backend (chosen at start-up) and the slots programs run in."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.slots = settings.sandbox_slots
        self.backend: SandboxBackend | None = None
        self.unavailable_reason: str | None = "the sandbox has not started"
        self._pool = ThreadPoolExecutor(max_workers=self.slots, thread_name_prefix="sandbox")
        self._lock = threading.Lock()
        self._in_flight = 0  # admitted or queued runs

    # -- start-up -----------------------------------------------------------------------------
    def start(self) -> None:
        """Choose and probe the backend (blocking: runs bwrap once). Never raises."""
        s = self.settings
        if s.sandbox_backend == "remote":
            self._start_remote()
            return
        name = s.sandbox_backend or "bwrap"
        image = {"docker_image": s.sandbox_docker_image} if s.sandbox_docker_image else {}
        try:
            self.backend = select_backend(
                name, allow_unsafe_local=s.sandbox_allow_unsafe_local, **image
            )
        except SandboxUnavailable as exc:
            if s.sandbox_backend is None and s.sandbox_allow_unsafe_local:
                log.warning(
                    "no isolation (%s); REFEREE_SANDBOX_ALLOW_UNSAFE_LOCAL is true, so code runs "
                    "UNISOLATED with rlimits only",
                    exc.reason,
                )
                self.backend = select_backend("unsafe_local", allow_unsafe_local=True)
            else:
                self.unavailable_reason = str(exc)
                log.warning("code execution is unavailable: %s", exc)
                return
        available_languages()  # probe the toolchains now, not in a request
        self.unavailable_reason = None

    def _start_remote(self) -> None:
        """The ``remote`` backend: programs run on sandbox nodes (``remote_sandbox``)."""
        from referee.services.remote_sandbox import RemoteSandbox

        try:
            remote = RemoteSandbox.from_settings(self.settings)
        except ValueError as exc:
            self.unavailable_reason = str(exc)
            log.warning("code execution is unavailable: %s", exc)
            return
        try:
            info = remote.languages()
            log.info("sandbox node(s) %s: %s", ", ".join(remote.urls), info.backend)
        except RefereeError as exc:  # a node that starts later is used once it answers
            log.warning("the sandbox node is not answering yet: %s", exc)
        self.backend = remote
        self.unavailable_reason = None

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        closer = getattr(self.backend, "close", None)
        if self.settings.sandbox_backend == "remote" and callable(closer):
            closer()

    def require_backend(self) -> SandboxBackend:
        if self.backend is None:
            raise ServiceUnavailable(self.unavailable_reason or "code execution is unavailable")
        return self.backend

    @property
    def in_flight(self) -> int:
        return self._in_flight

    # -- limits -------------------------------------------------------------------------------
    def limits(self, asked: RunLimits | None) -> Limits:
        """The run limits for what a caller asked, capped by the server's maxima."""
        s = self.settings
        time_s = asked.time_s if asked and asked.time_s else s.sandbox_time_s
        memory = asked.memory_mb if asked and asked.memory_mb else s.sandbox_memory_mb
        return Limits(
            wall_time_s=min(time_s, s.sandbox_max_time_s),
            memory_mb=min(memory, s.sandbox_max_memory_mb),
            output_bytes=s.sandbox_output_bytes,
        )

    def compile_limits(self, time_s: float | None = None) -> Limits:
        most = self.settings.sandbox_compile_time_s
        return COMPILE_LIMITS.with_(wall_time_s=min(time_s or most, most))

    @staticmethod
    def applied(limits: Limits) -> RunLimits:
        return RunLimits(time_s=limits.wall_time_s, memory_mb=limits.memory_mb)

    # -- running ------------------------------------------------------------------------------
    def _release(self) -> None:
        with self._lock:
            self._in_flight -= 1

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        # The slot is freed when the thread is done (or the job is cancelled before it
        # started), not when the awaiting request goes away: a client that disconnects does not
        # make its still-running program invisible to admission.
        try:
            future = self._pool.submit(fn, *args)
        except RuntimeError:  # shut down
            self._release()
            raise ServiceUnavailable("the server is shutting down") from None
        future.add_done_callback(lambda _: self._release())
        return await asyncio.wrap_future(future)

    async def run_now(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` in a free slot, or raise ``TooManyRequests`` if none is free."""
        self.require_backend()
        with self._lock:
            if self._in_flight >= self.slots:
                raise TooManyRequests(
                    f"all {self.slots} sandbox slots are busy; retry shortly "
                    "(REFEREE_SANDBOX_SLOTS sets how many programs run at once)"
                )
            self._in_flight += 1
        return await self._run(fn, *args)

    async def run_queued(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` when a slot frees up (reward items)."""
        self.require_backend()
        with self._lock:
            self._in_flight += 1
        return await self._run(fn, *args)
