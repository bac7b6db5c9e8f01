"""Routing by example: example queries registered per route, compared with the query by embedding similarity.

This is how a user-defined corpus becomes routable without training data or an LLM: register a handful
of questions it answers. A route's similarity is the mean cosine similarity of the query to its ``k``
nearest examples (its description counts as one more example); a softmax with ``temperature`` turns
similarities into probabilities, and :func:`~universalrag.routing.base.decide` picks the routes.

Description similarity alone (what LlamaIndex's ``EmbeddingSingleSelector`` does) is
:meth:`ExampleRouter.from_descriptions`.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ..errors import RoutingError
from ..types import CorpusSpec
from .base import DEFAULT_THRESHOLD, ROUTE_DESCRIPTIONS, ScoringRouter

__all__ = ["ExampleRouter", "default_embedder"]


@functools.cache
def default_embedder() -> Any:
    """The bundled MiniLM that every example router without an embedder of its own shares (one copy per
    process: each user-defined corpus rebuilds its example router). Pass the same instance to the pipeline as
    its text encoder to keep one encoder in memory. The constructor does no I/O; weights load on first use."""
    from ..embed import bundled_minilm

    return bundled_minilm()


class ExampleRouter(ScoringRouter):
    """Scores routes by similarity of the query to example queries (and descriptions) of each route.

    ``embedder`` is any :class:`~universalrag.embed.Embedder` (default: the bundled MiniLM, loaded on
    first use). Examples are embedded on first use and again after :meth:`add_examples`.
    """

    def __init__(
        self,
        examples: Mapping[str, Sequence[str]],
        *,
        descriptions: Mapping[str, str] | None = None,
        embedder: Any = None,
        k: int = 3,
        temperature: float = 0.05,
        threshold: float = DEFAULT_THRESHOLD,
        multi: bool = True,
        candidates: Collection[str] | None = None,
        name: str = "examples",
    ) -> None:
        super().__init__(name=name, candidates=candidates, threshold=threshold, multi=multi)
        if k < 1:
            raise RoutingError(f"k must be at least 1, got {k}.")
        if temperature <= 0:
            raise RoutingError(f"temperature must be positive, got {temperature}.")
        self._examples: dict[str, list[str]] = {}
        self._descriptions = dict(descriptions or {})
        for route, queries in examples.items():
            self._add(route, queries)
        for route in self._descriptions:
            self._examples.setdefault(route, [])
        if not self._examples:
            raise RoutingError("An ExampleRouter needs example queries or a description for at least one route.")
        self._embedder = embedder
        self.k = k
        self.temperature = temperature
        self._lock = threading.Lock()
        self._index: tuple[Any, list[str]] | None = None

    @classmethod
    def from_descriptions(cls, descriptions: Mapping[str, str] | None = None, **kwargs: Any) -> ExampleRouter:
        """Route by similarity to route descriptions only (default: the seven built-in routes)."""
        return cls(
            {},
            descriptions=descriptions if descriptions is not None else ROUTE_DESCRIPTIONS,
            **{"name": "descriptions", "k": 1, **kwargs},
        )

    @classmethod
    def with_builtin(cls, examples: Mapping[str, Sequence[str]] | None = None, **kwargs: Any) -> ExampleRouter:
        """The project's own example queries for the seven routes, plus ``examples`` for other corpora."""
        from .dataset import bundled_queries

        merged: dict[str, list[str]] = {}
        for row in bundled_queries():
            merged.setdefault(row.primary, []).append(row.query)
        for route, queries in (examples or {}).items():
            merged.setdefault(route, []).extend(queries)
        return cls(merged, **kwargs)

    @classmethod
    def from_corpora(
        cls, corpora: Sequence[CorpusSpec], examples: Mapping[str, Sequence[str]] | None = None, **kwargs: Any
    ) -> ExampleRouter:
        """Examples per corpus (e.g. ``CorpusSpec.metadata["examples"]``) with the corpora's descriptions."""
        ex = {c.name: list(c.metadata.get("examples", ())) for c in corpora}
        for route, queries in (examples or {}).items():
            ex.setdefault(route, []).extend(queries)
        return cls(ex, descriptions={c.name: c.description for c in corpora if c.description}, **kwargs)

    def _add(self, route: str, queries: Sequence[str]) -> None:
        if isinstance(queries, str):
            raise RoutingError(f"Examples for {route!r} must be a list of queries, not one string.")
        clean = [q.strip() for q in queries if isinstance(q, str) and q.strip()]
        self._examples.setdefault(route, []).extend(clean)

    def add_examples(self, route: str, queries: Sequence[str]) -> None:
        """Register more example queries for ``route`` (a new route is created)."""
        with self._lock:
            self._add(route, queries)
            self._index = None

    @property
    def routes(self) -> tuple[str, ...]:
        """Routes that have examples or a description."""
        return tuple(r for r, qs in self._examples.items() if qs or r in self._descriptions)

    @property
    def embedder(self) -> Any:
        """The embedder (the process-wide :func:`default_embedder` unless one was given)."""
        if self._embedder is None:
            self._embedder = default_embedder()
        return self._embedder

    def _build(self) -> tuple[Any, list[str]]:
        import numpy as np

        texts, owners = [], []
        for route in self.routes:
            items = list(self._examples[route])
            if route in self._descriptions:
                items.append(self._descriptions[route])
            texts += items
            owners += [route] * len(items)
        vectors = np.asarray(self.embedder.embed(texts), dtype=np.float32)
        return vectors, owners

    def prepare(self) -> None:
        """Embed the examples (once, and again after :meth:`add_examples`)."""
        with self._lock:
            if self._index is None:
                self._index = self._build()

    def score_many(self, queries: Sequence[str]) -> list[dict[str, float]]:
        """A probability per route (softmax over routes of the mean top-``k`` similarity)."""
        import numpy as np

        self.prepare()
        with self._lock:
            vectors, owners = self._index  # type: ignore[misc]
        q = np.asarray(self.embedder.embed(list(queries)), dtype=np.float32)
        sims = q @ vectors.T
        routes = self.routes
        owner = np.asarray(owners)
        per_route = np.stack(
            [np.sort(sims[:, owner == r], axis=1)[:, ::-1][:, : self.k].mean(axis=1) for r in routes], axis=1
        )
        logits = per_route / self.temperature
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        return [{r: float(p) for r, p in zip(routes, row, strict=True)} for row in probs]
