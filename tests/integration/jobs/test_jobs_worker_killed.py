"""A worker killed at any point of a job's life leaves no job unfinished after a lease time.

Real parts: a redis-server of the test's own on a free port, the API with a broker, and
``referee worker`` processes (Celery) killed with SIGKILL. The points of a job's life covered
here (a kill in the middle of a running job is in test_jobs_queued.py):

* the worker has taken the job's message and holds no lease yet: the worker is stopped (SIGSTOP)
  while it waits in BRPOP, the job is submitted (Redis hands the message to the stopped worker:
  it is in no queue and not yet recorded as taken), then killed. The message is gone; the job
  is queued with no lease. Without the queued-job sweep it stays ``queued`` until Celery's
  visibility timeout (hours);
* the worker holds the lease and builds its runtime (a worker's first job: check pool, models)
  before the job is marked running: killed then, the lease lapses with the job still queued and
  its message taken more than a lease time ago;
* the API stored the job and died before sending its message: the job is queued and no message
  exists at all.

In each case another worker must finish the job, with every result, the job never started twice
by anyone but the rescuer.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from job_helpers import Cluster

from referee.client import JobState, RefereeClient
from referee.services.jobs.store import RedisJobStore

QUEUE = "referee"  # REFEREE_JOB_QUEUE's default


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, referee_server_factory: Any) -> Iterator[Any]:
    c = Cluster(tmp_path_factory.mktemp("killed"), referee_server_factory)
    yield c
    c.close()


# The broker's message state in the Redis transport: the queue, and the messages taken but not
# acknowledged (restored to the queue only after Celery's visibility timeout, hours).
BROKER_STATE = (QUEUE, "unacked", "unacked_index", "unacked_mutex")


@pytest.fixture(autouse=True)
def own_broker_state(cluster: Cluster) -> None:
    """Each test starts with no worker, an empty queue and no unacknowledged message: a worker an
    earlier test killed leaves the message it had taken in ``unacked`` (the builder's always
    stays there; a rescuer's or a stopped taker's can), which a later test's ``unacked`` count
    would see. Every job of an earlier test is finished, so nothing waits on these messages."""
    assert not cluster.workers, f"workers left running: {sorted(cluster.workers)}"
    r = redis.Redis(port=cluster.redis_port)
    r.delete(*BROKER_STATE)


def wait_until(
    check: Callable[[], bool], timeout_s: float, what: str, every_s: float = 0.05
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(every_s)
    raise AssertionError(f"timed out waiting for {what}")


def waiting_in_brpop(r: redis.Redis) -> bool:
    return any(c.get("cmd") == "brpop" and "b" in c.get("flags", "") for c in r.client_list())


def items(tag: str, n: int = 6) -> list[dict[str, Any]]:
    return [
        {
            "id": f"{tag}{i}",
            "response": f"\\boxed{{{i}}}",
            "grader": {"type": "math", "reference": "2"},
        }
        for i in range(n)
    ]


def finished_by_a_rescuer(cluster: Cluster, client: RefereeClient, job_id: str) -> Any:
    cluster.start_worker("rescuer")
    try:
        done = client.wait(job_id, poll_s=0.2, timeout_s=240)
    finally:
        cluster.kill_worker("rescuer")
    assert done.state is JobState.SUCCEEDED, done.error
    assert done.attempts == 1  # the killed worker never started it
    assert done.result is not None
    assert [r.score for r in done.result.rewards] == [1.0 if i == 2 else 0.0 for i in range(6)]
    return done


def test_killed_after_taking_the_message_before_the_lease(cluster: Cluster) -> None:
    r = redis.Redis(port=cluster.redis_port)
    cluster.start_worker("taker")
    taker = cluster.workers["taker"]
    with RefereeClient(cluster.api.url) as client:
        # The worker's BRPOP waits at most a second before it is sent again: stop the worker
        # while Redis still counts it as waiting, then submit. A submit that comes after that
        # second leaves the message in the queue: the worker is let go to run it, and again.
        for _ in range(5):
            wait_until(lambda: waiting_in_brpop(r), 180, "the worker to wait for a message")
            os.killpg(taker.pid, signal.SIGSTOP)
            if not waiting_in_brpop(r):
                os.killpg(taker.pid, signal.SIGCONT)
                continue
            job = client.submit(items("t"))
            if r.llen(QUEUE) == 0:
                break
            os.killpg(taker.pid, signal.SIGCONT)
            assert client.wait(job.id, poll_s=0.2, timeout_s=240).state is JobState.SUCCEEDED
        else:
            raise AssertionError("the worker could not be stopped inside its BRPOP")
        # Redis gave the message to the stopped worker: no queue holds it, nothing records it
        # as taken, and the job has no lease.
        assert r.hlen("unacked") == 0
        assert not r.exists(f"referee:job:{job.id}:lease")
        assert client.job(job.id).state is JobState.QUEUED
        cluster.kill_worker("taker")
        finished_by_a_rescuer(cluster, client, job.id)


def test_killed_holding_the_lease_before_the_job_started(cluster: Cluster) -> None:
    r = redis.Redis(port=cluster.redis_port)
    cluster.start_worker("builder")  # a fresh worker: its first job builds its runtime
    wait_until(lambda: waiting_in_brpop(r), 180, "the worker to wait for a message")
    with RefereeClient(cluster.api.url) as client:
        job = client.submit(items("b"))
        lease = f"referee:job:{job.id}:lease"
        wait_until(lambda: bool(r.exists(lease)), 60, "the worker to take the lease", 0.005)
        cluster.kill_worker("builder")
        # killed while it built its check pool and models: the job never ran
        status = client.job(job.id)
        assert status.state is JobState.QUEUED and status.attempts == 0, status
        assert r.hlen("unacked") == 1  # its message, taken by a worker that is gone
        finished_by_a_rescuer(cluster, client, job.id)


def test_a_job_stored_but_never_sent_is_sent(cluster: Cluster) -> None:
    """The API stored the job and died before it sent the message (the job store's own create,
    as the API calls it, and no message)."""
    store = RedisJobStore.from_url(f"redis://127.0.0.1:{cluster.redis_port}/0")
    request = {"id": "never-sent", "items": items("n"), "pass_threshold": 1.0, "chunk_size": None}
    assert store.create("never-sent", request, 6, "digest-of-never-sent")
    with RefereeClient(cluster.api.url) as client:
        assert client.job("never-sent").state is JobState.QUEUED
        finished_by_a_rescuer(cluster, client, "never-sent")
