"""Vectors checked before they reach SQL: numbers only, finite, of the corpus's dimension, not all zeros.

pgvector refuses NaN and infinity with a driver error, and a zero vector has no cosine distance (it gives NaN
scores, which are not valid JSON). Every public path that accepts vectors (``Store.search``, ``Store.add_units``,
``Store.write_source``, the LangChain VectorStore) goes through :func:`check_vector` first, so a bad vector is a
typed error with a sentence, and nothing is written.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, get_args

import numpy as np

from ..errors import DimensionMismatchError, InvalidInputError

__all__ = [
    "BINARY_MIN_ROWS",
    "BINARY_RERANK_MAX",
    "BINARY_RERANK_MIN",
    "BINARY_RERANK_WINDOW",
    "HALF_INDEX_MIN_DIMENSION",
    "HNSW_MAX_HALFVEC",
    "HNSW_MAX_VECTOR",
    "VECTOR_INDEXES",
    "VECTOR_INDEX_CHOICES",
    "VectorIndex",
    "check_matrix",
    "check_vector",
    "default_vector_index",
    "half_indexed",
    "hnsw_indexed",
    "legacy_vector_index",
    "rerank_window",
    "vector_index_of",
]

_FLOAT32_MAX = float(np.finfo(np.float32).max)
_FLOAT16_MAX = float(np.finfo(np.float16).max)

#: pgvector's HNSW index takes ``vector`` columns of at most this many dimensions ...
HNSW_MAX_VECTOR = 2000
#: ... and ``halfvec`` of at most this many: a corpus between the two has its index built on its vectors cast to half
#: precision (migration 0012, ``prepare_vector_column``); a wider one has no HNSW index and is always scanned exactly.
HNSW_MAX_HALFVEC = 4000


#: What the HNSW index of a corpus's vectors is built on (the registry's ``vector_index``, migration 0018): the
#: full-precision vectors, their ``halfvec`` cast (the column keeps full precision), their binary quantisation
#: (``binary_quantize(v)::bit(n)``; a search ranks a window of its candidates again exactly), or no index at all.
VectorIndex = Literal["vector", "halfvec", "binary", "none"]
VECTOR_INDEXES: tuple[str, ...] = get_args(VectorIndex)
#: What a corpus (``CorpusSpec.vector_index``) or the settings (``UNIVERSALRAG_VECTOR_INDEX``) may ask for: a kind, or
#: ``auto`` (:func:`default_vector_index`, then ``binary`` once the corpus outgrows :data:`BINARY_MIN_ROWS`).
VECTOR_INDEX_CHOICES: tuple[str, ...] = ("auto", "vector", "halfvec", "binary")

#: New corpora of at least this many dimensions get a ``halfvec`` index by default. ``benchmarks/vector_storage.py``,
#: 100,000 text-like vectors of 384 dimensions, 200 queries, top 10, beam 100: the index on the halfvec cast took
#: 111.6 MB against 195.3 for full precision, with the same recall@10 (0.9885) and a p50 of 52 ms against 78 (2 busy
#: cores, load average 25); ``benchmarks/paper.py --quick`` did not move (docs/database.md, "How vectors are
#: stored"). Narrower vectors are small already: their index stays full precision.
HALF_INDEX_MIN_DIMENSION = 384
#: A corpus left to ``auto`` gets a binary-quantised index once its units or parts table holds this many vectors. At
#: 100,000 (the run above), the binary index took 33.2 MB, and ranking 200 of its candidates again kept the recall@10
#: of full precision (0.9895) at a p50 of 39 ms against 52 for the halfvec index; at 3,000 vectors ranking those 200
#: again cost more than the halfvec index's whole search (1.15 ms against 0.71).
BINARY_MIN_ROWS = 100_000
#: A search through a binary index ranks again, exactly, this many times the rows it wants (a search asks for ``k``
#: and a few spare rows) ...
BINARY_RERANK_WINDOW = 15
#: ... and at least this many: for the top 10 of those 100,000 vectors, 40 candidates ranked again held 0.89 of the
#: exact top 10, 100 held 0.985, 200 0.99 (as many as the full-precision index), 400 all ...
BINARY_RERANK_MIN = 200
#: ... and no more than this many beyond what it wants (pgvector's widest ``hnsw.ef_search``): a wide window of parts
#: (hundreds of chunks or rows, grouped by unit) is itself the search's candidates.
BINARY_RERANK_MAX = 1000
#: A larger table needs a wider window: more vectors share each Hamming distance with the true nearest ones. Past
#: :data:`BINARY_MIN_ROWS` the least window grows as the cube root of the table's size (``BINARY_RERANK_MIN`` times
#: ``(rows / BINARY_MIN_ROWS) ** (1/3)``), rounded up to a multiple of :data:`BINARY_RERANK_STEP` (a table that grows
#: a little keeps its statements). Chosen on one corpus of 833,333 text-like vectors (``benchmarks/scaling.py`` at 5M
#: units): the exact Hamming top 200 held 0.885 of the exact top 10, the top 400 0.99 (the rule gives 500); checked
#: on the 5,000,000-vector table of the same run: 200 held 0.85, 400 0.975, 600 1.0 (the rule gives 800).
BINARY_RERANK_GROWTH = 1 / 3
#: The step the grown window is rounded up to.
BINARY_RERANK_STEP = 100


def default_vector_index(dimension: int) -> VectorIndex:
    """The index a new corpus of ``dimension`` gets (the SQL function ``default_vector_index`` is the same rule)."""
    if dimension < HALF_INDEX_MIN_DIMENSION:
        return "vector"
    return "halfvec" if dimension <= HNSW_MAX_HALFVEC else "none"


def legacy_vector_index(dimension: int) -> VectorIndex:
    """The index a corpus made before migration 0018 has (``vector`` to 2,000 dimensions, ``halfvec`` to 4,000)."""
    if dimension <= HNSW_MAX_VECTOR:
        return "vector"
    return "halfvec" if dimension <= HNSW_MAX_HALFVEC else "none"


def vector_index_of(kind: str | None, dimension: int) -> VectorIndex:
    """The index of a corpus whose registry says ``kind`` (``None``: a registry row written without one)."""
    return kind if kind in VECTOR_INDEXES else legacy_vector_index(dimension)  # type: ignore[return-value]


def rerank_window(rows: int, held: int = 0) -> int:
    """How many candidates of a binary index a search for ``rows`` rows ranks again exactly, in a table of ``held``
    vectors (its row estimate; 0: not known, the least window of a table of :data:`BINARY_MIN_ROWS`)."""
    least = BINARY_RERANK_MIN
    if held > BINARY_MIN_ROWS:
        grown = BINARY_RERANK_MIN * (held / BINARY_MIN_ROWS) ** BINARY_RERANK_GROWTH
        least = math.ceil(grown / BINARY_RERANK_STEP) * BINARY_RERANK_STEP
    return min(max(BINARY_RERANK_WINDOW * rows, least), max(rows, BINARY_RERANK_MAX))


def hnsw_indexed(dimension: int) -> bool:
    """Whether a corpus of ``dimension`` has an HNSW index (at most :data:`HNSW_MAX_HALFVEC` dimensions)."""
    return dimension <= HNSW_MAX_HALFVEC


def half_indexed(dimension: int) -> bool:
    """Whether the HNSW index of a corpus of ``dimension`` is built on its vectors cast to ``halfvec``."""
    return HNSW_MAX_VECTOR < dimension <= HNSW_MAX_HALFVEC


def _largest(dimension: int, half: bool | None = None) -> tuple[float, str]:
    """The largest magnitude a vector of ``dimension`` may hold, and how a message names it: a half-precision index
    (``half``; ``None``: as :func:`half_indexed` says) takes values up to 65504, a ``vector`` column 32-bit floats."""
    if half_indexed(dimension) if half is None else half:
        return _FLOAT16_MAX, "the 16-bit floats its half-precision index holds (±65504)"
    return _FLOAT32_MAX, "the 32-bit floats pgvector stores (±3.4e38)"


def check_vector(
    corpus: str, vector: Sequence[float] | Any, dimension: int, *, what: str = "query vector", half: bool | None = None
) -> np.ndarray:
    """Raise :class:`InvalidInputError` unless ``vector`` is a flat sequence of finite numbers, not all zero, each
    within the range of the 32-bit floats pgvector stores, and :class:`~universalrag.errors.DimensionMismatchError`
    unless it has ``dimension`` values. Returns it as a float32 array (what pgvector's binary format sends): the
    list is converted once, for the checks and the query. ``half``: the corpus's index holds half-precision vectors
    (``None``: as :func:`half_indexed` says)."""
    try:
        array = np.asarray(vector)
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"The {what} for corpus {corpus!r} is not a list of numbers ({e}).") from None
    if array.dtype.kind not in "fiu" or array.ndim != 1:
        raise InvalidInputError(
            f"The {what} for corpus {corpus!r} must be a flat list of numbers, got "
            f"{'a nested list' if array.ndim > 1 else array.dtype.name + ' values'}."
        )
    if len(array) != dimension:
        raise DimensionMismatchError(corpus, dimension, len(array))
    wide = array if array.dtype == np.float32 else array.astype(np.float64, copy=False)  # no copy of float32 input
    peak = float(np.abs(wide).max())  # one pass: NaN, infinity, all zeros and too large values all show in it
    if not 0.0 < peak <= _largest(dimension, half)[0]:
        _check_values(corpus, wide, what)
        _too_large(corpus, wide, dimension, what, half)
    return array.astype(np.float32, copy=False)


def check_matrix(
    corpus: str, vectors: Any, dimension: int, *, what: str = "part vectors", half: bool | None = None
) -> None:
    """:func:`check_vector` for every row of a 2-D array at once."""
    array = np.asarray(vectors)
    if array.ndim != 2 or array.dtype.kind not in "fiu":
        raise InvalidInputError(f"The {what} for corpus {corpus!r} must be a 2-D array of numbers.")
    if array.shape[1] != dimension:
        raise DimensionMismatchError(corpus, dimension, array.shape[1])
    peaks = np.abs(array).max(axis=1)  # one pass, as in check_vector: NaN, infinity and all zeros show in it
    for row in np.flatnonzero(~(np.isfinite(peaks) & (peaks > 0)))[:1]:  # the first bad row is reported
        _check_values(corpus, array[row].astype(np.float64, copy=False), what)
    for row in np.flatnonzero(peaks > _largest(dimension, half)[0])[:1]:
        _too_large(corpus, array[row].astype(np.float64, copy=False), dimension, what, half)


def _too_large(corpus: str, array: np.ndarray, dimension: int, what: str, half: bool | None = None) -> None:
    position = int(np.argmax(np.abs(array)))
    raise InvalidInputError(
        f"The {what} for corpus {corpus!r} holds {array[position]} at position {position}, "
        f"beyond {_largest(dimension, half)[1]}. Check the embedder's output."
    )


def _check_values(corpus: str, array: np.ndarray, what: str) -> None:
    finite = np.isfinite(array)
    if not finite.all():
        position = int(np.argmin(finite))
        raise InvalidInputError(
            f"The {what} for corpus {corpus!r} holds {array[position]} at position {position}; "
            "vectors must be finite numbers. Check the embedder's output."
        )
    if not array.any():
        raise InvalidInputError(
            f"The {what} for corpus {corpus!r} is all zeros, which has no cosine similarity to "
            "anything; check the embedder (an empty text or a failed request can give one)."
        )
