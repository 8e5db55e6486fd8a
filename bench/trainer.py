"""How much of a GRPO step waits for rewards: referee over HTTP against TRL's own in-process
math reward (``trl.rewards.accuracy_reward``, Math-Verify in the trainer process), in one run.

    .venv/bin/python -m bench.trainer              # 5 steps per arm (~5 minutes on 2 cores)
    .venv/bin/python -m bench.trainer --quick      # 3 steps per arm
    .venv/bin/python -m bench.trainer --out DIR

Every arm runs TRL's ``GRPOTrainer`` on the CPU for the same number of steps of 256 completions
(32 prompts x G = 8), from the same policy (a byte-tokenizer Llama built from a config, random
weights, saved once and loaded by every arm), with the same seed, and one torch thread. A random
policy writes no mathematics, so what each reward function grades are realistic GSM8K/MATH-style
rollouts (``bench/math_mix.realistic_mix``: ~10% symbolic, ~0.5% hostile) put in place of the
policy's text: 256 per step, a different block each step, the same blocks for every arm.

Arms:
- ``referee`` (sync): ``reward_function(url, {"type": "math"})``, one ``POST /v1/rewards`` per
  step to a real uvicorn server started here (``REFEREE_MATH_WORKERS=2``).
- ``referee`` (async): the same with ``asynchronous=True`` (TRL awaits it on its loop).
- ``trl accuracy_reward``: Math-Verify parse + verify per completion, in the trainer process.

Per step: the step's wall time (``on_step_begin`` to ``on_step_end``: generation, rewards,
loss, backward, optimizer) and the time spent inside the reward function; the share is their
ratio. The first step of each arm (warm-up: lazy imports, first allocation) is left out.

Writes OUT/trainer.md (the table) and OUT/trainer.png (the share per arm); OUT defaults to
bench/out/.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.math_mix import MixItem, realistic_mix
from referee.services.launcher import Server, start_referee

PER_STEP = 256
G = 8
COMPLETION_TOKENS = 32


def start_server(tmp: Path, workers: int) -> Server:
    env = {"REFEREE_MATH_WORKERS": str(workers), "REFEREE_MAX_BATCH_ITEMS": "4096"}
    return start_referee(env, log=tmp / "server.log", timeout_s=90)


def write_policy(path: Path) -> None:
    """A 2-layer, 128-wide Llama (about 0.43M parameters) with the byte tokenizer."""
    from referee.genrm.tiny_model import tiny_llama
    from referee.trainer_adapter.tiny_policy import byte_tokenizer

    tokenizer = byte_tokenizer()
    model = tiny_llama(tokenizer, hidden=128, max_positions=256, seed=0)
    model.generation_config.eos_token_id = None  # random weights: always write the full length
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)


class Substitute:
    """Puts block k of the mix in place of call k's completions and references."""

    def __init__(self, items: list[MixItem]) -> None:
        self.items = items
        self.calls = 0

    def next_block(self, n: int) -> list[MixItem]:
        start = (self.calls * n) % len(self.items)
        self.calls += 1
        return self.items[start : start + n]


class Timed:
    """A sync reward function, timed; TRL calls it as it calls any reward function."""

    def __init__(self, inner: Callable[..., Any], mix: list[MixItem], name: str) -> None:
        self.inner, self.sub, self.__name__ = inner, Substitute(mix), name
        self.seconds: list[float] = []

    def _args(self, completions: list[Any], kwargs: dict[str, Any]) -> tuple[Any, Any]:
        block = self.sub.next_block(len(completions))
        texts = [[{"role": "assistant", "content": m.response}] for m in block]
        kwargs = {**kwargs, "solution": [m.reference for m in block]}
        return texts, kwargs

    def __call__(self, prompts: list[Any], completions: list[Any], **kwargs: Any) -> Any:
        texts, kwargs = self._args(completions, kwargs)
        start = time.perf_counter()
        out = self.inner(prompts=prompts, completions=texts, **kwargs)
        self.seconds.append(time.perf_counter() - start)
        return out


class AsyncTimed(Timed):
    async def __call__(self, prompts: list[Any], completions: list[Any], **kwargs: Any) -> Any:
        texts, kwargs = self._args(completions, kwargs)
        start = time.perf_counter()
        out = await self.inner(prompts=prompts, completions=texts, **kwargs)
        self.seconds.append(time.perf_counter() - start)
        return out


def run_arm(policy: Path, reward: Timed, steps: int, out_dir: Path) -> list[float]:
    """GRPO for ``steps`` steps; returns each step's wall time."""
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer  # type: ignore[attr-defined]

    rows = [
        {"prompt": f"Problem {i}: what is the answer?", "solution": "0"}
        for i in range(PER_STEP // G * steps)
    ]
    step_s: list[float] = []

    class StepTimer(TrainerCallback):
        def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
            self.start = time.perf_counter()

        def on_step_end(self, *args: Any, **kwargs: Any) -> None:
            step_s.append(time.perf_counter() - self.start)
            wait = reward.seconds[-1] if reward.seconds else float("nan")
            print(
                f"  step {len(step_s)}/{steps}: {step_s[-1]:.2f} s, rewards {wait:.3f} s",
                file=sys.stderr,
                flush=True,
            )

    config = GRPOConfig(
        output_dir=str(out_dir),
        num_generations=G,
        per_device_train_batch_size=PER_STEP,
        max_completion_length=COMPLETION_TOKENS,
        max_steps=steps,
        learning_rate=1e-5,
        beta=0.0,
        seed=0,
        use_cpu=True,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        disable_tqdm=True,
        log_completions=False,
    )
    trainer = GRPOTrainer(
        model=str(policy), reward_funcs=reward, args=config, train_dataset=Dataset.from_list(rows)
    )
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)
    trainer.add_callback(StepTimer())
    trainer.train()
    if getattr(trainer, "async_loop", None) is not None and hasattr(reward.inner, "aclose"):
        import asyncio

        asyncio.run_coroutine_threadsafe(reward.inner.aclose(), trainer.async_loop).result()
    return step_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=5, help="steps per arm (first is warm-up)")
    parser.add_argument("--quick", action="store_true", help="3 steps per arm")
    parser.add_argument("--workers", type=int, default=2, help="the server's math workers")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "out"))
    args = parser.parse_args(argv)
    steps = 3 if args.quick else args.steps
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    import torch

    torch.set_num_threads(1)
    from trl.rewards import accuracy_reward  # type: ignore[attr-defined]

    from referee.trainer_adapter.trl import reward_function

    mix = realistic_mix(PER_STEP * steps, seed=0, group_size=G)
    results: dict[str, tuple[list[float], list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        policy = tmp / "policy"
        write_policy(policy)
        server = start_server(tmp, args.workers)
        url = server.url
        try:
            arms: list[tuple[str, Timed]] = [
                ("referee, sync (HTTP)", Timed(reward_function(url, {"type": "math"}), mix, "r")),
                (
                    "referee, async (HTTP)",
                    AsyncTimed(
                        reward_function(url, {"type": "math"}, asynchronous=True), mix, "ra"
                    ),
                ),
                ("TRL accuracy_reward (Math-Verify in process)", Timed(accuracy_reward, mix, "mv")),
            ]
            for name, reward in arms:
                print(f"bench.trainer: {name}: {steps} GRPO steps", file=sys.stderr, flush=True)
                step_s = run_arm(policy, reward, steps, tmp / "run")
                results[name] = (step_s[1:], reward.seconds[1:])
        finally:
            server.stop(timeout_s=30)

    lines = [
        f"GRPO step time spent waiting for rewards: {PER_STEP} completions per step "
        f"({PER_STEP // G} prompts x G = {G}), math grader, {steps - 1} measured steps per arm "
        f"(after 1 warm-up), policy: a 2x128 Llama on the CPU, {COMPLETION_TOKENS} new tokens "
        "per completion, one torch thread; referee server with "
        f"{args.workers} math workers on the same machine.",
        "",
        "| reward function | reward wait per step (s) | step wall time (s) | share of the step |",
        "|---|---:|---:|---:|",
    ]
    summary: dict[str, dict[str, float]] = {}
    for name, (step_s, reward_s) in results.items():
        wait, step = statistics.mean(reward_s), statistics.mean(step_s)
        summary[name] = {"reward_s": wait, "step_s": step, "share": wait / step}
        lines.append(f"| {name} | {wait:.3f} | {step:.2f} | {wait / step:.1%} |")
    peer = summary["TRL accuracy_reward (Math-Verify in process)"]["reward_s"]
    mine = summary["referee, sync (HTTP)"]["reward_s"]
    lines += [
        "",
        f"referee's reward wait is {peer / mine:.1f}x shorter than Math-Verify in the trainer "
        "process on the same 256 completions per step.",
    ]
    table = "\n".join(lines) + "\n"
    (out / "trainer.md").write_text(table)
    (out / "trainer.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(table)
    plot(summary, out / "trainer.png")
    return 0


def plot(summary: dict[str, dict[str, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(summary)
    shares = [100 * summary[n]["share"] for n in names]
    fig, ax = plt.subplots(figsize=(8, 2.8), dpi=120)
    bars = ax.barh(names, shares, color=["#4c72b0", "#55a868", "#c44e52"][: len(names)])
    ax.axvline(5, color="grey", linestyle="--", linewidth=1, label="5% target")
    for bar, share in zip(bars, shares, strict=True):
        ax.text(bar.get_width() + 0.3, bar.get_y() + bar.get_height() / 2, f"{share:.1f}%",
                va="center")  # fmt: skip
    ax.set_xlim(0, max(max(shares), 5) * 1.2)
    ax.set_xlabel("share of the GRPO step spent waiting for rewards (%)")
    ax.invert_yaxis()
    ax.legend(loc="upper right")
    ax.set_title(f"{PER_STEP} completions per step, math grader")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
