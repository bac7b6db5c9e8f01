"""Evidence-aware routing of a query plan: the router's prior and a probe of every candidate corpus, combined.

For one :class:`~universalrag.plan.QueryPlan`, :meth:`EvidenceRouting.route`

1. embeds the query once and searches every candidate corpus for a few hits, in parallel, one pooled connection
   each (the plan keeps the hits: they are the retrieval of the chosen corpora), while it computes the router's
   prior;
2. turns each probe into features (:mod:`universalrag.routing.features`): best similarity, its margin over the
   probe's lower hits and over the other corpora, lexical overlap, corpus size, similarity to the corpus's
   description and registered example queries;
3. lets the learned :class:`~universalrag.routing.combiner.Combiner` decide (``none`` only when its answerable
   model, which reads the prior's ``none`` probability as one input, finds no corpus holding strong evidence).

Without a combiner the router's decision is final and nothing is probed.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import replace
from typing import Any

import numpy as np

from ..graph.retrieve import GraphRetrieval
from ..plan import QueryPlan
from ..routing.base import ROUTES, Router
from ..routing.combiner import Combiner
from ..routing.features import ProbeEvidence, pair_features, prior_route
from ..store.corpus_sizes import corpus_sizes
from ..store.row_estimates import EMPTY_TTL_S
from ..types import NO_RETRIEVAL, CorpusSpec, RouteDecision
from .searcher import Searcher

__all__ = ["EvidenceRouting", "ProbedQuery"]


class ProbedQuery:
    """The evidence gathered for one query: the prior, the features per corpus, the probe hits (in the plan)."""

    __slots__ = ("latency_ms", "pairs", "plan", "prior", "prior_none")

    def __init__(
        self,
        plan: QueryPlan,
        prior: Mapping[str, float],
        pairs: dict[str, dict[str, float]],
        prior_none: float,
        latency_ms: float,
    ) -> None:
        self.plan, self.prior, self.pairs, self.prior_none, self.latency_ms = plan, prior, pairs, prior_none, latency_ms


class EvidenceRouting:
    """The router's prior plus probe evidence, decided by ``combiner`` (``None``: the router decides alone).

    ``stats_ttl`` is how long (seconds) corpus sizes are cached — while a registered corpus is empty or not yet
    counted, :data:`~universalrag.store.row_estimates.EMPTY_TTL_S` only, so that what another process ingests is
    routed to within a second; call :meth:`invalidate` after writing here. Description and example vectors are
    cached per embedder and text.
    """

    def __init__(
        self,
        router: Router,
        combiner: Combiner | None,
        *,
        stats_ttl: float = 30.0,
        graph: GraphRetrieval | None = None,
    ) -> None:
        self.router, self.combiner, self.stats_ttl = router, combiner, stats_ttl
        #: The knowledge graph, walked beside the probes (``None``: never).
        self.graph = graph
        self._lock = threading.Lock()
        self._sizes: tuple[float, dict[str, int]] | None = None
        self._vectors: dict[tuple[str, str], np.ndarray] = {}

    @property
    def name(self) -> str:
        """The name decisions carry: ``evidence(<router>)``, or the router's name without a combiner."""
        return f"evidence({self.router.name})" if self.combiner is not None else self.router.name

    def invalidate(self) -> None:
        """Forget cached corpus sizes (after ingesting or deleting)."""
        with self._lock:
            self._sizes = None
        if self.graph is not None:
            self.graph.invalidate()

    # -- cached corpus facts ---------------------------------------------------------------------------------
    def sizes(self, searcher: Searcher) -> dict[str, int]:
        """Units per registered corpus (cached, see the class)."""
        names = searcher.store.corpora()
        with self._lock:
            if self._sizes is not None:
                read, sizes = self._sizes
                settled = names.keys() == sizes.keys() and all(sizes.values())
                if time.monotonic() - read < (self.stats_ttl if settled else min(self.stats_ttl, EMPTY_TTL_S)):
                    return sizes
        sizes = corpus_sizes(searcher.store, list(names))
        with self._lock:
            self._sizes = (time.monotonic(), sizes)
        return sizes

    def candidates(self, searcher: Searcher, plan: QueryPlan) -> list[str]:
        """The corpora to probe: the plan's candidates, else every non-empty corpus this embedder can search."""
        if plan.candidates is not None:
            return [c for c in plan.candidates if c != NO_RETRIEVAL]
        specs = searcher.store.corpora()
        return [c for c, n in self.sizes(searcher).items() if n > 0 and c in specs and searcher.searchable(specs[c])]

    def _text_vectors(self, searcher: Searcher, texts: Sequence[str]) -> np.ndarray:
        name = searcher.embedder.name
        missing = [t for t in dict.fromkeys(texts) if (name, t) not in self._vectors]
        if missing:
            vectors = np.asarray(searcher.embedder.embed(missing), dtype=np.float32)
            with self._lock:
                self._vectors.update({(name, t): v for t, v in zip(missing, vectors, strict=True)})
        return np.stack([self._vectors[(name, t)] for t in texts]) if texts else np.zeros((0, 1), np.float32)

    def _similarities(self, searcher: Searcher, spec: CorpusSpec, query: np.ndarray) -> tuple[float, float | None]:
        description = spec.description or spec.name
        examples = [str(e) for e in spec.metadata.get("examples", ()) if str(e).strip()]
        vectors = self._text_vectors(searcher, [description, *examples])
        sims = vectors @ np.asarray(query, dtype=np.float32)
        return float(sims[0]), (float(sims[1:].max()) if examples else None)

    # -- routing -----------------------------------------------------------------------------------------------
    def _prior(self, query: str) -> dict[str, float]:
        return dict(self.router.route(query).scores)

    def gather(self, plan: QueryPlan, searcher: Searcher, *, pool: Executor | None = None) -> ProbedQuery:
        """Compute the prior, probe every candidate corpus and compute the features."""
        started = time.perf_counter()
        corpora = self.candidates(searcher, plan)
        # The router's forward pass starts first, in the pool, and runs beside the query's embedding on this thread:
        # two ONNX Runtime passes that release the GIL, one per core, while the server has nothing to do yet. The
        # probes need the embedding and go to the pool as soon as it is there (Searcher.probe: on two cores 38
        # against 57 ms at p50 for the same probes sent together on one connection). On the 100k-unit benchmark,
        # Intel Xeon, p50 34.9 / 35.9 ms against 37.2 / 38.6 ms with the pass run here after the probes were sent
        # (alternated, load 0.8-1.4). torch's many small operations contend for the GIL (p50 206 against 188 ms
        # at load 3 for an overlapped pass, UNIVERSALRAG_INFERENCE=torch), a path kept for training.
        pending = pool.submit(self._prior, plan.text) if pool is not None else None
        vector = plan.embedding(searcher.embedder)
        # The graph's walk goes to the pool before the probes, so that it runs beside them (after them it waited for
        # a worker), and reads the units it reached while they run.
        walking = (
            self.graph.start(searcher.store, plan.text, pool=pool, vector=vector) if self.graph is not None else None
        )
        collect = searcher.start_probes(plan, corpora, pool=pool)
        prior = pending.result() if pending is not None else self._prior(plan.text)
        probes = collect()
        deciding = None
        if walking is not None and self.graph is not None:
            # the graph's hits (the parts naming what it reached: one more round trip) are made in the pool while
            # this thread turns the probes into features, which do not read them
            args = (plan, searcher.store, searcher.embedder, walking(), probes)
            if pool is not None:
                deciding = pool.submit(self.graph.decide, *args)
            else:
                self.graph.decide(*args)
        specs = searcher.store.corpora()
        sizes = self.sizes(searcher)
        query_vector = plan.embedding(searcher.embedder)
        known = tuple(prior) or ROUTES
        evidence = []
        for name in corpora:
            spec = specs[name]
            description, examples = self._similarities(searcher, spec, query_vector)
            route = prior_route(name, str(spec.granularity), str(spec.modality), known)
            evidence.append(
                ProbeEvidence(
                    corpus=name,
                    granularity=str(spec.granularity),
                    prior=float(prior.get(route, 0.0)),
                    hits=tuple(probes.get(name, ())),
                    size=sizes.get(name, 0),
                    description=description,
                    examples=examples,
                )
            )
        prior_none = float(prior.get(NO_RETRIEVAL, 0.0))
        pairs = pair_features(plan.text, evidence, prior_none=prior_none, typed=plan.exact_terms)
        if deciding is not None:
            deciding.result()
        return ProbedQuery(plan, prior, pairs, prior_none, (time.perf_counter() - started) * 1000)

    def route(self, plan: QueryPlan, searcher: Searcher, *, pool: Executor | None = None) -> RouteDecision:
        """Decide the routes of ``plan`` (also stored as ``plan.decision``)."""
        started = time.perf_counter()
        if self.combiner is None:
            decision = self._router_only(plan, searcher)
        else:
            probed = self.gather(plan, searcher, pool=pool)
            combined = self.combiner.decide(probed.pairs, prior_none=probed.prior_none, allow_none=plan.allow_none)
            decision = RouteDecision(
                routes=combined.routes,
                scores=combined.scores,
                router=self.name,
                latency_ms=(time.perf_counter() - started) * 1000,
                prior=probed.prior,
                evidence=probed.pairs,
                id=str(uuid.uuid4()),
                version=self.combiner.version,
                fallback=combined.none and not plan.allow_none,
            )
        plan.decision = decision
        return decision

    def _router_only(self, plan: QueryPlan, searcher: Searcher) -> RouteDecision:
        candidates = [NO_RETRIEVAL, *self.candidates(searcher, plan)]
        decision = self.router.route(plan.text, candidates=candidates)
        if decision.needs_retrieval or plan.allow_none:
            return _with(decision, id=str(uuid.uuid4()))
        corpora = [c for c in candidates if c != NO_RETRIEVAL]
        if not corpora:
            return decision
        known = tuple(decision.scores) or ROUTES
        specs = searcher.store.corpora()
        best = max(
            corpora,
            key=lambda c: decision.scores.get(
                prior_route(c, str(specs[c].granularity), str(specs[c].modality), known), 0.0
            ),
        )
        return _with(decision, routes=(best,), fallback=True, id=str(uuid.uuid4()))


def _with(decision: RouteDecision, **changes: Any) -> RouteDecision:
    return replace(decision, **changes)
