"""Vectors checked before they reach SQL: numbers only, finite, of the corpus's dimension, not all zeros.

pgvector refuses NaN and infinity with a driver error, and a zero vector has no cosine distance (it gives NaN
scores, which are not valid JSON). Every public path that accepts vectors (``Store.search``, ``Store.add_units``,
``Store.write_source``, the LangChain VectorStore) goes through :func:`check_vector` first, so a bad vector is a
typed error with a sentence, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import DimensionMismatchError, InvalidInputError

__all__ = ["HNSW_MAX_HALFVEC", "HNSW_MAX_VECTOR", "check_matrix", "check_vector", "half_indexed", "hnsw_indexed"]

_FLOAT32_MAX = float(np.finfo(np.float32).max)
_FLOAT16_MAX = float(np.finfo(np.float16).max)

#: pgvector's HNSW index takes ``vector`` columns of at most this many dimensions ...
HNSW_MAX_VECTOR = 2000
#: ... and ``halfvec`` of at most this many: a corpus between the two has its index built on its vectors cast to half
#: precision (migration 0012, ``prepare_vector_column``); a wider one has no HNSW index and is always scanned exactly.
HNSW_MAX_HALFVEC = 4000


def hnsw_indexed(dimension: int) -> bool:
    """Whether a corpus of ``dimension`` has an HNSW index (at most :data:`HNSW_MAX_HALFVEC` dimensions)."""
    return dimension <= HNSW_MAX_HALFVEC


def half_indexed(dimension: int) -> bool:
    """Whether the HNSW index of a corpus of ``dimension`` is built on its vectors cast to ``halfvec``."""
    return HNSW_MAX_VECTOR < dimension <= HNSW_MAX_HALFVEC


def _largest(dimension: int) -> tuple[float, str]:
    """The largest magnitude a vector of ``dimension`` may hold, and how a message names it: a half-precision index
    takes values up to 65504, a ``vector`` column 32-bit floats."""
    if half_indexed(dimension):
        return _FLOAT16_MAX, "the 16-bit floats its half-precision index holds (±65504)"
    return _FLOAT32_MAX, "the 32-bit floats pgvector stores (±3.4e38)"


def check_vector(
    corpus: str, vector: Sequence[float] | Any, dimension: int, *, what: str = "query vector"
) -> np.ndarray:
    """Raise :class:`InvalidInputError` unless ``vector`` is a flat sequence of finite numbers, not all zero, each
    within the range of the 32-bit floats pgvector stores, and :class:`~universalrag.errors.DimensionMismatchError`
    unless it has ``dimension`` values. Returns it as a float32 array (what pgvector's binary format sends): the
    list is converted once, for the checks and the query."""
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
    if not 0.0 < peak <= _largest(dimension)[0]:
        _check_values(corpus, wide, what)
        _too_large(corpus, wide, dimension, what)
    return array.astype(np.float32, copy=False)


def check_matrix(corpus: str, vectors: Any, dimension: int, *, what: str = "part vectors") -> None:
    """:func:`check_vector` for every row of a 2-D array at once."""
    array = np.asarray(vectors)
    if array.ndim != 2 or array.dtype.kind not in "fiu":
        raise InvalidInputError(f"The {what} for corpus {corpus!r} must be a 2-D array of numbers.")
    if array.shape[1] != dimension:
        raise DimensionMismatchError(corpus, dimension, array.shape[1])
    peaks = np.abs(array).max(axis=1)  # one pass, as in check_vector: NaN, infinity and all zeros show in it
    for row in np.flatnonzero(~(np.isfinite(peaks) & (peaks > 0)))[:1]:  # the first bad row is reported
        _check_values(corpus, array[row].astype(np.float64, copy=False), what)
    for row in np.flatnonzero(peaks > _largest(dimension)[0])[:1]:
        _too_large(corpus, array[row].astype(np.float64, copy=False), dimension, what)


def _too_large(corpus: str, array: np.ndarray, dimension: int, what: str) -> None:
    position = int(np.argmax(np.abs(array)))
    raise InvalidInputError(
        f"The {what} for corpus {corpus!r} holds {array[position]} at position {position}, "
        f"beyond {_largest(dimension)[1]}. Check the embedder's output."
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
