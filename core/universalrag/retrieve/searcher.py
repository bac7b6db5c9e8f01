"""Search corpora for a query plan, each in its own embedding space (and its visual space, if any).

:class:`Searcher` binds the store and the encoders; :meth:`Searcher.search` searches one corpus for a
:class:`~universalrag.plan.QueryPlan`, reusing the plan's embeddings and probe hits, so one request embeds the
query once per model and searches each corpus once. :meth:`Searcher.probe` searches several corpora at once
(in parallel on a pool, else together in one :meth:`~universalrag.store.Store.search_many` call).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..embed.base import Embedder, check_embedder
from ..errors import ConfigError
from ..fusion import SOURCE_DEPTH
from ..plan import QueryPlan, check_k
from ..store import Filter, Store
from ..store.corpus_search import CorpusQuery
from ..types import NO_RETRIEVAL, CorpusSpec, Granularity, Hit, Modality

if TYPE_CHECKING:
    from ..embed.visual import VisualEncoder

__all__ = ["Searcher", "routing_candidates", "search_corpus"]

#: The granularities of corpora whose units a request searching whole texts too ranks by their source's evidence
#: (:func:`~universalrag.fusion.by_source`): tables, whose rows say little of what they are about without their
#: page. Not passages, which carry their own prose: with them too, users' manuals and PDFs lost two answers from the
#: top 5 (a typo question over libtasn1's manual, pip's "environment variables inside requirements.txt") and the
#: routing benchmark's tune split fell from 60.7 to 60.6 %.
_PARTS = frozenset({Granularity.TABLE})


@dataclass(frozen=True)
class Searcher:
    """Searches corpora of ``store`` with ``embedder`` (and ``visual_encoder`` for corpora with a visual
    channel); ``visual_weight`` gives the visual channel's weight per modality (default: the store's
    ``Settings.visual_weight_for``)."""

    store: Store
    embedder: Embedder
    visual_encoder: VisualEncoder | None = None
    visual_weight: Callable[[Modality], float] | None = None
    #: How many candidates a table corpus gives when whole texts of its sources are searched too (0: as many as
    #: asked for; :func:`~universalrag.fusion.by_source` then has nothing to re-rank).
    source_depth: int = SOURCE_DEPTH

    def searchable(self, spec: CorpusSpec) -> bool:
        """Whether this searcher's embedder built ``spec`` (a corpus of another model cannot be probed)."""
        return (not spec.embedder or spec.embedder == self.embedder.name) and spec.dimension == self.embedder.dimension

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

    def _query(self, plan: QueryPlan, corpus: str, k: int, head: int | None = None) -> CorpusQuery:
        """The store query for ``corpus`` (``k`` hits, the first ``head`` as a search for ``head`` would return
        them) in the plan's terms: its embeddings, filter and hybrid flag."""
        spec = self.store.corpus(corpus)
        check_embedder(spec, self.embedder)
        weight = self.visual_weight(spec.modality) if self.visual_weight is not None else None
        return CorpusQuery(
            corpus,
            plan.embedding(self.embedder),
            k=k,
            filter=plan.filter,
            visual_vector=self._visual_vector(spec, plan),
            visual_weight=weight,
            lexical_text=plan.text if plan.hybrid else None,
            exact_terms=plan.exact_terms,
            head=head,
        )

    def holds_parts(self, corpus: str) -> bool:
        """Whether ``corpus``'s units are parts of texts ranked by their source's evidence (tables: see
        ``_PARTS``)."""
        return self.store.corpus(corpus).granularity in _PARTS

    def holds_wholes(self, corpus: str) -> bool:
        """Whether ``corpus``'s units are whole texts."""
        return self.store.corpus(corpus).granularity is Granularity.DOCUMENT

    def depth(self, plan: QueryPlan, corpus: str, k: int, among: Sequence[str]) -> int:
        """How many hits ``plan``, searching ``among``, fetches from ``corpus`` to return ``k``: a table corpus
        searched beside a corpus of whole texts gives ``source_depth`` candidates for
        :func:`~universalrag.fusion.by_source` to rank, any other ``k`` — and so does every corpus of a hybrid plan,
        whose rank-fused scores :func:`~universalrag.fusion.by_source` does not compare."""
        if not self.source_depth or plan.hybrid or not self.holds_parts(corpus):
            return k
        return max(k, self.source_depth) if any(self.holds_wholes(c) for c in among if c != corpus) else k

    def search(self, plan: QueryPlan, corpus: str, *, k: int | None = None) -> list[Hit]:
        """The ``k`` (default ``plan.k``) best units of ``corpus`` for the plan's query: the plan's probe hits
        when the corpus was probed deep enough, else one search (recorded in the plan; its first ``plan.probe_k``
        hits are what a probe returns)."""
        k = plan.k if k is None else check_k(k)
        cached = plan.probed(corpus, k)
        if cached is not None:
            return cached
        asked = max(k, plan.probe_k)
        hits = self.store.search_many([self._query(plan, corpus, asked, head=plan.probe_k)])[0]
        plan.add_probe(corpus, hits, asked=asked)
        return hits[:k]

    def probe(self, plan: QueryPlan, corpora: Sequence[str], *, pool: Executor | None = None) -> dict[str, list[Hit]]:
        """Search every corpus in ``corpora`` for ``plan.probe_k`` hits; returns the hits per corpus (also kept in
        ``plan.probes``; a corpus the plan already holds deep enough is not searched again).

        With a ``pool`` (evidence routing passes the pipeline's), each corpus is searched on its own connection in
        parallel: on two idle cores, six corpora of 100k units in all, route + retrieve took 38 ms at p50 this way
        against 57 ms with the statements of every corpus sent together on one connection (the server then runs
        them one after another). Without a pool, one :meth:`Store.search_many
        <universalrag.store.Store.search_many>` call: the corpora of one server on one connection, one round trip
        per step of their searches, and corpora on other servers in parallel threads.
        """
        return self.start_probes(plan, corpora, pool=pool)()

    def start_probes(
        self, plan: QueryPlan, corpora: Sequence[str], *, pool: Executor | None = None
    ) -> Callable[[], dict[str, list[Hit]]]:
        """:meth:`probe` in two steps: with a ``pool`` the searches are sent to it now and the returned function
        waits for them; without one they run when it is called. Evidence routing computes the router's prior in
        between, while the server works."""
        plan.embedding(self.embedder)  # once, before anything else
        names = [c for c in dict.fromkeys(corpora) if c != NO_RETRIEVAL]
        # A table corpus is probed as deep as retrieval will want it (depth), so that it is searched once.
        depths = {c: self.depth(plan, c, plan.probe_k, names) for c in names}
        todo = [c for c in names if plan.probed(c, depths[c]) is None]
        queries = [self._query(plan, c, depths[c], head=plan.probe_k) for c in todo]
        futures = [pool.submit(self.store.search_many, [q]) for q in queries] if pool is not None else None

        def collect() -> dict[str, list[Hit]]:
            if futures is not None:
                for corpus, future in zip(todo, futures, strict=True):
                    plan.add_probe(corpus, future.result()[0], asked=depths[corpus])
            elif queries:
                for corpus, hits in zip(todo, self.store.search_many(queries), strict=True):
                    plan.add_probe(corpus, hits, asked=depths[corpus])
            return {c: plan.probed(c, plan.probe_k) or [] for c in names}

        return collect


def search_corpus(
    store: Store,
    embedder: Embedder,
    corpus: str,
    query: str,
    *,
    k: int = 5,
    filter: Filter | None = None,
    visual_encoder: VisualEncoder | None = None,
    visual_weight: float | None = None,
    lexical_text: str | None = None,
) -> list[Hit]:
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
        return store.search(
            corpus,
            embedder.embed_query(query),
            k=k,
            filter=filter,
            visual_vector=visual,
            visual_weight=visual_weight,
            lexical_text=lexical_text,
        )
    weight = None if visual_weight is None else (lambda _m: float(visual_weight))
    plan = QueryPlan(query, k=k, filter=filter, hybrid=lexical_text is not None)
    return Searcher(store, embedder, visual_encoder, weight).search(plan, corpus, k=k)


def routing_candidates(store: Store) -> list[str]:
    """The routes a router bound to this database may choose: ``none`` and every corpus that holds rows."""
    return [NO_RETRIEVAL, *store.nonempty()]
