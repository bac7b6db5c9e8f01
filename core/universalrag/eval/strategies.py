"""Retrieval strategies as comparable modes, each answering one :class:`~universalrag.plan.QueryPlan`.

=============  ==================================================================================================
``routed``     the library's own routing (:meth:`UniversalRAG.route`: router prior + corpus probes + combiner)
``unified``    every unit of every corpus in ONE shared index searched as one (:class:`~.unified.UnifiedIndex`)
``all``        every non-empty corpus searched in its own space, rankings fused
``oracle``     the question's gold routes (needs ``routes`` in the data)
``random``     one route drawn among ``none`` and the non-empty corpora (fixed per question and seed)
``none``       no retrieval
``<corpus>``   that corpus only (also spelt ``corpus:<name>``)
=============  ==================================================================================================

Every strategy gets a fresh plan from :meth:`UniversalRAG.plan` (so none reuses another's probes or cached
embeddings and latencies compare) and returns a :class:`Retrieval`: the routes it searched (``None`` for the
unified index, which does not route), the hits and the time spent per stage.
"""

from __future__ import annotations

import random
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..errors import ConfigError
from ..plan import QueryPlan
from ..retrieve import routing_candidates
from ..types import NO_RETRIEVAL, Hit
from .unified import UnifiedIndex

if TYPE_CHECKING:
    from ..pipeline import UniversalRAG

__all__ = [
    "STRATEGIES",
    "AllStrategy",
    "CorpusStrategy",
    "NoneStrategy",
    "OracleStrategy",
    "RandomStrategy",
    "Retrieval",
    "RoutedStrategy",
    "Strategy",
    "UnifiedStrategy",
    "build_strategy",
    "strategy_names",
]


@dataclass(frozen=True, slots=True)
class Retrieval:
    """What a strategy did for one question: the ``routes`` it searched (``("none",)`` for nothing, ``None``
    when it does not route), the fused ``hits`` and ``timings`` in milliseconds per stage (``route``,
    ``retrieve``)."""

    routes: tuple[str, ...] | None
    hits: list[Hit]
    timings: dict[str, float] = field(default_factory=dict)


class Strategy(Protocol):
    """A way to find evidence for a question."""

    name: str

    def retrieve(self, plan: QueryPlan, *, gold_routes: Sequence[str] | None = None) -> Retrieval:
        """The evidence for ``plan`` (``gold_routes``: the question's gold corpora, used by ``oracle`` only)."""
        ...


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def _search(rag: UniversalRAG, plan: QueryPlan, routes: Sequence[str]) -> Retrieval:
    """Search fixed ``routes`` (``none`` dropped) for the plan."""
    plan.routes = tuple(routes) if routes else (NO_RETRIEVAL,)
    start = time.perf_counter()
    hits = rag.retrieve(plan, k=plan.k) if plan.chosen else []
    return Retrieval(plan.routes, hits, {"route": 0.0, "retrieve": _ms(start)})


@dataclass
class RoutedStrategy:
    """The library default: route (prior + probes + combiner), then retrieve the chosen corpora (probe hits
    reused)."""

    rag: UniversalRAG
    name: str = "routed"

    def retrieve(self, plan: QueryPlan, *, gold_routes: Sequence[str] | None = None) -> Retrieval:
        """Route ``plan`` and retrieve what the decision chose."""
        start = time.perf_counter()
        decision = self.rag.route(plan)
        routed = _ms(start)
        start = time.perf_counter()
        hits = self.rag.retrieve(plan, k=plan.k) if plan.chosen else []
        return Retrieval(tuple(decision.routes), hits, {"route": routed, "retrieve": _ms(start)})


@dataclass
class CorpusStrategy:
    """One corpus, always."""

    rag: UniversalRAG
    corpus: str
    name: str = ""

    def __post_init__(self) -> None:
        self.name = self.name or self.corpus

    def retrieve(self, plan: QueryPlan, *, gold_routes: Sequence[str] | None = None) -> Retrieval:
        """Search :attr:`corpus`."""
        return _search(self.rag, plan, [self.corpus])


@dataclass
class AllStrategy:
    """Every non-empty corpus, each in its own space, fused (the pipeline's fusion)."""

    rag: UniversalRAG
    name: str = "all"
    _corpora: list[str] | None = None

    def retrieve(self, plan: QueryPlan, *, gold_routes: Sequence[str] | None = None) -> Retrieval:
        """Search every corpus that holds rows."""
        if self._corpora is None:
            self._corpora = self.rag.store.nonempty()
        return _search(self.rag, plan, self._corpora)


@dataclass
class OracleStrategy:
    """The gold routes (``none``: nothing searched)."""

    rag: UniversalRAG
    name: str = "oracle"

    def retrieve(self, plan: QueryPlan, *, gold_routes: Sequence[str] | None = None) -> Retrieval:
        """Search the question's gold corpora."""
        if gold_routes is None:
            raise ConfigError(
                "The oracle strategy needs each question's gold 'routes' in the data; add them or "
                "leave out --strategy oracle."
            )
        return _search(self.rag, plan, [r for r in gold_routes if r != NO_RETRIEVAL])


@dataclass
class RandomStrategy:
    """One route drawn uniformly among ``none`` and the non-empty corpora; the draw depends only on the
    question and ``seed``, so runs repeat."""

    rag: UniversalRAG
    seed: int = 0
    name: str = "random"
    _candidates: list[str] | None = None

    def retrieve(self, plan: QueryPlan, *, gold_routes: Sequence[str] | None = None) -> Retrieval:
        """Search one randomly drawn route."""
        if self._candidates is None:
            self._candidates = routing_candidates(self.rag.store)
        draw = random.Random(zlib.crc32(f"{self.seed}:{plan.query}".encode())).choice(self._candidates)
        return _search(self.rag, plan, [draw])


@dataclass
class NoneStrategy:
    """No retrieval (the model answers alone)."""

    rag: UniversalRAG
    name: str = "none"

    def retrieve(self, plan: QueryPlan, *, gold_routes: Sequence[str] | None = None) -> Retrieval:
        """Search nothing."""
        return Retrieval((NO_RETRIEVAL,), [], {"route": 0.0, "retrieve": 0.0})


@dataclass
class UnifiedStrategy:
    """Every unit of every corpus in one shared index (built on first use), searched as one."""

    rag: UniversalRAG
    index: UnifiedIndex | None = None
    name: str = "unified"

    def retrieve(self, plan: QueryPlan, *, gold_routes: Sequence[str] | None = None) -> Retrieval:
        """Search the shared index with the plan's query embedding."""
        if self.index is None:
            self.index = UnifiedIndex(self.rag.store, self.rag.embedder)
        self.index.state()  # built before timing starts
        start = time.perf_counter()
        hits = self.index.search(plan.embedding(self.rag.embedder), k=plan.k)
        return Retrieval(None, hits, {"route": 0.0, "retrieve": _ms(start)})


#: The named strategies; any corpus name (or ``corpus:<name>``) is a strategy too.
STRATEGIES: dict[str, Callable[..., Strategy]] = {
    "routed": RoutedStrategy,
    "unified": UnifiedStrategy,
    "all": AllStrategy,
    "oracle": OracleStrategy,
    "random": RandomStrategy,
    "none": NoneStrategy,
}


def strategy_names(rag: UniversalRAG) -> list[str]:
    """Every strategy available for ``rag``: the named ones, then one per non-empty corpus."""
    return [*STRATEGIES, *(c for c in rag.store.nonempty() if c not in STRATEGIES)]


def build_strategy(name: str, rag: UniversalRAG, *, seed: int = 0) -> Strategy:
    """The strategy called ``name`` over ``rag`` (:class:`ConfigError` lists the choices when unknown)."""
    if name == "random":
        return RandomStrategy(rag, seed=seed)
    if name in STRATEGIES:
        return STRATEGIES[name](rag)
    corpus = name.removeprefix("corpus:")
    known = rag.store.corpora()
    if corpus not in known:
        raise ConfigError(
            f"Unknown strategy {name!r}; choose among {', '.join(STRATEGIES)} or a corpus ({', '.join(sorted(known))})."
        )
    return CorpusStrategy(rag, corpus, name=corpus)
