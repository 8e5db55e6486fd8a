"""``REFEREE_PROCEDURAL_TIMEOUT_S`` on a real server: ``/v1/rewards``, slime's route and an
embedded job (all scored by the app's one ``Scorer``), plain items and ``length_penalty``'s inner
batch (see tests/procedural_deadline.py)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import procedural_deadline as deadline
import pytest

from referee.client import JobState, RefereeClient


@pytest.fixture(scope="module")
def strict(referee_server_factory: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    return referee_server_factory(tmp_path_factory.mktemp("deadline"), deadline.ENV, "deadline")


def test_the_rewards_route_honours_the_procedural_deadline(strict: Any) -> None:
    with RefereeClient(strict.url) as client:
        deadline.assert_honoured(client.rewards(deadline.items()).rewards)


def test_an_embedded_job_honours_the_procedural_deadline(strict: Any) -> None:
    with RefereeClient(strict.url) as client:
        done = client.wait(client.submit(deadline.items()), timeout_s=120)
    assert done.state == JobState.SUCCEEDED, done.error
    assert done.result is not None
    deadline.assert_honoured(done.result.rewards)


def test_the_slime_route_honours_the_procedural_deadline(strict: Any) -> None:
    plain = deadline.items()[0]
    answer = httpx.post(
        f"{strict.url}/slime/reward",
        params={"details": "true", "grader": json.dumps(plain["grader"])},
        json={"prompt": "Compute it.", "response": plain["response"], "label": None},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    verdict = answer.json()
    assert verdict["outcome"] == "timeout" and not verdict["valid"], verdict
    assert deadline.STOPPED in verdict["details"]["error"], verdict
