"""Graders registered by name (REFEREE_GRADERS, REFEREE_GRADERS_FILE) on a real server: the same
scores as the inline grader, in every place a grader goes, and clear errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from grader_cases import weighted

from referee.client import InvalidRequest, JobState, RefereeClient
from referee.services.scoring.named import GraderRegistry

R1 = weighted((0.9, {"type": "math"}), (0.1, {"type": "format", "pattern": "think_answer"}))
LOOSE = {"type": "string_check", "operation": "ilike", "reference": "paris"}


@pytest.fixture(scope="module")
def named_server(referee_server_factory: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("named")
    (tmp / "graders.json").write_text(json.dumps({"r1": R1, "capital": {"type": "math"}}))
    env = {
        "REFEREE_GRADERS_FILE": str(tmp / "graders.json"),
        "REFEREE_GRADERS": json.dumps({"capital": LOOSE}),  # the variable wins over the file
    }
    return referee_server_factory(tmp, env, "named")


RESPONSES = [
    "<think>2+2</think><answer>\\boxed{4}</answer>",
    "\\boxed{4}",
    "<think>hm</think><answer>\\boxed{5}</answer>",
]


def test_named_scores_as_the_inline_grader(named_server: Any) -> None:
    with RefereeClient(named_server.url) as client:
        assert set(client.graders().graders) == {"r1", "capital"}
        assert client.graders().graders["capital"] == LOOSE
        inline = [
            {
                "id": f"i{k}",
                "response": r,
                "grader": {
                    **R1,
                    "graders": [
                        {**p, "grader": {**p["grader"], "reference": "4"}}
                        if p["grader"]["type"] == "math"
                        else p
                        for p in R1["graders"]
                    ],
                },
            }
            for k, r in enumerate(RESPONSES)
        ]
        named = [
            {
                "id": f"n{k}",
                "response": r,
                "grader": {"type": "named", "name": "r1", "reference": "4"},
            }
            for k, r in enumerate(RESPONSES)
        ]
        a = client.rewards(inline).rewards
        b = client.rewards(named).rewards
        assert [x.score for x in a] == [x.score for x in b]
        assert [x.score for x in b] == pytest.approx([1.0, 0.9, 0.1])
        mixed = client.rewards(
            [
                {
                    "id": "w",
                    "response": "PARIS",
                    "grader": weighted(
                        (1, {"type": "named", "name": "capital"}),
                        (1, {"type": "string_check", "reference": "x"}),
                    ),
                }
            ]
        ).rewards
        assert mixed[0].score == pytest.approx(0.5)


def test_a_job_runs_the_registered_grader(named_server: Any) -> None:
    with RefereeClient(named_server.url) as client:
        items = [
            {
                "id": "a",
                "response": RESPONSES[0],
                "grader": {"type": "named", "name": "r1", "reference": "4"},
            }
        ]
        done = client.wait(client.submit(items, job_id="named-job"), timeout_s=120)
    assert done.state is JobState.SUCCEEDED
    assert done.result is not None and done.result.rewards[0].score == pytest.approx(1.0)


def test_openrlhf_route_takes_a_named_grader(named_server: Any) -> None:
    body = {"query": ["q Paris", "q Lyon"], "prompts": ["q ", "q "], "labels": ["", ""]}
    grader = json.dumps({"type": "named", "name": "capital"})
    out = httpx.post(
        named_server.url + "/openrlhf/reward", params={"grader": grader}, json=body, timeout=60
    )
    assert out.status_code == 200, out.text
    assert out.json()["rewards"] == [1.0, 0.0]


def test_unknown_names_and_missing_references_are_clear(named_server: Any) -> None:
    with RefereeClient(named_server.url, max_retries=0) as client:
        with pytest.raises(
            InvalidRequest, match=r"items\.1\.grader: no grader named 'nope'.*capital, r1"
        ):
            client.rewards(
                [
                    {
                        "id": "a",
                        "response": "1",
                        "grader": {"type": "named", "name": "r1", "reference": "1"},
                    },
                    {"id": "b", "response": "1", "grader": {"type": "named", "name": "nope"}},
                ]
            )
        with pytest.raises(InvalidRequest, match="reference"):
            client.rewards(
                [{"id": "a", "response": "1", "grader": {"type": "named", "name": "r1"}}]
            )
        with pytest.raises(InvalidRequest, match="no grader named"):
            client.submit([{"id": "a", "response": "1", "grader": {"type": "named", "name": "x"}}])


def test_a_server_without_a_registry_says_how_to_set_one(server: Any) -> None:
    with RefereeClient(server.url, max_retries=0) as client:
        assert client.graders().graders == {}
        with pytest.raises(InvalidRequest, match="REFEREE_GRADERS"):
            client.rewards([{"id": "a", "response": "1", "grader": {"type": "named", "name": "g"}}])


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        ({"bad name!": {"type": "math"}}, "not a usable name"),
        ({"g": {"type": "nope"}}, "not a valid grader"),
        ({"g": {"type": "math", "extract": 3}}, "not a valid grader"),
        ({"g": {"type": "named", "name": "h"}}, "refers to a named grader"),
        ({"g": "math"}, "grader object"),
    ],
)
def test_a_bad_registry_is_refused(specs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GraderRegistry(specs)


def test_a_server_with_a_bad_registry_does_not_start(tmp_path: Path) -> None:
    env = {**os.environ, "REFEREE_GRADERS": json.dumps({"g": {"type": "nope"}})}
    done = subprocess.run(
        [sys.executable, "-c", "from referee.services.app import create_app; create_app()"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode != 0
    assert "REFEREE_GRADERS: 'g' is not a valid grader" in done.stderr
