"""The Embedder protocol: the plug-in point for text encoders."""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import numpy as np

__all__ = ["Embedder"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension.

    ``name`` identifies the model (it is stored in the corpus registry so that a corpus is never searched
    with vectors from another model).
    """

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed a batch of passages; returns an array of shape ``(len(texts), dimension)``."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one search query; returns shape ``(dimension,)``."""
        ...

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        """Async twin of :meth:`embed`."""
        ...

    async def aembed_query(self, text: str) -> np.ndarray:
        """Async twin of :meth:`embed_query`."""
        ...
