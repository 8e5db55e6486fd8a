"""Queued jobs with the real parts: a redis-server of the test's own (free port, append-only
file on), the API with ``REFEREE_BROKER_URL``, and ``referee worker`` processes (Celery, prefork).

What is checked: jobs complete on workers; a worker killed with SIGKILL in the middle of a job ->
the job finishes on another worker with every result, resumed from its saved chunks; Redis
restarted while a job runs -> the job still finishes; cancel stops a running job; 200 jobs
submitted at once all complete.
"""

from __future__ import annotations

import socket
import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis
from job_helpers import Cluster, settle
from prm_rows import prm_items

from referee.client import InvalidRequest, JobState, NotFound, RefereeClient
from referee.services.launcher import Server, free_port, start_tiny_llm


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, referee_server_factory: Any) -> Iterator[Any]:
    tmp = tmp_path_factory.mktemp("queued")
    databases = tmp / "database"  # Spider's layout, for the sql job
    (databases / "shop").mkdir(parents=True)
    conn = sqlite3.connect(databases / "shop" / "shop.sqlite")
    conn.executescript("CREATE TABLE t(id INT, name TEXT); INSERT INTO t VALUES (1,'a'),(2,'b');")
    conn.commit()
    conn.close()
    env = {"REFEREE_SQL_DATABASES_DIR": str(databases)}
    c = Cluster(tmp, referee_server_factory, env)
    c.start_worker("w1")
    c.start_worker("w2")
    yield c
    c.close()


def wait_for(client: RefereeClient, job_id: str, done: int, timeout_s: float = 180) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = client.job(job_id)
        if status.progress.done >= done and status.worker:
            return status
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} made no progress: {status}")


def test_a_job_runs_on_a_worker(cluster: Cluster) -> None:
    items = [
        {"id": str(i), "response": f"\\boxed{{{i}}}", "grader": {"type": "math", "reference": "3"}}
        for i in range(20)
    ]
    with RefereeClient(cluster.api.url) as client:
        job = client.submit(items)
        assert job.state is JobState.QUEUED
        done = client.wait(job, timeout_s=180)
    assert done.state is JobState.SUCCEEDED, done.error
    assert done.worker is not None and done.worker.split(":")[0] == socket.gethostname()
    assert done.result is not None
    assert [r.score for r in done.result.rewards] == [1.0 if i == 3 else 0.0 for i in range(20)]


def test_a_job_of_sql_items_reads_the_database_files_on_the_worker(cluster: Cluster) -> None:
    """The worker resolves ``database`` in its own REFEREE_SQL_DATABASES_DIR (the API checked
    the names at submission), length_penalty's inner grader too."""
    sql = {"type": "sql", "database": "shop", "reference": "SELECT name FROM t"}
    penalty = {"type": "length_penalty", "grader": sql, "beta": 0.5, "max_length": 1000}
    queries = ["SELECT name FROM t ORDER BY id DESC", "SELECT name FROM t WHERE id = 1"]
    items = [{"id": f"s{k}", "response": q, "grader": sql} for k, q in enumerate(queries)]
    items += [
        {"id": f"p{k}", "response": q, "grader": penalty, "group": "g"}
        for k, q in enumerate(queries)
    ]
    with RefereeClient(cluster.api.url) as client:
        done = client.wait(client.submit(items), timeout_s=180)
        with pytest.raises(InvalidRequest, match="no SQLite file 'nope'"):
            client.submit([{"id": "x", "response": "1", "grader": {**sql, "database": "nope"}}])
    assert done.state is JobState.SUCCEEDED, done.error
    assert done.worker is not None and done.result is not None
    rewards = {r.id: r for r in done.result.rewards}
    assert [rewards["s0"].score, rewards["s1"].score] == [1.0, 0.0]
    inner = [rewards[f"p{k}"].details["inner"]["outcome"] for k in range(2)]
    assert inner == ["correct", "wrong"], rewards
    assert rewards["p0"].score > 0.9 and rewards["p1"].score <= 0


def test_a_worker_killed_mid_job_loses_nothing(cluster: Cluster) -> None:
    with RefereeClient(cluster.api.url) as client:
        job = client.submit(prm_items(24, "k"), chunk_size=1)
        running = wait_for(client, job.id, done=2)
        victim = cluster.owner_of(int(running.worker.rsplit(":", 1)[1]))
        assert victim is not None, running.worker
        cluster.kill_worker(victim)
        done = client.wait(job.id, timeout_s=300)
        cluster.start_worker(victim)  # back to two workers for the next tests
    assert done.state is JobState.SUCCEEDED, done.error
    assert done.attempts >= 2 and done.worker != running.worker
    assert done.progress.done == done.progress.total == 24
    assert done.result is not None
    assert [r.id for r in done.result.rewards] == [f"k{i}" for i in range(24)]
    assert all(r.details["outcome"] == "prm" for r in done.result.rewards)
    assert all(len(r.details["steps"]) == 4 for r in done.result.rewards)


def test_redis_restarted_while_a_job_runs(cluster: Cluster) -> None:
    with RefereeClient(cluster.api.url, max_retries=8, backoff_s=0.5) as client:
        job = client.submit(prm_items(12, "r"), chunk_size=1)
        wait_for(client, job.id, done=1)
        cluster.restart_redis(down_s=2.0)
        done = client.wait(job.id, timeout_s=300)
    assert done.state is JobState.SUCCEEDED, done.error
    assert done.progress.done == 12
    assert done.result is not None and len(done.result.rewards) == 12


def test_cancel_stops_a_running_job(cluster: Cluster) -> None:
    with RefereeClient(cluster.api.url) as client:
        job = client.submit(prm_items(40, "c", rollouts=16), chunk_size=1)
        wait_for(client, job.id, done=1)
        assert client.cancel(job.id).state is JobState.CANCELLED
        stopped = settle(client, job.id)  # a batch in flight may still finish
        time.sleep(2.0)
        later = client.job(job.id)
        # the workers are free again: a new job runs
        after = client.wait(client.submit(prm_items(1, "after", rollouts=1)), timeout_s=120)
    assert later.state is JobState.CANCELLED
    assert stopped.progress.done < 40
    assert (later.progress.done, later.progress.rollouts) == (
        stopped.progress.done,
        stopped.progress.rollouts,
    )
    assert after.state is JobState.SUCCEEDED


def test_two_hundred_jobs_at_once_all_complete(cluster: Cluster) -> None:
    def one(i: int) -> str:
        item = {
            "id": "x",
            "response": f"\\boxed{{{i}}}",
            "grader": {"type": "math", "reference": str(i)},
        }
        with RefereeClient(cluster.api.url) as client:
            return client.submit([item], job_id=f"many-{i}").id

    with ThreadPoolExecutor(16) as pool:
        ids = list(pool.map(one, range(200)))
    workers = set()
    with RefereeClient(cluster.api.url) as client:
        for job_id in ids:
            done = client.wait(job_id, poll_s=0.2, timeout_s=300)
            assert done.state is JobState.SUCCEEDED, (job_id, done.error)
            assert done.result is not None and done.result.rewards[0].score == 1.0
            workers.add(cluster.owner_of(int(str(done.worker).rsplit(":", 1)[1])))
    assert len(set(ids)) == 200
    assert len(workers - {None}) == 2  # both workers took jobs


def test_redis_losing_its_data_is_a_clear_error(cluster: Cluster) -> None:
    with RefereeClient(cluster.api.url) as client:
        job = client.submit(prm_items(30, "lost", rollouts=8), chunk_size=1)
        wait_for(client, job.id, done=1)
        redis.Redis(port=cluster.redis_port).flushall()  # as a restart without persistence does
        with pytest.raises(NotFound, match="lost its data"):
            client.wait(job.id, timeout_s=60)
        # the stack keeps working: a new job runs
        after = client.wait(client.submit(prm_items(1, "afterloss", rollouts=1)), timeout_s=120)
    assert after.state is JobState.SUCCEEDED


def test_a_transient_failure_is_retried_with_backoff(
    cluster: Cluster, referee_server_factory: Any
) -> None:
    """The policy server is down when the job starts: the worker retries it, with backoff,
    until the server is up, and the job succeeds."""
    llm_port = free_port()
    env = {
        **cluster.env,
        "REFEREE_JOB_QUEUE": "retry-test",
        "REFEREE_POLICY_BACKEND": "openai",
        "REFEREE_POLICY_MODEL": "tiny",
        "REFEREE_POLICY_BASE_URL": f"http://127.0.0.1:{llm_port}",
    }
    api = referee_server_factory(cluster.tmp, env, "api-retry")
    saved = cluster.env
    cluster.env = env
    cluster.start_worker("retry")
    cluster.env = saved
    llm: Server | None = None
    try:
        with RefereeClient(api.url) as client:
            job = client.submit(prm_items(2, "t", rollouts=2))
            deadline = time.monotonic() + 120
            while client.job(job.id).attempts < 1 and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(3.0)  # a failed attempt or two against the absent server
            assert not client.job(job.id).state.finished
            llm = start_tiny_llm(port=llm_port, log=cluster.tmp / "llm-retry.log")
            done = client.wait(job.id, timeout_s=240)
        assert done.state is JobState.SUCCEEDED, done.error
        assert done.attempts >= 2
        assert done.result is not None
        assert all(r.details["outcome"] == "prm" for r in done.result.rewards)
    finally:
        cluster.kill_worker("retry")
        if llm is not None:
            llm.stop(timeout_s=30)
