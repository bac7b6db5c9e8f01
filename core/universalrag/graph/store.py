"""GraphStore: the knowledge graph's rows in a :class:`~universalrag.store.Store`'s schema — written with a source's
units in their transaction, read back by name, neighbourhood, path and mention.

Every read is bounded: at most :data:`~universalrag.graph.expand.MAX_HOPS` hops, a fan-out cap per entity, a row
cap per call. SQL goes through SQLAlchemy Core; no identifier is ever formatted into a statement.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import sqlalchemy as sa

from ..embed.base import Embedder
from ..errors import InvalidInputError
from ..store import Store
from ..store.graph_tables import GraphTables, graph_tables
from ..store.sources import SourceHook
from ..types import Hit, SourceRecord, Unit
from . import expand
from .align import SAME_ENTITY_THRESHOLD, AlignReport, align_entities
from .model import Extraction, Extractor, normalise_key
from .rebuild import rebuild
from .records import BuildReport, Entity, GraphStats, Mention, Neighbour, Path, Relation, WriteCounts
from .write import WriteLimits, entity_text, write_extraction

__all__ = ["GraphStore", "IngestGraph"]

_log = logging.getLogger(__name__)

#: Most rows one read returns, whatever the caller asks.
MAX_ROWS = 10_000


def _check_limit(name: str, value: int, top: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
        raise InvalidInputError(f"{name} must be a whole number from 1 to {top}, got {value!r}.")
    return value


class IngestGraph:
    """Plugs the graph into ingestion (``IngestOptions.graph``): called with a source's units before its transaction
    (extraction, which may be slow, runs there), it returns the :data:`~universalrag.store.sources.SourceHook` that
    writes the extraction inside it."""

    def __init__(self, graph: GraphStore, extractor: Extractor, *, vectors: bool = False) -> None:
        self.graph = graph
        self.extractor = extractor
        self.vectors = vectors

    def __call__(self, units: Sequence[Unit], source_uri: str) -> SourceHook:
        """Extract ``units`` of the source ``source_uri``; the hook writes the result."""
        extraction = self.extractor.extract(units, source_uri=source_uri)

        def hook(conn: sa.Connection, source: SourceRecord, source_id: str, written: Sequence[Unit]) -> None:
            self.graph.write(conn, extraction, source_id=source_id, units=written, vectors=self.vectors)

        return hook


class GraphStore:
    """The graph tables of ``store``'s schema. ``embedder`` (the store's text embedder) gives entities their vectors
    when they are written; without one, or when the schema's vector column has another width, they get none.

    The constructor does no I/O."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None = None,
        *,
        limits: WriteLimits | None = None,
        embed_batch: int = 256,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.limits = limits or WriteLimits()
        self.embed_batch = embed_batch
        self._dimension: int | None = None
        self._tables: GraphTables | None = None

    # -- tables ---------------------------------------------------------------------------------------------
    def dimension(self) -> int | None:
        """The width of the schema's entity vectors (``None`` while untyped: ``Store.init`` has not run)."""
        if self._dimension is None:
            regclass = sa.func.to_regclass(sa.func.format("%I.graph_entities", self.store.schema))
            a = sa.table("pg_attribute", sa.column("attrelid"), sa.column("attname"), sa.column("atttypmod"))
            query = sa.select(a.c.atttypmod).where(a.c.attrelid == regclass, a.c.attname == "embedding")
            with self.store.transaction("read the graph's vector width", read_only=True) as conn:
                typmod = conn.execute(query).scalar_one_or_none()
            if typmod is not None and int(typmod) > 0:
                self._dimension = int(typmod)
        return self._dimension

    @property
    def tables(self) -> GraphTables:
        """The graph tables (vector columns typed once :meth:`dimension` is known)."""
        if self._tables is None:
            self._tables = graph_tables(self.store.schema, self.dimension())
        return self._tables

    def _embed_fn(self) -> Callable[[Sequence[str]], np.ndarray] | None:
        embedder = self.embedder
        if embedder is None or self.dimension() != embedder.dimension:
            return None
        return embedder.embed

    # -- writing --------------------------------------------------------------------------------------------
    def write(
        self,
        conn: sa.Connection,
        extraction: Extraction,
        *,
        source_id: str | None,
        units: Sequence[Unit] = (),
        vectors: bool = True,
    ) -> WriteCounts:
        """Replace what ``source_id`` (or, without a source, the ``units``) stated in the graph by ``extraction``, on
        ``conn``: the caller's transaction, which writes the source's units (:mod:`universalrag.graph.write`).
        ``vectors``: compute the vectors of new or changed entities now (else :meth:`embed_missing` does later)."""
        return write_extraction(
            conn,
            self.tables,
            extraction,
            source_id=source_id,
            units=units,
            embed=self._embed_fn() if vectors else None,
            embed_batch=self.embed_batch,
            limits=self.limits,
        )

    def for_ingest(self, extractor: Extractor, *, vectors: bool = False) -> IngestGraph:
        """What ``IngestOptions(graph=...)`` takes to write each ingested source's graph with its units; ``vectors``
        computes entity vectors then too (it about doubles the cost of ingesting tables: docs/graph.md), else
        :meth:`embed_missing` computes them later."""
        return IngestGraph(self, extractor, vectors=vectors)

    def embed_missing(self, *, batch: int = 256, limit: int | None = None) -> int:
        """Compute the vectors of entities that have none (at most ``limit``), ``batch`` per transaction; returns
        how many. Nothing without an embedder of the schema's width."""
        embed = self._embed_fn()
        if embed is None:
            return 0
        e = self.tables.entities
        done = 0
        while limit is None or done < limit:
            size = batch if limit is None else min(batch, limit - done)
            with self.store.transaction("compute graph entity vectors") as conn:
                rows = list(
                    conn.execute(
                        sa.select(e.c.id, e.c.name, e.c.type, e.c.description)
                        .where(e.c.embedding.is_(None))
                        .order_by(e.c.id)
                        .limit(size)
                        .with_for_update(skip_locked=True)
                    )
                )
                if not rows:
                    break
                vectors = np.asarray(embed([entity_text(r.name, r.type, r.description) for r in rows]), np.float32)
                conn.execute(
                    sa.update(e).where(e.c.id == sa.bindparam("eid")).values(embedding=sa.bindparam("vec")),
                    [{"eid": int(r.id), "vec": v} for r, v in zip(rows, vectors, strict=True)],
                )
            done += len(rows)
        return done

    def rebuild(
        self,
        extractor: Extractor,
        *,
        uris: Iterable[str] | None = None,
        on_source: Callable[[str, WriteCounts], None] | None = None,
        vectors: bool = True,
        align: bool = True,
    ) -> BuildReport:
        """(Re)build the graph of stored sources (all, or those of ``uris``) from their stored units, one transaction
        per source: for corpora ingested before the graph existed, or after changing the extractor. Units that
        belong to no source (SQL sync, ``add_units``) are not read. ``vectors``: then compute the entity vectors
        that are missing (:meth:`embed_missing`); ``align``: then merge the entities that name one thing
        (:meth:`align`; the report's ``merged`` counts them)."""
        report = rebuild(self.store, self.write, extractor, uris=uris, on_source=on_source)
        if vectors:
            self.embed_missing()
        if align:
            report = dataclasses.replace(report, merged=self.align().merged)
        return report

    def align(self, *, threshold: float = SAME_ENTITY_THRESHOLD) -> AlignReport:
        """Merge the entities of one type that name one thing (:func:`~universalrag.graph.align.same_entity`: their
        names' vectors at least ``threshold`` alike, one name the other with words added after it, the same numbers),
        in one transaction (:mod:`universalrag.graph.align`); only entities that have a vector take part. Nothing
        without an embedder of the schema's width."""
        embed = self._embed_fn()
        if embed is None:
            return AlignReport(candidates=0, merges=(), seconds=0.0)
        return align_entities(self.store, self.tables, embed, threshold=threshold)

    # -- reading --------------------------------------------------------------------------------------------
    def _read(self, action: str, fn: Callable[[sa.Connection], Any]) -> Any:
        with self.store.transaction(action, read_only=True) as conn:
            return fn(conn)

    def _columns(self) -> list[Any]:
        e = self.tables.entities
        return [e.c.id, e.c.key, e.c.name, e.c.type, e.c.description, e.c.aliases]

    def entity(self, name: str) -> Entity | None:
        """The entity called ``name`` (by its alignment key, else as one of its aliases), or ``None``."""
        found = self.entities(name, limit=1, lexical=False)
        return found[0] if found else None

    def entities(self, query: str, *, limit: int = 10, lexical: bool = True) -> list[Entity]:
        """Entities for ``query``: the one named so (key or alias) first, then (``lexical``) those whose name holds
        the query's words (full text, ``simple`` configuration), best ranked first."""
        _check_limit("limit", limit, MAX_ROWS)
        key = normalise_key(query)
        if not key:
            return []
        e = self.tables.entities
        exact = (
            sa.select(*self._columns())
            .where(sa.or_(e.c.key == key, e.c.alias_keys.any_() == key))
            .order_by((e.c.key == key).desc(), e.c.id)
            .limit(limit)
        )
        tsv = sa.func.to_tsvector(sa.literal_column("'simple'::regconfig"), e.c.name)
        tsq = sa.func.plainto_tsquery(sa.literal_column("'simple'::regconfig"), key)
        words = (
            sa.select(*self._columns())
            .where(tsv.bool_op("@@")(tsq))
            .order_by(sa.func.ts_rank(tsv, tsq).desc(), sa.func.length(e.c.name), e.c.id)
            .limit(limit)
        )

        def read(conn: sa.Connection) -> list[Entity]:
            out = {r.id: Entity.from_row(r) for r in conn.execute(exact)}
            if lexical and len(out) < limit:
                for r in conn.execute(words):
                    out.setdefault(r.id, Entity.from_row(r))
            return list(out.values())[:limit]

        return list(self._read("look up graph entities", read))

    def similar(self, vector: Sequence[float] | np.ndarray, *, limit: int = 10) -> list[tuple[Entity, float]]:
        """Entities whose vector is nearest ``vector`` (in the text embedder's space), with cosine similarity."""
        _check_limit("limit", limit, MAX_ROWS)
        if self.dimension() is None:
            return []
        e = self.tables.entities
        distance = e.c.embedding.cosine_distance(np.asarray(vector, dtype=np.float32))
        query = (
            sa.select(*self._columns(), (1 - distance).label("score"))
            .where(e.c.embedding.is_not(None))
            .order_by(distance)
            .limit(limit)
        )
        rows = self._read("search graph entities", lambda conn: list(conn.execute(query)))
        return [(Entity.from_row(r), float(r.score)) for r in rows]

    def by_ids(self, ids: Sequence[int]) -> list[Entity]:
        """Entities by id, in the order asked (missing ids left out)."""
        e = self.tables.entities
        wanted = [int(i) for i in ids][:MAX_ROWS]
        rows = self._read(
            "read graph entities",
            lambda conn: {
                r.id: Entity.from_row(r) for r in conn.execute(sa.select(*self._columns()).where(e.c.id.in_(wanted)))
            },
        )
        return [rows[i] for i in wanted if i in rows]

    def _resolve(self, entity: Entity | int | str) -> int | None:
        if isinstance(entity, Entity):
            return entity.id
        if isinstance(entity, int) and not isinstance(entity, bool):
            return entity
        found = self.entity(str(entity))
        return None if found is None else found.id

    def neighbours(
        self, entity: Entity | int | str, *, hops: int = 2, max_fanout: int = 50, limit: int = 200
    ) -> list[Neighbour]:
        """The entities within ``hops`` relations of ``entity`` (an Entity, an id or a name), nearest first; from each
        entity at most ``max_fanout`` relations are followed (the heaviest), at most ``limit`` entities come back."""
        _check_limit("hops", hops, expand.MAX_HOPS)
        _check_limit("max_fanout", max_fanout, expand.MAX_FANOUT)
        _check_limit("limit", limit, MAX_ROWS)
        start = self._resolve(entity)
        if start is None:
            return []
        reached = self._read(
            "walk the graph",
            lambda conn: expand.breadth_first(conn, self.tables, start, hops=hops, max_fanout=max_fanout, limit=limit),
        )
        found = {e.id: e for e in self.by_ids([r.entity for r in reached])}
        return [
            Neighbour(entity=found[r.entity], hops=r.hops, via=r.via, weight=r.weight)
            for r in reached
            if r.entity in found
        ]

    def paths(
        self, a: Entity | int | str, b: Entity | int | str, *, max_hops: int = 3, max_fanout: int = 50, limit: int = 5
    ) -> list[Path]:
        """Shortest chains of relations from ``a`` to ``b`` (at most ``max_hops`` long, at most ``limit`` of them)."""
        _check_limit("max_hops", max_hops, expand.MAX_HOPS)
        _check_limit("max_fanout", max_fanout, expand.MAX_FANOUT)
        _check_limit("limit", limit, 100)
        start, end = self._resolve(a), self._resolve(b)
        if start is None or end is None:
            return []
        chains = self._read(
            "find paths in the graph",
            lambda conn: expand.shortest_paths(
                conn, self.tables, start, end, max_hops=max_hops, max_fanout=max_fanout, limit=limit
            ),
        )
        found = {e.id: e for e in self.by_ids(sorted({i for ids, _ in chains for i in ids}))}
        return [
            Path(entities=tuple(found[i] for i in ids), via=via) for ids, via in chains if all(i in found for i in ids)
        ]

    def relations(self, entity_ids: Sequence[int], *, limit: int = 1000) -> list[Relation]:
        """Relations with an end among ``entity_ids``, heaviest first."""
        _check_limit("limit", limit, MAX_ROWS)
        r = self.tables.relations
        ids = [int(i) for i in entity_ids][:MAX_ROWS]
        query = (
            sa.select(
                r.c.id, r.c.source_entity, r.c.target_entity, r.c.keywords, r.c.description, r.c.weight, r.c.source_id
            )
            .where(sa.or_(r.c.source_entity.in_(ids), r.c.target_entity.in_(ids)))
            .order_by(r.c.weight.desc(), r.c.id)
            .limit(limit)
        )
        rows = self._read("read graph relations", lambda conn: list(conn.execute(query)))
        return [
            Relation(
                id=int(x.id),
                source=int(x.source_entity),
                target=int(x.target_entity),
                keywords=x.keywords,
                description=x.description,
                weight=float(x.weight),
                source_id=None if x.source_id is None else str(x.source_id),
            )
            for x in rows
        ]

    def mentions(self, entity_ids: Sequence[int], *, limit: int = 1000) -> list[Mention]:
        """Mentions of ``entity_ids``: anchors first, then the heaviest."""
        _check_limit("limit", limit, MAX_ROWS)
        m = self.tables.mentions
        ids = [int(i) for i in entity_ids][:MAX_ROWS]
        query = (
            sa.select(m)
            .where(m.c.entity_id.in_(ids))
            .order_by((m.c.role == "anchor").desc(), m.c.weight.desc(), m.c.id)
            .limit(limit)
        )
        rows = self._read("read graph mentions", lambda conn: list(conn.execute(query)))
        return [
            Mention(
                entity_id=int(x.entity_id),
                corpus=x.corpus,
                unit_id=str(x.unit_id),
                role=x.role,
                weight=float(x.weight),
                source_id=None if x.source_id is None else str(x.source_id),
                page=x.page,
                start_s=x.start_s,
                end_s=x.end_s,
            )
            for x in rows
        ]

    def units(self, entity_ids: Sequence[int], *, limit: int = 50) -> list[Hit]:
        """The units that mention or anchor ``entity_ids`` (anchors and heavier mentions first), read from their
        corpora; a unit mentioned several times comes once."""
        _check_limit("limit", limit, MAX_ROWS)
        order: dict[tuple[str, str], None] = {}
        for men in self.mentions(entity_ids, limit=min(MAX_ROWS, limit * 4)):
            order.setdefault((men.corpus, men.unit_id), None)
            if len(order) >= limit:
                break
        by_corpus: dict[str, list[str]] = {}
        for corpus, unit_id in order:
            by_corpus.setdefault(corpus, []).append(unit_id)
        hits = {(h.corpus, h.id): h for c, ids in by_corpus.items() for h in self.store.get_units(c, ids)}
        return [hits[k] for k in order if k in hits]

    def stats(self) -> GraphStats:
        """Counts of entities (by type), relations (by keywords, the 20 commonest), mentions, sources, vectors."""
        t = self.tables

        def read(conn: sa.Connection) -> GraphStats:
            e, r, m = t.entities, t.relations, t.mentions
            count = sa.func.count()
            types: dict[Any, Any] = dict(
                conn.execute(sa.select(e.c.type, count).group_by(e.c.type).order_by(count.desc())).all()
            )
            keywords: dict[Any, Any] = dict(
                conn.execute(
                    sa.select(r.c.keywords, count).group_by(r.c.keywords).order_by(count.desc(), r.c.keywords).limit(20)
                ).all()
            )
            return GraphStats(
                entities=sum(types.values()),
                relations=int(conn.execute(sa.select(count).select_from(r)).scalar_one()),
                mentions=int(conn.execute(sa.select(count).select_from(m)).scalar_one()),
                sources=int(conn.execute(sa.select(sa.func.count(sa.distinct(m.c.source_id)))).scalar_one()),
                embedded=int(
                    conn.execute(sa.select(count).select_from(e).where(e.c.embedding.is_not(None))).scalar_one()
                ),
                types={str(k): int(v) for k, v in types.items()},
                keywords={str(k): int(v) for k, v in keywords.items()},
            )

        result: GraphStats = self._read("count the graph", read)
        return result
