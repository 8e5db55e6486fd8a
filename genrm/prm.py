"""Monte Carlo process rewards: how likely each reasoning step is to lead to a correct answer.

For a solution cut into steps (:mod:`referee.genrm.steps`), the value of step k is estimated by
sampling N completions from the prefix ending with step k through a policy model (any
:class:`~referee.genrm.backend.LLMBackend`), checking each completion's final answer with the math
verifier, and taking the fraction that are correct (Math-Shepherd's soft label; the hard label
is "at least one correct"). The last step's value is the correctness of the solution itself.

Two modes:

* ``per_step`` -- every prefix is sampled: ``N·(S-1)`` rollouts for S steps; soft and hard
  labels for every step;
* ``binary_search`` -- OmegaPRM's search for the first wrong step: a solution whose answer is
  right has no wrong step; otherwise the first prefix with no correct rollout is found by
  bisection, ``N·⌈log2 S⌉`` rollouts; steps before it are labelled 1, it and the rest 0.

Identical prefixes (same problem, reference, prefix, model and sampling parameters) are sampled
once per call, and the correct/total counts are kept in a :class:`RolloutCache` (in memory, or in
Redis so every worker shares it): a job that restarts after a crash does not sample again what it
had finished. Many solutions are estimated together, so the backend gets large batches.

    prm = MonteCarloPRM(backend, check=inline_check)
    [result] = await prm.estimate([PRMInput(problem, solution, "5")], PRMConfig(n_rollouts=8))
    result.first_wrong_step, [s.value for s in result.steps], result.rollouts_used
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from referee.genrm.backend import LLMBackend, SamplingParams
from referee.genrm.steps import SplitMode, Step, split_steps
from referee.verifiers.math import verify

__all__ = [
    "AnswerCheck",
    "MemoryRolloutCache",
    "MonteCarloPRM",
    "PRMConfig",
    "PRMInput",
    "PRMResult",
    "RedisRolloutCache",
    "RolloutCache",
    "StepValue",
    "check_answer",
    "inline_check",
]

AnswerCheck = Callable[[Sequence[tuple[str, str]]], Awaitable[list[bool]]]
"""``[(text, reference), ...] -> [is the final answer of text equal to reference, ...]``."""

ProgressFn = Callable[[int], None]
"""Called with the number of rollouts just checked."""


def check_answer(text: str, reference: str) -> bool:
    """The math verifier's verdict on ``text``'s final answer (top-level: runs in a pool)."""
    return verify(text, reference).score == 1.0


async def inline_check(pairs: Sequence[tuple[str, str]]) -> list[bool]:
    """Checks in this process, one after the other (tests, small runs; a server uses its pool)."""
    return [check_answer(text, ref) for text, ref in pairs]


@dataclass(frozen=True, slots=True)
class PRMConfig:
    n_rollouts: int = 8
    mode: Literal["per_step", "binary_search"] = "per_step"
    max_tokens: int = 512
    temperature: float = 0.8
    top_p: float = 1.0
    seed: int | None = None
    split: SplitMode = "auto"
    delimiter: str | None = None
    prompt_template: str = "{problem}\n\n{prefix}\n\n"
    """The policy continues this text; ``{problem}`` and ``{prefix}`` are filled in."""

    def __post_init__(self) -> None:
        if self.n_rollouts < 1:
            raise ValueError("n_rollouts must be at least 1")
        if self.mode not in ("per_step", "binary_search"):
            raise ValueError(f"unknown mode {self.mode!r}")
        if "{prefix}" not in self.prompt_template:
            raise ValueError("prompt_template must contain {prefix}")

    def sampling(self) -> SamplingParams:
        return SamplingParams(
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            n=self.n_rollouts,
            seed=self.seed,
        )

    def planned_rollouts(self, steps: int) -> int:
        """Most rollouts one solution of ``steps`` steps can cost (before cache hits)."""
        if steps <= 1:
            return 0
        if self.mode == "per_step":
            return self.n_rollouts * (steps - 1)
        return self.n_rollouts * math.ceil(math.log2(steps))


@dataclass(frozen=True, slots=True)
class PRMInput:
    problem: str
    solution: str
    reference: str


@dataclass(slots=True)
class StepValue:
    index: int
    text: str
    value: float | None = None
    """Fraction of rollouts from this step's prefix that were correct (None: not sampled)."""
    hard: int | None = None
    """1 when the step can still lead to a correct answer, 0 when it cannot."""
    rollouts: int = 0
    correct: int = 0


@dataclass(slots=True)
class PRMResult:
    mode: str
    steps: list[StepValue]
    final_correct: bool
    first_wrong_step: int | None
    rollouts_used: int = 0
    """Rollouts sampled for this solution (cache hits and shared prefixes cost nothing)."""
    cache_hits: int = 0
    error: str | None = None

    @property
    def soft_labels(self) -> list[float | None]:
        return [s.value for s in self.steps]

    @property
    def hard_labels(self) -> list[int | None]:
        return [s.hard for s in self.steps]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class RolloutCache(Protocol):
    def get_many(self, keys: Sequence[str]) -> list[tuple[int, int] | None]:
        """``(correct, total)`` for each key, or None."""
        ...

    def put_many(self, values: dict[str, tuple[int, int]]) -> None: ...


class MemoryRolloutCache:
    """An LRU of rollout counts, in this process."""

    def __init__(self, max_entries: int = 100_000) -> None:
        self._data: OrderedDict[str, tuple[int, int]] = OrderedDict()
        self._max = max_entries

    def get_many(self, keys: Sequence[str]) -> list[tuple[int, int] | None]:
        out = []
        for key in keys:
            hit = self._data.get(key)
            if hit is not None:
                self._data.move_to_end(key)
            out.append(hit)
        return out

    def put_many(self, values: dict[str, tuple[int, int]]) -> None:
        self._data.update(values)
        while len(self._data) > self._max:
            self._data.popitem(last=False)


class RedisRolloutCache:
    """Rollout counts in Redis, shared by every worker (``prefix`` namespaces the keys)."""

    def __init__(self, client: Any, prefix: str = "referee:prm:", ttl_s: int = 7 * 86400) -> None:
        self._redis = client
        self._prefix = prefix
        self._ttl = ttl_s

    def get_many(self, keys: Sequence[str]) -> list[tuple[int, int] | None]:
        if not keys:
            return []
        raw = self._redis.mget([self._prefix + k for k in keys])
        out: list[tuple[int, int] | None] = []
        for value in raw:
            if value is None:
                out.append(None)
            else:
                correct, total = (
                    int(x)
                    for x in (value.decode() if isinstance(value, bytes) else value).split("/")
                )
                out.append((correct, total))
        return out

    def put_many(self, values: dict[str, tuple[int, int]]) -> None:
        if not values:
            return
        pipe = self._redis.pipeline(transaction=False)
        for key, (correct, total) in values.items():
            pipe.set(self._prefix + key, f"{correct}/{total}", ex=self._ttl)
        pipe.execute()


@dataclass(slots=True)
class _Item:
    inp: PRMInput
    steps: list[Step]
    result: PRMResult
    counts: dict[int, tuple[int, int]] = field(default_factory=dict)  # prefix length -> counts


class MonteCarloPRM:
    """Estimates step values of many solutions at once (see the module docstring)."""

    def __init__(
        self,
        backend: LLMBackend,
        check: AnswerCheck = inline_check,
        cache: RolloutCache | None = None,
        batch_prompts: int = 64,
    ) -> None:
        self.backend = backend
        self.check = check
        self.cache: RolloutCache = cache if cache is not None else MemoryRolloutCache()
        self.batch_prompts = batch_prompts

    def _key(self, inp: PRMInput, prefix: str, config: PRMConfig) -> str:
        ident = [
            self.backend.model_name,
            inp.problem,
            inp.reference,
            prefix,
            config.prompt_template,
            config.n_rollouts,
            config.temperature,
            config.top_p,
            config.max_tokens,
            config.seed,
        ]
        return hashlib.sha256(json.dumps(ident).encode()).hexdigest()

    async def estimate(
        self,
        inputs: Sequence[PRMInput],
        config: PRMConfig,
        progress: ProgressFn | None = None,
    ) -> list[PRMResult]:
        items = []
        for inp in inputs:
            steps = split_steps(inp.solution, config.split, config.delimiter)
            values = [StepValue(s.index, s.text) for s in steps]
            items.append(_Item(inp, steps, PRMResult(config.mode, values, False, None)))
        finals = await self.check([(it.inp.solution, it.inp.reference) for it in items])
        for it, ok in zip(items, finals, strict=True):
            it.result.final_correct = ok
            if it.steps:  # the last step's value is the solution's own correctness
                last = it.result.steps[-1]
                last.value, last.hard = float(ok), int(ok)
        if config.mode == "per_step":
            await self._sample(
                [(it, k) for it in items for k in range(1, len(it.steps))], config, progress
            )
            for it in items:
                for k, (correct, total) in it.counts.items():
                    step = it.result.steps[k - 1]
                    step.value, step.hard = correct / total, int(correct > 0)
                wrong = [s.index for s in it.result.steps if s.hard == 0]
                it.result.first_wrong_step = wrong[0] if wrong else None
        else:
            await self._bisect(items, config, progress)
        return [it.result for it in items]

    async def _bisect(
        self, items: list[_Item], config: PRMConfig, progress: ProgressFn | None
    ) -> None:
        # (lo, hi): prefix lo is taken as good (0: the empty prefix), prefix hi is known bad.
        bounds: dict[int, tuple[int, int]] = {}
        for n, it in enumerate(items):
            if it.steps and not it.result.final_correct:
                bounds[n] = (0, len(it.steps))
            else:
                for step in it.result.steps:
                    step.hard = 1
        while active := [n for n, (lo, hi) in bounds.items() if hi - lo > 1]:
            wanted = [(items[n], (bounds[n][0] + bounds[n][1]) // 2) for n in active]
            await self._sample(wanted, config, progress)
            for n, (it, mid) in zip(active, wanted, strict=True):
                lo, hi = bounds[n]
                correct, _ = it.counts[mid]
                bounds[n] = (mid, hi) if correct > 0 else (lo, mid)
        for n, (_, hi) in bounds.items():
            result = items[n].result
            result.first_wrong_step = hi
            for step in result.steps:
                step.hard = int(step.index < hi)
            for k, (correct, total) in items[n].counts.items():
                result.steps[k - 1].value = correct / total

    async def _sample(
        self,
        wanted: Sequence[tuple[_Item, int]],
        config: PRMConfig,
        progress: ProgressFn | None,
    ) -> None:
        """Counts for each (item, prefix length): from the cache, else sampled and checked."""
        keys: dict[str, list[tuple[_Item, int]]] = {}
        for it, k in wanted:
            prefix = it.inp.solution[: it.steps[k - 1].end]
            keys.setdefault(self._key(it.inp, prefix, config), []).append((it, k))
        unique = list(keys)
        cached = await asyncio.to_thread(self.cache.get_many, unique)
        todo = []
        for key, hit in zip(unique, cached, strict=True):
            if hit is None:
                todo.append(key)
                continue
            for it, k in keys[key]:
                it.counts[k] = hit
                it.result.cache_hits += 1
        for start in range(0, len(todo), self.batch_prompts):
            chunk = todo[start : start + self.batch_prompts]
            owners = [keys[key][0] for key in chunk]
            prefixes = [it.inp.solution[: it.steps[k - 1].end] for it, k in owners]
            prompts = [
                config.prompt_template.replace("{problem}", it.inp.problem).replace(
                    "{prefix}", prefix
                )
                for (it, _), prefix in zip(owners, prefixes, strict=True)
            ]
            samples = await self.backend.generate(prompts, config.sampling())
            pairs = [
                (f"{prefix}\n\n{c.full_text}", it.inp.reference)
                for (it, _), prefix, completions in zip(owners, prefixes, samples, strict=True)
                for c in completions
            ]
            verdicts = await self.check(pairs)
            fresh: dict[str, tuple[int, int]] = {}
            pos = 0
            for key, completions in zip(chunk, samples, strict=True):
                got = verdicts[pos : pos + len(completions)]
                pos += len(completions)
                fresh[key] = (sum(got), len(got))
                first = True
                for it, k in keys[key]:
                    it.counts[k] = fresh[key]
                    if first:  # shared prefixes are paid for once
                        it.result.rollouts_used += len(got)
                        first = False
                    else:
                        it.result.cache_hits += 1
            await asyncio.to_thread(self.cache.put_many, fresh)
            if progress is not None:
                progress(len(pairs))
