"""veRL 0.9.1's own reward code calling referee's reward module, with the keys ``referee train
ppo`` writes: veRL's config composed with those overrides, its reward loop
(``RewardLoopWorker`` with the ``naive`` manager) and its older ``naive`` and ``batch``
managers, in a cached environment of veRL's pinned requirements (see
peer_code_compat.verl_python; nothing is stubbed, ray is installed there and not started). The
rewards must equal ``/v1/rewards`` on the same responses, every row of ``data_source``
``referee`` must reach referee, and ``valid`` must reach ``reward_extra_info``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from typing import Any as Server

import httpx
import pytest

from .peer_code_compat import run_script, verl_python

HERE = Path(__file__).resolve().parent
ROWS = [
    {"prompt": "What is 3+4?", "answer": "7"},
    {"prompt": "Pick one: (A) 1 (B) 2", "answer": "B", "grader": {"type": "multiple_choice"}},
    # a gsm8k row: with referee's keys veRL's own gsm8k scorer (which wants "#### 72") is not
    # used, so "The final answer is 72" scores 1
    {"prompt": "Janet has 8 apples, buys 64.", "answer": "72", "data_source": "openai/gsm8k"},
    {"prompt": "Broken row", "answer": "\\frac{"},  # a bad reference: not valid
]
RESPONSES = [  # row i % 4; veRL decodes without special tokens
    "3 + 4 = \\boxed{7}",
    "The answer is (B).",
    "#### 72",
    "\\boxed{1}",
    "\\boxed{8}",
    "I think (A)",
    "So 72 apples. The final answer is 72",
    "\\boxed{2}",
]


def _train_ppo(tmp: Path, url: str) -> Path:
    data = tmp / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    out = tmp / "ppo"
    done = subprocess.run(
        [sys.executable, "-m", "referee.services.cli.main", "train", "ppo", "--model", "m",
         "--dataset", str(data), "--server", url, "--out", str(out)],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr  # written; veRL is not in this environment
    return out


def _v1_rewards(url: str, table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    items = []
    for n, response in enumerate(RESPONSES):
        row = table[n % len(table)]
        grader = json.loads(row["extra_info"]["grader"])
        grader["reference"] = row["reward_model"]["ground_truth"]
        items.append({"id": str(n), "response": response, "grader": grader})
    out = httpx.post(url + "/v1/rewards", json={"items": items}, timeout=120)
    assert out.status_code == 200, out.text
    rewards: list[dict[str, Any]] = out.json()["rewards"]
    return rewards


@pytest.mark.long  # veRL's own environment (built on first use) and its reward loop
@pytest.mark.timeout(1800)  # the first run builds veRL's environment (minutes), then it is cached
def test_verl_091_reward_loop_and_older_managers(tmp_path: Path, server: Server) -> None:
    import pyarrow.parquet as pq

    out = _train_ppo(tmp_path, server.url)
    table = pq.read_table(out / "train.parquet").to_pylist()
    assert [r["data_source"] for r in table] == ["referee", "referee", "openai/gsm8k", "referee"]
    spec = {
        "overrides": json.loads((out / "ppo_overrides.json").read_text()),
        "parquet": str(out / "train.parquet"),
        "responses": RESPONSES,
        "tokenizer_dir": str(tmp_path / "tokenizer"),
    }
    got = run_script(verl_python(), HERE / "verl_reward_run.py", spec, tmp_path)
    assert got["verl_version"] == "0.9.1" and got["reward_loop_manager"] == "naive"

    reference = _v1_rewards(server.url, table)
    expected = [r["score"] for r in reference]
    assert expected == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    valid = [r["valid"] for r in reference]
    assert valid == [True, True, True, False, True, True, True, False]

    loop = got["reward_loop"]
    assert [r["reward_score"] for r in loop] == expected
    assert [r["reward_extra_info"]["valid"] for r in loop] == valid
    assert [r["reward_extra_info"]["referee_failed"] for r in loop] == [
        0.0 if v else 1.0 for v in valid
    ]
    assert all(set(r["reward_extra_info"]) >= {"score", "valid", "acc"} for r in loop)

    for older in ("naive_manager", "batch_manager"):
        assert got[older]["scores"] == expected, older
        assert got[older]["reward_extra_info"]["valid"] == valid, older
