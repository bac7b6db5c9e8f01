"""The search methods of :class:`~universalrag.store.Store` (a mixin, like placement and sources).

``search`` is ``search_many`` of one corpus. ``search_many`` groups the corpora by the server that holds them:
those of this server are searched together on one pooled connection in autocommit mode (every statement its own
transaction, its index settings inside it), one round trip per step of their searches
(:func:`~universalrag.store.corpus_search.run_searches`); those of member servers at the same time, in threads, each by
its own store.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from ..config import Settings
from ..errors import InvalidInputError
from ..types import CorpusSpec, Hit, Vector
from . import index_check
from .corpus_search import CorpusQuery, SearchRequest, run_searches
from .engine import SearchConnection
from .filters import Filter
from .queries import word_units
from .restrict import check_required_filter
from .scan_rule import MAX_EF_SEARCH
from .schema import Tables
from .vectors import check_vector

__all__ = ["Searching"]

_T = TypeVar("_T")
_I = TypeVar("_I")
_WORD = re.compile(r"\w+")
_ITERATIVE_SCAN = (0, 8, 0)


def _check_k(k: object) -> None:
    """The rule of :func:`universalrag.plan.check_k` (a higher layer), in the same words."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInputError(
            f"k must be an integer of at least 1 (how many results to return; leave it out for the default), got {k!r}."
        )


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("-")[0].split(".")[:3] if p.isdigit())


class Searching:
    """Mixin of ``Store``: ``search`` and ``search_many``."""

    settings: Settings
    schema: str
    tables: Tables
    _read_url: str | None
    _pgvector: tuple[int, ...] | None

    if TYPE_CHECKING:

        @property
        def read_engine(self) -> sa.Engine: ...
        def corpus(self, name: str) -> CorpusSpec: ...
        def owner(self, corpus: str) -> Any: ...
        def _translate(self, action: str, url: str | None = None) -> contextlib.AbstractContextManager[None]: ...
        @property
        def url_redacted(self) -> str | None: ...
        def corpora(self, *, refresh: bool = False) -> dict[str, CorpusSpec]: ...
        def transaction(
            self, action: str = ..., *, read_only: bool = False
        ) -> contextlib.AbstractContextManager[sa.Connection]: ...

    def _supports_iterative_scan(self, conn: sa.Connection) -> bool:
        if self._pgvector is None:
            version = conn.execute(
                sa.text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            ).scalar_one_or_none()
            self._pgvector = _version_tuple(version or "0")
        return self._pgvector >= _ITERATIVE_SCAN

    def search(
        self,
        corpus: str,
        vector: Vector,
        *,
        k: int = 5,
        filter: Filter | None = None,
        ef_search: int | None = None,
        visual_vector: Vector | None = None,
        visual_weight: float | None = None,
        lexical_text: str | None = None,
        exact_scan: bool | None = None,
        exact_terms: Sequence[str] = (),
    ) -> list[Hit]:
        """The ``k`` units of ``corpus`` nearest to ``vector`` by cosine similarity (``score`` = 1 − distance).

        Multi-vector corpora rank a unit by its best part and report its best parts as ``matched_parts``.
        With ``visual_vector`` (the query in the corpus's visual space), the score fuses both channels:
        ``visual_weight · visual + (1 − visual_weight) · text`` (default: ``settings.visual_weight_for`` the
        corpus's modality). With ``lexical_text`` (hybrid search), that ranking is fused with Postgres full-text
        ranking by reciprocal rank, and ``score`` becomes the fused score. Every channel combines the same way
        in every corpus kind (see :mod:`universalrag.store.corpus_search`).

        A channel whose table (the unit table, or a multi-vector corpus's parts table) holds at most
        ``settings.exact_scan_rows`` rows is scanned exactly; a larger one goes through the HNSW index with
        pgvector's iterative scan (0.8+), so filters and grouping parts by unit still return ``k`` units when they
        exist — unless the corpus's index check (:func:`universalrag.store.index_check.check_index`, run in the
        background the first time such a table is searched) found the index unreliable on its data: then up to
        ``settings.exact_scan_max_rows`` rows are scanned exactly (see :mod:`universalrag.store.scan_rule`).
        ``exact_scan=True`` always scans exactly, ``exact_scan=False`` always uses the index. ``exact_terms``
        (identifiers, numbers, quoted phrases: :func:`universalrag.exact_terms.exact_terms` of the query) puts the parts
        that hold them first among a multi-vector hit's matched parts, whatever their similarity.

        A plain search of a single-vector corpus is one statement and one round trip (its index settings inside
        it); :meth:`search_many` searches several corpora with one round trip per step.
        """
        _check_k(k)
        query = CorpusQuery(
            corpus,
            vector,
            k=k,
            filter=filter,
            ef_search=ef_search,
            visual_vector=visual_vector,
            visual_weight=visual_weight,
            lexical_text=lexical_text,
            exact_scan=exact_scan,
            exact_terms=tuple(exact_terms),
        )
        if self.owner(corpus) is self:  # the common case, without search_many's grouping by server
            return self._search_here([query])[0]
        return self.search_many([query])[0]

    def search_many(self, queries: Sequence[CorpusQuery]) -> list[list[Hit]]:
        """The hits of every query (each a :meth:`search` of one corpus), in order. The corpora of this server are
        searched together on one connection — at each step the next statement of every search goes to the server
        in one round trip (psycopg's pipeline mode) — while corpora on other servers (``create_corpus(...,
        server=)``) are searched on theirs at the same time, in threads."""
        if not queries:
            return []
        for q in queries:
            _check_k(q.k)
        out: list[list[Hit]] = [[] for _ in queries]
        for idx, hits in self._on_each_server(
            range(len(queries)),
            lambda i: queries[i].corpus,
            lambda store, idx: store._search_here([queries[i] for i in idx]),
            lambda store, idx: store.search_many([queries[i] for i in idx]),
        ):
            for i, found in zip(idx, hits, strict=True):
                out[i] = found
        return out

    def _on_each_server(
        self,
        items: Iterable[_I],
        corpus: Callable[[_I], str],
        here: Callable[[Any, list[_I]], _T],
        there: Callable[[Any, list[_I]], _T],
    ) -> list[tuple[list[_I], _T]]:
        """``items`` grouped by the server holding their ``corpus``, each group's result with it: this server's
        by ``here(self, group)`` in this thread, every member server's by ``there(member, group)`` in a thread of
        its own, all at the same time (a slow or locked server does not hold the others back)."""
        groups: dict[int, tuple[Any, list[_I]]] = {}
        for item in items:
            owner = self.owner(corpus(item))
            groups.setdefault(id(owner), (owner, []))[1].append(item)
        local = groups.pop(id(self), None)
        out: list[tuple[list[_I], _T]] = []
        with contextlib.ExitStack() as stack:
            futures = []
            if groups:
                from concurrent.futures import ThreadPoolExecutor

                pool = stack.enter_context(ThreadPoolExecutor(len(groups), thread_name_prefix="universalrag-search"))
                futures = [(group, pool.submit(there, owner, group)) for owner, group in groups.values()]
            if local is not None:
                out.append((local[1], here(self, local[1])))
            out.extend((group, future.result()) for group, future in futures)
        return out

    def word_units(
        self, words: Sequence[str], corpora: Sequence[str], *, cap: int = 100, surface: bool = False
    ) -> dict[str, int | None]:
        """How many units of ``corpora`` hold each of ``words`` in their full-text index (each corpus counted to
        ``cap``): 0 when none does, ``None`` for a stop word (which the index never holds). Words are matched as
        lexical search matches them, by their stem (a text's "exceptions" holds "exception"); with ``surface`` a
        unit must also spell the word itself (:func:`~universalrag.store.queries.word_units`). One statement per
        server, the servers at the same time. A word is letters, digits and underscores (a regular expression or a
        phrase is refused)."""
        words = list(dict.fromkeys(w for w in words if w))
        odd = [w for w in words if not _WORD.fullmatch(w)]
        if odd:
            raise InvalidInputError(f"word_units looks up single words (letters, digits, underscores); got {odd[0]!r}.")
        counts: dict[str, int | None] = dict.fromkeys(words, 0)
        if not words or not corpora:
            return counts
        for _, part in self._on_each_server(
            dict.fromkeys(corpora),
            lambda name: name,
            lambda store, names: store._local_word_units(words, names, cap=cap, surface=surface),
            lambda store, names: store.word_units(words, names, cap=cap, surface=surface),
        ):
            for word, n in part.items():
                counts[word] = None if n is None else (counts[word] or 0) + n
        return counts

    def _local_word_units(
        self, words: list[str], corpora: list[str], *, cap: int, surface: bool
    ) -> dict[str, int | None]:
        stmt = word_units(tuple(self.tables.corpus(self.corpus(n)).units for n in corpora), cap=cap, surface=surface)

        def read(conn: sa.Connection) -> dict[str, int | None]:
            return {w: None if stop else int(n or 0) for w, n, stop in conn.execute(stmt, {"words": words})}

        return self._search_read(lambda: f"look up {len(words)} words in the full-text index", read)

    def _search_here(self, queries: Sequence[CorpusQuery]) -> list[list[Hit]]:
        """:meth:`search_many` of corpora that live on this server (validated first: nothing is sent for bad input)."""
        jobs = []
        for q in queries:
            spec = self.corpus(q.corpus)
            check_required_filter(spec, q.filter)  # row-level restriction of attached tables (store/restrict.py)
            weight = self.settings.visual_weight_for(spec.modality) if q.visual_weight is None else q.visual_weight
            if not 0.0 <= weight <= 1.0:
                raise InvalidInputError(f"visual_weight must be between 0 and 1, got {weight}.")
            # numbers, finite, not all zeros, right dimension; converted once, to what the driver sends
            vector = check_vector(spec.name, q.vector, spec.dimension, half=spec.vector_index == "halfvec")
            visual: Vector | None = q.visual_vector
            if visual is not None and spec.visual_dimension:
                visual = check_vector(spec.name, visual, spec.visual_dimension, what="visual query vector")
            jobs.append(
                (
                    spec,
                    self.tables.corpus(spec),
                    weight,
                    min(max(q.ef_search or self.settings.ef_search, q.k), MAX_EF_SEARCH),
                    vector,
                    visual,
                )
            )

        def read(conn: sa.Connection) -> list[list[Hit]]:
            iterative = self._supports_iterative_scan(conn)
            return run_searches(
                conn,
                [
                    (
                        tables,
                        SearchRequest(
                            vector=vector,
                            k=q.k,
                            filter=q.filter,
                            visual_vector=visual,
                            visual_weight=weight,
                            lexical_text=q.lexical_text,
                            exact_terms=tuple(q.exact_terms),
                            head=q.head,
                            ef_search=ef,
                            exact_scan_rows=self.settings.exact_scan_rows,
                            exact_scan_max_rows=self.settings.exact_scan_max_rows,
                            exact_scan=q.exact_scan,
                            iterative=iterative,
                            on_unchecked=partial(index_check.check_in_background, self, spec.name),
                        ),
                    )
                    for q, (spec, tables, weight, ef, vector, visual) in zip(queries, jobs, strict=True)
                ],
            )

        def action() -> str:  # only written out when an error needs it
            names = ", ".join(repr(spec.name) for spec, *_ in jobs)
            return f"search corpus{'es' if len(jobs) > 1 else ''} {names}"

        return self._search_read(action, read)

    def search_read(self, action: str, fn: Callable[[sa.Connection], _T]) -> _T:
        """``fn(conn)`` read as a search reads (one round trip a statement, see :meth:`_search_read`): for statements
        that write nothing and change no session setting; ``action`` says what failed in an error."""
        return self._search_read(lambda: action, fn)

    def _search_read(self, action: Callable[[], str], fn: Callable[[sa.Connection], _T]) -> _T:
        """``fn(conn)`` on a pooled connection in autocommit mode — a search's statements carry their own index
        settings, so no BEGIN/COMMIT round trips — handed out without a ping when it was used moments ago
        (:class:`~universalrag.store.engine.SearchConnection`); run once more when the connection died under it (a
        server restart), as :meth:`_read` does. On the read URL (a replica) when one is configured. Driver errors
        become store errors (:meth:`_translate`, entered on the error path only); ``action()`` names what failed."""
        url = self._read_url
        for attempt in (1, 2):
            try:
                with SearchConnection(self.read_engine) as conn:
                    return fn(conn)
            except (sa_exc.DBAPIError, psycopg.Error) as e:
                if attempt == 1 and isinstance(e, sa_exc.DBAPIError) and e.connection_invalidated:
                    continue  # a dead pooled connection (invalidated, replaced by the pool): once more
                with self._translate(action(), url):
                    raise
        raise AssertionError("unreachable")
