"""The query plan: one request object shared by routing, retrieval, fusion, generation and the adapters.

A :class:`QueryPlan` carries what one question needs on its way through the engine: the query, ``k``, the
metadata ``filter``, the candidate corpora, whether search is hybrid, and what has been computed for it so far —
the query's embedding per embedder (each text embedded at most once per model), its vectors per visual encoder,
the probe hits per corpus and the route decision. Routing fills ``probes`` and ``decision``; retrieval reuses the
probe hits, so one request never searches the same corpus twice.
"""

from __future__ import annotations

import functools
import numbers
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import InvalidInputError, RoutingError
from .exact_terms import exact_terms
from .spelling import Correction, apply
from .types import NO_RETRIEVAL, Hit, RouteDecision

if TYPE_CHECKING:
    import numpy as np

    from .embed.base import Embedder
    from .embed.visual import VisualEncoder

__all__ = ["DEFAULT_K", "QUERY_CHARS", "QueryPlan", "QueryVectors", "bounded_query", "check_k"]

#: How many results a request returns when it does not say: ``UniversalRAG(k=...)``'s default, and what the
#: adapters' ``k`` / ``similarity_top_k`` mean when left at ``None`` (the facade's ``k``).
DEFAULT_K = 5


def check_k(value: Any, *, name: str = "k") -> int:
    """``value`` as a count of results: an integer of at least 1, else :class:`~universalrag.errors.InvalidInputError`
    naming the argument (``name``). The one rule for every surface (the facade, the retrievers, tools and query
    engines of the adapters): ``0`` or a negative count is refused, never read as the default — a caller asking for
    nothing made a mistake, and an empty answer would hide it. Leave the argument out (``None``) for the default."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise InvalidInputError(
            f"{name} must be an integer of at least 1 (how many results to return; leave it out for the "
            f"default), got {value!r}."
        )
    return int(value)


#: The most characters of a query that routing and search read. A question, even with a pasted paragraph, is far
#: shorter, and an encoder reads less still (the bundled MiniLM 256 tokens, about 1,200 characters); a text of a
#: megabyte passed as the query (an agent handing over a whole document) cost 5 s of tokenising and word matching
#: before this bound, and 27 s in hybrid search before the server gave up on its full-text query.
QUERY_CHARS = 16_384

_LAST_SPACE = re.compile(r"\s+\S*\Z")


def bounded_query(query: str, limit: int = QUERY_CHARS) -> str:
    """``query`` itself when it has at most ``limit`` characters, else its first ``limit`` cut after the last whole
    word (no half word is searched for)."""
    if len(query) <= limit:
        return query
    head = query[:limit]
    tail = _LAST_SPACE.search(head)
    return head[: tail.start()] if tail is not None and tail.start() > limit // 2 else head


class QueryVectors:
    """The vectors of recent queries per model and text, shared by the plans of one facade, so that the same text
    is embedded once by a model across requests too: an agent asking one question of several per-corpus search
    tools, or a graph's filtered retrieval node after its route node. Bounded: the ``size`` most recently used
    vectors are kept. Thread-safe; the vectors are read-only arrays (shared between plans)."""

    def __init__(self, size: int = 256) -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size}.")
        self.size = size
        self._vectors: OrderedDict[Hashable, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._vectors)

    def get(self, key: Hashable) -> np.ndarray | None:
        """The vector stored under ``key`` (made the most recently used), else ``None``."""
        with self._lock:
            found = self._vectors.get(key)
            if found is not None:
                self._vectors.move_to_end(key)
            return found

    def put(self, key: Hashable, vector: np.ndarray) -> np.ndarray:
        """Keep a read-only copy of ``vector`` under ``key`` (dropping the least recently used beyond ``size``) and
        return it."""
        kept = vector.copy()
        kept.flags.writeable = False
        with self._lock:
            self._vectors[key] = kept
            self._vectors.move_to_end(key)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        return kept

    def clear(self) -> None:
        """Forget every vector."""
        with self._lock:
            self._vectors.clear()


@dataclass(eq=False)
class QueryPlan:
    """One request: the query and its options, and the work done for it (embeddings, probe hits, decision).

    Build it with :meth:`UniversalRAG.plan <universalrag.pipeline.UniversalRAG.plan>` (or directly). ``routes``
    fixes the corpora and skips the router; ``allow_none=False`` makes routing search the most likely corpus
    when the router concludes ``none`` (what agent tools want). ``probe_k`` is how many hits each probe keeps
    (at least ``k``). Thread-safe: the probes of several corpora fill it from worker threads.

    ``text`` is what routing and search read of the query: the query itself, or its first :data:`QUERY_CHARS`
    characters when it is longer (:func:`bounded_query`), with the typos of ``corrections`` corrected
    (:mod:`universalrag.spelling`; set before ``text`` is first read). ``query`` stays what the caller asked: a
    generator is given that. ``vectors`` (the facade's :class:`QueryVectors`) lends the embeddings of the same text
    computed for an earlier request.
    """

    query: str
    k: int = DEFAULT_K
    filter: Mapping[str, Any] | None = None
    routes: tuple[str, ...] | None = None
    candidates: tuple[str, ...] | None = None
    hybrid: bool = False
    allow_none: bool = True
    probe_k: int = 0
    embeddings: dict[str, Any] = field(default_factory=dict, repr=False)
    visual_vectors: dict[str, Any] = field(default_factory=dict, repr=False)
    probes: dict[str, list[Hit]] = field(default_factory=dict, repr=False)
    probe_depths: dict[str, int] = field(default_factory=dict, repr=False)
    decision: RouteDecision | None = None
    corrections: tuple[Correction, ...] = ()
    #: The knowledge graph's hits when routing chose to walk it (:mod:`universalrag.graph.retrieve`), best first,
    #: and the features that decided (also when it chose not to).
    graph_hits: tuple[Hit, ...] = ()
    graph_features: dict[str, float] = field(default_factory=dict, repr=False)
    vectors: QueryVectors | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.query, str) or not self.query.strip():
            raise RoutingError(f"A query must be a non-empty string, got {self.query!r:.80}.")
        self.k = check_k(self.k)
        if isinstance(self.routes, str):
            raise RoutingError(f"routes must be a list of corpus names, not the string {self.routes!r}.")
        if self.routes is not None:
            self.routes = tuple(self.routes)
        self.probe_k = max(int(self.probe_k), int(self.k))

    # -- embeddings: one per model -------------------------------------------------------------------------
    def embedding(self, embedder: Embedder) -> np.ndarray:
        """The query embedded by ``embedder`` (computed once per embedder name, then reused)."""
        with self._lock:  # held while embedding: two threads never embed the same text with the same model
            if embedder.name not in self.embeddings:
                self.embeddings[embedder.name] = self._vector(
                    ("text", embedder.name), lambda: embedder.embed_query(self.text)
                )
            return self.embeddings[embedder.name]

    def visual_vector(self, encoder: VisualEncoder) -> np.ndarray:
        """The query embedded by a visual encoder's text tower (once per encoder name)."""
        with self._lock:
            if encoder.name not in self.visual_vectors:
                self.visual_vectors[encoder.name] = self._vector(
                    ("visual", encoder.name), lambda: encoder.embed_texts([self.text])[0]
                )
            return self.visual_vectors[encoder.name]

    def _vector(self, model: tuple[str, str], compute: Callable[[], np.ndarray]) -> np.ndarray:
        if self.vectors is None:
            return compute()
        key = (*model, self.text)
        found = self.vectors.get(key)
        return found if found is not None else self.vectors.put(key, compute())

    # -- probes ------------------------------------------------------------------------------------------
    def probed(self, corpus: str, k: int) -> list[Hit] | None:
        """The probe hits of ``corpus`` cut to ``k`` when it was probed with at least ``k`` hits (or holds fewer
        than it was asked for: then they are all there is), else ``None``."""
        with self._lock:
            hits = self.probes.get(corpus)
            asked = self.probe_depths.get(corpus, self.probe_k)
        if hits is None or (len(hits) < k and len(hits) >= asked):
            return None
        return list(hits[:k])

    def add_probe(self, corpus: str, hits: Sequence[Hit], *, asked: int | None = None) -> None:
        """Record the hits one probe found (``asked``: how many it asked for, default ``probe_k``)."""
        with self._lock:
            self.probes[corpus] = list(hits)
            self.probe_depths[corpus] = max(int(asked or self.probe_k), len(hits))

    @functools.cached_property
    def text(self) -> str:
        """What routing and search read of the query (:func:`bounded_query`; see the class docstring)."""
        return apply(bounded_query(self.query), self.corrections)

    @functools.cached_property
    def exact_terms(self) -> tuple[str, ...]:
        """The query's identifiers, numbers and quoted phrases (:func:`universalrag.exact_terms.exact_terms`): a
        multi-vector hit's matched parts that hold them come first."""
        return exact_terms(self.text)

    @property
    def chosen(self) -> tuple[str, ...]:
        """The corpora to search: the fixed ``routes``, else the decision's (``none`` dropped, order kept)."""
        routes = self.routes if self.routes is not None else (self.decision.routes if self.decision else ())
        return tuple(r for r in dict.fromkeys(routes) if r != NO_RETRIEVAL)
