"""What each corpus's HNSW index is built on, chosen and changed (migration 0018; docs/database.md).

:class:`VectorIndexes` is the part of :class:`~universalrag.store.Store` that rebuilds a corpus's text-vector indexes
as another kind (:meth:`~VectorIndexes.set_vector_index`, through the schema's ``set_vector_index`` SQL function),
with ``maintenance_work_mem`` and parallel workers sized to the machine and its progress reported while it runs
(:mod:`~universalrag.store.index_build`), and that moves a corpus left to ``auto`` to a binary-quantised index once it
outgrows the threshold (:meth:`~VectorIndexes.grow_vector_indexes`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ..config import Settings
from ..errors import InvalidInputError
from ..types import CorpusSpec
from . import queries
from .index_build import BuildProgress, build_settings, watch_build
from .row_estimates import table_rows
from .schema import Tables
from .vectors import BINARY_MIN_ROWS, VECTOR_INDEX_CHOICES

_log = logging.getLogger("universalrag.store")

__all__ = ["VectorIndexes"]


class VectorIndexes:
    """Mixin of ``Store``: a corpus's vector index rebuilt as another kind, by hand or as the corpus grows."""

    settings: Settings
    schema: str
    tables: Tables
    _specs: dict[str, CorpusSpec] | None

    if TYPE_CHECKING:

        @property
        def engine(self) -> sa.Engine: ...
        def corpus(self, name: str) -> CorpusSpec: ...
        def corpora(self, *, refresh: bool = False) -> dict[str, CorpusSpec]: ...
        def owner(self, name: str) -> Any: ...
        def transaction(
            self, action: str = "run a query", *, read_only: bool = False
        ) -> AbstractContextManager[sa.Connection]: ...

    def set_vector_index(
        self, name: str, kind: str, *, on_progress: Callable[[BuildProgress], object] | None = None
    ) -> bool:
        """Rebuild the HNSW index of corpus ``name``'s vectors (and of its parts) as ``kind``: ``"vector"``,
        ``"halfvec"``, ``"binary"`` or ``"auto"`` (the default for its width, which the library may change as the
        corpus grows). Returns whether an index was rebuilt (``False``: it already was of that kind; a choice made by
        hand is recorded either way, so the library leaves it alone from then on).

        The build runs in one transaction with ``maintenance_work_mem`` and ``max_parallel_maintenance_workers``
        sized to this machine (:func:`~universalrag.store.index_build.build_settings`), and ``on_progress`` hears its
        progress every half second (phase, vectors or blocks done of the total). Searches of the corpus wait for the
        build (it holds the table's lock); writes too."""
        if kind not in VECTOR_INDEX_CHOICES:
            raise InvalidInputError(
                f"Unknown vector index {kind!r} for corpus {name!r}; choose one of {', '.join(VECTOR_INDEX_CHOICES)}."
            )
        owner = self.owner(name)
        if owner is not self:
            changed = bool(owner.set_vector_index(name, kind, on_progress=on_progress))
            self._mirror(name, owner.corpus(name).vector_index, auto=kind == "auto")
            return changed
        self.corpus(name)  # a typed error for an unknown corpus
        fn = getattr(sa.func, self.schema).set_vector_index
        try:
            with self.transaction(f"rebuild the vector index of corpus {name!r}") as conn:
                conn.execute(queries.set_locals(build_settings()))
                pid = int(conn.execute(sa.select(sa.func.pg_backend_pid())).scalar_one())
                with watch_build(self.engine, pid, on_progress):
                    return bool(conn.execute(sa.select(fn(name, kind))).scalar_one())
        finally:
            self._specs = None

    def _mirror(self, name: str, kind: str | None, *, auto: bool) -> None:
        """Record in this registry the index a member server's corpus now has."""
        c = self.tables.corpora
        with self.transaction(f"record the vector index of corpus {name!r}") as conn:
            conn.execute(sa.update(c).where(c.c.name == name).values(vector_index=kind, vector_index_auto=auto))
        self._specs = None

    def grow_vector_indexes(
        self,
        names: Sequence[str] | None = None,
        *,
        coming: Mapping[str, int] | None = None,
        on_progress: Callable[[BuildProgress], object] | None = None,
    ) -> list[str]:
        """Give a binary-quantised index to each of ``names`` (default: every corpus of this database) that is left to
        ``auto``, is not binary yet, and whose units or parts table holds ``settings.binary_min_rows`` vectors or more
        (default :data:`~universalrag.store.vectors.BINARY_MIN_ROWS`; 0: never), counting the ``coming`` units of a
        corpus (by name: those about to be written, such as a sync backlog) as held. Returns the corpora rebuilt.
        ``ingest`` calls it after writing, the sync worker before draining a backlog; a corpus chosen by hand is never
        changed."""
        threshold = BINARY_MIN_ROWS if self.settings.binary_min_rows is None else self.settings.binary_min_rows
        if threshold <= 0:
            return []
        grown = []
        for name in self._outgrown(names, threshold, coming or {}):
            _log.info("corpus %r holds %d vectors or more: its index is rebuilt binary-quantised", name, threshold)
            if self.set_vector_index(name, "binary", on_progress=on_progress):
                grown.append(name)
            self._set_auto(name)
        return grown

    def _set_auto(self, name: str) -> None:
        c = self.tables.corpora
        with self.transaction(f"record the vector index of corpus {name!r}") as conn:
            conn.execute(sa.update(c).where(c.c.name == name).values(vector_index_auto=True))
        self._specs = None

    def _outgrown(self, names: Sequence[str] | None, threshold: int, coming: Mapping[str, int]) -> Iterator[str]:
        """The corpora among ``names`` left to ``auto``, not binary yet, whose units or parts table holds ``threshold``
        vectors or more with the ``coming`` ones (by the row estimates searches use,
        :mod:`~universalrag.store.row_estimates`: nothing is counted)."""
        c = self.tables.corpora
        with self.transaction("read which corpora choose their own index", read_only=True) as conn:
            stmt = sa.select(c.c.name).where(c.c.vector_index_auto, c.c.vector_index != "binary", c.c.server.is_(None))
            if names is not None:
                stmt = stmt.where(c.c.name.in_(list(names)))
            candidates = list(conn.execute(stmt).scalars())
            if not candidates:
                return
            specs = self.corpora(refresh=True)
            tables = {name: self.tables.corpus(specs[name]) for name in candidates}
            rows = table_rows(
                conn,
                [t for name in candidates for t in (tables[name].units, tables[name].parts) if t is not None],
                ttl=0,
            )
        for name in candidates:
            held = max(rows.get(t.name, 0) for t in (tables[name].units, tables[name].parts) if t is not None)
            if held + coming.get(name, 0) >= threshold:
                yield name
