"""A job queued through Redis and scored by a real ``referee worker`` (Celery) honours
REFEREE_PROCEDURAL_TIMEOUT_S and REFEREE_MATH_TIMEOUT_S: the worker builds the same Scorer as the
API, from the same settings (see tests/procedural_deadline.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import procedural_deadline as deadline
import pytest
from job_helpers import Cluster

from referee.client import JobState, RefereeClient


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, referee_server_factory: Any) -> Iterator[Any]:
    env = {**deadline.ENV, "REFEREE_POLICY_BACKEND": "none"}
    c = Cluster(tmp_path_factory.mktemp("deadlines"), referee_server_factory, env)
    c.start_worker("w1")
    yield c
    c.close()


def test_a_job_on_a_worker_honours_the_procedural_deadline(cluster: Cluster) -> None:
    with RefereeClient(cluster.api.url) as client:
        done = client.wait(client.submit(deadline.items()), timeout_s=180)
    assert done.state == JobState.SUCCEEDED, done.error
    assert done.worker is not None and done.worker != "embedded"
    assert done.result is not None
    deadline.assert_honoured(done.result.rewards)
