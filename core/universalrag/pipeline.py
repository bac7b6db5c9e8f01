"""The UniversalRAG facade: route → retrieve (each chosen corpus in its own space, in parallel, fused) →
generate. Sync methods with async twins; every part is injected or built from settings on first use."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import Settings
from .errors import ConfigError
from .evidence import EvidenceBudget, build_evidence
from .fusion import FUSIONS, fuse
from .ingest.pipeline import FileOutcome, IngestOptions, IngestReport, ingest_paths
from .retrieve import routing_candidates, search_corpus
from .store import Filter, Store
from .types import NO_RETRIEVAL, Answer, Hit, RouteDecision

if TYPE_CHECKING:
    from .embed.base import Embedder
    from .embed.visual import VisualEncoder
    from .generate.base import Generator
    from .routing.base import Router

__all__ = ["FUSIONS", "UniversalRAG", "fuse"]

_UNSET: Any = object()


class UniversalRAG:
    """Routed retrieval-augmented generation over corpora in Postgres.

    ``UniversalRAG()`` uses the embedded PostgreSQL (or ``UNIVERSALRAG_DATABASE_URL``), the bundled text
    encoder, the shipped trained router and, when ``UNIVERSALRAG_LLM_MODEL`` is set, an OpenAI-compatible
    chat model; without one, :meth:`query` returns the evidence with ``text=None``. The constructor does no
    I/O.
    """

    def __init__(self, *, database_url: str | None = None, schema: str | None = None,
                 settings: Settings | None = None, store: Store | None = None, embedder: Embedder | None = None,
                 router: Router | None = None, generator: Generator | None = _UNSET,
                 visual_encoder: VisualEncoder | None = _UNSET, k: int = 5, fusion: str = "rrf",
                 hybrid: bool = False, budget: EvidenceBudget = EvidenceBudget(), max_workers: int = 4) -> None:
        base = settings or Settings.from_env()
        self.settings = base.with_(database_url=database_url, schema=schema)
        if fusion not in FUSIONS:
            raise ConfigError(f"Unknown fusion {fusion!r}; choose one of {', '.join(FUSIONS)}.")
        self.k, self.fusion, self.hybrid, self.budget, self.max_workers = k, fusion, hybrid, budget, max_workers
        self._store, self._embedder, self._router = store, embedder, router
        self._generator, self._visual = generator, visual_encoder
        self._default_router = router is None
        self._composite: tuple[Any, Any] | None = None
        self._initialised = False

    def __repr__(self) -> str:
        return f"UniversalRAG(store={self.store!r}, k={self.k}, fusion={self.fusion!r}, hybrid={self.hybrid})"

    # -- parts, built on first use ---------------------------------------------------------------------
    @property
    def store(self) -> Store:
        """The corpus store."""
        if self._store is None:
            self._store = Store(settings=self.settings)
        return self._store

    @property
    def embedder(self) -> Embedder:
        """The text embedder."""
        if self._embedder is None:
            from .embed import embedder_from_settings

            self._embedder = embedder_from_settings(self.settings)
        return self._embedder

    @property
    def router(self) -> Router:
        """The router (default: the shipped trained router)."""
        if self._router is None:
            from .routing import TrainedRouter

            self._router = TrainedRouter.default()
        return self._router

    @property
    def generator(self) -> Generator | None:
        """The answer generator, or ``None`` (retrieval only)."""
        if self._generator is _UNSET:
            from .generate import OpenAIChatGenerator

            self._generator = OpenAIChatGenerator.from_settings(self.settings)
        return self._generator

    @property
    def visual_encoder(self) -> VisualEncoder | None:
        """The visual encoder for images, clips and videos, or ``None``."""
        if self._visual is _UNSET:
            from .embed import visual_encoder_from_settings

            self._visual = visual_encoder_from_settings(self.settings)
        return self._visual

    def init(self) -> list[str]:
        """Create or upgrade the schema and the built-in corpora (idempotent); returns the corpora created."""
        created = self.store.init(embedder=self.embedder.name, dimension=self.embedder.dimension)
        self._initialised = True
        return created

    def close(self) -> None:
        """Release database connections."""
        if self._store is not None:
            self._store.close()

    def __enter__(self) -> UniversalRAG:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the four steps ----------------------------------------------------------------------------------
    def ingest(self, paths: Sequence[str | Path], *, corpus: str | None = None,
               options: IngestOptions | None = None, on_file: Callable[[FileOutcome], None] | None = None,
               on_start: Callable[[int], None] | None = None, strict: bool = False) -> IngestReport:
        """Ingest files and folders into their corpora (see :func:`universalrag.ingest_paths`; ``strict`` fails
        the files a folder holds that are not ingested, instead of skipping them)."""
        if not self._initialised:
            self.init()
        opts = options or IngestOptions(visual_encoder=self.visual_encoder)
        return ingest_paths(self.store, self.embedder, paths, corpus=corpus, options=opts, on_file=on_file,
                            on_start=on_start, strict=strict)

    def route(self, query: str) -> RouteDecision:
        """Which corpora to search for ``query``: the router's decision among the corpora that hold rows.

        With the default router, user-defined corpora are routed by their example queries and descriptions
        (:class:`~universalrag.routing.CompositeRouter`) beside the shipped router's seven routes.
        """
        candidates = routing_candidates(self.store)
        router = self.router
        if self._default_router:
            from .routing import ROUTES, CompositeRouter

            user = [self.store.corpus(c) for c in candidates if c not in ROUTES]
            if user:
                key = tuple(sorted((s.name, tuple(s.metadata.get("examples", ())), s.description) for s in user))
                if self._composite is None or self._composite[0] != key:
                    self._composite = (key, CompositeRouter.for_corpora(router, user))
                router = self._composite[1]
        return router.route(query, candidates=candidates)

    def _search(self, corpus: str, query: str, k: int, filters: Filter | None) -> list[Hit]:
        spec = self.store.corpus(corpus)
        return search_corpus(self.store, self.embedder, corpus, query, k=k, filter=filters,
                             visual_encoder=self.visual_encoder if spec.visual_encoder else None,
                             visual_weight=self.settings.visual_weight_for(spec.modality),
                             lexical_text=query if self.hybrid else None)

    def retrieve(self, query: str, *, k: int | None = None, routes: Sequence[str] | None = None,
                 filters: Filter | None = None, decision: RouteDecision | None = None) -> list[Hit]:
        """The fused hits of the chosen corpora (``routes`` overrides the router); ``none`` searches nothing.

        Each corpus is searched for its own top ``k`` in its own embedding space, in parallel threads; the
        rankings are fused (reciprocal rank fusion by default) and the best ``k`` per corpus are kept.
        """
        k = k or self.k
        chosen = list(routes) if routes is not None else list((decision or self.route(query)).routes)
        corpora = [r for r in dict.fromkeys(chosen) if r != NO_RETRIEVAL]
        if not corpora:
            return []
        for name in corpora:
            self.store.corpus(name)  # unknown corpus: a clear error before any thread starts
        if len(corpora) == 1:
            return self._search(corpora[0], query, k, filters)
        with ThreadPoolExecutor(max_workers=min(self.max_workers, len(corpora))) as pool:
            per_corpus = list(pool.map(lambda c: self._search(c, query, k, filters), corpora))
        return fuse(per_corpus, method=self.fusion)

    def query(self, query: str, *, k: int | None = None, routes: Sequence[str] | None = None,
              filters: Filter | None = None) -> Answer:
        """Route, retrieve and generate. Without a generator, ``Answer.text`` is ``None`` and the evidence is
        returned; with the ``none`` route, the model answers from its own knowledge."""
        timings: dict[str, float] = {}
        started = time.perf_counter()
        if routes is not None:
            decision = RouteDecision(routes=tuple(routes), scores={}, router="caller")
        else:
            decision = self.route(query)
        timings["route"] = (time.perf_counter() - started) * 1000
        mark = time.perf_counter()
        hits = self.retrieve(query, k=k, routes=decision.routes, filters=filters)
        timings["retrieve"] = (time.perf_counter() - mark) * 1000
        generator = self.generator
        if generator is None:
            return Answer(text=None, decision=decision, hits=tuple(hits), timings=timings)
        mark = time.perf_counter()
        evidence = build_evidence(hits, budget=self.budget)
        timings["evidence"] = (time.perf_counter() - mark) * 1000
        mark = time.perf_counter()
        generation = generator.generate(query, evidence)
        timings["generate"] = (time.perf_counter() - mark) * 1000
        return Answer(text=generation.text, decision=decision, hits=tuple(hits), citations=generation.citations,
                      timings=timings)

    # -- async twins (the work runs in worker threads; the database driver and encoders are blocking) ------
    async def aingest(self, paths: Sequence[str | Path], **kwargs: Any) -> IngestReport:
        """Async twin of :meth:`ingest`."""
        return await asyncio.to_thread(self.ingest, paths, **kwargs)

    async def aroute(self, query: str) -> RouteDecision:
        """Async twin of :meth:`route`."""
        return await asyncio.to_thread(self.route, query)

    async def aretrieve(self, query: str, **kwargs: Any) -> list[Hit]:
        """Async twin of :meth:`retrieve`."""
        return await asyncio.to_thread(self.retrieve, query, **kwargs)

    async def aquery(self, query: str, **kwargs: Any) -> Answer:
        """Async twin of :meth:`query`."""
        return await asyncio.to_thread(self.query, query, **kwargs)
