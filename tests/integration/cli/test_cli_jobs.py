"""``referee jobs`` and ``referee worker``, run as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from referee_cli import referee


def test_jobs_submit_wait_status_cancel(server: Any, tmp_path: Path) -> None:
    batch = tmp_path / "batch.jsonl"
    lines = [
        {"id": f"i{k}", "response": f"\\boxed{{{k}}}", "grader": {"type": "math", "reference": "2"}}
        for k in range(5)
    ]
    batch.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    out = tmp_path / "scored.jsonl"
    done = referee(
        "jobs",
        "submit",
        str(batch),
        "--server",
        server.url,
        "--id",
        "cli-job-1",
        "--wait",
        "--out",
        str(out),
        "--poll",
        "0.05",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "cli-job-1"
    assert "job cli-job-1" in done.stderr and "succeeded" in done.stderr  # the progress bar
    scores = [json.loads(line)["score"] for line in out.read_text().splitlines()]
    assert scores == [0.0, 0.0, 1.0, 0.0, 0.0]
    status = referee("jobs", "status", "cli-job-1", "--server", server.url)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["progress"] == {"done": 5, "total": 5, "rollouts": 0}
    cancel = referee("jobs", "cancel", "cli-job-1", "--server", server.url)
    assert cancel.returncode == 0 and "succeeded" in cancel.stderr  # finished: unchanged
    missing = referee("jobs", "status", "no-such-job", "--server", server.url)
    assert missing.returncode == 2 and "no job 'no-such-job'" in missing.stderr


def test_jobs_submit_names_a_bad_line(server: Any, tmp_path: Path) -> None:
    batch = tmp_path / "bad.jsonl"
    batch.write_text('{"id": "a", "response": "x", "grader": {"type": "nope"}}\n')
    done = referee("jobs", "submit", str(batch), "--server", server.url)
    assert done.returncode == 2
    assert "line 1" in done.stderr


def test_worker_without_a_broker_says_what_to_set() -> None:
    done = referee("worker", env={"REFEREE_BROKER_URL": ""})
    assert done.returncode == 2
    assert "REFEREE_BROKER_URL" in done.stderr
