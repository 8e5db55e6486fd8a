"""``referee train ppo``: veRL's data (``train.parquet``), command line (``run_ppo.sh``) and
overrides (``ppo_overrides.json``) for a PPO run with a critic and GAE whose reward comes from
referee (:func:`referee.trainer_adapter.verl.compute_score`, veRL 0.9.1's keys), then the run
itself where veRL is installed (exit status 3 and how to install it where it is not).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from referee.trainer_adapter.train_common import _grader_arg, _guarded, read_jsonl

__all__ = ["EXIT_NO_VERL", "VERL_HINT", "add_ppo", "ppo_overrides"]

EXIT_NO_VERL = 3
VERL_HINT = (
    "veRL is not installed in this environment. Install it on the GPU machines that will run "
    "the training (it brings its own CUDA build of torch and vLLM/SGLang), e.g.\n"
    "    pip install 'verl[vllm]==0.9.1'\n"
    "then run the written script, or this command again."
)


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


def add_ppo(sub: Any) -> None:
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
