"""Judge graders through the API: no judge configured (503); a tiny random transformers judge
(label probabilities, which any model yields); every judge mode with a tiny judge taught its
verdicts (tests/trained_judge.py), through ``/v1/judge`` and ``/v1/rewards``, in the server
(transformers backend) and behind an OpenAI-compatible server (openai backend), each score
checked against the value worked out by hand from the verdicts the judge was taught."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from trained_judge import (
    GRADERS,
    PRIME_QUESTION,
    PRIMES,
    QUESTION,
    REQUESTS,
    RIGHT,
    UNSURE,
    WRONG,
    collect_lessons,
    p_yes,
)

from referee.genrm.guards import fence
from referee.services.launcher import start_tiny_llm

Server = Any
GENRM = {"type": "genrm", "label_probs": True, "reference": "4"}
RESPONSES_3 = (RIGHT, WRONG, UNSURE)


def item(i: int, response: str, grader: dict[str, Any], group: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": str(i),
        "prompt": QUESTION,
        "response": response,
        "grader": grader,
    }
    if group:
        out["group"] = group
    return out


def rewards(server: Server, items: list[dict[str, Any]]) -> httpx.Response:
    return httpx.post(server.url + "/v1/rewards", json={"items": items}, timeout=120)


@pytest.fixture(scope="module")
def judging(
    tmp_path_factory: pytest.TempPathFactory, referee_server_factory: Any
) -> Callable[..., Server]:
    """``judging(name, backend, model, url="", top_logprobs=0)``: a server called ``name`` (one
    check worker) whose judge is ``model`` on the ``backend`` judge backend, at base URL ``url``
    (the openai backend), asking for ``top_logprobs`` tokens' logprobs if given."""

    def start(name: str, backend: str, model: str, url: str = "", top_logprobs: int = 0) -> Server:
        env = {"REFEREE_JUDGE_BACKEND": backend, "REFEREE_JUDGE_MODEL": model}
        env["REFEREE_MATH_WORKERS"] = "1"
        if url:
            env["REFEREE_JUDGE_BASE_URL"] = url
        if top_logprobs:
            env["REFEREE_JUDGE_TOP_LOGPROBS"] = str(top_logprobs)
        return referee_server_factory(Path(tmp_path_factory.mktemp(name)), env, name)

    return start


@pytest.fixture(scope="module")
def judged(judging: Callable[..., Server]) -> Server:
    return judging("judged", "transformers", "tiny-random")


@pytest.fixture(scope="module")
def llm_server() -> Iterator[str]:
    with start_tiny_llm() as llm:
        yield llm.url


def test_no_judge_configured_is_a_503_that_says_how(server: Server) -> None:
    r = rewards(server, [item(0, "4", GENRM)])
    assert r.status_code == 503 and r.json()["type"] == "service-unavailable"
    assert "REFEREE_JUDGE_BACKEND" in r.json()["detail"]
    math = rewards(server, [item(0, "\\boxed{4}", {"type": "math", "reference": "4"})])
    assert math.status_code == 200 and math.json()["rewards"][0]["score"] == 1.0
    direct = httpx.post(
        server.url + "/v1/judge", json={"prompt": "q", "responses": ["a"], "grader": GENRM}
    )
    assert direct.status_code == 503


def test_genrm_label_probabilities_and_weighted_with_math(judged: Server) -> None:
    weighted = {
        "type": "weighted",
        "graders": [
            {"weight": 1.0, "grader": {"type": "math", "reference": "4"}},
            {"weight": 1.0, "grader": GENRM},
        ],
    }
    body = rewards(
        judged,
        [
            item(0, "The answer is 4.", GENRM),
            item(1, "It is 5.", GENRM),
            item(2, "\\boxed{4}", weighted),
            item(3, ":", GENRM),
        ],
    ).json()
    s0, s1, s2, s3 = (r["score"] for r in body["rewards"])
    assert 0.0 < s0 < 1.0 and 0.0 < s1 < 1.0 and s0 != s1
    p_yes = body["rewards"][2]["details"]["parts"][1]["p_yes"]
    assert s2 == pytest.approx((1.0 + p_yes) / 2)
    assert s3 == 0.0 and body["rewards"][3]["details"]["outcome"] == "guard"


# The scores the taught verdicts give (tests/trained_judge.py, VERDICTS), worked out by hand.
EXPECTED: dict[str, list[float | None]] = {
    # Yes, No, and a rationale with no verdict in it
    "verdict": [1.0, 0.0, None],
    # [RESULT] 9 and 2 on the 1-10 scale: (score - 1) / 9
    "score": [8 / 9, 1 / 9],
    # met: "states a number" (2), not met: "shows the working" (1), met: the pitfall "is
    # rude" (-1): (2 - 1) / (2 + 1 + 1)
    "rubric": [0.25],
    # ratings 7 and 3: (rating - 1) / 9
    "implicit": [6 / 9, 2 / 9],
    # 7 beats 9 in both orders, 11 beats 9 in both, 7 and 11 each win once (the judge prefers
    # whichever is B): win rates 7: (1 + 0.5) / 2, 9: 0, 11: (0.5 + 1) / 2
    "pairwise": [0.75, 0.0, 0.75],
}
DETAILS: dict[str, list[dict[str, Any]]] = {
    "verdict": [
        {"outcome": "judged", "method": "verdict", "verdicts": [1.0]},
        {"outcome": "judged", "method": "verdict", "verdicts": [0.0]},
        {"outcome": "parse_error", "reason": "no yes/no verdict found in the judge's output"},
    ],
    "score": [{"verdicts": [pytest.approx(8 / 9)]}, {"verdicts": [pytest.approx(1 / 9)]}],
    "rubric": [{"raw": 0.25}],
    "implicit": [{"rating": 7.0}, {"rating": 3.0}],
    "pairwise": [
        {"win_rate": 0.75, "comparisons": 2, "unreadable_verdicts": 0},
        {"win_rate": 0.0, "comparisons": 2, "unreadable_verdicts": 0},
        {"win_rate": 0.75, "comparisons": 2, "unreadable_verdicts": 0},
    ],
}


def request_of(mode: str) -> Any:
    wanted = GRADERS["pairwise" if mode == "bradley_terry" else mode]
    [request] = [r for r in REQUESTS if r.grader == wanted]
    return request


def through_both_routes(server: Server, mode: str) -> list[list[dict[str, Any]]]:
    """The results of ``mode``'s request from /v1/judge and from /v1/rewards (one group)."""
    request = request_of(mode)
    grader = GRADERS[mode]
    judged = httpx.post(
        server.url + "/v1/judge",
        json={"prompt": request.prompt, "responses": list(request.responses), "grader": grader},
        timeout=300,
    )
    assert judged.status_code == 200, judged.text
    items = [
        {"id": str(k), "prompt": request.prompt, "response": r, "grader": grader, "group": "g"}
        for k, r in enumerate(request.responses)
    ]
    rewarded = httpx.post(server.url + "/v1/rewards", json={"items": items}, timeout=300)
    assert rewarded.status_code == 200, rewarded.text
    return [judged.json()["results"], rewarded.json()["rewards"]]


def check_mode(server: Server, mode: str) -> None:
    for results in through_both_routes(server, mode):
        assert [r["score"] for r in results] == pytest.approx(EXPECTED[mode]), results
        for result, details in zip(results, DETAILS.get(mode, []), strict=True):
            assert {k: result["details"][k] for k in details} == details, result


@pytest.mark.parametrize("mode", ["verdict", "score", "rubric", "implicit", "pairwise"])
def test_every_judge_mode_scores_what_the_judge_wrote(judge_server: Server, mode: str) -> None:
    check_mode(judge_server, mode)


def test_rubric_criteria_verdicts_are_reported(judge_server: Server) -> None:
    [result], _ = through_both_routes(judge_server, "rubric")
    assert [c["met"] for c in result["details"]["criteria"]] == [True, False, True]
    assert [c["weight"] for c in result["details"]["criteria"]] == [2, 1, -1]


def test_p_yes_is_the_judges_own_probability(judge_server: Server, taught_judge: Path) -> None:
    """P(Yes) / (P(Yes) + P(No)) for the token after ``[RESULT]``, as a plain forward pass of the
    saved weights computes it here."""
    prompts = {
        response: next(
            lesson.prompt
            for lesson in collect_lessons()
            if lesson.prompt.endswith("\n[RESULT]")
            and f"<response>\n{fence(response)}\n</response>" in lesson.prompt
        )
        for response in (RIGHT, WRONG)
    }
    expected = [p_yes(taught_judge, prompts[RIGHT]), p_yes(taught_judge, prompts[WRONG])]
    # taught until greedy decoding writes each verdict, so Yes outweighs No for the right answer
    # and No outweighs Yes for the wrong one; how far depends on where training stopped (and on
    # the CPU's float rounding), so the margin is not asserted, only that the route reports it
    assert expected[0] > 0.5 > expected[1]
    for results in through_both_routes(judge_server, "p_yes"):
        assert [r["score"] for r in results] == pytest.approx(expected, abs=1e-4)
        assert [r["details"]["method"] for r in results] == ["label_probs"] * 2
        assert [r["details"]["p_yes"] for r in results] == [r["score"] for r in results]


def test_bradley_terry_strengths(judge_server: Server) -> None:
    """The strengths of the pairwise outcomes (7 > 9, 11 > 9, 7 = 11) with the documented
    prior, one tie against an average player: each response's expected wins under them are
    proportional to its wins (prior included), their geometric mean is 1, and the score is the
    chance of beating an average player, p / (p + 1)."""
    outcomes = [(0, 1, 1.0), (0, 2, 0.5), (1, 2, 0.0)]  # (i, j, share of i's wins)
    for results in through_both_routes(judge_server, "bradley_terry"):
        p = [r["details"]["bt_strength"] for r in results]
        assert p[0] == pytest.approx(p[2]) and p[0] > 1.0 > p[1]
        assert p[0] * p[1] * p[2] == pytest.approx(1.0)
        ratios = []
        for i in range(3):
            wins, expected = 0.5, p[i] / (p[i] + 1.0)
            for a, b, share in outcomes:
                if i in (a, b):
                    j = b if a == i else a
                    wins += share if a == i else 1.0 - share
                    expected += p[i] / (p[i] + p[j])
            ratios.append(expected / wins)
        assert ratios == pytest.approx([ratios[0]] * 3, rel=1e-6)
        assert [r["score"] for r in results] == pytest.approx([x / (x + 1.0) for x in p])
        assert [r["details"]["win_rate"] for r in results] == EXPECTED["pairwise"]


def test_unreadable_verdict_is_a_null_score_left_out_of_group_stats(judge_server: Server) -> None:
    grader = GRADERS["verdict"]
    items = [item(k, r, {**grader}, "g") for k, r in enumerate((RIGHT, WRONG, UNSURE))]
    items.append(item(3, "\\boxed{4}", {"type": "math", "reference": "4"}, "g"))
    body = rewards(judge_server, items).json()
    assert [r["score"] for r in body["rewards"]] == [1.0, 0.0, None, 1.0]
    unread = body["rewards"][2]["details"]
    assert unread["outcome"] == "parse_error" and "no yes/no verdict" in unread["reason"]
    [group] = body["groups"]
    assert (group["n"], group["mean"], group["pass_rate"]) == (3, pytest.approx(2 / 3), 2 / 3)


def test_weighted_judge_and_math(judge_server: Server) -> None:
    weighted = {
        "type": "weighted",
        "graders": [
            {"weight": 1.0, "grader": {"type": "math", "reference": "4"}},
            {"weight": 1.0, "grader": GRADERS["verdict"]},
        ],
    }
    body = rewards(judge_server, [item(k, r, weighted) for k, r in enumerate(RESPONSES_3)])
    right, wrong, unsure = body.json()["rewards"]
    assert (right["score"], wrong["score"]) == (1.0, 0.0)
    assert [p["score"] for p in right["details"]["parts"]] == [1.0, 1.0]
    # a part without a score (the unreadable verdict) leaves the whole without one
    assert unsure["score"] is None and unsure["details"]["outcome"] == "incomplete"
    assert unsure["details"]["parts"][1]["outcome"] == "parse_error"


def test_pairwise_needs_a_group(judge_server: Server) -> None:
    pair = GRADERS["pairwise"]
    body = rewards(
        judge_server,
        [{**item(k, r, pair, "g"), "prompt": PRIME_QUESTION} for k, r in enumerate(PRIMES)]
        + [item(9, "6", pair), item(10, "7", pair, "alone")],
    ).json()
    *group, lone, alone = body["rewards"]
    assert [r["score"] for r in group] == EXPECTED["pairwise"]
    assert lone["score"] is None and "set group" in lone["details"]["reason"]
    assert lone["valid"] is False
    # a group of one (a per-sample route) has nothing to compare with: not a score
    assert alone["score"] is None and alone["valid"] is False
    assert alone["details"]["outcome"] == "group_too_small"
    assert all(r["valid"] for r in group)


def test_judge_endpoint(judged: Server) -> None:
    r = httpx.post(
        judged.url + "/v1/judge",
        timeout=120,
        json={
            "prompt": "What is 2+2?",
            "responses": ["4", "five", "Thought process:"],
            "grader": GENRM,
        },
    )
    assert r.status_code == 200
    results = r.json()["results"]
    assert all(0 < x["score"] < 1 for x in results[:2]) and results[2]["score"] == 0.0


def test_openai_backend_serves_the_same_judge(
    llm_server: str, judged: Server, judging: Callable[..., Server]
) -> None:
    # the tiny random model spreads its mass over all 384 byte tokens: ask for all
    remote = judging("remote-judge", "openai", "tiny-llama", llm_server, top_logprobs=400)
    items = [item(0, "The answer is 4.", GENRM)]
    local = rewards(judged, items).json()["rewards"][0]["score"]
    over_http = rewards(remote, items).json()["rewards"][0]["score"]
    assert over_http is not None and 0 < over_http < 1, rewards(remote, items).json()
    # the same seeded model behind both: the judge's own probabilities agree
    assert over_http == pytest.approx(local, abs=1e-3)


@pytest.fixture(scope="module")
def taught_llm_server(taught_judge: Path) -> Iterator[str]:
    """The taught judge behind referee's OpenAI-compatible test server."""
    with start_tiny_llm(str(taught_judge), torch_threads=1) as llm:
        yield llm.url


def test_openai_backend_gives_the_same_scores_in_every_mode(
    taught_llm_server: str, judge_server: Server, judging: Callable[..., Server]
) -> None:
    # the whole vocabulary: No has its share too
    remote = judging("remote-taught", "openai", "taught", taught_llm_server, top_logprobs=5000)
    for mode in ("verdict", "score", "rubric", "implicit", "pairwise"):
        check_mode(remote, mode)
    here, there = (
        [r["score"] for r in through_both_routes(server, "p_yes")[0]]
        for server in (judge_server, remote)
    )
    assert there == pytest.approx(here, abs=1e-4)
