"""Bridges between LangChain ``Embeddings`` and the core's :class:`~universalrag.embed.Embedder` protocol."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._deps import require_langchain

require_langchain()

from langchain_core.embeddings import Embeddings

from universalrag.embed import Embedder

__all__ = ["LangChainEmbedder", "UniversalRAGEmbeddings", "as_embedder"]


def _normalise(vectors: Sequence[Sequence[float]] | Sequence[float]) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim == 1:
        array = array.reshape(1, -1)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return array / np.where(norms == 0, 1.0, norms)


class LangChainEmbedder:
    """Any LangChain ``Embeddings`` model as a core :class:`~universalrag.embed.Embedder`.

    ``name`` (stored in the corpus registry) defaults to ``langchain:<class>[:<model>]``; ``dimension`` is
    measured by embedding one probe text on first use unless given.
    """

    def __init__(self, embeddings: Embeddings, *, name: str | None = None, dimension: int | None = None) -> None:
        self.embeddings = embeddings
        model = next((v for a in ("model", "model_name") if isinstance(v := getattr(embeddings, a, None), str)), "")
        self._name = name or ":".join(p for p in ("langchain", type(embeddings).__name__, model) if p)
        self._dimension = dimension

    def __repr__(self) -> str:
        return f"LangChainEmbedder({self._name!r})"

    @property
    def name(self) -> str:
        """The model's name, as stored in the corpus registry."""
        return self._name

    @property
    def dimension(self) -> int:
        """The length of the vectors (measured once when not given)."""
        if self._dimension is None:
            self._dimension = len(self.embeddings.embed_query("dimension probe"))
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages; shape ``(len(texts), dimension)``, L2-normalised float32."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return _normalise(self.embeddings.embed_documents(list(texts)))

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query; shape ``(dimension,)``."""
        return _normalise(self.embeddings.embed_query(text))[0]

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        """Async twin of :meth:`embed`."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return _normalise(await self.embeddings.aembed_documents(list(texts)))

    async def aembed_query(self, text: str) -> np.ndarray:
        """Async twin of :meth:`embed_query`."""
        return _normalise(await self.embeddings.aembed_query(text))[0]


class UniversalRAGEmbeddings(Embeddings):
    """A core :class:`~universalrag.embed.Embedder` (e.g. the bundled MiniLM) as LangChain ``Embeddings``."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed passages."""
        return self.embedder.embed(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed one query."""
        return self.embedder.embed_query(text).tolist()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents`."""
        return (await self.embedder.aembed(texts)).tolist()

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query`."""
        return (await self.embedder.aembed_query(text)).tolist()


def as_embedder(model: Embeddings | Embedder) -> Embedder:
    """``model`` as a core embedder: a LangChain ``Embeddings`` is wrapped, a core embedder returned as is."""
    if isinstance(model, UniversalRAGEmbeddings):
        return model.embedder
    if isinstance(model, Embeddings):
        return LangChainEmbedder(model)
    return model
