"""``referee train``: GRPO through TRL and PPO through veRL, with rewards from referee.

    referee train grpo --model PATH --dataset data.jsonl --grader '{"type": "math"}' \\
        [--server URL] [--loss-type dapo] [--num-generations 8] [--beta 0.0] ...
    referee train ppo --model PATH --dataset data.jsonl --server URL --out runs/ppo [--dry-run]

The dataset is JSONL: a ``prompt`` (text or chat messages) per line, the reference in a column
such as ``answer``/``reference``/``solution``, and optionally a per-row ``grader``.

``grpo`` is a thin wrapper over TRL's ``GRPOTrainer`` with :mod:`referee.trainer_adapter.trl`'s
reward function; without ``--server`` it starts an embedded referee in the process. It prints
progress, appends every logged step to ``metrics.jsonl`` and draws ``reward.png`` in the output
directory. Any other ``GRPOConfig`` field can be set with ``--trl KEY=VALUE``.

``ppo`` writes veRL's data (``train.parquet``), the command line (``run_ppo.sh``) and its
overrides (``ppo_overrides.json``) for a PPO run with a critic and GAE whose reward is
:func:`referee.trainer_adapter.verl.compute_score` with veRL 0.9.1's keys (``reward.*``, its
``naive`` reward-loop manager), then runs it when veRL is installed; without veRL it says how to
install it and exits with status 3. The rows' ``data_source`` is ``referee`` unless the dataset
gives one; either way the reward comes from referee, as the custom reward function takes every
row.

trl, torch and datasets are imported only when a command runs (the ``train`` extra).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["LOSS_TYPES", "ppo_overrides", "read_jsonl", "register"]

LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo")
EXIT_NO_VERL = 3
VERL_HINT = (
    "veRL is not installed in this environment. Install it on the GPU machines that will run "
    "the training (it brings its own CUDA build of torch and vLLM/SGLang), e.g.\n"
    "    pip install 'verl[vllm]==0.9.1'\n"
    "then run the written script, or this command again."
)
_JSON_COLUMNS = ("grader", "tests")


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a JSONL dataset; each needs a ``prompt``. Raises ValueError naming the line."""
    rows = []
    with open(path, encoding="utf-8") as stream:
        for lineno, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not JSON: {exc.msg}") from exc
            if not isinstance(row, dict) or "prompt" not in row:
                raise ValueError(f"{path}:{lineno}: expected a JSON object with a 'prompt'")
            rows.append(row)
    if not rows:
        raise ValueError(f"{path}: no rows")
    return rows


def _grader_arg(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    from referee.client.grader_specs import parse_grader

    return parse_grader(text)


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


def ppo_overrides(
    args: argparse.Namespace, train_file: Path, reward_path: str, url: str
) -> list[str]:
    """veRL ``main_ppo`` overrides for PPO with a critic and GAE, reward from referee."""
    critic = args.critic or args.model
    out = Path(args.out).resolve()
    overrides = [
        "algorithm.adv_estimator=gae",
        f"algorithm.gamma={args.gamma}",
        f"algorithm.lam={args.lam}",
        f"algorithm.kl_ctrl.kl_coef={args.kl_coef}",
        f"data.train_files={train_file}",
        f"data.val_files={train_file}",
        f"data.train_batch_size={args.batch_size}",
        f"data.max_prompt_length={args.max_prompt_length}",
        f"data.max_response_length={args.max_response_length}",
        f"actor_rollout_ref.model.path={args.model}",
        f"actor_rollout_ref.actor.optim.lr={args.actor_lr}",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={args.mini_batch_size}",
        f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={args.micro_batch_size}",
        f"actor_rollout_ref.rollout.name={args.rollout}",
        f"actor_rollout_ref.rollout.temperature={args.temperature}",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
        f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={args.micro_batch_size}",
        f"actor_rollout_ref.rollout.gpu_memory_utilization={args.gpu_memory_utilization}",
        f"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu={args.micro_batch_size}",
        f"critic.model.path={critic}",
        f"critic.optim.lr={args.critic_lr}",
        f"critic.ppo_micro_batch_size_per_gpu={args.micro_batch_size}",
        # veRL 0.9.1's keys: reward settings live under reward.*; its reward loop scores each
        # trajectory as it completes with a per-sample manager (there is no batch manager)
        "reward.reward_manager.name=naive",
        f"reward.custom_reward_function.path={reward_path}",
        "reward.custom_reward_function.name=compute_score",
        f"++reward.custom_reward_function.reward_kwargs.referee_url={url}",
        f"trainer.n_gpus_per_node={args.n_gpus}",
        f"trainer.nnodes={args.nnodes}",
        f"trainer.total_epochs={args.epochs}",
        "trainer.logger=[console]",
        "trainer.project_name=referee",
        f"trainer.experiment_name={args.experiment_name}",
        f"trainer.default_local_dir={out / 'checkpoints'}",
        "trainer.val_before_train=False",
    ]
    if args.api_key:
        overrides.append(f"++reward.custom_reward_function.reward_kwargs.api_key={args.api_key}")
    return overrides + list(args.verl)


def _verl_rows(rows: list[dict[str, Any]], grader: dict[str, Any] | None) -> list[dict[str, Any]]:
    from referee.trainer_adapter.trl import REFERENCE_COLUMNS

    out = []
    for i, row in enumerate(rows):
        prompt = row["prompt"]
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        reference = next((row[c] for c in REFERENCE_COLUMNS if row.get(c) not in (None, "")), "")
        spec = row.get("grader", grader) or {"type": "math"}
        truth = reference if isinstance(reference, str) else json.dumps(reference)
        out.append(
            {
                "data_source": str(row.get("data_source", "referee")),
                "prompt": [
                    {"role": str(m["role"]), "content": str(m["content"])} for m in messages
                ],
                "ability": str(row.get("ability", "math")),
                "reward_model": {
                    "style": "rule",
                    "ground_truth": truth,
                },
                "extra_info": {
                    "index": i,
                    "grader": spec if isinstance(spec, str) else json.dumps(spec),
                },
            }
        )
    return out


def _ppo(args: argparse.Namespace) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from referee.trainer_adapter.verl_path import reward_module_path

    grader = _grader_arg(args.grader)
    rows = read_jsonl(args.dataset)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    train_file = (out / "train.parquet").resolve()
    pq.write_table(pa.Table.from_pylist(_verl_rows(rows, grader)), train_file)
    url = args.server or "http://127.0.0.1:8000"
    overrides = ppo_overrides(args, train_file, reward_module_path(), url)
    command = [sys.executable, "-m", "verl.trainer.main_ppo", *overrides]
    script = out / "run_ppo.sh"
    script.write_text(
        "#!/usr/bin/env bash\n# PPO (critic, GAE) with veRL; rewards from referee at "
        f"{url}.\nset -euo pipefail\n" + " \\\n    ".join(shlex.quote(c) for c in command) + "\n"
    )
    script.chmod(0o755)
    (out / "ppo_overrides.json").write_text(json.dumps(overrides, indent=2) + "\n")
    print(f"referee: wrote {train_file}, {script} and ppo_overrides.json", file=sys.stderr)
    if importlib.util.find_spec("verl") is None:
        print(f"referee: {VERL_HINT}", file=sys.stderr)
        return EXIT_NO_VERL
    if args.dry_run:
        print(" ".join(shlex.quote(c) for c in command))
        return 0
    env = {**os.environ, "REFEREE_URL": url}
    return subprocess.call(command, env=env)


def _guarded(run: Any) -> Any:
    """Bad input (a malformed dataset or grader) is a message and exit status 2."""

    def command(args: argparse.Namespace) -> int:
        try:
            return int(run(args))
        except ValueError as exc:
            print(f"referee: {exc}", file=sys.stderr)
            return 2

    return command


def _add_grpo(sub: Any) -> None:
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


def _add_ppo(sub: Any) -> None:
    p = sub.add_parser(
        "ppo",
        help="PPO with veRL (critic, GAE), rewards from referee",
        description="Prepare (and run, where veRL is installed) a veRL PPO run whose reward "
        "comes from referee.",
    )
    p.add_argument("--model", required=True, help="the actor model (path or hub name)")
    p.add_argument("--critic", help="the critic model (default: the actor's)")
    p.add_argument("--dataset", required=True, help="JSONL: prompt, a reference column, grader?")
    p.add_argument("--grader", help="the grader for rows without one (default: math)")
    p.add_argument("--server", help="the referee server the reward workers call")
    p.add_argument("--api-key", default=os.environ.get("REFEREE_API_KEY"))
    p.add_argument("--out", default="referee-ppo", help="where the data and script go")
    p.add_argument("--experiment-name", default="ppo")
    p.add_argument("--n-gpus", type=int, default=1, help="GPUs per node")
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=256, help="prompts per step")
    p.add_argument("--mini-batch-size", type=int, default=64)
    p.add_argument("--micro-batch-size", type=int, default=4, help="per GPU")
    p.add_argument("--max-prompt-length", type=int, default=512)
    p.add_argument("--max-response-length", type=int, default=1024)
    p.add_argument("--actor-lr", type=float, default=1e-6)
    p.add_argument("--critic-lr", type=float, default=1e-5)
    p.add_argument("--kl-coef", type=float, default=0.001)
    p.add_argument("--gamma", type=float, default=1.0, help="GAE discount")
    p.add_argument("--lam", type=float, default=1.0, help="GAE lambda")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--rollout", default="vllm", choices=["vllm", "sglang", "hf"])
    p.add_argument("--gpu-memory-utilization", type=float, default=0.5)
    p.add_argument("--dry-run", action="store_true", help="write and print, do not run")
    p.add_argument(
        "--verl", action="append", default=[], metavar="KEY=VALUE", help="more veRL overrides"
    )
    p.set_defaults(func=_guarded(_ppo))


def register(subparsers: Any) -> None:
    """Add ``train grpo`` and ``train ppo`` to the ``referee`` command's subparsers."""
    train = subparsers.add_parser(
        "train",
        help="train with GRPO (TRL) or PPO (veRL), rewards from referee",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = train.add_subparsers(dest="train_command", required=True)
    _add_grpo(sub)
    _add_ppo(sub)
