"""Text similarity with the metrics of OpenAI's ``text_similarity`` grader, from the libraries
that define them (imported on first use; they come with the ``server`` extra).

    >>> from referee.verifiers.text_similarity import similarity
    >>> round(similarity("the cat sat on the mat", "the cat sat on a mat", "rouge_1").score, 3)
    0.833

- ``fuzzy_match``: rapidfuzz ``fuzz.ratio`` / 100 (normalised Indel similarity of the two texts).
- ``bleu``: sacreBLEU's ``sentence_bleu`` (13a tokenizer, exponential smoothing) / 100.
- ``gleu``: nltk's ``sentence_gleu`` (Google-BLEU) on whitespace tokens.
- ``rouge_1`` … ``rouge_5``, ``rouge_l``: rouge-score's F-measure (``rouge1`` … ``rougeL``, its
  default tokenizer, no stemming).
- ``meteor`` needs WordNet (nltk data) and ``cosine`` an embedding model; no PyPI package ships
  either and this service downloads nothing, so both are refused (:data:`UNAVAILABLE`).

The score is the similarity, in [0, 1], as OpenAI's grader gives it; ``pass_threshold`` marks
the item passed at or above it (``details.passed``), and ``binary=True`` makes that pass the reward
(1.0 or 0.0), the raw similarity kept in the details.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["METRICS", "UNAVAILABLE", "SimilarityResult", "metric_score", "similarity"]

METRICS: Final = (
    "fuzzy_match",
    "bleu",
    "gleu",
    "rouge_1",
    "rouge_2",
    "rouge_3",
    "rouge_4",
    "rouge_5",
    "rouge_l",
)
UNAVAILABLE: Final = {
    "meteor": "meteor needs nltk's WordNet data, which no PyPI package ships and this server "
    "does not download; use rouge_l, bleu or gleu",
    "cosine": "cosine needs a text-embedding model, which no PyPI package ships and this server "
    "does not download; use rouge_l, bleu or fuzzy_match",
}


@dataclass(frozen=True, slots=True)
class SimilarityResult:
    score: float
    similarity: float
    metric: str
    passed: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "outcome": "similar" if self.passed is None else ("pass" if self.passed else "fail"),
            "metric": self.metric,
            "similarity": self.similarity,
        }
        if self.passed is not None:
            data["passed"] = self.passed
        return data


@functools.cache
def _rouge(kind: str) -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer([kind], use_stemmer=False)


def metric_score(response: str, reference: str, metric: str) -> float:
    """The raw similarity of ``response`` to ``reference`` under ``metric``, in [0, 1]."""
    if metric in UNAVAILABLE:
        raise ValueError(UNAVAILABLE[metric])
    if metric == "fuzzy_match":
        from rapidfuzz import fuzz

        return float(fuzz.ratio(response, reference)) / 100.0
    if metric == "bleu":
        import sacrebleu

        return float(sacrebleu.sentence_bleu(response, [reference]).score) / 100.0
    if metric == "gleu":
        from nltk.translate.gleu_score import sentence_gleu

        return float(sentence_gleu([reference.split()], response.split()))
    if metric.startswith("rouge_"):
        kind = "rougeL" if metric == "rouge_l" else "rouge" + metric.removeprefix("rouge_")
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; use one of {list(METRICS)}")
        return float(_rouge(kind).score(reference, response)[kind].fmeasure)
    raise ValueError(f"unknown metric {metric!r}; use one of {list(METRICS)}")


def similarity(
    response: str,
    reference: str,
    metric: str,
    pass_threshold: float | None = None,
    binary: bool = False,
) -> SimilarityResult:
    value = min(1.0, max(0.0, metric_score(response, reference, metric)))
    if pass_threshold is None:
        if binary:
            raise ValueError("binary needs a pass_threshold")
        return SimilarityResult(score=value, similarity=value, metric=metric)
    passed = value >= pass_threshold
    score = (1.0 if passed else 0.0) if binary else value
    return SimilarityResult(score=score, similarity=value, metric=metric, passed=passed)
