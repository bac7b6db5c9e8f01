"""What follows a route decision: each chosen corpus's own ranking, the rankings merged into one, a table of
the best hit's page added where routing chose texts only, and the knowledge graph's hits joined where routing chose
them.

:class:`Retrieval` is the public interface of these steps. :meth:`UniversalRAG.retrieve
<universalrag.pipeline.UniversalRAG.retrieve>` runs them all (:meth:`Retrieval.hits`); a caller that searches the
chosen corpora one by one (the LangGraph adapter's retrieve nodes) runs them separately: :meth:`Retrieval.corpus_hits`
per corpus, then :meth:`Retrieval.merge` of what it gathered, and :meth:`Retrieval.with_graph` joins the graph's
hits to the first chosen corpus's ranking, so every surface gets the same hits. Probing and deciding happen before, in
:mod:`universalrag.retrieve.probing`; scores are combined in :mod:`universalrag.fusion`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass

from ..fusion import SOURCE_WEIGHT, by_source, comparable, fuse, with_graph, with_source_table
from ..plan import QueryPlan, check_k
from ..types import CorpusSpec, Hit
from .definitions import definitions_first
from .searcher import Searcher

__all__ = ["Retrieval", "embedding_space"]


def embedding_space(spec: CorpusSpec) -> str:
    """The embedding space of a corpus's text vectors: its embedder and dimension. Scores of two corpora are
    compared directly only when they share one."""
    return f"{spec.embedder}/{spec.dimension}"


@dataclass(frozen=True)
class Retrieval:
    """The retrieval steps of one pipeline: ``searcher`` (store and encoders), the ``fusion`` method of
    :func:`~universalrag.fusion.fuse`, the ``source_weight`` of :func:`~universalrag.fusion.by_source` (0: off) and
    the ``pool`` that searches several corpora in parallel (``None``: one after another). Cheap to build; holds no
    state of its own (what a request found stays in its :class:`~universalrag.plan.QueryPlan`)."""

    searcher: Searcher
    fusion: str = "auto"
    source_weight: float = SOURCE_WEIGHT
    pool: Executor | None = None

    def hits(self, plan: QueryPlan, *, k: int | None = None) -> list[Hit]:
        """The best ``k`` (default ``plan.k``) hits of the corpora ``plan`` chose (its ``routes``, else its
        decision's), as one ranking: :meth:`corpus_hits`, then :meth:`merge` for several corpora, then
        :meth:`with_source_table`, then :meth:`with_graph` (the knowledge graph's hits, when routing chose them).
        Empty when nothing was chosen."""
        k = plan.k if k is None else check_k(k)
        corpora = list(plan.chosen)
        if not corpora:
            return []
        per_corpus = self.corpus_hits(plan, corpora, k=k)
        if len(corpora) == 1:
            hits = self.with_source_table(plan, per_corpus[corpora[0]], k=k)
        else:
            hits = self.with_source_table(plan, self.merge(per_corpus, k=k), k=k)
        if plan.routes is None:
            hits = definitions_first(hits, plan.probes, plan.exact_terms, k=k)
        return self.with_graph(hits, plan.graph_hits, k=k)

    @staticmethod
    def with_graph(hits: Sequence[Hit], graph: Sequence[Hit], *, k: int) -> list[Hit]:
        """The first ``k`` of ``hits`` joined by the knowledge graph's hits (``graph``: a plan's ``graph_hits``, set
        when routing chose the graph), as :func:`~universalrag.fusion.with_graph` joins them: up to two take the
        last places. ``hits`` as they are when ``graph`` or ``hits`` is empty."""
        k = check_k(k)
        return with_graph(hits, graph, k=k) if graph and hits else list(hits[:k])

    def merge(self, per_corpus: Mapping[str, Sequence[Hit]], *, k: int) -> list[Hit]:
        """The best ``k`` of several corpora's hits as one ranking: by similarity where the corpora share one
        embedding space, else by reciprocal rank; the first corpus's (of ``per_corpus``, in order) best is kept
        among the ``k``."""
        k = check_k(k)
        corpora = [name for name, hits in per_corpus.items() if hits]
        if not corpora:
            return []
        spaces = [self._space(name) for name in corpora]
        # The first corpus is what the question asks for (a whole video, whose own scenes rank above it); the
        # others are ranked where the merge puts them. Keeping every routed corpus's best cost the routing
        # benchmark 0.5 points of answering units in the top 5, and every corpus's best, when all six are
        # searched, filled the five places with one hit of each (20 points).
        merged = fuse([list(per_corpus[name]) for name in corpora], method=self.fusion, spaces=spaces)
        return _best(merged, k, primary=corpora[0])

    def with_source_table(self, plan: QueryPlan, hits: list[Hit], *, k: int | None = None) -> list[Hit]:
        """The first ``k`` (default ``plan.k``) of ``hits`` (the hits retrieved for ``plan``) with a table of the best
        hit's page in the last place (:func:`~universalrag.fusion.with_source_table`) when the router chose texts
        only and probed a table corpus: on the routing benchmark's tune split 61.0 → 62.2 % of answering units in
        the top 5 (held-out split 62.4 → 62.7 %). Corpora the caller chose (``routes``) are searched as they are."""
        k = plan.k if k is None else check_k(k)
        searcher = self.searcher
        if plan.routes is not None or not hits or any(searcher.holds_parts(c) for c in plan.chosen):
            return hits[:k]
        space = self._space(hits[0].corpus)
        tables = sorted(
            (h for found in self._probed(plan, space, searcher.holds_parts) for h in found),
            key=lambda h: h.score,
            reverse=True,
        )
        if not tables or not comparable([hits, tables], [space, space]):
            return hits[:k]
        return with_source_table(hits, tables, k=k)

    def corpus_hits(self, plan: QueryPlan, corpora: Sequence[str], *, k: int | None = None) -> dict[str, list[Hit]]:
        """The best ``k`` (default ``plan.k``) hits of each of ``corpora`` for ``plan``, each corpus in its own
        ranking (the routing probes reused, the other corpora searched in parallel): a table corpus searched beside
        whole texts of its embedding space — those ``corpora`` hold or routing probed — is ranked by
        :func:`~universalrag.fusion.by_source` from ``source_depth`` candidates (a question routed to the tables
        alone still knows which page it is about), any other as searched."""
        k = plan.k if k is None else check_k(k)
        store, searcher = self.searcher.store, self.searcher
        for name in corpora:
            store.corpus(name)  # unknown corpus: a clear error before any thread starts
        held = [*corpora, *(c for c in list(plan.probes) if c not in corpora)]
        depths = [searcher.depth(plan, c, k, held) for c in corpora]
        if len(corpora) == 1 or self.pool is None:
            found = [searcher.search(plan, c, k=d) for c, d in zip(corpora, depths, strict=True)]
        else:
            pool = self.pool
            found = [
                f.result()
                for f in [pool.submit(searcher.search, plan, c, k=d) for c, d in zip(corpora, depths, strict=True)]
            ]
        out: dict[str, list[Hit]] = {}
        for name, hits in zip(corpora, found, strict=True):
            space = self._space(name)
            evidence = [
                h
                for whole in self._probed(plan, space, searcher.holds_wholes, k=plan.probe_k)
                if comparable([hits, whole], [space, space])
                for h in whole
            ]
            out[name] = (
                by_source(hits, evidence, k=k, weight=self.source_weight)
                if evidence and searcher.holds_parts(name)
                else hits[:k]
            )
        return out

    def _space(self, corpus: str) -> str:
        return embedding_space(self.searcher.store.corpus(corpus))

    def _probed(
        self, plan: QueryPlan, space: str, kind: Callable[[str], bool], *, k: int | None = None
    ) -> list[list[Hit]]:
        """The hits (the first ``k`` of each, else all) of every corpus ``plan`` probed or searched that ``kind``
        accepts and that lives in the embedding ``space``: the evidence one corpus's ranking reads from others."""
        return [
            found[:k] if k is not None else found
            for name, found in list(plan.probes.items())
            if kind(name) and self._space(name) == space
        ]


def _best(hits: list[Hit], k: int, *, primary: str) -> list[Hit]:
    """The first ``k`` of the merged ``hits``, holding the ``primary`` corpus's best: when it ranks below the
    ``k``-th, it takes the last place."""
    top = hits[:k]
    if top and not any(h.corpus == primary for h in top):
        best = next((h for h in hits[k:] if h.corpus == primary), None)
        if best is not None:
            top[-1] = best
    return top
