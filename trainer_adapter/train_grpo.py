"""``referee train grpo``: TRL's ``GRPOTrainer`` with :mod:`referee.trainer_adapter.trl`'s reward
function (an embedded referee when no ``--server`` is given), a line of progress per logged step,
every log in ``metrics.jsonl`` and the reward curve in ``reward.png``. trl, torch and datasets
are imported only when the command runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from referee.trainer_adapter.train_common import _grader_arg, _guarded, read_jsonl

__all__ = ["LOSS_TYPES", "add_grpo"]

LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo")
_JSON_COLUMNS = ("grader", "tests")


def _trl_overrides(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--trl takes KEY=VALUE, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


@contextmanager
def _referee_url(server: str | None, workers: int) -> Iterator[str]:
    if server:
        yield server
        return
    from referee.trainer_adapter.embedded import embedded_referee

    print(f"referee: starting an embedded server ({workers} check workers)", file=sys.stderr)
    with embedded_referee(math_workers=workers) as url:
        yield url


def _plot(metrics: list[dict[str, Any]], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    points = [(m["step"], m["reward"]) for m in metrics if "reward" in m and "step" in m]
    if not points:
        return False
    steps, rewards = zip(*points, strict=True)
    window = max(1, len(rewards) // 10)
    smooth = [
        sum(rewards[max(0, i - window + 1) : i + 1]) / len(rewards[max(0, i - window + 1) : i + 1])
        for i in range(len(rewards))
    ]
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=120)
    ax.plot(steps, rewards, alpha=0.35, label="mean reward per step")
    ax.plot(steps, smooth, label=f"moving average ({window} steps)")
    ax.set_xlabel("step")
    ax.set_ylabel("mean reward")
    ax.set_title("GRPO reward (rewards from referee)")
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def _progress_callback(metrics_path: Path, total: int, out: list[dict[str, Any]]) -> Any:
    from transformers import TrainerCallback

    class Progress(TrainerCallback):
        """One line per logged step, and every log appended to metrics.jsonl."""

        def __init__(self) -> None:
            self.start = time.perf_counter()

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if not logs or "reward" not in logs:
                return
            record = {"step": int(state.global_step), **logs}
            record["elapsed_s"] = round(time.perf_counter() - self.start, 3)
            out.append(record)
            with open(metrics_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(record, default=float) + "\n")
            print(
                f"step {state.global_step}/{total}  reward {logs['reward']:.4f}  "
                f"referee {logs.get('referee/latency_s', float('nan')):.3f} s  "
                f"elapsed {record['elapsed_s']:.1f} s",
                file=sys.stderr,
                flush=True,
            )

    return Progress()


def _grpo(args: argparse.Namespace) -> int:
    grader = _grader_arg(args.grader)  # bad input is reported before torch is imported
    rows = read_jsonl(args.dataset)
    if grader is None and not all("grader" in row for row in rows):
        raise ValueError("give --grader, or a 'grader' on every row of the dataset")
    for row in rows:  # heterogeneous objects do not fit one Arrow column: keep them as JSON
        for column in _JSON_COLUMNS:
            if column in row and not isinstance(row[column], str):
                row[column] = json.dumps(row[column])

    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer  # type: ignore[attr-defined]

    from referee.trainer_adapter.trl import REFERENCE_COLUMNS, reward_function

    out_dir = Path(args.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    metrics_path = Path(args.metrics) if args.metrics else out_dir / "metrics.jsonl"
    plot_path = Path(args.plot) if args.plot else out_dir / "reward.png"
    metrics_path.write_text("")
    bf16 = args.bf16 if args.bf16 is not None else bool(torch.cuda.is_available())
    options: dict[str, Any] = {
        "output_dir": str(out_dir),
        "loss_type": args.loss_type,
        "num_generations": args.num_generations,
        "epsilon": args.epsilon,
        "beta": args.beta,
        "temperature": args.temperature,
        "top_p": args.top_p,
        "max_completion_length": args.max_completion_length,
        "scale_rewards": args.scale_rewards,
        "learning_rate": args.learning_rate,
        "per_device_train_batch_size": args.per_device_train_batch_size,
        "gradient_accumulation_steps": args.gradient_accumulation_steps,
        "num_iterations": args.num_iterations,
        "mask_truncated_completions": args.mask_truncated_completions,
        "seed": args.seed,
        "logging_steps": args.logging_steps,
        "report_to": args.report_to,
        "bf16": bf16,
        "gradient_checkpointing": args.gradient_checkpointing,
        "save_strategy": "no" if not args.save else "steps",
        "disable_tqdm": args.quiet,
    }
    if args.epsilon_high is not None:
        options["epsilon_high"] = args.epsilon_high
    if args.max_steps is not None:
        options["max_steps"] = args.max_steps
    else:
        options["num_train_epochs"] = args.num_train_epochs
    if not torch.cuda.is_available():
        options["use_cpu"] = True
    options.update(_trl_overrides(args.trl))
    config = GRPOConfig(**options)
    history: list[dict[str, Any]] = []
    with _referee_url(args.server, args.referee_workers) as url:
        reward = reward_function(
            url,
            grader,
            asynchronous=args.async_reward,
            api_key=args.api_key,
            reference_columns=args.reference_column or REFERENCE_COLUMNS,
            pass_threshold=args.pass_threshold,
        )
        trainer = GRPOTrainer(
            model=args.model,
            reward_funcs=reward,
            args=config,
            train_dataset=Dataset.from_list(rows),
        )
        total = int(trainer.args.max_steps) if trainer.args.max_steps > 0 else 0
        trainer.add_callback(_progress_callback(metrics_path, total, history))
        if args.quiet:  # one line per step (ours) instead of transformers' dict of logs
            from transformers.trainer_callback import PrinterCallback

            trainer.remove_callback(PrinterCallback)
        print(
            f"referee: GRPO ({config.loss_type}) on {len(rows)} prompts, "
            f"{config.num_generations} completions each, rewards from {url}",
            file=sys.stderr,
        )
        trainer.train()
        if args.save:
            trainer.save_model(str(out_dir / "final"))
    drawn = _plot(history, plot_path)
    rewards = [h["reward"] for h in history]
    if rewards:
        k = max(1, len(rewards) // 5)
        print(
            f"referee: {len(rewards)} logged steps; mean reward first {k}: "
            f"{sum(rewards[:k]) / k:.4f}, last {k}: {sum(rewards[-k:]) / k:.4f}",
            file=sys.stderr,
        )
    print(f"referee: metrics in {metrics_path}", file=sys.stderr)
    if drawn:
        print(f"referee: reward curve in {plot_path}", file=sys.stderr)
    return 0


def add_grpo(sub: Any) -> None:
    p = sub.add_parser(
        "grpo",
        help="GRPO with TRL, rewards from referee",
        description="GRPO with TRL's GRPOTrainer; rewards from referee over HTTP.",
    )
    p.add_argument("--model", required=True, help="a local model directory (or hub name)")
    p.add_argument("--dataset", required=True, help="JSONL: prompt, a reference column, grader?")
    p.add_argument("--grader", help='the grader for every row, e.g. \'{"type": "math"}\'')
    p.add_argument("--server", help="a running referee (default: an embedded one)")
    p.add_argument("--api-key", default=os.environ.get("REFEREE_API_KEY"))
    p.add_argument("--referee-workers", type=int, default=2, help="embedded server's workers")
    p.add_argument(
        "--reference-column",
        action="append",
        help="dataset column(s) holding the reference (default: reference, answer, solution, "
        "ground_truth, label)",
    )
    p.add_argument("--output-dir", default="referee-grpo")
    p.add_argument("--metrics", help="metrics JSONL (default: OUTPUT_DIR/metrics.jsonl)")
    p.add_argument("--plot", help="reward curve PNG (default: OUTPUT_DIR/reward.png)")
    p.add_argument("--loss-type", choices=LOSS_TYPES, default="dapo")
    p.add_argument("--num-generations", type=int, default=8, help="group size G")
    p.add_argument("--epsilon", type=float, default=0.2, help="clip range (low)")
    p.add_argument("--epsilon-high", type=float, help="clip-higher upper range (DAPO: 0.28)")
    p.add_argument("--beta", type=float, default=0.0, help="KL coefficient (0: no ref model)")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--max-completion-length", type=int, default=256)
    p.add_argument("--scale-rewards", choices=["group", "batch", "none"], default="group")
    p.add_argument("--learning-rate", type=float, default=1e-6)
    p.add_argument("--per-device-train-batch-size", type=int, default=8)
    p.add_argument("--gradient-accumulation-steps", type=int, default=1)
    p.add_argument("--num-iterations", type=int, default=1, help="updates per batch (μ)")
    p.add_argument("--max-steps", type=int)
    p.add_argument("--num-train-epochs", type=float, default=1.0)
    p.add_argument("--mask-truncated-completions", action="store_true")
    p.add_argument("--pass-threshold", type=float, default=1.0)
    p.add_argument("--async-reward", action="store_true", help="use the async reward function")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--logging-steps", type=int, default=1)
    p.add_argument("--report-to", default="none")
    p.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--gradient-checkpointing", action=argparse.BooleanOptionalAction, default=False)
    p.add_argument("--save", action="store_true", help="save checkpoints and the final model")
    p.add_argument("--quiet", action="store_true", help="no TRL progress bar")
    p.add_argument(
        "--trl", action="append", default=[], metavar="KEY=VALUE", help="any GRPOConfig field"
    )
    p.set_defaults(func=_guarded(_grpo))
