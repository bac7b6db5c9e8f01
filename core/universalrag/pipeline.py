"""The UniversalRAG facade: route → retrieve (each chosen corpus in its own space, in parallel, fused) →
generate. Sync methods with async twins; every part is injected or built from settings on first use."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from .config import Settings
from .decision_log import DecisionLog, query_hash
from .errors import ConfigError, GenerationError, RoutingError, StoreError
from .evidence import EvidenceBudget, build_evidence, source_label
from .fusion import FUSIONS, SOURCE_DEPTH, SOURCE_WEIGHT, fuse
from .graph.retrieve import GraphRetrieval
from .plan import DEFAULT_K, QueryPlan, QueryVectors, bounded_query, check_k
from .retrieve import EvidenceRouting, Retrieval, Searcher
from .spelling import Correction, correct
from .store import Filter, Store
from .store.filters import paths_as_uris
from .types import NO_RETRIEVAL, Answer, Hit, RouteDecision

if TYPE_CHECKING:
    from .adapt import AdaptReport, Example
    from .embed.base import Embedder
    from .embed.visual import VisualEncoder
    from .generate.base import Generator
    from .graph.api import Graph as KnowledgeGraph
    from .ingest.pipeline import FileOutcome, IngestOptions, IngestReport
    from .ingest.report import Progress
    from .routing.base import Router
    from .routing.combiner import Combiner

__all__ = ["FUSIONS", "UniversalRAG", "fuse"]

_log = logging.getLogger(__name__)
_UNSET: Any = object()
_BUDGET = EvidenceBudget()


class UniversalRAG:
    """Routed retrieval-augmented generation over corpora in Postgres.

    ``UniversalRAG()`` uses the embedded PostgreSQL (or ``UNIVERSALRAG_DATABASE_URL``), the bundled text
    encoder, evidence-aware routing (the shipped trained router as a prior, a probe of every corpus, and the
    learned combiner — the one adapted to this database by :meth:`adapt_router` when there is one) and, when
    ``UNIVERSALRAG_LLM_MODEL`` is set, an OpenAI-compatible chat model; without one, :meth:`query` returns the
    evidence with ``text=None``. A ``router`` given without a ``combiner`` decides alone (no probes). Decisions
    are logged in the ``routing_log`` table (``log_decisions``; the query's text only with
    ``log_query_text=True``). A query's typos are corrected to words its corpora hold before it is routed and
    searched (:mod:`universalrag.spelling`; ``spelling=False`` turns that off). The vectors of the latest query texts
    are kept per model (``query_vectors``, :class:`~universalrag.plan.QueryVectors`; ``Settings.query_vectors``, 256,
    0 for none): the same question asked again — of another per-corpus tool, by another graph node — is not
    embedded again. The constructor does no I/O.

    The arguments every call shares mean one thing everywhere (here and in the LangChain and LlamaIndex adapters):

    - ``k``: how many results; ``None`` (left out) is this pipeline's ``k`` (default
      :data:`~universalrag.plan.DEFAULT_K`, 5). Below 1 is refused with an
      :class:`~universalrag.errors.InvalidInputError` (:func:`~universalrag.plan.check_k`), never read as the default.
    - ``routes``: the corpora to search instead of asking the router, as a list (``["none"]`` searches nothing).
    - ``allow_none``: whether routing may conclude ``none`` (nothing to search); when it may not, a ``none``
      conclusion searches the most likely corpus instead (the decision says ``fallback``). The default follows
      what the call returns: ``True`` where it returns a decision or an answer (:meth:`plan`, :meth:`route`,
      :meth:`query`; the query engines), where ``none`` is a result; ``False`` where it returns hits
      (:meth:`retrieve`, :meth:`search`; the retrievers, tools and LangGraph nodes), where a caller asking for
      evidence should not get an empty list because the question looked answerable without it.
    """

    def __init__(
        self,
        *,
        database_url: str | None = None,
        schema: str | None = None,
        settings: Settings | None = None,
        store: Store | None = None,
        embedder: Embedder | None = None,
        router: Router | None = None,
        combiner: Combiner | None = _UNSET,
        generator: Generator | None = _UNSET,
        visual_encoder: VisualEncoder | None = _UNSET,
        k: int = DEFAULT_K,
        fusion: str = "auto",
        hybrid: bool = False,
        budget: EvidenceBudget = _BUDGET,
        max_workers: int = 4,
        log_decisions: bool = True,
        log_query_text: bool = False,
        source_weight: float = SOURCE_WEIGHT,
        spelling: bool = True,
        walk_graph: bool = True,
    ) -> None:
        base = settings or Settings.from_env()
        self.settings = base.with_(database_url=database_url, schema=schema)
        if fusion not in FUSIONS:
            raise ConfigError(f"Unknown fusion {fusion!r}; choose one of {', '.join(FUSIONS)}.")
        if not 0.0 <= source_weight <= 1.0:
            raise ConfigError(
                f"source_weight must be between 0 and 1 (0 turns the source evidence off), got {source_weight}."
            )
        self.k, self.fusion, self.hybrid, self.budget, self.max_workers = (
            check_k(k),
            fusion,
            hybrid,
            budget,
            max_workers,
        )
        self.spelling = spelling
        #: The knowledge graph's retrieval, walked beside the probes (``walk_graph=False``: never; a schema without a
        #: graph costs nothing).
        self.graph_retrieval = GraphRetrieval() if walk_graph else None
        self.source_weight = float(source_weight)
        self.log_decisions, self.log_query_text = log_decisions, log_query_text
        self._store, self._embedder, self._router = store, embedder, router
        self._generator, self._visual = generator, visual_encoder
        self._combiner: Any = combiner if combiner is not _UNSET or router is None else None
        self._routing: EvidenceRouting | None = None
        self._log: DecisionLog | None = None
        self._pool: ThreadPoolExecutor | None = None
        self.query_vectors = QueryVectors(self.settings.query_vectors) if self.settings.query_vectors else None
        self._lock = threading.Lock()
        self._knowledge_graph: KnowledgeGraph | None = None
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
        """The router (default: the shipped trained router, used as the prior of evidence-aware routing)."""
        if self._router is None:
            from .routing import TrainedRouter

            self._router = TrainedRouter.default()
        return self._router

    @property
    def combiner(self) -> Combiner | None:
        """The combiner deciding from prior and evidence: the one stored in the database by :meth:`adapt_router`,
        else the shipped one (``None`` when a ``router`` was given without a combiner)."""
        if self._combiner is _UNSET:
            from .routing.combiner import Combiner
            from .store.routing_log import load_combiner

            stored = load_combiner(self.store)
            self._combiner = Combiner.from_dict(stored) if stored else Combiner.default()
        return self._combiner

    @property
    def routing(self) -> EvidenceRouting:
        """The evidence-aware routing step (router prior + probes + combiner)."""
        with self._lock:
            if self._routing is None:
                self._routing = EvidenceRouting(self.router, self.combiner, graph=self.graph_retrieval)
            return self._routing

    @property
    def searcher(self) -> Searcher:
        """Searches corpora with this pipeline's store and encoders."""
        visual = self.visual_encoder
        return Searcher(
            self.store,
            self.embedder,
            visual,
            self.settings.visual_weight_for,
            source_depth=SOURCE_DEPTH if self.source_weight > 0 else 0,
        )

    @property
    def retrieval(self) -> Retrieval:
        """The retrieval steps that follow a route decision with this pipeline's searcher, fusion and worker pool:
        each chosen corpus's ranking (:meth:`Retrieval.corpus_hits <universalrag.retrieve.Retrieval.corpus_hits>`),
        the merge of several (:meth:`~universalrag.retrieve.Retrieval.merge`), a source table added
        (:meth:`~universalrag.retrieve.Retrieval.with_source_table`). :meth:`retrieve` runs them all; the LangGraph
        adapter's nodes run them one by one."""
        return Retrieval(self.searcher, fusion=self.fusion, source_weight=self.source_weight, pool=self.executor())

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

    @property
    def graph(self) -> KnowledgeGraph:
        """The knowledge graph of this schema: entities by name, neighbours, paths, the units that name them, counts,
        rebuild and export (:class:`universalrag.graph.api.Graph`, docs/graph.md)."""
        with self._lock:
            if self._knowledge_graph is None:
                from .graph.api import Graph

                self._knowledge_graph = Graph(self.store, self.embedder)
            return self._knowledge_graph

    def executor(self) -> ThreadPoolExecutor:
        """The worker pool that runs probes, searches and the prior in parallel (created on first use)."""
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.max_workers, thread_name_prefix="universalrag")
            return self._pool

    def decision_log(self) -> DecisionLog:
        """The routing log writer (background thread, bounded queue)."""
        with self._lock:
            if self._log is None:
                self._log = DecisionLog(self.store, store_text=self.log_query_text)
            return self._log

    def init(self) -> list[str]:
        """Create or upgrade the schema and the built-in corpora (idempotent); returns the corpora created."""
        created = self.store.init(embedder=self.embedder.name, dimension=self.embedder.dimension)
        self._initialised = True
        return created

    def close(self) -> None:
        """Write the pending routing log, stop worker threads and release database connections."""
        if self._log is not None:
            self._log.close()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self._store is not None:
            self._store.close()

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        """Pickling is refused with what to do instead: the pipeline is live (a connection pool, thread pools,
        locks), and so is whatever holds it (the adapters' retrievers, tools and query engines)."""
        raise TypeError(
            "UniversalRAG cannot be pickled: it is a live database pipeline (a connection pool, threads "
            "and locks), as is any retriever or query engine holding it. Build one per process instead: "
            "a UniversalRAG (from the same settings) and its retrievers in each process; copy.deepcopy of "
            "a retriever works and shares the pipeline."
        )

    def __enter__(self) -> UniversalRAG:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the steps ---------------------------------------------------------------------------------------
    def ingest(
        self,
        paths: Sequence[str | Path],
        *,
        corpus: str | None = None,
        options: IngestOptions | None = None,
        on_file: Callable[[FileOutcome], None] | None = None,
        on_start: Callable[[int], None] | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        strict: bool = False,
        describe: bool | None = None,
    ) -> IngestReport:
        """Ingest files and folders into their corpora (see :func:`universalrag.ingest_paths`; ``on_progress``
        hears of each committed batch of a large source; ``strict`` fails the files a folder holds that are not
        ingested, instead of skipping them; ``describe`` has the chat model describe every image, figure, table and
        video scene, ``None``: as ``UNIVERSALRAG_DESCRIBE`` or ``options`` say, docs/descriptions.md)."""
        from .ingest.pipeline import IngestOptions, ingest_paths  # here: a process that only searches never loads it

        if not self._initialised:
            self.init()
        opts = (
            options.described(self.settings, describe)
            if options is not None
            else IngestOptions.from_settings(self.settings, visual_encoder=self.visual_encoder, describe=describe)
        )
        if opts.graph is None:  # the graph of each source is written with its units (UNIVERSALRAG_GRAPH)
            from .graph.extractors import extractor_from_settings

            extractor = extractor_from_settings(self.settings)
            if extractor is not None:
                opts = replace(opts, graph=self.graph.graph_store.for_ingest(extractor))
        try:
            return ingest_paths(
                self.store,
                self.embedder,
                paths,
                corpus=corpus,
                options=opts,
                on_file=on_file,
                on_start=on_start,
                on_progress=on_progress,
                strict=strict,
            )
        finally:
            if self._routing is not None:
                self._routing.invalidate()

    def plan(
        self,
        query: str | QueryPlan,
        *,
        k: int | None = None,
        filter: Filter | None = None,
        routes: Sequence[str] | None = None,
        candidates: Sequence[str] | None = None,
        allow_none: bool = True,
        hybrid: bool | None = None,
    ) -> QueryPlan:
        """The request object for ``query`` (a plan is returned as is, its options kept): see
        :class:`~universalrag.plan.QueryPlan`. ``k``, ``routes`` and ``allow_none`` mean what they mean for every
        call (see the class docstring); ``allow_none`` defaults to ``True`` here, as for :meth:`route`.

        A ``filter`` on ``source`` names a file — a path, a ``file://`` URI or a bare file name matching that file
        in any folder, as LangChain's documents show it — or a metadata field ``source`` of the user's own
        (:func:`~universalrag.store.filters.paths_as_uris` with ``keep``): most units hold no such field, and
        ``{"source": "report.pdf"}`` found nothing in the Python API and the CLI."""
        if isinstance(query, QueryPlan):
            return query
        if filter is not None:
            filter = paths_as_uris(filter, "source", keep=True)
        k = self.k if k is None else check_k(k)
        plan = QueryPlan(
            query,
            k=k,
            filter=filter,
            routes=tuple(routes) if routes is not None else None,
            candidates=tuple(candidates) if candidates is not None else None,
            hybrid=self.hybrid if hybrid is None else hybrid,
            allow_none=allow_none,
            probe_k=max(k, DEFAULT_K),
            vectors=self.query_vectors,
        )
        if self.spelling:
            plan.corrections = self.corrections(bounded_query(plan.query), plan.routes or plan.candidates)
        return plan

    def corrections(self, text: str, corpora: Sequence[str] | None = None) -> tuple[Correction, ...]:
        """The typos of ``text`` and the words of ``corpora`` (default: all) they are corrected to
        (:func:`universalrag.spelling.correct`); a plan's ``text`` reads the corrected query unless the facade was
        made with ``spelling=False``. Best effort: when the lookup fails, nothing is corrected (logged)."""

        def spelled(words: Sequence[str]) -> dict[str, int | None]:
            names = [c for c in (corpora if corpora is not None else self.store.corpora()) if c != NO_RETRIEVAL]
            return self.store.word_units(words, names, surface=True)

        try:
            found = correct(text, spelled)
        except StoreError as e:  # the search that follows reports the same failure, with its own context
            _log.warning("Spelling correction skipped: %s", e)
            return ()
        if found:
            _log.info("Query corrected: %s", ", ".join(f"{c.typo} -> {c.word}" for c in found))
        return found

    def route(self, query: str | QueryPlan, *, allow_none: bool = True) -> RouteDecision:
        """Which corpora to search for ``query``: the router's prior and a probe of every non-empty corpus,
        combined (the probe hits stay in the plan for :meth:`retrieve`). The decision is logged unless
        ``log_decisions=False``.

        ``allow_none`` (default ``True``: this call returns a decision, and ``none`` is one) lets routing conclude
        that nothing needs searching; ``False`` chooses the most likely corpus instead (the decision is marked
        ``fallback``). A :class:`~universalrag.plan.QueryPlan` passed as ``query`` keeps its own ``allow_none``."""
        plan = self.plan(query, allow_none=allow_none)
        if plan.routes is not None:
            plan.decision = RouteDecision(routes=plan.routes, scores={}, router="caller")
            return plan.decision
        decision = self.routing.route(plan, self.searcher, pool=self.executor())
        if self.log_decisions and decision.id is not None:
            self.decision_log().record(plan.query, decision, candidates=list(decision.evidence or decision.scores))
        return decision

    def retrieve(
        self,
        query: str | QueryPlan,
        *,
        k: int | None = None,
        routes: Sequence[str] | None = None,
        filter: Filter | None = None,
        decision: RouteDecision | None = None,
        allow_none: bool = False,
        filters: Filter | None = None,
    ) -> list[Hit]:
        """The best ``k`` hits of the chosen corpora (``routes`` overrides the router), fused into one ranking.

        Each corpus gives its own top ``k`` in its own embedding space (the routing probe's hits when it was
        probed, else a search in a worker thread); the rankings are fused: by similarity where the corpora
        share one embedding space (as one shared index would rank them), by reciprocal rank otherwise; the first
        ``k`` are returned, holding the first corpus's best (the first of ``routes``, else of the decision's).

        ``allow_none`` (default ``False``: this call returns hits) lets routing conclude ``none`` and then searches
        nothing; by default a ``none`` conclusion still searches the most likely corpus (the decision is marked
        ``fallback``). ``filters`` is a deprecated spelling of ``filter``.
        """
        filter = _filter_arg(filter, filters)
        plan = self.plan(query, k=k, filter=filter, routes=routes, allow_none=allow_none)
        if decision is not None and plan.routes is None and plan.decision is None:
            plan.decision = decision
        if plan.routes is None and plan.decision is None:
            self.route(plan)
        return self._hits(plan, k)

    def _hits(self, plan: QueryPlan, k: int | None) -> list[Hit]:
        return self.retrieval.hits(plan, k=k)  # the graph's hits joined there, as for the LangGraph nodes

    def search(
        self,
        query: str | QueryPlan,
        *,
        k: int | None = None,
        filter: Filter | None = None,
        routes: Sequence[str] | None = None,
        allow_none: bool = False,
    ) -> tuple[RouteDecision, list[Hit]]:
        """Route and retrieve in one call, for retrievers and agent tools: ``(decision, hits)``. ``allow_none`` as
        for :meth:`retrieve` (default ``False``: a ``none`` conclusion still searches the most likely corpus)."""
        plan = self.plan(query, k=k, filter=filter, routes=routes, allow_none=allow_none)
        decision = plan.decision or self.route(plan)
        return decision, self._hits(plan, k)

    def query(
        self,
        query: str,
        *,
        k: int | None = None,
        routes: Sequence[str] | None = None,
        filter: Filter | None = None,
        allow_none: bool = True,
        filters: Filter | None = None,
    ) -> Answer:
        """Route, retrieve and generate. Without a generator, ``Answer.text`` is ``None`` and the evidence is
        returned; when the model fails (HTTP error, timeout including retries, malformed reply), too, with
        ``Answer.warning`` saying why (and a logged warning). ``allow_none`` (default ``True``: this call answers)
        lets routing conclude ``none``: nothing is searched and the model answers from its own knowledge; ``False``
        searches the most likely corpus instead. ``filters`` is a deprecated spelling of ``filter``."""
        timings: dict[str, float] = {}
        started = time.perf_counter()
        plan = self.plan(query, k=k, filter=_filter_arg(filter, filters), routes=routes, allow_none=allow_none)
        decision = self.route(plan)
        timings["route"] = (time.perf_counter() - started) * 1000
        mark = time.perf_counter()
        hits = self._hits(plan, None)
        timings["retrieve"] = (time.perf_counter() - mark) * 1000
        generator = self.generator
        if generator is None:
            return Answer(text=None, decision=decision, hits=tuple(hits), timings=timings)
        mark = time.perf_counter()
        evidence = build_evidence(hits, budget=self.budget)
        timings["evidence"] = (time.perf_counter() - mark) * 1000
        mark = time.perf_counter()
        try:
            generation = generator.generate(query, evidence)
        except GenerationError as e:  # the model failed: the evidence is still worth returning, with the reason
            timings["generate"] = (time.perf_counter() - mark) * 1000
            _log.warning("No answer from the language model, returning the evidence only: %s", e)
            return Answer(text=None, decision=decision, hits=tuple(hits), timings=timings, warning=str(e))
        timings["generate"] = (time.perf_counter() - mark) * 1000
        return Answer(
            text=generation.text, decision=decision, hits=tuple(hits), citations=generation.citations, timings=timings
        )

    # -- learning from users -------------------------------------------------------------------------------
    def feedback(self, decision: str | RouteDecision, correct_routes: Sequence[str]) -> str:
        """Mark a logged decision wrong and give the right routes (``["none"]`` for a question that needs no
        retrieval). ``decision`` is a decision (or its ``id``) or the query text (its latest logged decision;
        when none was logged, the query is routed now and logged with the feedback). Returns the decision id;
        :meth:`adapt_router` learns from these rows."""
        from .store.routing_log import set_feedback

        routes = [str(r) for r in correct_routes]
        if not routes or isinstance(correct_routes, str):
            raise RoutingError("correct_routes must be a non-empty list of route names, e.g. ['table'].")
        known = {NO_RETRIEVAL, *self.store.corpora()}
        unknown = [r for r in routes if r not in known]
        if unknown:
            raise RoutingError(f"Unknown route(s) {unknown}; choose among {sorted(known)}.")
        self.decision_log().flush()
        decision_id = decision.id if isinstance(decision, RouteDecision) else None
        if isinstance(decision, str):
            decision_id = _as_uuid(decision)
        found = set_feedback(
            self.store, routes, decision_id=decision_id, query_hash=None if decision_id else query_hash(str(decision))
        )
        if found is None and decision_id is None and isinstance(decision, str):
            self.route(decision)
            self.decision_log().flush()
            found = set_feedback(self.store, routes, query_hash=query_hash(decision))
        if found is None:
            raise RoutingError(
                f"No logged routing decision matches {decision if decision_id is None else decision_id!r}"
                "; pass the query text or a decision id from a logged decision."
            )
        return found

    def adapt_router(self, examples: Iterable[Example], **kwargs: Any) -> AdaptReport:
        """Adapt the combiner to this database's content from labelled ``(query, corpus or "none")`` examples and
        the logged feedback; see :func:`universalrag.adapt.adapt_router`."""
        from .adapt import adapt_router

        report = adapt_router(self, examples, **kwargs)
        if report.saved:
            self.use_combiner(report.combiner)
        return report

    def corpus_holdings(self, corpus: str, *, limit: int = 8) -> str:
        """What ``corpus`` holds, in a sentence for an agent's tool description ("It holds 42 sources, among them
        the latest: planets.csv, Kazakhstan.html."): a model choosing between tools reads what each corpus is about,
        and a registry description says only what kind of units it keeps. Empty when no source is recorded."""
        count, uris = self.store.corpus_sources(corpus, limit=limit)
        if not count:
            return ""
        names = ", ".join(dict.fromkeys(source_label(u) for u in uris))
        if count == 1:
            return f"It holds one source: {names}."
        latest = "" if count <= limit else ", among them the latest"
        return f"It holds {count} sources{latest}: {names}."

    def reset_router(self, name: str = "default") -> str | None:
        """Remove the combiner :meth:`adapt_router` stored in the database under ``name``: a new ``UniversalRAG()``
        decides with the shipped combiner again, and so does this one when it was deciding with the removed one (a
        combiner given to the constructor or to :meth:`use_combiner` is kept). Returns the removed combiner's
        version, ``None`` when none was stored."""
        from .store.routing_log import delete_combiner

        removed = delete_combiner(self.store, name)
        with self._lock:
            current = self._combiner
            if removed is not None and current is not _UNSET and current is not None and current.version == removed:
                self._combiner, self._routing = _UNSET, None
        return removed

    def reload_combiner(self) -> None:
        """Decide from the next decision on with the combiner stored in the database then (the shipped one when
        none is), as a new ``UniversalRAG()`` would: for a long-lived pipeline (``universalrag serve``) whose
        database another process adapted or reset."""
        with self._lock:
            self._combiner, self._routing = _UNSET, None

    def use_combiner(self, combiner: Combiner | None) -> None:
        """Decide with ``combiner`` from now on (``None``: the router alone)."""
        with self._lock:
            self._combiner = combiner
            self._routing = None

    # -- async twins (the work runs in worker threads; the database driver and encoders are blocking) ------
    async def aingest(
        self,
        paths: Sequence[str | Path],
        *,
        corpus: str | None = None,
        options: IngestOptions | None = None,
        on_file: Callable[[FileOutcome], None] | None = None,
        on_start: Callable[[int], None] | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        strict: bool = False,
        describe: bool | None = None,
    ) -> IngestReport:
        """Async twin of :meth:`ingest` (the callbacks run in the worker thread)."""
        return await asyncio.to_thread(
            self.ingest,
            paths,
            corpus=corpus,
            options=options,
            on_file=on_file,
            on_start=on_start,
            on_progress=on_progress,
            strict=strict,
            describe=describe,
        )

    async def aroute(self, query: str | QueryPlan, *, allow_none: bool = True) -> RouteDecision:
        """Async twin of :meth:`route`."""
        return await asyncio.to_thread(self.route, query, allow_none=allow_none)

    async def aretrieve(
        self,
        query: str | QueryPlan,
        *,
        k: int | None = None,
        routes: Sequence[str] | None = None,
        filter: Filter | None = None,
        decision: RouteDecision | None = None,
        allow_none: bool = False,
        filters: Filter | None = None,
    ) -> list[Hit]:
        """Async twin of :meth:`retrieve`."""
        filter = _filter_arg(filter, filters)
        return await asyncio.to_thread(
            self.retrieve, query, k=k, routes=routes, filter=filter, decision=decision, allow_none=allow_none
        )

    async def asearch(
        self,
        query: str | QueryPlan,
        *,
        k: int | None = None,
        filter: Filter | None = None,
        routes: Sequence[str] | None = None,
        allow_none: bool = False,
    ) -> tuple[RouteDecision, list[Hit]]:
        """Async twin of :meth:`search`."""
        return await asyncio.to_thread(self.search, query, k=k, filter=filter, routes=routes, allow_none=allow_none)

    async def aquery(
        self,
        query: str,
        *,
        k: int | None = None,
        routes: Sequence[str] | None = None,
        filter: Filter | None = None,
        allow_none: bool = True,
        filters: Filter | None = None,
    ) -> Answer:
        """Async twin of :meth:`query`."""
        filter = _filter_arg(filter, filters)
        return await asyncio.to_thread(self.query, query, k=k, routes=routes, filter=filter, allow_none=allow_none)


def _filter_arg(filter: Filter | None, filters: Filter | None) -> Filter | None:
    if filters is not None:
        warnings.warn("`filters=` is deprecated; use `filter=`.", DeprecationWarning, stacklevel=3)
        return filter if filter is not None else filters
    return filter


def _as_uuid(text: str) -> str | None:
    import uuid

    try:
        return str(uuid.UUID(text))
    except ValueError:
        return None
