"""The ``vllm`` backend: vLLM in-process on GPUs (offline ``vllm.LLM``), batched across callers.

    backend = VLLMBackend("/models/judge", gpu_memory_utilization=0.8, max_model_len=8192)

Needs ``pip install 'referee[vllm]'`` (a pinned vLLM that brings its own torch and transformers:
install it in its own environment, not beside the ``genrm`` or ``train`` extras). Importing this
module never imports vLLM; constructing the backend without it raises :class:`VLLMUnavailable`.

``LLM.generate`` is synchronous and not thread-safe, so one thread owns the engine
(:class:`EngineThread`): it builds the ``LLM``, and runs every ``generate`` call that arrived while
the previous one ran as ONE ``LLM.generate`` over all their prompts (each prompt with its own
sampling parameters), so concurrent judge calls share the GPU's batch instead of queueing. A
request that vLLM rejects fails alone: a combined batch that fails is retried call by call.

The conversion between referee and vLLM is pure and tested without a GPU:

* :func:`plan_request` -- referee :class:`SamplingParams` to ``vllm.SamplingParams`` arguments.
  Greedy decoding with ``n > 1`` (which vLLM refuses) is decoded once and returned n times, as the
  transformers backend does. Label log-probabilities use ``logprob_token_ids`` (exactly the label
  tokens; the pinned vLLM 0.33 has it), else the first position's top-``max_logprobs`` (a label
  outside them gets ``-inf``, as with the openai backend); with ``top_logprobs`` asked too, labels
  are read from that top-k.
* :func:`to_completions` -- a ``RequestOutput``'s outputs to referee :class:`Completion` objects:
  ``token_logprobs`` aligned with vLLM's generated token ids (``tokens`` counts them, as vLLM's
  usage does), ``label_logprobs`` keyed by label (the
  label's first token, encoded without special tokens, as the transformers backend does),
  ``first_top_logprobs`` keyed by the token's vocabulary string.
* :func:`shape_prompt` -- text prompts go to vLLM as text (it tokenizes them, as ``vllm serve``'s
  completions do); chat prompts are rendered with the tokenizer's chat template and passed as
  token ids (no second BOS), or as role-tagged text when the tokenizer has no template.

Structured outputs (:class:`StructuredOutput`) become ``StructuredOutputsParams`` (``json``,
``regex`` or ``choice``), enforced by vLLM's grammar backend.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import math
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from referee.genrm.backend import Completion, Prompt, SamplingParams
from referee.genrm.transformers_backend import render_prompt

__all__ = [
    "GREEDY_BELOW",
    "INSTALL_HINT",
    "EngineThread",
    "PrepareCaches",
    "Prepared",
    "RequestPlan",
    "VLLMBackend",
    "VLLMUnavailable",
    "import_vllm",
    "label_token_ids",
    "plan_request",
    "prepare_request",
    "shape_prompt",
    "to_completions",
]

log = logging.getLogger("referee.genrm.vllm")
INSTALL_HINT = (
    "the vllm judge backend needs vLLM on a CUDA host: pip install 'referee[vllm]' (in an "
    "environment of its own: it pins its own torch and transformers)"
)
GREEDY_BELOW = 1e-5
"""vLLM decodes greedily below this temperature (and then refuses n > 1)."""

E = TypeVar("E")
R = TypeVar("R")


class VLLMUnavailable(ImportError):
    """vLLM is not installed (or cannot be imported) here."""


def import_vllm() -> Any:
    """The ``vllm`` module, or :class:`VLLMUnavailable` saying how to install it."""
    try:
        import vllm
    except ImportError as exc:
        raise VLLMUnavailable(f"{INSTALL_HINT} ({exc})") from exc
    return vllm


# -- pure request shaping and result conversion -------------------------------------------------


@dataclass(frozen=True, slots=True)
class RequestPlan:
    """How one referee request maps onto vLLM."""

    sampling: dict[str, Any]
    """Keyword arguments of ``vllm.SamplingParams`` (without ``structured_outputs``)."""
    structured: dict[str, Any] | None
    """Keyword arguments of ``StructuredOutputsParams``, or None."""
    copies: int
    """How many times each vLLM completion is returned (n for greedy decoding, else 1)."""
    label_ids: dict[str, int] = field(default_factory=dict)


def label_token_ids(tokenizer: Any, labels: Sequence[str]) -> dict[str, int]:
    """Each label's first token id (encoded without special tokens), as the transformers backend
    reads label probabilities."""
    ids = {}
    for label in labels:
        encoded = list(tokenizer.encode(label, add_special_tokens=False))
        if not encoded:
            raise ValueError(f"label {label!r} encodes to no token")
        ids[label] = int(encoded[0])
    return ids


def plan_request(
    params: SamplingParams,
    label_ids: dict[str, int],
    *,
    token_ids_supported: bool,
    max_logprobs: int = 20,
) -> RequestPlan:
    """The vLLM arguments for ``params``; ``token_ids_supported``: this vLLM's SamplingParams has
    ``logprob_token_ids``; ``max_logprobs``: the engine's limit on top-k log-probabilities."""
    if params.max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")
    if params.n < 1:
        raise ValueError("n must be at least 1")
    greedy = params.temperature < GREEDY_BELOW
    sampling: dict[str, Any] = {
        "n": 1 if greedy else params.n,
        "temperature": 0.0 if greedy else params.temperature,
        "top_p": 1.0 if greedy else params.top_p,
        "max_tokens": params.max_tokens,
    }
    if params.seed is not None:
        sampling["seed"] = params.seed
    if params.stop:
        sampling["stop"] = list(params.stop)
    top = min(params.top_logprobs, max_logprobs) if params.top_logprobs > 0 else 0
    if top:
        # top-k at every position (and the chosen token); labels are read from the first one
        sampling["logprobs"] = top
    elif label_ids:
        if token_ids_supported:
            sampling["logprob_token_ids"] = sorted(set(label_ids.values()))
        else:
            sampling["logprobs"] = max_logprobs
    elif params.logprobs:
        sampling["logprobs"] = 0  # the chosen token's alone
    structured: dict[str, Any] | None = None
    if params.structured is not None:
        if params.structured.kind not in ("json", "regex", "choice"):
            raise ValueError(f"unknown structured output kind {params.structured.kind!r}")
        structured = {params.structured.kind: params.structured.value}
    return RequestPlan(
        sampling=sampling,
        structured=structured,
        copies=params.n if greedy else 1,
        label_ids=dict(label_ids),
    )


def shape_prompt(tokenizer: Any, prompt: Prompt) -> str | dict[str, list[int]]:
    """A vLLM prompt: text as is; chat through the chat template, as token ids."""
    if isinstance(prompt, str):
        return prompt
    text = render_prompt(tokenizer, prompt)
    if getattr(tokenizer, "chat_template", None):
        ids = tokenizer.encode(text, add_special_tokens=False)
        return {"prompt_token_ids": [int(t) for t in ids]}
    return text


def _logprob(entry: Any) -> float:
    value = getattr(entry, "logprob", entry)
    return float(value)


def to_completions(
    outputs: Sequence[Any],
    params: SamplingParams,
    plan: RequestPlan,
    token_text: Callable[[int], str],
) -> list[Completion]:
    """Referee completions from a vLLM ``RequestOutput.outputs`` (``CompletionOutput`` objects:
    ``index``, ``text``, ``token_ids``, ``logprobs`` -- a list of ``{token_id: Logprob}`` per
    generated position, or vLLM's ``FlatLogprobs``, which indexes the same way --,
    ``finish_reason``). ``token_text`` names a token id in ``first_top_logprobs``."""
    result: list[Completion] = []
    for out in sorted(outputs, key=lambda o: getattr(o, "index", 0)):
        ids = [int(t) for t in (out.token_ids or ())]
        positions = out.logprobs if out.logprobs is not None else []
        first: Any = positions[0] if len(positions) > 0 else None
        token_lp = None
        if params.logprobs and (len(positions) > 0 or not ids):
            chosen = []
            for pos, tid in enumerate(ids):
                entry = positions[pos].get(tid) if pos < len(positions) else None
                chosen.append(_logprob(entry) if entry is not None else -math.inf)
            token_lp = tuple(chosen)
        labels = None
        if plan.label_ids and first is not None:
            labels = {
                label: _logprob(first[tid]) if tid in first else -math.inf
                for label, tid in plan.label_ids.items()
            }
        top = None
        if params.top_logprobs and first is not None:
            k = params.top_logprobs
            ranked = sorted(
                (
                    (entry.rank, tid, _logprob(entry))
                    for tid, entry in first.items()
                    if getattr(entry, "rank", None) is not None and entry.rank <= k
                ),
            )
            top = {token_text(tid): lp for _rank, tid, lp in ranked[:k]}
        completion = Completion(
            text=out.text or "",
            finish_reason=out.finish_reason,
            token_logprobs=token_lp,
            label_logprobs=labels,
            first_top_logprobs=top,
            tokens=len(ids),
        )
        result.extend([completion] * plan.copies)
    return result


@dataclass(slots=True)
class PrepareCaches:
    """Per-tokenizer look-ups kept between requests (used on the engine's thread only)."""

    labels: dict[tuple[str, ...], dict[str, int]] = field(default_factory=dict)
    token_text: dict[int, str] = field(default_factory=dict)


def prepare_request(
    tokenizer: Any,
    prompts: Sequence[Prompt],
    params: SamplingParams,
    *,
    make_params: Callable[[RequestPlan], Any],
    token_ids_supported: bool,
    max_logprobs: int = 20,
    caches: PrepareCaches | None = None,
) -> Prepared[list[list[Completion]]]:
    """One ``generate`` call made ready for the engine: vLLM prompts, one parameter object per
    prompt (``make_params(plan)``: ``vllm.SamplingParams`` in the backend), and the conversion of
    the engine's ``RequestOutput`` objects (``.outputs``) into referee completions."""
    caches = caches if caches is not None else PrepareCaches()
    labels = params.label_tokens
    if labels and labels not in caches.labels:
        caches.labels[labels] = label_token_ids(tokenizer, labels)
    plan = plan_request(
        params,
        caches.labels[labels] if labels else {},
        token_ids_supported=token_ids_supported,
        max_logprobs=max_logprobs,
    )
    engine_params = make_params(plan)
    shaped = [shape_prompt(tokenizer, p) for p in prompts]
    names = caches.token_text

    def token_text(tid: int) -> str:
        if tid not in names:
            names[tid] = str(tokenizer.convert_ids_to_tokens([tid])[0])
        return names[tid]

    def finish(outputs: list[Any]) -> list[list[Completion]]:
        return [to_completions(o.outputs, params, plan, token_text) for o in outputs]

    return Prepared(shaped, [engine_params] * len(shaped), finish)


# -- one thread owns the engine -----------------------------------------------------------------


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


# -- the backend --------------------------------------------------------------------------------


class VLLMBackend:
    """referee's :class:`~referee.genrm.backend.LLMBackend` on an in-process ``vllm.LLM``.

    ``model`` is a local path or a model name vLLM can load; ``engine_kwargs`` go to ``vllm.LLM``
    (``gpu_memory_utilization``, ``max_model_len``, ``dtype``, ``tensor_parallel_size``,
    ``load_format``, ...). ``max_logprobs`` is the engine's top-k limit (vLLM's default is 20).
    """

    def __init__(
        self,
        model: str,
        *,
        name: str | None = None,
        max_logprobs: int = 20,
        **engine_kwargs: Any,
    ) -> None:
        vllm = import_vllm()
        try:
            from vllm.sampling_params import StructuredOutputsParams
        except ImportError as exc:  # older than 0.12: the guided_* API
            raise VLLMUnavailable(f"this vLLM is too old for referee: {INSTALL_HINT}") from exc
        self.name = "vllm"
        self.model_name = name or model
        self.max_logprobs = max_logprobs
        self._vllm = vllm
        self._structured_cls = StructuredOutputsParams
        fields = getattr(vllm.SamplingParams, "__struct_fields__", ())
        self.token_ids_supported = "logprob_token_ids" in fields
        """This vLLM returns log-probabilities of given token ids (exact label probabilities)."""
        self._caches = PrepareCaches()
        self.tokenizer: Any = None

        def build() -> Any:
            return vllm.LLM(model=model, max_logprobs=max_logprobs, **engine_kwargs)

        self._engine: EngineThread[Any] = EngineThread(
            build, self._prepare, _run_generate, _shutdown, name="referee-vllm"
        )
        self.tokenizer = self._engine.call(lambda llm: llm.get_tokenizer())

    @property
    def llm(self) -> Any:
        """The ``vllm.LLM``; call it through :meth:`call` (it belongs to one thread)."""
        return self._engine.engine

    @property
    def batches(self) -> int:
        """``LLM.generate`` calls so far; fewer than ``generate`` calls when callers overlapped."""
        return self._engine.batches

    def call(self, fn: Callable[[Any], R]) -> R:
        """Run ``fn(llm)`` on the engine's thread (e.g. raw ``llm.generate`` in a benchmark)."""
        return self._engine.call(fn)

    async def generate(
        self, prompts: Sequence[Prompt], params: SamplingParams
    ) -> list[list[Completion]]:
        if not prompts:
            return []
        future = self._engine.submit((list(prompts), params))
        result: list[list[Completion]] = await asyncio.wrap_future(future)
        return result

    def _prepare(self, llm: Any, request: tuple[list[Prompt], SamplingParams]) -> Prepared[Any]:
        prompts, params = request
        return prepare_request(
            llm.get_tokenizer() if self.tokenizer is None else self.tokenizer,
            prompts,
            params,
            make_params=self._sampling_params,
            token_ids_supported=self.token_ids_supported,
            max_logprobs=self.max_logprobs,
            caches=self._caches,
        )

    def _sampling_params(self, plan: RequestPlan) -> Any:
        kwargs = dict(plan.sampling)
        if plan.structured is not None:
            kwargs["structured_outputs"] = self._structured_cls(**plan.structured)
        return self._vllm.SamplingParams(**kwargs)

    async def close(self) -> None:
        await asyncio.to_thread(self._engine.close)


def _run_generate(llm: Any, prompts: list[Any], params: list[Any]) -> list[Any]:
    return list(llm.generate(prompts, params, use_tqdm=False))


def _shutdown(llm: Any) -> None:
    for owner in (llm, getattr(llm, "llm_engine", None)):
        stop = getattr(owner, "shutdown", None)
        if callable(stop):
            stop()
            return
