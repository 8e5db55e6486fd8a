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

``sandbox_slots`` threads run programs; that is the server's concurrency limit. Every run waits
for a free slot in one first-come-first-served queue (the pool's own):

* A single run (``/v1/sandbox/run``, ``/run_code``) waits up to ``sandbox_queue_wait_s``; one
  that has not started by then leaves the queue and is answered 504 with ``Retry-After`` (the
  status veRL's SandboxFusion client retries). At most ``sandbox_queue_depth`` single runs wait
  at once; one more is answered 503 with ``Retry-After``. A client that hangs up while its run
  waits takes the run out of the queue: it never starts. Trainers send many calls at once
  (veRL: 64 per reward worker), so answering "busy" the moment the slots are taken would turn
  most of their tests into failures.
* Reward items wait without a bound of their own: a batch of hundreds of code items is normal
  and must not be rejected; its size is bounded by ``max_batch_items``.

``Retry-After`` is an estimate: the runs ahead, over the slots, times the mean run time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from referee.client.errors import GatewayTimeout, RefereeError, ServiceUnavailable
from referee.client.models import RunLimits
from referee.sandbox import (
    Limits,
    SandboxBackend,
    SandboxUnavailable,
    available_languages,
    select_backend,
)
from referee.sandbox.languages import COMPILE_LIMITS
from referee.services.execution.program import ProgramLimits
from referee.services.execution.runners import CodeRunner, LocalRunner
from referee.services.settings import Settings
from referee.verifiers.check_lanes import current_lane

__all__ = ["SandboxExecutor"]

log = logging.getLogger("referee.sandbox")
T = TypeVar("T")


class SandboxExecutor:
    """The code runner (chosen at start-up) and the slots its programs run in.

    ``runner`` is what every caller uses (:class:`~referee.services.execution.runners.
    CodeRunner`: here, or on sandbox nodes); ``backend`` is the isolation backend of a local
    runner (``None`` with the ``remote`` runner), for what needs a sandbox of its own here."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.slots = settings.sandbox_slots
        self.backend: SandboxBackend | None = None
        self.runner: CodeRunner | None = None
        self.unavailable_reason: str | None = "the sandbox has not started"
        self._pool = ThreadPoolExecutor(max_workers=self.slots, thread_name_prefix="sandbox")
        self._lock = threading.Lock()
        self._in_flight = 0  # admitted or queued runs
        self._waiting_single = 0  # single runs queued, not started
        self._mean_run_s = 0.1  # running mean of a run's time in its slot (for Retry-After)

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
            backend = select_backend(name, allow_unsafe_local=s.sandbox_allow_unsafe_local, **image)
        except SandboxUnavailable as exc:
            if s.sandbox_backend is None and s.sandbox_allow_unsafe_local:
                log.warning(
                    "no isolation (%s); REFEREE_SANDBOX_ALLOW_UNSAFE_LOCAL is true, so code runs "
                    "UNISOLATED with rlimits only",
                    exc.reason,
                )
                backend = select_backend("unsafe_local", allow_unsafe_local=True)
            else:
                self.unavailable_reason = str(exc)
                log.warning("code execution is unavailable: %s", exc)
                return
        available_languages()  # probe the toolchains now, not in a request
        self.backend, self.runner = backend, LocalRunner(backend)
        self.unavailable_reason = None

    def _start_remote(self) -> None:
        """The ``remote`` runner: programs run on sandbox nodes (``execution.remote``)."""
        from referee.services.execution.remote import RemoteSandbox

        try:
            remote = RemoteSandbox.from_settings(self.settings)
        except ValueError as exc:
            self.unavailable_reason = str(exc)
            log.warning("code execution is unavailable: %s", exc)
            return
        try:
            info = remote.node_languages()
            log.info("sandbox node(s) %s: %s", ", ".join(remote.urls), info.backend)
        except RefereeError as exc:  # a node that starts later is used once it answers
            log.warning("the sandbox node is not answering yet: %s", exc)
        self.runner = remote
        self.unavailable_reason = None

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self.runner is not None:
            self.runner.close()

    def require_runner(self) -> CodeRunner:
        if self.runner is None:
            raise ServiceUnavailable(self.unavailable_reason or "code execution is unavailable")
        return self.runner

    @property
    def in_flight(self) -> int:
        return self._in_flight

    # -- limits -------------------------------------------------------------------------------
    def limits(self, asked: RunLimits | None, compile_time_s: float | None = None) -> ProgramLimits:
        """A program's limits for what a caller asked (its runs', its compile step's time),
        capped by the server's maxima."""
        s = self.settings
        time_s = asked.time_s if asked and asked.time_s else s.sandbox_time_s
        memory = asked.memory_mb if asked and asked.memory_mb else s.sandbox_memory_mb
        run = Limits(
            wall_time_s=min(time_s, s.sandbox_max_time_s),
            memory_mb=min(memory, s.sandbox_max_memory_mb),
            output_bytes=s.sandbox_output_bytes,
        )
        most = s.sandbox_compile_time_s
        compile_limits = COMPILE_LIMITS.with_(wall_time_s=min(compile_time_s or most, most))
        return ProgramLimits(run=run, compile=compile_limits)

    @staticmethod
    def applied(limits: ProgramLimits) -> RunLimits:
        """The run limits a response reports."""
        return RunLimits(time_s=limits.run.wall_time_s, memory_mb=limits.run.memory_mb)

    # -- running ------------------------------------------------------------------------------
    def _release(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _timed(self, fn: Callable[..., T], *args: Any) -> T:
        start = time.monotonic()
        try:
            return fn(*args)
        finally:
            took = time.monotonic() - start
            with self._lock:
                self._mean_run_s += 0.1 * (took - self._mean_run_s)

    def retry_after_s(self) -> float:
        """How long a caller turned away should wait: the queue ahead, served by the slots."""
        with self._lock:
            ahead = max(0, self._in_flight - self.slots) + 1
            mean = self._mean_run_s
        return float(min(30, max(1, math.ceil(ahead / self.slots * mean))))

    async def _run(
        self, fn: Callable[..., T], *args: Any, if_dropped: Callable[[str], T] | None = None
    ) -> T:
        # The slot is freed when the thread is done (or the job is cancelled before it
        # started), not when the awaiting request goes away: a client that disconnects does not
        # make its still-running program invisible to admission. A run that reaches its slot
        # after its caller's lane was dropped (the client hung up) does not start.
        lane = current_lane.get() if if_dropped is not None else None

        def start() -> T:
            if lane is not None and lane.dropped is not None and if_dropped is not None:
                return if_dropped(lane.dropped)
            return self._timed(fn, *args)

        try:
            future = self._pool.submit(start)
        except RuntimeError:  # shut down
            self._release()
            raise ServiceUnavailable("the server is shutting down") from None
        future.add_done_callback(lambda _: self._release())
        return await asyncio.wrap_future(future)

    async def run_single(
        self,
        fn: Callable[..., T],
        *args: Any,
        gone: Callable[[], Awaitable[object]] | None = None,
    ) -> T:
        """Run ``fn(*args)`` once a slot is free, waiting at most ``sandbox_queue_wait_s`` for
        it (then ``GatewayTimeout``); ``ServiceUnavailable`` if the queue is full. ``gone``
        returns when the client has hung up: a run still waiting then leaves the queue."""
        self.require_runner()
        depth = self.settings.sandbox_queue_depth
        with self._lock:
            queued = self._in_flight >= self.slots
            if queued and self._waiting_single >= depth:
                full = True
            else:
                full = False
                self._in_flight += 1
                self._waiting_single += 1
        if full:
            raise ServiceUnavailable(
                f"{depth} runs are already waiting for the {self.slots} sandbox slots; retry "
                "later (REFEREE_SANDBOX_QUEUE_DEPTH)",
                retry_after_s=self.retry_after_s(),
            )
        counted = True

        def unwait() -> None:
            nonlocal counted
            with self._lock:
                if counted:
                    counted = False
                    self._waiting_single -= 1

        def in_slot() -> T:
            unwait()
            return self._timed(fn, *args)

        try:
            future = self._pool.submit(in_slot)
        except RuntimeError:  # shut down
            unwait()
            self._release()
            raise ServiceUnavailable("the server is shutting down") from None

        def done(_: object) -> None:
            unwait()
            self._release()

        future.add_done_callback(done)
        result = asyncio.wrap_future(future)
        hung_up = asyncio.ensure_future(gone()) if gone is not None else None
        try:
            watched: set[asyncio.Future[Any]] = {result}
            if hung_up is not None:
                watched.add(hung_up)
            wait_s = self.settings.sandbox_queue_wait_s
            await asyncio.wait(watched, timeout=wait_s, return_when=asyncio.FIRST_COMPLETED)
            if not result.done() and future.cancel():  # still queued: it leaves, never runs
                if hung_up is not None and hung_up.done():
                    raise ServiceUnavailable("the client hung up before a sandbox slot was free")
                raise GatewayTimeout(
                    f"no sandbox slot came free in {wait_s:g} s ({self.slots} slots busy); "
                    "retry (REFEREE_SANDBOX_QUEUE_WAIT_S sets the wait)",
                    retry_after_s=self.retry_after_s(),
                )
            return await result  # started: its own limits bound it
        finally:
            if hung_up is not None and not hung_up.done():
                hung_up.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await hung_up

    async def run_queued(
        self, fn: Callable[..., T], *args: Any, if_dropped: Callable[[str], T] | None = None
    ) -> T:
        """Run ``fn(*args)`` when a slot frees up (reward items). With ``if_dropped``, a run
        whose caller's lane (:data:`current_lane`) is dropped by the time its slot is free is
        answered ``if_dropped(reason)`` instead of being run."""
        self.require_runner()
        with self._lock:
            self._in_flight += 1
        return await self._run(fn, *args, if_dropped=if_dropped)
