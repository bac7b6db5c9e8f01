"""Vector arithmetic shared by the encoders and ingestion: the one home of the normalised mean."""

from __future__ import annotations

import numpy as np

from ..errors import EmbeddingError

__all__ = ["normalised_mean"]


def normalised_mean(vectors: np.ndarray) -> np.ndarray:
    """The L2-normalised mean of row vectors ``(n, d)`` as float32 ``(d,)``: a unit's vector from its parts'
    (chunks of a document, frames of a clip). A single vector ``(d,)`` is normalised and returned.

    Raises :class:`EmbeddingError` for no vectors, a wrong shape, NaN or infinity, or vectors that cancel out
    (their mean has no direction).
    """
    arr = np.asarray(vectors, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise EmbeddingError(
            f"normalised_mean() takes a non-empty (n, d) array of vectors, got shape {np.shape(vectors)}."
        )
    if not np.isfinite(arr).all():
        raise EmbeddingError("normalised_mean() got vectors containing NaN or infinity; check the encoder.")
    mean = arr.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    if norm < 1e-12:
        raise EmbeddingError("normalised_mean(): the vectors cancel out (their mean is zero), so it has no direction.")
    return (mean / norm).astype(np.float32)
