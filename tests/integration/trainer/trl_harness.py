"""Call a reward function through TRL's own code: ``GRPOTrainer._calculate_rewards`` (TRL 1.16),
run on a stand-in for the trainer that carries only the attributes that method reads. The
reward function is thus called with exactly the arguments, threads and event loop TRL uses."""

from __future__ import annotations

import asyncio
import functools
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import torch
from accelerate import Accelerator
from transformers import TrainerState
from trl import GRPOTrainer  # type: ignore[attr-defined]
from trl.trainer.utils import (
    is_async_callable,
    shutdown_event_loop_in_daemon,
    start_event_loop_in_daemon,
)


class TRLCall:
    """``self`` for ``GRPOTrainer._calculate_rewards`` with one or more reward functions."""

    def __init__(self, reward_funcs: list[Callable[..., Any]]) -> None:
        self.ns = SimpleNamespace(
            accelerator=Accelerator(cpu=True),
            state=TrainerState(),
            args=SimpleNamespace(report_to=[]),
            reward_funcs=reward_funcs,
            reward_processing_classes=[None] * len(reward_funcs),
            reward_func_names=[getattr(f, "__name__", "f") for f in reward_funcs],
            environments=None,
            chat_template_kwargs={},
            _pending_extra_logs=defaultdict(list),
            _pending_metrics=defaultdict(list),
            async_loop=None,
        )
        self.ns._log_completion_extra = functools.partial(
            GRPOTrainer._log_completion_extra, self.ns
        )
        self.ns._log_metric = functools.partial(GRPOTrainer._log_metric, self.ns)
        self.thread = None
        if any(is_async_callable(f) for f in reward_funcs):
            self.thread, self.ns.async_loop, ready = start_event_loop_in_daemon(name="trl-test")
            ready.wait()

    def __call__(
        self, rows: list[dict[str, Any]], completions: list[Any], num_generations: int
    ) -> torch.Tensor:
        """Rows as the dataset holds them; each repeated ``num_generations`` times, as TRL's
        sampler does, with ``completions`` in the same (repeated) order."""
        inputs = [dict(row) for row in rows for _ in range(num_generations)]
        prompts = [x["prompt"] for x in inputs]
        ids = [[1, 2, 3] for _ in completions]
        out: torch.Tensor = GRPOTrainer._calculate_rewards(
            self.ns, inputs, prompts, completions, ids
        )
        return out

    @property
    def extra(self) -> dict[str, list[Any]]:
        return dict(self.ns._pending_extra_logs)

    @property
    def metrics(self) -> dict[str, list[float]]:
        return dict(self.ns._pending_metrics)

    def close(self) -> None:
        """Close the reward functions' HTTP clients (the async ones on TRL's loop, which
        opened them), then stop the loop."""
        for func in self.ns.reward_funcs:
            aclose = getattr(func, "aclose", None)
            if aclose is not None and self.ns.async_loop is not None:
                asyncio.run_coroutine_threadsafe(aclose(), self.ns.async_loop).result()
            elif callable(getattr(func, "close", None)):
                func.close()
        if self.thread is not None:
            shutdown_event_loop_in_daemon(self.thread, self.ns.async_loop)
            self.ns.async_loop.close()  # TRL leaves it to the interpreter's exit


@contextmanager
def trl_call(*reward_funcs: Callable[..., Any]) -> Iterator[TRLCall]:
    call = TRLCall(list(reward_funcs))
    try:
        yield call
    finally:
        call.close()
