"""The judges on real (tiny) transformers models, in-process: label probabilities of a random
model give a real score; a judge taught its verdicts (tests/trained_judge.py) gives the scores
worked out by hand from them in every mode, an unreadable verdict a per-item parse error."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from trained_judge import CRITERIA, PRIME_QUESTION, PRIMES, QUESTION, RIGHT, UNSURE, WRONG

from referee.genrm.judges import Criterion, JudgeItem, judge_pairwise, judge_pointwise, judge_rubric
from referee.genrm.openai_server import tiny_transformers_backend
from referee.genrm.transformers_backend import TransformersBackend


@pytest.fixture(scope="module")
def tiny() -> Any:
    return tiny_transformers_backend(seed=0)


def test_label_probabilities_score(tiny: Any) -> None:
    items = [JudgeItem("What is 2+2?", "4"), JudgeItem("What is 2+2?", "5", reference="4")]
    results = asyncio.run(judge_pointwise(tiny, items, label_probs=True))
    for r in results:
        assert r.outcome == "judged" and r.score is not None and 0.0 < r.score < 1.0
        assert r.details["method"] == "label_probs"
    # different prompts, different probabilities: the score comes from the model
    assert results[0].score != results[1].score


@pytest.fixture(scope="module")
def taught(taught_judge: Path) -> Any:
    return TransformersBackend.from_pretrained(str(taught_judge))


def test_taught_verdicts_give_their_scores(taught: Any) -> None:
    items = [JudgeItem(QUESTION, r, reference="4") for r in (RIGHT, WRONG, UNSURE)]
    guarded = JudgeItem(QUESTION, ":", reference="4")  # a master key: never reaches the judge
    results = asyncio.run(judge_pointwise(taught, [*items, guarded]))
    assert [(r.score, r.outcome) for r in results] == [
        (1.0, "judged"),
        (0.0, "judged"),
        (None, "parse_error"),
        (0.0, "guard"),
    ]
    assert results[2].reason == "no yes/no verdict found in the judge's output"
    scored = asyncio.run(judge_pointwise(taught, items[:2], mode="score"))
    assert [r.score for r in scored] == pytest.approx([8 / 9, 1 / 9])
    criteria = [Criterion(c["text"], c["weight"]) for c in CRITERIA]
    query = [JudgeItem(QUESTION, RIGHT)]
    [rubric] = asyncio.run(judge_rubric(taught, query, criteria))
    assert (rubric.score, rubric.details["raw"]) == (0.25, 0.25)  # (2 - 1) / 4
    implicit = asyncio.run(
        judge_rubric(
            taught, [JudgeItem(QUESTION, r) for r in (RIGHT, WRONG)], criteria, mode="implicit"
        )
    )
    assert [r.score for r in implicit] == pytest.approx([6 / 9, 2 / 9])


def test_taught_pairwise_in_both_orders(taught: Any) -> None:
    win = asyncio.run(judge_pairwise(taught, PRIME_QUESTION, list(PRIMES)))
    assert [r.score for r in win] == [0.75, 0.0, 0.75]
    bt = asyncio.run(judge_pairwise(taught, PRIME_QUESTION, list(PRIMES), score="bradley_terry"))
    strengths = [r.details["bt_strength"] for r in bt]
    assert strengths[0] == pytest.approx(strengths[2]) and strengths[0] > 1.0 > strengths[1]
    assert [r.score for r in bt] == pytest.approx([p / (p + 1) for p in strengths])
