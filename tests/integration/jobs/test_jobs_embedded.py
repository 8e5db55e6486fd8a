"""The job API with no broker (embedded mode): jobs run inside the server process, with the same
states, progress, idempotency and cancel as queued jobs; ``prm_mc`` graders sample rollouts from
a real (tiny, random) transformers policy model."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from job_helpers import settle

from referee.client import Conflict, JobState, NotFound, PayloadTooLarge, RefereeClient
from referee.client.errors import ServiceUnavailable

SOLUTION = "Step 1: 2 + 3 = 5\nStep 2: 5 * 2 = 10\nStep 3: So the answer is \\boxed{10}."


@pytest.fixture(scope="module")
def prm_server(referee_server_factory: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    return referee_server_factory(
        tmp_path_factory.mktemp("prm"),
        {
            "REFEREE_POLICY_BACKEND": "transformers",
            "REFEREE_POLICY_MODEL": "tiny-random",
            "REFEREE_PRM_SYNC_MAX_ROLLOUTS": "16",
        },
        "prm",
    )


def prm_item(i: int, n: int = 2, mode: str = "per_step", **extra: Any) -> dict[str, Any]:
    grader = {
        "type": "prm_mc",
        "reference": "10",
        "n_rollouts": n,
        "mode": mode,
        "max_tokens": 8,
        **extra,
    }
    return {"id": f"p{i}", "prompt": "Compute (2 + 3) * 2.", "response": SOLUTION, "grader": grader}


def math_item(i: int) -> dict[str, Any]:
    return {
        "id": f"m{i}",
        "response": f"\\boxed{{{i % 3}}}",
        "group": f"g{i % 4}",
        "grader": {"type": "math", "reference": "1"},
    }


def test_a_reward_batch_job_runs_to_completion_with_progress(server: Any) -> None:
    seen: list[tuple[str, int]] = []
    with RefereeClient(server.url) as client:
        items = [math_item(i) for i in range(300)]
        job = client.submit(items, chunk_size=50)
        assert job.state in (JobState.QUEUED, JobState.RUNNING, JobState.SUCCEEDED)
        assert job.progress.total == 300
        done = client.wait(
            job,
            progress=lambda s: seen.append((s.state, s.progress.done)),
            poll_s=0.05,
            timeout_s=120,
        )
    assert done.state is JobState.SUCCEEDED, done.error
    assert done.progress.done == 300 and done.attempts == 1
    assert done.result is not None
    assert [r.id for r in done.result.rewards] == [f"m{i}" for i in range(300)]
    assert [r.score for r in done.result.rewards] == [
        1.0 if i % 3 == 1 else 0.0 for i in range(300)
    ]
    assert sorted(g.group for g in done.result.groups) == ["g0", "g1", "g2", "g3"]
    dones = [d for _, d in seen]
    assert dones == sorted(dones)  # progress never goes back


def test_submit_is_idempotent_by_id_and_conflicts_on_another_request(server: Any) -> None:
    with RefereeClient(server.url) as client:
        first = client.submit([math_item(1)], job_id="same-id-1")
        again = client.submit([math_item(1)], job_id="same-id-1")
        assert again.id == first.id == "same-id-1"
        with pytest.raises(Conflict, match="different request"):
            client.submit([math_item(2)], job_id="same-id-1")
        assert client.wait("same-id-1", timeout_s=60).state is JobState.SUCCEEDED
    raw = httpx.post(server.url + "/v1/jobs", json={"id": "same-id-1", "items": [math_item(1)]})
    assert raw.status_code == 200  # 202 only when created


def test_unknown_jobs_and_bad_requests_are_clear_errors(server: Any) -> None:
    with RefereeClient(server.url) as client:
        with pytest.raises(NotFound, match="no job 'nope'"):
            client.job("nope")
        with pytest.raises(NotFound):
            client.cancel("nope")
    bad = httpx.post(server.url + "/v1/jobs", json={"items": []})
    assert bad.status_code == 422
    bad = httpx.post(server.url + "/v1/jobs", json={"id": "has space", "items": [math_item(0)]})
    assert bad.status_code == 422 and "id" in bad.text


def test_prm_without_a_policy_model_is_a_clear_503_and_a_failed_job(server: Any) -> None:
    with RefereeClient(server.url, max_retries=0) as client:
        with pytest.raises(ServiceUnavailable, match="REFEREE_POLICY_BACKEND"):
            client.rewards([prm_item(0)])
        job = client.wait(client.submit([prm_item(0)]), timeout_s=60)
        assert client.rewards([math_item(1)]).rewards[0].score == 1.0  # the rest still works
    assert job.state is JobState.FAILED
    assert job.error is not None and "REFEREE_POLICY_BACKEND" in job.error


def test_prm_through_rewards_within_the_budget(prm_server: Any) -> None:
    with RefereeClient(prm_server.url) as client:
        out = client.rewards([prm_item(0, n=2), prm_item(1, n=2, mode="binary_search")])
    per_step, bisect = (r.details for r in out.rewards)
    assert per_step["outcome"] == "prm" and len(per_step["steps"]) == 3
    assert per_step["rollouts_used"] == 2 * 2  # two prefixes sampled twice; the last is the answer
    assert per_step["final_correct"] is True and per_step["steps"][-1]["value"] == 1.0
    for step in per_step["steps"][:2]:
        assert 0.0 <= step["value"] <= 1.0
    assert bisect["first_wrong_step"] is None and bisect["rollouts_used"] == 0  # answer is right
    assert out.rewards[1].score == 1.0


def test_prm_over_the_budget_points_to_the_job_api(prm_server: Any) -> None:
    with RefereeClient(prm_server.url, max_retries=0) as client:
        with pytest.raises(PayloadTooLarge, match="POST /v1/jobs"):
            client.rewards([prm_item(i, n=8) for i in range(3)])


def test_prm_job_in_a_weighted_grader_with_progress(prm_server: Any) -> None:
    items = [prm_item(i, n=4) for i in range(6)]
    items[5] = {
        **items[5],
        "grader": {
            "type": "weighted",
            "graders": [
                {"weight": 1.0, "grader": prm_item(5, n=4)["grader"]},
                {"weight": 1.0, "grader": {"type": "math", "reference": "10"}},
            ],
        },
    }
    rollouts: list[int] = []
    with RefereeClient(prm_server.url) as client:
        job = client.submit(items, chunk_size=2)
        done = client.wait(
            job, progress=lambda s: rollouts.append(s.progress.rollouts), poll_s=0.05, timeout_s=300
        )
    assert done.state is JobState.SUCCEEDED, done.error
    assert done.result is not None
    # identical solutions: one call samples each prefix once, later chunks hit the cache
    used = [r.details.get("rollouts_used") for r in done.result.rewards[:5]]
    assert used == [2 * 4, 0, 0, 0, 0]  # each prefix sampled once: later chunks hit the cache
    assert done.progress.rollouts == sum(u or 0 for u in used)
    assert done.result.rewards[5].details["outcome"] == "weighted"
    assert rollouts == sorted(rollouts)


def test_cancel_stops_a_running_job(prm_server: Any) -> None:
    # each item's first step is its own: no rollout of one is cached for the next, so the job
    # is still running when the cancel comes
    items = [dict(prm_item(i, n=16), response=f"Step 0: item {i}.\n" + SOLUTION) for i in range(40)]
    with RefereeClient(prm_server.url) as client:
        job = client.submit(items, chunk_size=1)
        deadline = time.monotonic() + 120
        while client.job(job.id).progress.done < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        cancelled = client.cancel(job.id)
        assert cancelled.state is JobState.CANCELLED
        assert cancelled.error == "cancelled by request"
        stopped = settle(client, job.id)  # a batch in flight may still finish
        time.sleep(2.0)
        later = client.job(job.id)
        assert client.cancel(job.id).state is JobState.CANCELLED  # cancelling again: no change
    assert stopped.state is later.state is JobState.CANCELLED
    assert stopped.progress.done < 40
    assert later.progress.done == stopped.progress.done  # no work after the stop
    assert later.progress.rollouts == stopped.progress.rollouts
