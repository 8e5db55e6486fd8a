"""The CPU demonstration: a tiny Llama built from a config (byte tokenizer, nothing
downloaded) is fine-tuned briefly on noisy synthetic additions, then trained with GRPO by
``referee train grpo`` (TRL's GRPOTrainer) with its rewards coming over HTTP from a real
referee server. The mean reward of the last steps must beat that of the first.

Both steps run as the user runs them, in their own processes, with one torch thread each (two
threads on two shared cores are slower than one). With fixed seeds the run is repeatable; the
setting (8 prompts, G = 8, lr 1e-3, 30 steps) lifts the mean reward from about 0.4 to 0.7."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any as Server

import httpx

STEPS = 30
WINDOW = 6


def reward_calls(server: Server) -> float:
    metrics = httpx.get(server.url + "/metrics", timeout=10).text
    found = re.search(
        r'referee_http_requests_total\{method="POST",route="/v1/rewards",status="200"\} (\S+)',
        metrics,
    )
    return float(found.group(1)) if found else 0.0


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run(
        args, capture_output=True, text=True, timeout=240, env=env, cwd=cwd, check=False
    )


def test_grpo_on_cpu_improves_the_reward(tmp_path: Path, server: Server) -> None:
    policy = tmp_path / "tiny"
    done = run(
        [sys.executable, "-m", "referee.trainer_adapter.tiny_policy", "--out", str(policy)],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in (policy / "addition.jsonl").read_text().splitlines()]
    assert len(rows) == 8 and all(int(r["answer"]) <= 9 for r in rows)

    before = reward_calls(server)
    out = tmp_path / "run"
    done = run(
        [
            sys.executable, "-m", "referee.services.cli.main", "train", "grpo",
            "--model", str(policy), "--dataset", str(policy / "addition.jsonl"),
            "--grader", '{"type": "math"}', "--server", server.url,
            "--num-generations", "8", "--per-device-train-batch-size", "64",
            "--max-completion-length", "2", "--learning-rate", "1e-3",
            "--max-steps", str(STEPS), "--seed", "0", "--output-dir", str(out), "--quiet",
        ],
        tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"step {STEPS}/{STEPS}" in done.stderr

    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == list(range(1, STEPS + 1))
    rewards = [m["reward"] for m in metrics]
    first = sum(rewards[:WINDOW]) / WINDOW
    last = sum(rewards[-WINDOW:]) / WINDOW
    assert last > first, f"mean reward did not improve: {first:.3f} -> {last:.3f}: {rewards}"
    # every step's rewards came from this server, one /v1/rewards call per step
    assert reward_calls(server) - before == STEPS
    assert all(m["referee/failed"] == 0 for m in metrics)
    assert (out / "reward.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
