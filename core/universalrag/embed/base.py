"""The Embedder protocol: the plug-in point for text encoders."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ..errors import ConfigError, EmbeddingError
from ..types import CorpusSpec

__all__ = ["CHARS_PER_TOKEN", "Embedder", "check_embedder", "check_texts", "clip_to_tokens"]

#: How many characters of a text an encoder that reads ``n`` tokens is given: ``n * CHARS_PER_TOKEN``. A token
#: of these vocabularies covers a few characters (four on average in English prose), so 64 leaves room for long
#: words and runs of spaces while sparing the tokenizer the rest of a text it would split only to throw away
#: (8 MB of text took the tokenizer over 1 GB).
CHARS_PER_TOKEN = 64


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


def check_embedder(spec: CorpusSpec, embedder: Embedder) -> None:
    """Refuse to mix vector spaces: raise :class:`ConfigError` unless ``spec`` was built with ``embedder``.

    A corpus registered without an embedder name (created from SQL) accepts any embedder of its dimension.
    """
    if spec.embedder and spec.embedder != embedder.name:
        raise ConfigError(
            f"Corpus {spec.name!r} holds vectors from {spec.embedder!r} but the configured embedder is "
            f"{embedder.name!r}; set UNIVERSALRAG_EMBEDDER to the corpus's embedder, or use another corpus."
        )
    if spec.dimension != embedder.dimension:
        raise ConfigError(
            f"Corpus {spec.name!r} stores {spec.dimension}-dimensional vectors but the embedder "
            f"{embedder.name!r} makes {embedder.dimension}; use a corpus created for this embedder."
        )


def check_texts(texts: Sequence[str]) -> list[str]:
    """The texts as a list, or :class:`EmbeddingError` naming the first item that is not a string (what every
    embedder's ``embed`` checks first)."""
    if isinstance(texts, str):
        raise EmbeddingError("embed() takes a sequence of strings, not one string; use embed_query() for one text.")
    items = list(texts)
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise EmbeddingError(f"embed() takes strings only; item {i} is a {type(text).__name__}.")
    return items


def clip_to_tokens(texts: list[str], max_tokens: int) -> list[str]:
    """``texts`` with each one cut to ``max_tokens * CHARS_PER_TOKEN`` characters: what an encoder that reads
    ``max_tokens`` tokens can see of it, with room to spare."""
    limit = max(1, int(max_tokens)) * CHARS_PER_TOKEN
    return [t if len(t) <= limit else t[:limit] for t in texts]
