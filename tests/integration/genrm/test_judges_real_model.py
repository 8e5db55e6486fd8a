"""The judges on a real (tiny, random) transformers model: label probabilities give a real score;
free-text verdicts from an untrained model are unreadable and reported per item, not raised."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from referee.genrm.judges import Criterion, JudgeItem, judge_pairwise, judge_pointwise, judge_rubric
from referee.genrm.openai_server import tiny_transformers_backend


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


def test_untrained_free_text_verdicts_are_per_item_parse_errors(tiny: Any) -> None:
    items = [JudgeItem("q", "an answer"), JudgeItem("q", ":")]
    text, guarded = asyncio.run(judge_pointwise(tiny, items, max_tokens=8))
    assert guarded.outcome == "guard" and guarded.score == 0.0
    assert text.outcome in ("parse_error", "judged")
    rubric = asyncio.run(judge_rubric(tiny, items[:1], [Criterion("is polite")], max_tokens=8))
    assert rubric[0].outcome in ("parse_error", "judged")
    pairs = asyncio.run(judge_pairwise(tiny, "q", ["a", "b"], max_tokens=8))
    assert len(pairs) == 2
