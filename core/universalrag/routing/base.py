"""The Router protocol, the decision rules (one pure function) and a base class for routers.

Every router turns a query into a :class:`~universalrag.types.RouteDecision`. Score-based routers
(trained, by example) produce a probability per route and let :func:`decide` pick the routes:

1. only candidate routes count (``none`` is always a candidate);
2. every route whose probability reaches the threshold is chosen, best first; when none does, the
   single best route is chosen;
3. routes of an exclusive pair (``paragraph``/``document``, ``clip``/``video``) exclude each other: the
   higher one stays;
4. ``none`` is dropped when any other route is chosen.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from ..errors import RoutingError
from ..types import BUILTIN_CORPORA, NO_RETRIEVAL, RouteDecision

__all__ = [
    "DEFAULT_THRESHOLD",
    "EXCLUSIVE_PAIRS",
    "ROUTES",
    "ROUTE_DESCRIPTIONS",
    "BaseRouter",
    "Router",
    "ScoringRouter",
    "apply_exclusions",
    "check_queries",
    "check_query",
    "decide",
    "resolve_candidates",
]

#: The seven routes of the paper, in canonical order (also the label order of the default model).
ROUTES: tuple[str, ...] = (NO_RETRIEVAL,) + tuple(c[0] for c in BUILTIN_CORPORA)

#: A sentence per built-in route, used by the LLM router's prompt and by description similarity.
ROUTE_DESCRIPTIONS: dict[str, str] = {
    NO_RETRIEVAL: "No retrieval: the question can be answered from general knowledge, arithmetic or "
    "reasoning alone (definitions, calculations, common facts, opinions, writing help).",
    **{c[0]: c[5] for c in BUILTIN_CORPORA},
}

#: Pairs of routes that are never chosen together (same modality, different granularity).
EXCLUSIVE_PAIRS: tuple[tuple[str, str], ...] = (("paragraph", "document"), ("clip", "video"))

#: Probability a route needs to be chosen beside the best one (UniversalRAG v2).
DEFAULT_THRESHOLD = 0.8


def resolve_candidates(candidates: Collection[str] | None, known: Iterable[str] | None = None) -> frozenset[str] | None:
    """Normalise a candidate set: ``None`` means "no restriction"; otherwise ``none`` is always added.

    When ``known`` is given, the result is intersected with it (routes a router cannot score are ignored).
    Raises :class:`RoutingError` for a bare string (a common mistake: ``candidates="table"``).
    """
    if candidates is None:
        return None
    if isinstance(candidates, str):
        raise RoutingError(f"candidates must be a collection of route names, not the string {candidates!r}.")
    out = {str(c) for c in candidates} | {NO_RETRIEVAL}
    if known is not None:
        out &= set(known) | {NO_RETRIEVAL}
    return frozenset(out)


def apply_exclusions(
    ordered: Sequence[str], *, exclusive: Sequence[tuple[str, str]] = EXCLUSIVE_PAIRS
) -> tuple[str, ...]:
    """Apply rules 3 and 4 to routes already in priority order: drop duplicates, keep the first of each
    exclusive pair, and drop ``none`` when anything else remains. Order is preserved."""
    partner: dict[str, set[str]] = {}
    for a, b in exclusive:
        partner.setdefault(a, set()).add(b)
        partner.setdefault(b, set()).add(a)
    kept: list[str] = []
    for route in ordered:
        if route in kept or partner.get(route, set()) & set(kept):
            continue
        kept.append(route)
    if len(kept) > 1 and NO_RETRIEVAL in kept:
        kept.remove(NO_RETRIEVAL)
    return tuple(kept)


def decide(
    scores: Mapping[str, float],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    candidates: Collection[str] | None = None,
    multi: bool = True,
    exclusive: Sequence[tuple[str, str]] = EXCLUSIVE_PAIRS,
) -> tuple[str, ...]:
    """The routes chosen from per-route probabilities, primary first (see the module docstring).

    ``multi=False`` returns the single best route. Ties are broken by the order of ``scores``.
    Raises :class:`RoutingError` when no candidate route has a score.
    """
    allowed = resolve_candidates(candidates)
    order = {route: i for i, route in enumerate(scores)}
    ranked = sorted(
        (r for r in scores if allowed is None or r in allowed),
        key=lambda r: (-float(scores[r]), order[r]),
    )
    if not ranked:
        raise RoutingError(
            f"No candidate route can be scored: candidates {sorted(allowed or [])}, scored {list(scores)}."
        )
    if not multi:
        return (ranked[0],)
    chosen = [r for r in ranked if float(scores[r]) >= threshold] or ranked[:1]
    return apply_exclusions(chosen, exclusive=exclusive)


@runtime_checkable
class Router(Protocol):
    """Picks the corpora to search for a query. ``candidates`` restricts the routes (``none`` always stays)."""

    @property
    def name(self) -> str: ...

    def route(self, query: str, *, candidates: Collection[str] | None = None) -> RouteDecision:
        """Route one query."""
        ...

    def route_many(self, queries: Sequence[str], *, candidates: Collection[str] | None = None) -> list[RouteDecision]:
        """Route several queries (batched where the router can)."""
        ...

    async def aroute(self, query: str, *, candidates: Collection[str] | None = None) -> RouteDecision:
        """Async twin of :meth:`route`."""
        ...

    async def aroute_many(
        self, queries: Sequence[str], *, candidates: Collection[str] | None = None
    ) -> list[RouteDecision]:
        """Async twin of :meth:`route_many`."""
        ...


class BaseRouter(ABC):
    """Shared plumbing: candidates given at construction and/or per call (a per-call set replaces the
    constructor's), ``route_many`` as a loop, async twins on a worker thread. Subclasses implement
    :meth:`_route` and may override the batch and async methods."""

    def __init__(self, *, name: str, candidates: Collection[str] | None = None) -> None:
        self._name = name
        self._candidates = resolve_candidates(candidates)

    @property
    def name(self) -> str:
        """The router's name, recorded in each decision."""
        return self._name

    @property
    def candidates(self) -> frozenset[str] | None:
        """The routes this router is restricted to by default (``None``: every route it knows)."""
        return self._candidates

    def _effective(self, candidates: Collection[str] | None) -> frozenset[str] | None:
        return resolve_candidates(candidates) if candidates is not None else self._candidates

    @abstractmethod
    def _route(self, query: str, candidates: frozenset[str] | None) -> RouteDecision:
        """Route one query over resolved candidates (``None``: no restriction)."""

    def route(self, query: str, *, candidates: Collection[str] | None = None) -> RouteDecision:
        """Route one query; see :class:`Router`."""
        return self._route(check_query(query), self._effective(candidates))

    def route_many(self, queries: Sequence[str], *, candidates: Collection[str] | None = None) -> list[RouteDecision]:
        """Route several queries; see :class:`Router`."""
        allowed = self._effective(candidates)
        return [self._route(check_query(q), allowed) for q in check_queries(queries)]

    async def aroute(self, query: str, *, candidates: Collection[str] | None = None) -> RouteDecision:
        """Async twin of :meth:`route` (runs on a worker thread)."""
        return await asyncio.to_thread(self.route, query, candidates=candidates)

    async def aroute_many(
        self, queries: Sequence[str], *, candidates: Collection[str] | None = None
    ) -> list[RouteDecision]:
        """Async twin of :meth:`route_many` (runs on a worker thread)."""
        return await asyncio.to_thread(self.route_many, queries, candidates=candidates)


class ScoringRouter(BaseRouter):
    """A router that scores every route it knows with a probability and applies :func:`decide`.

    Subclasses implement :meth:`score_many` (a batch of queries → one ``{route: probability}`` each).
    """

    def __init__(
        self,
        *,
        name: str,
        candidates: Collection[str] | None = None,
        threshold: float = DEFAULT_THRESHOLD,
        multi: bool = True,
    ) -> None:
        super().__init__(name=name, candidates=candidates)
        if not 0.0 <= threshold <= 1.0:
            raise RoutingError(f"threshold must be between 0 and 1, got {threshold}.")
        self.threshold = threshold
        self.multi = multi

    @property
    @abstractmethod
    def routes(self) -> tuple[str, ...]:
        """Every route this router can score."""

    @abstractmethod
    def score_many(self, queries: Sequence[str]) -> list[dict[str, float]]:
        """A probability per known route for each query."""

    def _decision(
        self, scores: Mapping[str, float], allowed: frozenset[str] | None, latency_ms: float
    ) -> RouteDecision:
        shown = {r: float(p) for r, p in scores.items() if allowed is None or r in allowed}
        routes = decide(scores, threshold=self.threshold, candidates=allowed, multi=self.multi)
        return RouteDecision(routes=routes, scores=shown, router=self.name, latency_ms=latency_ms)

    def prepare(self) -> None:
        """Load whatever scoring needs (models, indexes) so that latencies exclude it; a no-op here."""

    def _route(self, query: str, candidates: frozenset[str] | None) -> RouteDecision:
        self.prepare()
        start = time.perf_counter()
        (scores,) = self.score_many([query])
        return self._decision(scores, candidates, (time.perf_counter() - start) * 1000.0)

    def route_many(self, queries: Sequence[str], *, candidates: Collection[str] | None = None) -> list[RouteDecision]:
        """Route several queries in one batch; each decision's latency is the batch time divided evenly."""
        queries = [check_query(q) for q in check_queries(queries)]
        if not queries:
            return []
        allowed = self._effective(candidates)
        self.prepare()
        start = time.perf_counter()
        all_scores = self.score_many(queries)
        each = (time.perf_counter() - start) * 1000.0 / len(queries)
        return [self._decision(s, allowed, each) for s in all_scores]


def check_query(query: object) -> str:
    """``query`` when it is a non-empty string, else :class:`RoutingError`."""
    if not isinstance(query, str) or not query.strip():
        raise RoutingError(f"A query must be a non-empty string, got {query!r}.")
    return query


def check_queries(queries: object) -> Sequence[str]:
    """``queries`` as a list; a single string is refused with :class:`RoutingError` (use ``route``)."""
    if isinstance(queries, str):
        raise RoutingError("route_many expects a sequence of queries, not a single string; use route().")
    return list(queries)  # type: ignore[call-overload]
