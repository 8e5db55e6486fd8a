"""One thread that owns an engine (:class:`EngineThread`): it builds the engine, and runs every
request that arrived while the previous batch ran as ONE batch (each request made ready by
``prepare`` into :class:`Prepared`: prompts, per-prompt parameters, and how to read the outputs);
a batch that fails is retried request by request, so a bad request fails alone. Used by the
vllm backend, whose ``LLM.generate`` is synchronous and not thread-safe; knows nothing of vLLM.
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["EngineThread", "Prepared"]

log = logging.getLogger("referee.genrm.vllm")

E = TypeVar("E")
R = TypeVar("R")


class _Job:
    __slots__ = ("future", "request")

    def __init__(self, request: Any) -> None:
        self.request = request
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()


class _Call:
    __slots__ = ("fn", "future")

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()


_STOP = object()


@dataclass(slots=True)
class Prepared(Generic[R]):
    """A request made ready for the engine: its prompts, one parameter object per prompt, and
    how to turn the engine's outputs for those prompts into the caller's result."""

    prompts: list[Any]
    params: list[Any]
    finish: Callable[[list[Any]], R]


class EngineThread(Generic[E]):
    """A thread that builds an engine and then owns it: every request queued while a batch runs
    goes into the next batch, one ``run(engine, prompts, params)`` call for all of them.

    ``prepare(engine, request)`` (run on this thread too: tokenizers are not thread-safe) turns a
    request into :class:`Prepared`; a request whose preparation or conversion fails, fails alone.
    """

    def __init__(
        self,
        build: Callable[[], E],
        prepare: Callable[[E, Any], Prepared[Any]],
        run: Callable[[E, list[Any], list[Any]], list[Any]],
        close: Callable[[E], None] | None = None,
        name: str = "referee-engine",
    ) -> None:
        self._prepare = prepare
        self._run = run
        self._close = close
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._ready: concurrent.futures.Future[E] = concurrent.futures.Future()
        self._closed = False
        self.batches = 0
        """``run`` calls so far (each may serve several requests)."""
        self.requests = 0
        self._thread = threading.Thread(target=self._main, args=(build,), name=name, daemon=True)
        self._thread.start()
        self.engine: E = self._ready.result()  # re-raises what the build raised

    def submit(self, request: Any) -> concurrent.futures.Future[Any]:
        if self._closed:
            raise RuntimeError("the engine thread is closed")
        job = _Job(request)
        self._queue.put(job)
        return job.future

    def call(self, fn: Callable[[E], R]) -> R:
        """Run ``fn(engine)`` on the engine's thread, between batches; its result."""
        if self._closed:
            raise RuntimeError("the engine thread is closed")
        job = _Call(fn)
        self._queue.put(job)
        result: R = job.future.result()
        return result

    def close(self, timeout_s: float | None = None) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put(_STOP)
        self._thread.join(timeout_s)

    def _main(self, build: Callable[[], E]) -> None:
        try:
            engine = build()
        except BaseException as exc:
            self._ready.set_exception(exc)
            return
        self._ready.set_result(engine)
        stopping = False
        while not stopping:
            item = self._queue.get()
            batch: list[Any] = []
            while True:
                if item is _STOP:
                    stopping = True
                elif isinstance(item, _Call):
                    self._flush(engine, batch)  # keep order: what came before runs first
                    batch = []
                    if item.future.set_running_or_notify_cancel():
                        try:
                            item.future.set_result(item.fn(engine))
                        except BaseException as exc:
                            item.future.set_exception(exc)
                else:
                    batch.append(item)
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            self._flush(engine, batch)
        while True:  # fail what was queued after close
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not _STOP and item.future.set_running_or_notify_cancel():
                item.future.set_exception(RuntimeError("the engine thread is closed"))
        if self._close is not None:
            try:
                self._close(engine)
            except Exception:
                log.exception("closing the engine failed")

    def _flush(self, engine: E, jobs: list[_Job]) -> None:
        live: list[tuple[_Job, Prepared[Any]]] = []
        for job in jobs:
            if not job.future.set_running_or_notify_cancel():
                continue  # the caller gave up
            try:
                live.append((job, self._prepare(engine, job.request)))
            except BaseException as exc:
                job.future.set_exception(exc)
        if live:
            self._execute(engine, live)

    def _execute(self, engine: E, live: list[tuple[_Job, Prepared[Any]]]) -> None:
        prompts = [p for _job, prep in live for p in prep.prompts]
        params = [p for _job, prep in live for p in prep.params]
        try:
            self.batches += 1
            self.requests += len(live)
            outputs = self._run(engine, prompts, params)
            if len(outputs) != len(prompts):
                raise RuntimeError(f"the engine answered {len(outputs)} of {len(prompts)} prompts")
        except BaseException as exc:
            if len(live) == 1:
                live[0][0].future.set_exception(exc)
            else:  # find the request that broke the batch: each alone
                for one in live:
                    self._execute(engine, [one])
            return
        start = 0
        for job, prep in live:
            part = outputs[start : start + len(prep.prompts)]
            start += len(prep.prompts)
            try:
                job.future.set_result(prep.finish(part))
            except BaseException as exc:
                job.future.set_exception(exc)
