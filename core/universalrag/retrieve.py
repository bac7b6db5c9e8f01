"""Search one corpus with a text query, in the corpus's own embedding space (and its visual space, if any)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .embed.base import Embedder, check_embedder
from .errors import ConfigError
from .store import Filter, Store
from .types import NO_RETRIEVAL, Hit

if TYPE_CHECKING:
    from .embed.visual import VisualEncoder

__all__ = ["search_corpus", "routing_candidates"]


def search_corpus(store: Store, embedder: Embedder, corpus: str, query: str, *, k: int = 5,
                  filter: Filter | None = None, visual_encoder: VisualEncoder | None = None,
                  visual_weight: float | None = None, lexical_text: str | None = None) -> list[Hit]:
    """The ``k`` best units of ``corpus`` for ``query`` (optionally restricted by a metadata ``filter``).

    When the corpus has a visual channel and ``visual_encoder`` is the encoder that built it, the query is
    also embedded by the encoder's text tower and the two similarities are fused with ``visual_weight``
    (default: the store's ``Settings.visual_weight_for`` the corpus's modality). ``lexical_text`` turns on hybrid search: the dense ranking fused with
    Postgres full-text ranking.
    """
    spec = store.corpus(corpus)
    check_embedder(spec, embedder)
    visual_vector = None
    if visual_encoder is not None and spec.visual_encoder:
        if spec.visual_encoder != visual_encoder.name:
            raise ConfigError(
                f"Corpus {spec.name!r} holds visual vectors from {spec.visual_encoder!r} but the configured visual "
                f"encoder is {visual_encoder.name!r}; set UNIVERSALRAG_VISUAL_ENCODER to the corpus's encoder."
            )
        visual_vector = visual_encoder.embed_texts([query])[0].tolist()
    return store.search(corpus, embedder.embed_query(query), k=k, filter=filter, visual_vector=visual_vector,
                        visual_weight=visual_weight, lexical_text=lexical_text)


def routing_candidates(store: Store) -> list[str]:
    """The routes a router bound to this database may choose: ``none`` and every corpus that holds rows."""
    return [NO_RETRIEVAL, *store.nonempty()]
