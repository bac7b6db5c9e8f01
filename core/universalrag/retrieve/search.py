"""Search corpora for a query plan, each in its own embedding space (and its visual space, if any).

:class:`Searcher` binds the store and the encoders; :meth:`Searcher.search` searches one corpus for a
:class:`~universalrag.plan.QueryPlan`, reusing the plan's embeddings and probe hits, so one request embeds the
query once per model and searches each corpus once. :meth:`Searcher.probe` searches several corpora in parallel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..embed.base import Embedder, check_embedder
from ..errors import ConfigError
from ..plan import QueryPlan
from ..store import Filter, Store
from ..types import NO_RETRIEVAL, CorpusSpec, Hit, Modality

if TYPE_CHECKING:
    from ..embed.visual import VisualEncoder

__all__ = ["Searcher", "routing_candidates", "search_corpus"]


@dataclass(frozen=True)
class Searcher:
    """Searches corpora of ``store`` with ``embedder`` (and ``visual_encoder`` for corpora with a visual
    channel); ``visual_weight`` gives the visual channel's weight per modality (default: the store's
    ``Settings.visual_weight_for``)."""

    store: Store
    embedder: Embedder
    visual_encoder: VisualEncoder | None = None
    visual_weight: Callable[[Modality], float] | None = None

    def searchable(self, spec: CorpusSpec) -> bool:
        """Whether this searcher's embedder built ``spec`` (a corpus of another model cannot be probed)."""
        return (not spec.embedder or spec.embedder == self.embedder.name) and \
            spec.dimension == self.embedder.dimension

    def _visual_vector(self, spec: CorpusSpec, plan: QueryPlan) -> list[float] | None:
        encoder = self.visual_encoder
        if encoder is None or not spec.visual_encoder:
            return None
        if spec.visual_encoder != encoder.name:
            raise ConfigError(
                f"Corpus {spec.name!r} holds visual vectors from {spec.visual_encoder!r} but the configured visual "
                f"encoder is {encoder.name!r}; set UNIVERSALRAG_VISUAL_ENCODER to the corpus's encoder."
            )
        return plan.visual_vector(encoder).tolist()

    def search(self, plan: QueryPlan, corpus: str, *, k: int | None = None) -> list[Hit]:
        """The ``k`` (default ``plan.k``) best units of ``corpus`` for the plan's query: the plan's probe hits
        when the corpus was probed deep enough, else one search (recorded in the plan)."""
        k = k or plan.k
        cached = plan.probed(corpus, k)
        if cached is not None:
            return cached
        spec = self.store.corpus(corpus)
        check_embedder(spec, self.embedder)
        depth = max(k, plan.probe_k)
        weight = self.visual_weight(spec.modality) if self.visual_weight is not None else None
        hits = self.store.search(corpus, plan.embedding(self.embedder), k=depth, filter=plan.filter,
                                 visual_vector=self._visual_vector(spec, plan), visual_weight=weight,
                                 lexical_text=plan.query if plan.hybrid else None)
        plan.add_probe(corpus, hits)
        return hits[:k]

    def probe(self, plan: QueryPlan, corpora: Sequence[str], *, pool: Executor | None = None) -> dict[str, list[Hit]]:
        """Search every corpus in ``corpora`` for ``plan.probe_k`` hits, in parallel on ``pool``; returns the hits
        per corpus (also kept in ``plan.probes``)."""
        return {c: f.result() for c, f in self.submit_probes(plan, corpora, pool=pool).items()}

    def submit_probes(self, plan: QueryPlan, corpora: Sequence[str], *,
                      pool: Executor | None = None) -> dict[str, Future[list[Hit]]]:
        """Start the probes of :meth:`probe` on ``pool`` and return at once (the query is embedded first, in this
        thread): the caller works meanwhile, e.g. computes the router's prior. Without a pool they run here."""
        plan.embedding(self.embedder)  # once, before the threads start
        names = [c for c in dict.fromkeys(corpora) if c != NO_RETRIEVAL]
        if pool is None:
            return {c: _done(self.search, plan, c, k=plan.probe_k) for c in names}
        return {c: pool.submit(self.search, plan, c, k=plan.probe_k) for c in names}


def _done(fn: Callable[..., list[Hit]], *args: object, **kwargs: object) -> Future[list[Hit]]:
    """``fn(*args, **kwargs)`` run now, as a finished future (an error is raised at once)."""
    future: Future[list[Hit]] = Future()
    future.set_result(fn(*args, **kwargs))
    return future


def search_corpus(store: Store, embedder: Embedder, corpus: str, query: str, *, k: int = 5,
                  filter: Filter | None = None, visual_encoder: VisualEncoder | None = None,
                  visual_weight: float | None = None, lexical_text: str | None = None) -> list[Hit]:
    """The ``k`` best units of ``corpus`` for ``query`` (optionally restricted by a metadata ``filter``).

    When the corpus has a visual channel and ``visual_encoder`` is the encoder that built it, the query is
    also embedded by the encoder's text tower and the two similarities are fused with ``visual_weight``
    (default: the store's ``Settings.visual_weight_for`` the corpus's modality). ``lexical_text`` turns on
    hybrid search: the dense ranking fused with Postgres full-text ranking of that text.
    """
    if lexical_text is not None and lexical_text != query:
        spec = store.corpus(corpus)
        check_embedder(spec, embedder)
        visual = Searcher(store, embedder, visual_encoder)._visual_vector(spec, QueryPlan(query, k=k))
        return store.search(corpus, embedder.embed_query(query), k=k, filter=filter, visual_vector=visual,
                            visual_weight=visual_weight, lexical_text=lexical_text)
    weight = None if visual_weight is None else (lambda _m: float(visual_weight))
    plan = QueryPlan(query, k=k, filter=filter, hybrid=lexical_text is not None)
    return Searcher(store, embedder, visual_encoder, weight).search(plan, corpus, k=k)


def routing_candidates(store: Store) -> list[str]:
    """The routes a router bound to this database may choose: ``none`` and every corpus that holds rows."""
    return [NO_RETRIEVAL, *store.nonempty()]
