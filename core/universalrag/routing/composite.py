"""The trained router for the built-in routes, extended to user-defined corpora by example similarity.

The shipped router only knows the seven built-in routes. A user-defined corpus with example queries (or at
least a description) becomes routable without retraining: an :class:`ExampleRouter` that knows the project's
own example queries for the built-in routes *and* the user's examples scores every route; when it prefers a
user-defined corpus to every built-in one, that corpus is put first, followed by the trained router's routes.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence

from ..types import NO_RETRIEVAL, CorpusSpec, RouteDecision
from .base import ROUTES, BaseRouter, Router
from .examples import ExampleRouter

__all__ = ["CompositeRouter"]


class CompositeRouter(BaseRouter):
    """``primary`` (e.g. ``TrainedRouter.default()``) for the built-in routes; ``examples`` decides whether a
    user-defined corpus fits the query better than all of them."""

    def __init__(
        self,
        primary: Router,
        examples: ExampleRouter,
        *,
        user_routes: Collection[str],
        candidates: Collection[str] | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name or f"{primary.name}+examples", candidates=candidates)
        self.primary, self.examples = primary, examples
        self.user_routes = frozenset(user_routes) - set(ROUTES)

    @classmethod
    def for_corpora(cls, primary: Router, corpora: Sequence[CorpusSpec], **kwargs: object) -> CompositeRouter:
        """A composite over the user-defined ones among ``corpora`` (their ``metadata["examples"]`` and
        descriptions), with the project's own example queries standing for the built-in routes."""
        user = [c for c in corpora if c.name not in ROUTES]
        examples = {c.name: list(c.metadata.get("examples", ())) for c in user}
        descriptions = {c.name: c.description for c in user if c.description}
        router = ExampleRouter.with_builtin(examples, descriptions=descriptions)
        return cls(primary, router, user_routes=[c.name for c in user], **kwargs)  # type: ignore[arg-type]

    def _route(self, query: str, candidates: frozenset[str] | None) -> RouteDecision:
        started = time.perf_counter()
        builtin = None if candidates is None else candidates & set(ROUTES)
        base = self.primary.route(query, candidates=builtin)
        users = self.user_routes if candidates is None else self.user_routes & candidates
        if not users:
            return base
        scores = self.examples.score_many([query])[0]
        best_user = max(users, key=lambda r: scores.get(r, 0.0))
        best_builtin = max((scores.get(r, 0.0) for r in ROUTES if builtin is None or r in builtin), default=0.0)
        routes = base.routes
        if scores.get(best_user, 0.0) > best_builtin:
            routes = (best_user, *(r for r in base.routes if r != NO_RETRIEVAL))
        merged = {**base.scores, **{r: float(scores.get(r, 0.0)) for r in users}}
        return RouteDecision(
            routes=routes, scores=merged, router=self.name, latency_ms=(time.perf_counter() - started) * 1000
        )
