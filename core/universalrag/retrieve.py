"""Search one corpus with a text query, in the corpus's own embedding space."""

from __future__ import annotations

from .embed.base import Embedder, check_embedder
from .store import Filter, Store
from .types import Hit

__all__ = ["search_corpus"]


def search_corpus(store: Store, embedder: Embedder, corpus: str, query: str, *, k: int = 5,
                  filter: Filter | None = None) -> list[Hit]:
    """The ``k`` best units of ``corpus`` for ``query`` (optionally restricted by a metadata ``filter``)."""
    spec = store.corpus(corpus)
    check_embedder(spec, embedder)
    return store.search(corpus, embedder.embed_query(query), k=k, filter=filter)
