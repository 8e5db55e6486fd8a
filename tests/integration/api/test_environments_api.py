"""/v1/environments, the procedural grader in /v1/rewards, and /v1/curriculum on a real server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from referee.services.launcher import start_redis
from referee.verifiers import procedural


@pytest.fixture(scope="module")
def env_server(tmp_path_factory: pytest.TempPathFactory, referee_server_factory: Any) -> str:
    srv = referee_server_factory(
        tmp_path_factory.mktemp("env"),
        {"REFEREE_MAX_BATCH_ITEMS": "2000", "REFEREE_CURRICULUM_WINDOW": "8"},
        "env",
    )
    return str(srv.url)


def _problems(url: str, task: str, **body: Any) -> list[dict[str, Any]]:
    r = httpx.post(f"{url}/v1/environments/{task}/problems", json=body, timeout=120)
    assert r.status_code == 200, r.text
    return list(r.json()["problems"])


def test_every_family_scores_its_own_answer_one_and_a_wrong_one_below(env_server: str) -> None:
    listing = httpx.get(f"{env_server}/v1/environments", timeout=120).json()
    families = {f["name"]: f for f in listing["families"]}
    assert len(families) >= 100
    assert {e["name"] for e in listing["excluded"]} == set(procedural.EXCLUDED)
    items, expect = [], []
    unchecked: set[str] = set()
    for name, family in sorted(families.items()):
        problems = _problems(env_server, name, n=3, seed=1)
        for k, p in enumerate(problems):
            others = [q["answer"] for q in problems if q["answer"] != p["answer"]]
            wrong = others[0] if others and others[0] else "zzz not it"
            if family["reference_answer"]:
                assert p["answer"] is not None, name
            # The reference answer, or the example solution some solution-checking tasks keep.
            right = procedural.example_solution(name, p["grader"]["entry"])
            if right is not None:
                items.append(
                    {
                        "id": f"{name}-{k}-ref",
                        "response": f"<answer>{right}</answer>",
                        "grader": p["grader"],
                    }
                )
                expect.append((name, "ref"))
            else:
                unchecked.add(name)
            items.append(
                {
                    "id": f"{name}-{k}-wrong",
                    "response": f"<answer>{wrong}</answer>",
                    "grader": p["grader"],
                }
            )
            expect.append((name, "wrong"))
    r = httpx.post(f"{env_server}/v1/rewards", json={"items": items}, timeout=600)
    assert r.status_code == 200, r.text
    failures = []
    for (name, kind), res in zip(expect, r.json()["rewards"], strict=True):
        if (kind == "ref" and res["score"] != 1.0) or (kind == "wrong" and res["score"] >= 1.0):
            failures.append((name, kind, res["score"], res["details"]))
    assert failures == []
    # The families without a single reference answer are the ones listed with the reason; only
    # those with no example solution either go without a check that a right answer scores 1.
    assert {n for n, f in families.items() if not f["reference_answer"]} == set(
        procedural.NO_REFERENCE
    )
    assert unchecked == set(procedural.NO_REFERENCE) - set(procedural.EXAMPLE_SOLUTION)


def test_same_seed_same_problems(env_server: str) -> None:
    a = _problems(env_server, "basic_arithmetic", n=70, seed=3, config={"max_terms": 3})
    b = _problems(env_server, "basic_arithmetic", n=70, seed=3, config={"max_terms": 3})
    c = _problems(env_server, "basic_arithmetic", n=70, seed=4, config={"max_terms": 3})
    assert a == b and a != c
    assert [p["index"] for p in a] == list(range(70))  # two chunks, in order
    assert a[0]["prompt"].startswith(a[0]["question"]) and "<answer>" in a[0]["prompt"]


def test_bad_requests_say_what_is_wrong(env_server: str) -> None:
    url = f"{env_server}/v1/environments"
    r = httpx.post(f"{url}/no_such_task/problems", json={})
    assert r.status_code == 404 and "unknown task" in r.json()["detail"]
    r = httpx.post(f"{url}/composite/problems", json={})
    assert r.status_code == 404 and "not served" in r.json()["detail"]
    r = httpx.post(f"{url}/basic_arithmetic/problems", json={"config": {"min_terms": 0}})
    assert r.status_code == 422 and "refuses the config" in r.json()["detail"]
    r = httpx.post(f"{url}/basic_arithmetic/problems", json={"level": 99})
    assert r.status_code == 422 and "levels 0 to" in r.json()["detail"]
    r = httpx.post(f"{url}/basic_arithmetic/problems", json={"n": 10**6})
    assert r.status_code == 413


def test_malformed_entries_are_per_item_errors(env_server: str) -> None:
    [p] = _problems(env_server, "basic_arithmetic", n=1, seed=9)
    good = {"id": "good", "response": f"<answer>{p['answer']}</answer>", "grader": p["grader"]}
    items = [
        good,
        {
            "id": "no-answer-key",
            "response": "<answer>1</answer>",
            "grader": {"type": "procedural", "task": "basic_arithmetic", "entry": {"metadata": {}}},
        },
        {
            "id": "unknown-task",
            "response": "<answer>1</answer>",
            "grader": {"type": "procedural", "task": "nope", "entry": {"answer": "1"}},
        },
        {
            "id": "bad-config",
            "response": "<answer>1</answer>",
            "grader": {**p["grader"], "config": {"bogus": 1}},
        },
        {
            "id": "weighted",
            "response": f"<think>x</think><answer>{p['answer']}</answer>",
            "grader": {
                "type": "weighted",
                "graders": [
                    {"weight": 1.0, "grader": p["grader"]},
                    {"weight": 1.0, "grader": {"type": "format", "pattern": "think_answer"}},
                ],
            },
        },
    ]
    r = httpx.post(f"{env_server}/v1/rewards", json={"items": items}, timeout=120)
    assert r.status_code == 200, r.text
    out = {x["id"]: x for x in r.json()["rewards"]}
    assert out["good"]["score"] == 1.0 and out["good"]["details"]["outcome"] == "correct"
    assert out["weighted"]["score"] == 1.0
    for bad, words in (
        ("no-answer-key", "entry.answer"),
        ("unknown-task", "unknown task"),
        ("bad-config", "no config field"),
    ):
        assert out[bad]["score"] == 0.0 and out[bad]["details"]["outcome"] == "error"
        assert words in out[bad]["details"]["error"]


def _play(url: str, task: str, correct: bool, rounds: int) -> list[int]:
    """A simulated policy: draws 8 problems, answers them all right (or all wrong), scores."""
    levels = []
    for _ in range(rounds):
        r = httpx.post(f"{url}/v1/curriculum/problems", json={"n": 8, "tasks": [task]}, timeout=120)
        assert r.status_code == 200, r.text
        problems = r.json()["problems"]
        items = [
            {
                "id": str(i),
                "response": f"<answer>{p['answer'] if correct else 'zzz'}</answer>",
                "grader": p["grader"],
            }
            for i, p in enumerate(problems)
        ]
        assert (
            httpx.post(f"{url}/v1/rewards", json={"items": items}, timeout=120).status_code == 200
        )
        state = {t["task"]: t for t in httpx.get(f"{url}/v1/curriculum").json()["tasks"]}[task]
        levels.append(state["level"])
    return levels


def _curriculum_moves(url: str) -> None:
    up = _play(url, "basic_arithmetic", correct=True, rounds=3)
    assert up == [1, 2, 3]  # a window of 8 results per move, always above the band
    down = _play(url, "basic_arithmetic", correct=False, rounds=2)
    assert down == [2, 1]
    view = httpx.get(f"{url}/v1/curriculum").json()
    state = {t["task"]: t for t in view["tasks"]}["basic_arithmetic"]
    per_level = {x["level"]: x for x in state["per_level"]}
    assert per_level[0]["pass_rate"] == 1.0 and per_level[3]["pass_rate"] == 0.0
    # A failing task weighs more in draws than a passing one.
    _play(url, "word_sorting", correct=True, rounds=1)
    weights = {t["task"]: t["weight"] for t in httpx.get(f"{url}/v1/curriculum").json()["tasks"]}
    assert weights["basic_arithmetic"] > weights["word_sorting"]
    r = httpx.post(
        f"{url}/v1/curriculum/problems",
        json={"n": 200, "tasks": ["basic_arithmetic", "word_sorting"], "seed": 1},
    )
    drawn = [p["task"] for p in r.json()["problems"]]
    assert drawn.count("basic_arithmetic") > drawn.count("word_sorting")


def test_curriculum_in_memory(env_server: str) -> None:
    _curriculum_moves(env_server)
    assert httpx.get(f"{env_server}/v1/curriculum").json()["store"] == "memory"


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[str]:
    """A redis-server of the test's own on a free port: the test does not depend on (or touch)
    whatever Redis the machine runs on 6379."""
    with start_redis(tmp_path) as redis_server:
        yield f"redis://127.0.0.1:{redis_server.port}/13"


def test_curriculum_in_redis(tmp_path: Path, referee_server_factory: Any, own_redis: str) -> None:
    url = own_redis
    client = redis.Redis.from_url(url)
    srv = referee_server_factory(
        tmp_path, {"REFEREE_BROKER_URL": url, "REFEREE_CURRICULUM_WINDOW": "8"}, "env-redis"
    )
    _curriculum_moves(srv.url)
    assert httpx.get(f"{srv.url}/v1/curriculum").json()["store"] == "redis"
    assert client.hget("referee:curriculum:basic_arithmetic", "level") == b"1"


def test_trainer_draws_prompts_from_the_curriculum(env_server: str) -> None:
    from referee.client.errors import InvalidRequest
    from referee.trainer_adapter.curriculum import CurriculumSource

    with CurriculumSource(env_server, tasks=["letter_counting"], batch_size=8, seed=5) as source:
        levels = []
        for _ in range(2):  # a policy that always answers right, fed by the source
            rows = source.draw(8)
            items = [
                {
                    "id": str(i),
                    "response": f"<answer>{r['answer']}</answer>",
                    "grader": json.loads(r["grader"]),
                }
                for i, r in enumerate(rows)
            ]
            assert all(r["data_source"] == "reasoning_gym/letter_counting" for r in rows)
            assert httpx.post(f"{env_server}/v1/rewards", json={"items": items}).status_code == 200
            state = {t.task: t for t in source.state().tasks}["letter_counting"]
            levels.append(state.level)
        assert levels == [1, 2]
        assert next(iter(source))["extra_info"]["level"] == 2
    with CurriculumSource(env_server, tasks=["nope"]) as bad, pytest.raises(InvalidRequest):
        bad.draw(1)


def test_a_hanging_scorer_costs_one_item(tmp_path: Path, referee_server_factory: Any) -> None:
    """reasoning-gym's polynomial_multiplication scorer hands the answer to sympy, which
    evaluates a power tower for as long as it is let: its worker is killed at the deadline."""
    srv = referee_server_factory(
        tmp_path, {"REFEREE_MATH_WORKERS": "1", "REFEREE_PROCEDURAL_TIMEOUT_S": "6"}, "hang"
    )
    [p] = _problems(srv.url, "polynomial_multiplication", n=1, seed=1)
    items = [
        {"id": "right", "response": f"<answer>{p['answer']}</answer>", "grader": p["grader"]},
        {"id": "hostile", "response": "<answer>9**9**9**9</answer>", "grader": p["grader"]},
        {"id": "after", "response": f"<answer>{p['answer']}</answer>", "grader": p["grader"]},
    ]
    r = httpx.post(f"{srv.url}/v1/rewards", json={"items": items}, timeout=120)
    assert r.status_code == 200, r.text
    out = {x["id"]: x for x in r.json()["rewards"]}
    assert out["right"]["score"] == 1.0 and out["after"]["score"] == 1.0
    assert out["hostile"]["score"] == 0.0 and out["hostile"]["details"]["outcome"] == "timeout"
    assert "6 s" in out["hostile"]["details"]["error"]
    assert httpx.get(f"{srv.url}/readyz").status_code == 200


def test_a_task_without_curriculum_is_weighed_by_its_pass_rate(env_server: str) -> None:
    assert procedural.level_count("list_functions") == 0
    levels = _play(env_server, "list_functions", correct=False, rounds=1)
    assert levels == [0]
    state = {t["task"]: t for t in httpx.get(f"{env_server}/v1/curriculum").json()["tasks"]}
    assert state["list_functions"]["pass_rate"] == 0.0 and state["list_functions"]["weight"] == 1.0


def test_jobs_feed_the_curriculum(env_server: str) -> None:
    """A job (run by the API itself here: no broker) scores procedural items like
    /v1/rewards, and its results move the task's level."""
    from referee.client import RefereeClient

    problems = _problems(env_server, "chain_sum", n=8, seed=2, level=0)
    items = [
        {"id": str(i), "response": f"<answer>{p['answer']}</answer>", "grader": p["grader"]}
        for i, p in enumerate(problems)
    ]
    with RefereeClient(env_server) as client:
        done = client.wait(client.submit(items))
    assert done.state == "succeeded"
    assert done.result is not None and all(r.score == 1.0 for r in done.result.rewards)
    state = {t["task"]: t for t in httpx.get(f"{env_server}/v1/curriculum").json()["tasks"]}
    assert state["chain_sum"]["level"] == 1
    per_level = {x["level"]: x for x in state["chain_sum"]["per_level"]}
    assert per_level[0] == {"level": 0, "n": 8, "pass_rate": 1.0, "mean_score": 1.0}
