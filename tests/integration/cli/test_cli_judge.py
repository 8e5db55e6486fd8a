"""``referee judge`` (in-process and against a server) and the SDK's ``judge()``, with real tiny
transformers judges: a random one (label probabilities) and one taught its verdicts
(tests/trained_judge.py)."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from referee_cli import referee as run_referee
from trained_judge import GRADERS, PRIME_QUESTION, PRIMES, QUESTION, RESPONSES

from referee.client import AsyncRefereeClient, InvalidRequest, RefereeClient, ServiceUnavailable

JUDGE_ENV = {"REFEREE_JUDGE_BACKEND": "transformers", "REFEREE_JUDGE_MODEL": "tiny-random"}
P_YES = {"type": "genrm", "label_probs": True}


def referee(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``referee ARGS`` with no judge unless ``env`` names one."""
    return run_referee(*args, env={"REFEREE_JUDGE_BACKEND": "none", **(env or {})})


def lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


@pytest.fixture(scope="module")
def random_judge_server(
    referee_server_factory: Any, tmp_path_factory: pytest.TempPathFactory
) -> Any:
    return referee_server_factory(tmp_path_factory.mktemp("judge"), JUDGE_ENV, "judge")


def test_in_process_and_through_a_server_agree(random_judge_server: Any, tmp_path: Path) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text('"5"\n\n{"response": "four"}\n')
    grader = tmp_path / "grader.json"
    grader.write_text(json.dumps(P_YES))
    common = ["--prompt", "What is 2+2?", "--response", "4", "--responses", str(answers)]
    local = referee("judge", "--grader", json.dumps(P_YES), *common, env=JUDGE_ENV)
    assert local.returncode == 0, local.stderr
    remote = referee("judge", "--grader", str(grader), *common, "--server", random_judge_server.url)
    assert remote.returncode == 0, remote.stderr
    here, there = lines(local.stdout), lines(remote.stdout)
    assert [x["index"] for x in here] == [0, 1, 2]  # --response first, then the file's lines
    for a, b in zip(here, there, strict=True):
        assert a["details"]["method"] == "label_probs"
        assert 0.0 < a["score"] < 1.0
        assert a["score"] == pytest.approx(b["score"], abs=1e-5)  # the same model either way
    with RefereeClient(random_judge_server.url) as client:
        sdk = client.judge("What is 2+2?", ["4", "5", "four"], P_YES)
    assert [r.score for r in sdk.results] == pytest.approx([x["score"] for x in there], abs=1e-9)


def test_async_client_and_pairwise(judge_server: Any) -> None:
    async def go() -> Any:
        async with AsyncRefereeClient(judge_server.url) as client:
            return await client.judge(PRIME_QUESTION, list(PRIMES), GRADERS["pairwise"])

    answer = asyncio.run(go())
    # the taught judge: 7 and 9 -> 7, 9 and 11 -> 11, 7 and 11 -> whichever is second
    assert [r.score for r in answer.results] == [0.75, 0.0, 0.75]
    assert [r.details["comparisons"] for r in answer.results] == [2, 2, 2]


def test_in_process_verdicts_of_a_local_model(taught_judge: Path) -> None:
    env = {"REFEREE_JUDGE_BACKEND": "transformers", "REFEREE_JUDGE_MODEL": str(taught_judge)}
    args = ["--grader", json.dumps(GRADERS["verdict"]), "--prompt", QUESTION]
    done = referee("judge", *args, *(x for r in RESPONSES for x in ("--response", r)), env=env)
    assert done.returncode == 0, done.stderr
    out = lines(done.stdout)
    assert [x["score"] for x in out] == [1.0, 0.0, None]
    assert out[2]["details"]["outcome"] == "parse_error"


def test_no_judge_configured_says_what_to_set(server: Any) -> None:
    done = referee("judge", "--grader", '{"type": "genrm"}', "--prompt", "q", "--response", "a")
    assert done.returncode == 2
    assert "REFEREE_JUDGE_BACKEND" in done.stderr
    with RefereeClient(server.url) as client, pytest.raises(ServiceUnavailable):
        client.judge("q", ["a"], {"type": "genrm"})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--grader", '{"type": "math"}', "--prompt", "q", "--response", "a"], "grader"),
        (["--grader", "{not json", "--prompt", "q", "--response", "a"], "not valid JSON"),
        (["--grader", "missing.json", "--prompt", "q", "--response", "a"], "neither"),
        (["--grader", '{"type": "genrm"}', "--prompt", "q"], "no responses"),
        (["--grader", '{"type": "genrm"}', "--response", "a"], "no prompt"),
    ],
)
def test_bad_input_is_a_clear_error(args: list[str], message: str) -> None:
    done = referee("judge", *args, env=JUDGE_ENV)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_sdk_checks_the_grader_before_sending(server: Any) -> None:
    with RefereeClient(server.url) as client, pytest.raises(InvalidRequest, match="grader"):
        client.judge("q", ["a"], {"type": "rubric"})  # a rubric needs criteria
