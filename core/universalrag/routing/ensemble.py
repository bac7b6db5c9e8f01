"""Ensembles of routers, as in the UniversalRAG paper's Table 6.

- ``confidence``: the first router's decision when its top probability reaches ``tau``, else the second
  router's (typically: trained first, LLM second). If the second router fails, the first one's decision
  is kept.
- ``vote``: three or more routers; the primary route is the one most routers put first (a tie is broken
  at random, reproducibly per query and seed); other routes join when more than half the routers chose
  them. Scores are the share of routers that chose each route.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import random
import time
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any

from ..errors import RoutingError
from ..types import RouteDecision
from .base import BaseRouter, Router, apply_exclusions, check_queries, check_query

__all__ = ["STRATEGIES", "EnsembleRouter", "top_probability", "vote"]

logger = logging.getLogger(__name__)


def top_probability(decision: RouteDecision) -> float:
    """The score of the decision's primary route (0.0 when the router gave none)."""
    return float(decision.scores.get(decision.primary, 0.0))


def vote(
    decisions: Sequence[RouteDecision], *, key: str = "", seed: int = 0
) -> tuple[tuple[str, ...], dict[str, float]]:
    """Majority vote over decisions: ``(routes, scores)``. Ties on the primary route are broken by a
    random choice seeded with ``seed`` and ``key`` (the query), so the same inputs give the same answer."""
    if not decisions:
        raise RoutingError("A vote needs at least one decision.")
    firsts = Counter(d.primary for d in decisions)
    best = max(firsts.values())
    tied = sorted(r for r, c in firsts.items() if c == best)
    if len(tied) > 1:
        digest = hashlib.sha256(f"{seed}\x00{key}".encode()).digest()
        winner = random.Random(int.from_bytes(digest[:8], "big")).choice(tied)
    else:
        winner = tied[0]
    included = Counter(r for d in decisions for r in set(d.routes))
    n = len(decisions)
    others = sorted((r for r, c in included.items() if r != winner and c * 2 > n), key=lambda r: (-included[r], r))
    scores = {r: included[r] / n for r in sorted(included, key=lambda r: (-included[r], r))}
    return apply_exclusions([winner, *others]), scores


class _Confidence:
    """The first router when its top probability reaches ``tau``, else the second (first kept on failure)."""

    minimum = 2

    @staticmethod
    def _keep_first(ens: EnsembleRouter, error: RoutingError) -> None:
        logger.warning(
            "Ensemble: %s failed (%s); keeping %s's decision.", ens.routers[1].name, error, ens.routers[0].name
        )

    def route(self, ens: EnsembleRouter, query: str, allowed: frozenset[str] | None) -> RouteDecision:
        first = ens.routers[0].route(query, candidates=allowed)
        if top_probability(first) >= ens.tau:
            return first
        try:
            return ens.routers[1].route(query, candidates=allowed)
        except RoutingError as e:
            self._keep_first(ens, e)
            return first

    def route_many(
        self, ens: EnsembleRouter, queries: list[str], allowed: frozenset[str] | None
    ) -> list[RouteDecision]:
        out = ens.routers[0].route_many(queries, candidates=allowed)
        unsure = [i for i, d in enumerate(out) if top_probability(d) < ens.tau]
        if unsure:
            try:
                seconds = ens.routers[1].route_many([queries[i] for i in unsure], candidates=allowed)
            except RoutingError as e:
                self._keep_first(ens, e)
            else:
                for i, d in zip(unsure, seconds, strict=True):
                    out[i] = d
        return out

    async def aroute(self, ens: EnsembleRouter, query: str, allowed: frozenset[str] | None) -> RouteDecision:
        first = await ens.routers[0].aroute(query, candidates=allowed)
        if top_probability(first) >= ens.tau:
            return first
        try:
            return await ens.routers[1].aroute(query, candidates=allowed)
        except RoutingError as e:
            self._keep_first(ens, e)
            return first


class _Vote:
    """Majority vote over three or more routers (see :func:`vote`)."""

    minimum = 3

    @staticmethod
    def _combine(ens: EnsembleRouter, query: str, decisions: Sequence[RouteDecision]) -> RouteDecision:
        routes, scores = vote(decisions, key=query, seed=ens.seed)
        return RouteDecision(routes, scores, "vote")

    def route(self, ens: EnsembleRouter, query: str, allowed: frozenset[str] | None) -> RouteDecision:
        return self._combine(ens, query, [r.route(query, candidates=allowed) for r in ens.routers])

    def route_many(
        self, ens: EnsembleRouter, queries: list[str], allowed: frozenset[str] | None
    ) -> list[RouteDecision]:
        per_router = [r.route_many(queries, candidates=allowed) for r in ens.routers]
        return [self._combine(ens, q, [d[i] for d in per_router]) for i, q in enumerate(queries)]

    async def aroute(self, ens: EnsembleRouter, query: str, allowed: frozenset[str] | None) -> RouteDecision:
        decisions = await asyncio.gather(*(r.aroute(query, candidates=allowed) for r in ens.routers))
        return self._combine(ens, query, decisions)


#: Ensemble strategies by name (a registry: add a class with ``minimum``, ``route``, ``route_many``, ``aroute``).
STRATEGIES: dict[str, Any] = {"confidence": _Confidence(), "vote": _Vote()}


class EnsembleRouter(BaseRouter):
    """Combines routers with a strategy from :data:`STRATEGIES` (``confidence`` or ``vote``).

    Build with :meth:`confident` or :meth:`majority`, or pass ``strategy`` by name. Each decision's
    ``router`` reads ``ensemble[<the member that decided>]`` (``ensemble[vote]`` for a vote).
    """

    def __init__(
        self,
        routers: Sequence[Router],
        *,
        strategy: str = "confidence",
        tau: float = 0.9,
        seed: int = 0,
        candidates: Collection[str] | None = None,
        name: str = "ensemble",
    ) -> None:
        super().__init__(name=name, candidates=candidates)
        if strategy not in STRATEGIES:
            raise RoutingError(f"Unknown ensemble strategy {strategy!r}; choose one of {sorted(STRATEGIES)}.")
        self._strategy = STRATEGIES[strategy]
        if len(routers) < self._strategy.minimum:
            raise RoutingError(
                f"The {strategy!r} ensemble needs at least {self._strategy.minimum} routers, got {len(routers)}."
            )
        if not 0.0 <= tau <= 1.0:
            raise RoutingError(f"tau must be between 0 and 1, got {tau}.")
        self.routers = list(routers)
        self.strategy = strategy
        self.tau = tau
        self.seed = seed

    @classmethod
    def confident(cls, primary: Router, secondary: Router, *, tau: float = 0.9, **kwargs: Any) -> EnsembleRouter:
        """``primary``'s decision when its top probability is at least ``tau``, else ``secondary``'s."""
        return cls([primary, secondary], strategy="confidence", tau=tau, **kwargs)

    @classmethod
    def majority(cls, routers: Sequence[Router], *, seed: int = 0, **kwargs: Any) -> EnsembleRouter:
        """Majority vote over three or more routers."""
        return cls(routers, strategy="vote", seed=seed, **kwargs)

    def __repr__(self) -> str:
        return f"EnsembleRouter(strategy={self.strategy!r}, routers={[r.name for r in self.routers]}, tau={self.tau})"

    def _label(self, decision: RouteDecision, latency_ms: float) -> RouteDecision:
        return dataclasses.replace(decision, router=f"{self.name}[{decision.router}]", latency_ms=latency_ms)

    def prepare(self) -> None:
        """Prepare every member router that can be prepared (load models before timing)."""
        for router in self.routers:
            prepare = getattr(router, "prepare", None)
            if callable(prepare):
                prepare()

    def _route(self, query: str, candidates: frozenset[str] | None) -> RouteDecision:
        self.prepare()
        start = time.perf_counter()
        decision = self._strategy.route(self, query, candidates)
        return self._label(decision, (time.perf_counter() - start) * 1000.0)

    def route_many(self, queries: Sequence[str], *, candidates: Collection[str] | None = None) -> list[RouteDecision]:
        """Route several queries, batching each member router's work (latency amortised over the batch)."""
        queries = [check_query(q) for q in check_queries(queries)]
        if not queries:
            return []
        start = time.perf_counter()
        decisions = self._strategy.route_many(self, queries, self._effective(candidates))
        each = (time.perf_counter() - start) * 1000.0 / len(queries)
        return [self._label(d, each) for d in decisions]

    async def aroute(self, query: str, *, candidates: Collection[str] | None = None) -> RouteDecision:
        """Async twin of :meth:`route` (members' async methods; a vote runs them concurrently)."""
        query = check_query(query)
        start = time.perf_counter()
        decision = await self._strategy.aroute(self, query, self._effective(candidates))
        return self._label(decision, (time.perf_counter() - start) * 1000.0)

    async def aroute_many(
        self, queries: Sequence[str], *, candidates: Collection[str] | None = None
    ) -> list[RouteDecision]:
        """Async twin of :meth:`route_many` (queries routed concurrently)."""
        return list(await asyncio.gather(*(self.aroute(q, candidates=candidates) for q in check_queries(queries))))
