"""``referee train``: PPO through veRL (here without veRL: the run is prepared, the command
says how to install veRL and exits non-zero) and the grpo command's input checks."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from typing import Any as Server

import pyarrow.parquet as pq

from referee.trainer_adapter.verl import compute_score_batch, reset_clients

ROWS = [
    {"prompt": "What is 3+4?", "answer": "7"},
    {"prompt": [{"role": "user", "content": "Pick: (A) 1 (B) 2"}], "answer": "B",
     "grader": {"type": "multiple_choice"}},
]  # fmt: skip


def referee(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "referee.services.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_ppo_without_verl_prepares_the_run_and_says_how_to_install(
    tmp_path: Path, server: Server
) -> None:
    assert importlib.util.find_spec("verl") is None, "this test needs an environment without veRL"
    data = write_rows(tmp_path / "data.jsonl", ROWS)
    out = tmp_path / "ppo"
    done = referee(
        "train", "ppo", "--model", "Qwen/Qwen2.5-0.5B-Instruct", "--dataset", str(data),
        "--server", server.url, "--out", str(out), "--n-gpus", "8", "--verl",
        "trainer.total_training_steps=5",
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert (
        "veRL is not installed" in done.stderr and "pip install 'verl[vllm]==0.9.1'" in done.stderr
    )
    overrides = json.loads((out / "ppo_overrides.json").read_text())
    assert "algorithm.adv_estimator=gae" in overrides  # PPO: critic + GAE
    assert "critic.model.path=Qwen/Qwen2.5-0.5B-Instruct" in overrides
    # veRL 0.9.1's keys (test_verl_peer composes them with veRL's own config)
    assert "reward.reward_manager.name=naive" in overrides
    assert "reward.custom_reward_function.name=compute_score" in overrides
    assert f"++reward.custom_reward_function.reward_kwargs.referee_url={server.url}" in overrides
    assert not any(o.startswith(("custom_reward_function.", "reward_model.")) for o in overrides)
    assert "trainer.n_gpus_per_node=8" in overrides
    assert overrides[-1] == "trainer.total_training_steps=5"
    path = next(o for o in overrides if o.startswith("reward.custom_reward_function.path="))
    assert path.endswith("trainer_adapter/verl.py") and Path(path.split("=", 1)[1]).is_file()
    script = (out / "run_ppo.sh").read_text()
    assert "verl.trainer.main_ppo" in script and "algorithm.adv_estimator=gae" in script
    assert (out / "run_ppo.sh").stat().st_mode & 0o100

    # the data is veRL's RL format; its rows score through referee as veRL would score them
    table = pq.read_table(out / "train.parquet").to_pylist()
    assert table[0]["prompt"] == [{"role": "user", "content": "What is 3+4?"}]
    assert table[0]["reward_model"] == {"style": "rule", "ground_truth": "7"}
    assert table[1]["extra_info"]["index"] == 1
    assert json.loads(table[1]["extra_info"]["grader"]) == {"type": "multiple_choice"}
    try:
        scores = compute_score_batch(
            data_sources=[r["data_source"] for r in table],
            solution_strs=["\\boxed{7}", "The answer is (B)."],
            ground_truths=[r["reward_model"]["ground_truth"] for r in table],
            extra_infos=[r["extra_info"] for r in table],
            referee_url=server.url,
        )
    finally:
        reset_clients()
    assert [s["score"] for s in scores] == [1.0, 1.0]


def test_grpo_input_errors_are_clear(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "a", "answer": "1"}\nnot json\n')
    done = referee("train", "grpo", "--model", "x", "--dataset", str(bad), "--grader", "{}")
    assert done.returncode == 2
    assert "with a `type`" in done.stderr
    done = referee(
        "train", "grpo", "--model", "x", "--dataset", str(bad), "--grader", '{"type": "math"}'
    )
    assert done.returncode == 2 and "bad.jsonl:2: not JSON" in done.stderr
    good = write_rows(tmp_path / "good.jsonl", [{"prompt": "a", "answer": "1"}])
    done = referee("train", "grpo", "--model", "x", "--dataset", str(good))
    assert done.returncode == 2 and "give --grader" in done.stderr
    done = referee("train", "ppo", "--model", "x", "--dataset", str(tmp_path / "none.jsonl"))
    assert done.returncode == 2 and "none.jsonl" in done.stderr
