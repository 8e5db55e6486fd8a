"""Judge logic: rubric arithmetic, both-orders pairwise, aggregation, per-item failures.

A scripted backend stands in for the judge model here: these are the corner cases (a judge that
always prefers position A, one verdict unreadable) that a real model cannot be made to produce on
demand. The real model path is in tests/integration/genrm."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from referee.genrm.backend import Completion, Prompt, SamplingParams
from referee.genrm.judges import (
    Criterion,
    JudgeItem,
    bradley_terry,
    judge_pairwise,
    judge_pointwise,
    judge_rubric,
    rubric_score,
)


class Scripted:
    name = "scripted"
    model_name = "scripted"

    def __init__(self, reply: Callable[[str], str]) -> None:
        self.reply = reply
        self.prompts: list[str] = []

    async def generate(
        self, prompts: Sequence[Prompt], params: SamplingParams
    ) -> list[list[Completion]]:
        out = []
        for p in prompts:
            assert isinstance(p, str)
            self.prompts.append(p)
            out.append([Completion(text=self.reply(p)) for _ in range(params.n)])
        return out

    async def close(self) -> None:
        return None


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_rubric_explicit_arithmetic_with_a_pitfall() -> None:
    criteria = [
        Criterion("cites the theorem", 2),
        Criterion("gives the final value", 1),
        Criterion("contains an arithmetic error", -1),
    ]

    def reply(prompt: str) -> str:
        crit = re.search(r"<criterion>\n(.*)\n</criterion>", prompt).group(1)  # type: ignore[union-attr]
        return (
            "[RESULT] "
            + {
                "cites the theorem": "Yes",
                "gives the final value": "No",
                "contains an arithmetic error": "Yes",
            }[crit]
        )

    backend = Scripted(reply)
    [result] = run(judge_rubric(backend, [JudgeItem("q", "an answer")], criteria))
    assert result.score == pytest.approx((2 - 1) / 4)
    assert len(backend.prompts) == 3
    assert [c["met"] for c in result.details["criteria"]] == [True, False, True]


def test_rubric_score_clips_and_reports_unreadable() -> None:
    crit = [Criterion("a", 1), Criterion("pitfall", -3)]
    assert rubric_score(crit, [False, True]).score == 0.0
    bad = rubric_score(crit, [True, None])
    assert bad.score is None and bad.outcome == "parse_error"


def test_rubric_implicit() -> None:
    backend = Scripted(lambda p: "Good. [RESULT] 7")
    [r] = run(judge_rubric(backend, [JudgeItem("q", "a")], [Criterion("x")], mode="implicit"))
    assert r.score == pytest.approx(6 / 9)
    assert "1. x (weight 1)" in backend.prompts[0]


def test_pointwise_parse_failure_is_per_item_and_guards_skip_the_judge() -> None:
    backend = Scripted(lambda p: "[RESULT] Yes" if "seven" in p else "hmm")
    items = [
        JudgeItem("q", "it is seven"),
        JudgeItem("q", "it is eight"),
        JudgeItem("q", "Thought process:"),
    ]
    good, unreadable, hacked = run(judge_pointwise(backend, items))
    assert good.score == 1.0 and good.outcome == "judged"
    assert unreadable.score is None and unreadable.outcome == "parse_error"
    assert hacked.score == 0.0 and hacked.outcome == "guard"
    assert len(backend.prompts) == 2  # the hack never reached the judge


def test_pointwise_samples_mean_and_majority() -> None:
    verdicts = iter(["[RESULT] Yes", "[RESULT] No", "[RESULT] Yes"] * 2)
    backend = Scripted(lambda p: next(verdicts))
    [mean] = run(judge_pointwise(backend, [JudgeItem("q", "a")], samples=3))
    [major] = run(judge_pointwise(backend, [JudgeItem("q", "a")], samples=3, aggregate="majority"))
    assert mean.score == pytest.approx(2 / 3) and major.score == 1.0


def test_pointwise_score_mode() -> None:
    backend = Scripted(lambda p: "[RESULT] 10")
    [r] = run(judge_pointwise(backend, [JudgeItem("q", "a", reference="ref")], mode="score"))
    assert r.score == 1.0 and "<reference>" in backend.prompts[0]


def test_pairwise_cancels_position_bias() -> None:
    # a judge that always answers "A": in both orders each response wins once -> all tie at 0.5
    backend = Scripted(lambda p: "[RESULT] A")
    results = run(judge_pairwise(backend, "q", ["one", "two", "three"]))
    assert [r.score for r in results] == [0.5, 0.5, 0.5]
    assert len(backend.prompts) == 6  # 3 pairs x 2 orders


def test_pairwise_finds_the_better_response() -> None:
    def reply(prompt: str) -> str:
        a = re.search(r"<response A>\n(.*)\n</response A>", prompt).group(1)  # type: ignore[union-attr]
        b = re.search(r"<response B>\n(.*)\n</response B>", prompt).group(1)  # type: ignore[union-attr]
        rank = {"best": 3, "middle": 2, "worst": 1}
        if rank[a] == rank[b]:
            return "[RESULT] tie"
        return "[RESULT] A" if rank[a] > rank[b] else "[RESULT] B"

    wr = run(judge_pairwise(Scripted(reply), "q", ["middle", "best", "worst"]))
    assert [r.score for r in wr] == [0.5, 1.0, 0.0]
    bt = run(
        judge_pairwise(Scripted(reply), "q", ["middle", "best", "worst"], score="bradley_terry")
    )
    assert bt[1].score > bt[0].score > bt[2].score


def test_bradley_terry() -> None:
    s = bradley_terry(3, [(0, 1, 1.0), (0, 2, 1.0), (1, 2, 1.0)] * 3)
    assert s[0] > s[1] > s[2]
    even = bradley_terry(2, [(0, 1, 0.5)])
    assert even[0] == pytest.approx(even[1])


def test_template_override(tmp_path: Any) -> None:
    (tmp_path / "pointwise_binary.txt").write_text("CUSTOM {prompt} {response}{reference_block}")
    backend = Scripted(lambda p: "[RESULT] Yes")
    run(judge_pointwise(backend, [JudgeItem("q", "a")], template_dir=str(tmp_path)))
    assert backend.prompts[0].startswith("CUSTOM q a")
