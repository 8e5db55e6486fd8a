"""``referee dataset``: reproducible JSONL in the columns TRL, veRL and OpenRLHF read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from referee_cli import referee as _referee

from referee.client.models import RewardItem
from referee.services.cli import main
from referee.verifiers.registry import score_item


def test_dataset_rows_reproducible_and_scorable(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for out in (a, b):
        done = _referee(
            "dataset",
            "--task",
            "basic_arithmetic",
            "--n",
            "150",
            "--seed",
            "1",
            "--level",
            "1",
            "--out",
            str(out),
        )
        assert done.returncode == 0, done.stderr
        assert "150/150" in done.stderr  # the progress bar
    assert a.read_bytes() == b.read_bytes()
    rows = [json.loads(line) for line in a.read_text().splitlines()]
    assert len(rows) == 150 and [r["extra_info"]["index"] for r in rows] == list(range(150))
    row = rows[0]
    assert row["prompt"][0]["role"] == "user" and "<answer>" in row["prompt"][0]["content"]
    assert row["data_source"] == "reasoning_gym/basic_arithmetic"
    assert row["reward_model"] == {"style": "rule", "ground_truth": row["answer"]}
    assert row["extra_info"]["grader"] == row["grader"] and row["extra_info"]["level"] == 1
    for r in rows[:20]:
        grader = json.loads(r["grader"])
        item = RewardItem(id="x", response=f"<answer>{r['answer']}</answer>", grader=grader)
        assert score_item(item.grader.model_dump(), item.response)[0] == 1.0
        assert score_item(grader, "<answer>not a number</answer>")[0] < 1.0


def test_hash_seed_dependent_task_is_reproducible_across_runs(tmp_path: Path) -> None:
    outs = []
    for k, hash_seed in enumerate(("1", "2")):  # the command fixes the hash seed itself
        out = tmp_path / f"{k}.jsonl"
        done = _referee(
            "dataset",
            "--task",
            "word_ladder",
            "--n",
            "5",
            "--seed",
            "3",
            "--quiet",
            "--out",
            str(out),
            env={"PYTHONHASHSEED": hash_seed},
        )
        assert done.returncode == 0, done.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--task", "no_such_task"], "unknown task"),
        (["--task", "basic_arithmetic", "--config", "{"], "not JSON"),
        (["--task", "basic_arithmetic", "--config", '{"bogus": 1}'], "no config field"),
        (["--task", "basic_arithmetic", "--level", "99"], "levels 0 to"),
        ([], "--task is required"),
    ],
)
def test_dataset_errors(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dataset", "--n", "2", "--out", str(tmp_path / "x.jsonl"), *args]) == 2
    assert message in capsys.readouterr().err


def test_dataset_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dataset", "--list"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert "basic_arithmetic" in names and "composite" not in names and len(names) >= 100
