"""``UniversalRAGSelector``: the core's router as a LlamaIndex selector.

LlamaIndex's ``RouterQueryEngine`` and ``RouterRetriever`` ask a selector to pick among ``ToolMetadata``
choices. This selector routes the query with a universalrag router over routes, so each choice is first
mapped to one route, in this order:

1. **explicitly**, by ``choice_routes={"choice name": "route"}``;
2. **by name**, when the choice's name is a route or a corpus name (``table``, ``slides``), or
   ``search_<name>`` (the tools :func:`corpus_retriever_tools` makes), case-insensitively;
3. **by description**, otherwise: the choice's description is compared with the route descriptions (the seven
   built-in routes of :data:`universalrag.routing.ROUTE_DESCRIPTIONS`, and the registry's corpus descriptions
   when ``rag`` is given) by the core's :meth:`ExampleRouter.from_descriptions` — embedding similarity — and
   mapped to the most similar route; with ``rag``, only among ``none`` and the corpora that hold units (a choice
   mapped to an empty corpus could never be selected). A choice describing an LLM that answers from general
   knowledge maps to ``none``.

Then the query is routed with the mapped routes as its only candidates:

- **with ``rag=``** (and no ``router=``), by the pipeline's evidence-aware routing
  (:meth:`UniversalRAG.route <universalrag.pipeline.UniversalRAG.route>`): the router's prior plus a probe of
  every candidate corpus that holds units. The question-only router alone sends ordinary questions to ``none``
  or to corpora with nothing in them; a probe sees where the evidence is. A choice whose corpus is empty is never
  a candidate, and ``none`` is concluded only when a choice stands for ``none`` (like ``allow_none=False`` in the
  core: an engine of tools is never left with nothing to call).
- **with ``router=``**, or without ``rag``, by that router on the question alone.

Every choice mapped to a chosen route is selected, primary route first (several when the decision is multi-label
and ``multi=True``). When no choice stands for the decision (the router decided ``none`` and no choice maps to
``none``), the ``fallback`` choice is selected: by default ``"best"``, the choice whose route scored highest
(choices of empty corpora last), or a choice index or name; ``fallback=None`` is strict and raises a
:class:`~universalrag.errors.RoutingError` explaining what to do. Mappings are cached per set of choices.

A router only chooses routes it can score: the shipped trained router knows the seven built-in routes; route to
user-defined corpora with an :class:`~universalrag.routing.ExampleRouter` (``router=``), or give ``rag=``, whose
probes score every corpus.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from llama_index.core.base.base_selector import BaseSelector, MultiSelection, SelectorResult, SingleSelection
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.schema import QueryBundle
from llama_index.core.tools.types import ToolMetadata

from universalrag.errors import RoutingError
from universalrag.pipeline import UniversalRAG
from universalrag.routing import ROUTE_DESCRIPTIONS, ExampleRouter, Router
from universalrag.types import NO_RETRIEVAL, RouteDecision

from .base import TOOL_PREFIX

__all__ = ["ChoiceRoute", "UniversalRAGSelector"]


def _matchable(descriptions: Mapping[str, str], empty: frozenset[str]) -> dict[str, str]:
    """The routes a choice's description may map to: those of corpora holding units and ``none``. A choice mapped
    to an empty corpus is never selected, and the built-in descriptions pull documentation tools there: "Passages
    of the bzip2, zlib and nettle manuals" came closest to ``video``. All of them when every corpus is empty."""
    kept = {route: text for route, text in descriptions.items() if route not in empty}
    return kept if any(route != NO_RETRIEVAL for route in kept) else dict(descriptions)


@dataclass(frozen=True, slots=True)
class ChoiceRoute:
    """The route a choice stands for, how it was found (``explicit``, ``name`` or ``description``) and, for
    descriptions, the description-similarity probability of that route."""

    route: str
    how: Literal["explicit", "name", "description"]
    probability: float | None = None


class UniversalRAGSelector(BaseSelector):
    """Selects LlamaIndex choices (``ToolMetadata``) with a universalrag router; see the module docstring.

    Give ``rag=`` (its router, its embedder and its registry's corpus descriptions are used) and/or ``router=``
    (replaces the evidence-aware routing of ``rag`` by that router on the question alone). ``embedder`` matches
    descriptions (default: ``rag.embedder``, else the bundled MiniLM). ``choice_routes`` maps choice names to
    routes explicitly. ``multi=False`` selects one choice only. ``fallback`` is selected when no choice stands for
    the decision: ``"best"`` (default: the best-scoring choice, so a ``RouterQueryEngine`` always gets an engine),
    a choice index or name, or ``None`` to raise a :class:`~universalrag.errors.RoutingError` instead.
    """

    def __init__(
        self,
        *,
        rag: UniversalRAG | None = None,
        router: Router | None = None,
        embedder: Any = None,
        choice_routes: Mapping[str, str] | None = None,
        multi: bool = True,
        fallback: int | str | None = "best",
    ) -> None:
        if rag is None and router is None:
            raise ValueError("UniversalRAGSelector needs rag= (a UniversalRAG) or router= (a universalrag Router).")
        if isinstance(fallback, bool):
            raise TypeError("fallback must be a choice index, a choice name or 'best', not a bool.")
        self.rag = rag
        self._router = router
        self._embedder = embedder
        self.choice_routes = dict(choice_routes or {})
        self.multi = multi
        self.fallback = fallback
        self._lock = threading.Lock()
        self._matcher: tuple[dict[str, str], ExampleRouter] | None = None
        self._cache: dict[tuple[tuple[tuple[str | None, str], ...], frozenset[str]], list[ChoiceRoute]] = {}

    def __repr__(self) -> str:
        return f"UniversalRAGSelector(router={self._router_name()!r}, multi={self.multi}, fallback={self.fallback!r})"

    def _router_name(self) -> str:
        return self.rag.routing.name if self._evidence_aware() and self.rag is not None else self.router.name

    def _evidence_aware(self) -> bool:
        """Whether routing probes the corpora (``rag=`` without ``router=``)."""
        return self.rag is not None and self._router is None

    # -- prompt mixin: this selector has no prompts ---------------------------------------------------------
    def _get_prompts(self) -> PromptDictType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        """Nothing to update: routing uses no prompt here."""

    # -- parts ----------------------------------------------------------------------------------------------
    @property
    def router(self) -> Router:
        """The router deciding the routes (``router=``, else ``rag.router``)."""
        if self._router is not None:
            return self._router
        assert self.rag is not None
        return self.rag.router

    def route_descriptions(self) -> dict[str, str]:
        """The descriptions choices are matched against: built-in routes, plus the registry's corpora."""
        out = dict(ROUTE_DESCRIPTIONS)
        if self.rag is not None:
            out.update({name: spec.description for name, spec in self.rag.store.corpora().items() if spec.description})
        return out

    def _known_routes(self, descriptions: Mapping[str, str]) -> set[str]:
        return set(descriptions) | set(getattr(self.router, "routes", ()) or ())

    def _description_matcher(self, descriptions: dict[str, str]) -> ExampleRouter:
        if self._matcher is None or self._matcher[0] != descriptions:
            embedder = self._embedder or (self.rag.embedder if self.rag is not None else None)
            self._matcher = (
                descriptions,
                ExampleRouter.from_descriptions(descriptions, embedder=embedder, multi=False),
            )
        return self._matcher[1]

    # -- mapping choices to routes --------------------------------------------------------------------------
    def map_choices(self, choices: Sequence[ToolMetadata | str]) -> list[ChoiceRoute]:
        """The route each choice stands for (explicit mapping, then name, then description similarity)."""
        metas = [c if isinstance(c, ToolMetadata) else ToolMetadata(description=str(c)) for c in choices]
        empty = self._empty_corpora()
        key = (tuple((m.name, m.description) for m in metas), empty)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
            descriptions = self.route_descriptions()
            known = self._known_routes(descriptions)
            mapped: list[ChoiceRoute | None] = [self._by_name(m, known) for m in metas]
            pending = [i for i, m in enumerate(mapped) if m is None]
            if pending:
                scores = self._description_matcher(_matchable(descriptions, empty)).score_many(
                    [metas[i].description or metas[i].name or "" for i in pending]
                )
                for i, row in zip(pending, scores, strict=True):
                    best = max(row, key=row.__getitem__)
                    mapped[i] = ChoiceRoute(best, "description", row[best])
            result = [m for m in mapped if m is not None]
            self._cache[key] = result
            return result

    def _by_name(self, meta: ToolMetadata, known: set[str]) -> ChoiceRoute | None:
        if meta.name is not None and meta.name in self.choice_routes:
            return ChoiceRoute(self.choice_routes[meta.name], "explicit")
        name = (meta.name or "").strip().lower()
        for candidate in (name, name.removeprefix(TOOL_PREFIX)):
            if candidate and candidate in known:
                return ChoiceRoute(candidate, "name")
        return None

    # -- selecting ------------------------------------------------------------------------------------------
    def select_with_decision(
        self, choices: Sequence[ToolMetadata | str], query: QueryBundle | str
    ) -> tuple[SelectorResult, RouteDecision]:
        """The selection and the router's decision behind it."""
        metas = [c if isinstance(c, ToolMetadata) else ToolMetadata(description=str(c)) for c in choices]
        if not metas:
            raise RoutingError("UniversalRAGSelector got no choices to select from.")
        query_str = query.query_str if isinstance(query, QueryBundle) else query
        mapping = self.map_choices(metas)
        empty = self._empty_corpora()
        decision = self._decide(query_str, [m.route for m in mapping], empty)
        return self._selection(metas, mapping, decision, query_str, empty), decision

    def _empty_corpora(self) -> frozenset[str]:
        """Registered corpora holding no units (the core's cached size estimates), which no choice is routed to."""
        if self.rag is None:
            return frozenset()
        return frozenset(name for name, n in self.rag.routing.sizes(self.rag.searcher).items() if n <= 0)

    def _decide(self, query: str, routes: Sequence[str], empty: frozenset[str]) -> RouteDecision:
        """The decision over ``routes``: evidence-aware with ``rag`` (empty corpora left out, ``none`` only when a
        choice stands for it), else the question-only router."""
        candidates = [r for r in dict.fromkeys(routes) if r not in empty]
        if not self._evidence_aware() or not any(r != NO_RETRIEVAL for r in candidates):
            return self.router.route(query, candidates=set(candidates or routes))
        assert self.rag is not None
        plan = self.rag.plan(
            query, candidates=[r for r in candidates if r != NO_RETRIEVAL], allow_none=NO_RETRIEVAL in candidates
        )
        return self.rag.route(plan)

    def _selection(
        self,
        metas: Sequence[ToolMetadata],
        mapping: Sequence[ChoiceRoute],
        decision: RouteDecision,
        query: str,
        empty: frozenset[str] = frozenset(),
    ) -> SelectorResult:
        picks: list[SingleSelection] = []
        for route in decision.routes:
            if route in empty:
                continue
            for index, item in enumerate(mapping):
                if item.route == route:
                    picks.append(SingleSelection(index=index, reason=self._reason(metas[index], item, decision)))
        if not picks:
            picks = [self._fallback(metas, mapping, decision, query, empty)]
        return MultiSelection(selections=picks if self.multi else picks[:1])

    @staticmethod
    def _how(item: ChoiceRoute) -> str:
        if item.how == "description":
            return f"by description similarity (p={item.probability or 0.0:.2f})"
        return "by the choice_routes= mapping" if item.how == "explicit" else "by its name"

    def _reason(self, meta: ToolMetadata, item: ChoiceRoute, decision: RouteDecision) -> str:
        p = decision.scores.get(item.route)
        score = f" (p={p:.2f})" if p is not None else ""
        return (
            f"router {decision.router!r} chose route {item.route!r}{score}; "
            f"choice {meta.name or meta.description[:40]!r} stands for that route {self._how(item)}."
        )

    def _fallback(
        self,
        metas: Sequence[ToolMetadata],
        mapping: Sequence[ChoiceRoute],
        decision: RouteDecision,
        query: str,
        empty: frozenset[str] = frozenset(),
    ) -> SingleSelection:
        routes = ", ".join(decision.routes) or NO_RETRIEVAL
        if self.fallback is None:
            raise RoutingError(
                f"The router chose {routes} for {query!r}, and no choice stands for that route. Add a choice named "
                f"{NO_RETRIEVAL!r} (for instance a query engine that answers from the LLM alone), or drop "
                "fallback=None from UniversalRAGSelector (its default, 'best', selects the best-scoring choice; a "
                "choice index or name selects that choice)."
            )
        names = [m.name for m in metas]
        if isinstance(self.fallback, int):
            if not 0 <= self.fallback < len(metas):
                raise RoutingError(f"fallback={self.fallback} is not a choice index (there are {len(metas)}).")
            index = self.fallback
        elif self.fallback in names:
            index = names.index(self.fallback)
        elif self.fallback == "best":
            order = (
                [i for i, m in enumerate(mapping) if m.route != NO_RETRIEVAL and m.route not in empty]
                or [i for i, m in enumerate(mapping) if m.route != NO_RETRIEVAL]
                or list(range(len(metas)))
            )
            index = max(order, key=lambda i: decision.scores.get(mapping[i].route, 0.0))
        else:
            raise RoutingError(f"fallback={self.fallback!r} names no choice; choices are {names}.")
        meta, item = metas[index], mapping[index]
        reason = (
            f"fallback: router {decision.router!r} chose {routes}, which no choice stands for; selected "
            f"{meta.name or meta.description[:40]!r} (route {item.route!r} {self._how(item)})."
        )
        return SingleSelection(index=index, reason=reason)

    def _select(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> SelectorResult:
        return self.select_with_decision(choices, query)[0]

    async def _aselect(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> SelectorResult:
        return (await asyncio.to_thread(self.select_with_decision, choices, query))[0]
