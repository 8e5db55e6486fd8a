"""REFEREE_WORKER_NAME: a worker's name in job status and its Celery node name, which the compose
images set per container (containers with host networking share the host's name). Checked with
a real redis-server, API server and ``referee worker``, and the images' healthcheck script."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.client import JobState, RefereeClient
from referee.services.launcher import start_redis

ROOT = Path(__file__).resolve().parents[3]
NAME = "named-worker-1"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with start_redis(tmp_path_factory.mktemp("redis")) as redis_server:
        yield redis_server.url


@pytest.fixture(scope="module")
def worker(broker: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    env = {**os.environ, "REFEREE_BROKER_URL": broker, "REFEREE_WORKER_NAME": NAME}
    env["REFEREE_MATH_WORKERS"] = "1"
    log = tmp_path_factory.mktemp("worker") / "worker.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "referee.services.cli.main", "worker", "--loglevel", "warning"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    yield proc
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


def healthcheck(broker: str, name: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REFEREE_BROKER_URL": broker, "REFEREE_WORKER_NAME": name}
    return subprocess.run(
        [sys.executable, str(ROOT / "docker" / "healthcheck.py"), "worker"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_job_names_its_worker(
    broker: str, worker: Any, referee_server_factory: Any, tmp_path: Path
) -> None:
    api = referee_server_factory(tmp_path, {"REFEREE_BROKER_URL": broker}, "api")
    item = {"id": "a", "response": "\\boxed{4}", "grader": {"type": "math", "reference": "4"}}
    with RefereeClient(api.url) as client:
        done = client.wait(client.submit([item]), timeout_s=120)
    assert done.state is JobState.SUCCEEDED, done.error
    assert done.worker == f"{NAME}:{worker.pid}"


def test_the_healthcheck_pings_the_named_node(broker: str, worker: Any) -> None:
    deadline = time.monotonic() + 60
    ok = healthcheck(broker, NAME)
    while ok.returncode != 0 and time.monotonic() < deadline:  # the worker may still start
        time.sleep(1)
        ok = healthcheck(broker, NAME)
    assert ok.returncode == 0, ok.stderr
    other = healthcheck(broker, "no-such-worker")
    assert other.returncode == 1
    assert "the worker does not answer a ping" in other.stderr
