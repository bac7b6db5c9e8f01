"""The paper's baseline family: every unit of every corpus in ONE shared index, searched as one.

:class:`UnifiedIndex` builds a real pgvector table in the store's schema (``eval_unified`` by default) holding one
row per vector of every corpus built by the same text embedder: each unit's own vector and, in multi-vector
corpora (documents, tables), each part's (chunk, row) vector, tagged with its corpus and unit. One HNSW index
(cosine) covers the whole table, and a search ranks the units of all corpora together by their best vector.
Corpora on other servers (``Store.owner``) are copied into it through this process; the rest with one
``INSERT … SELECT`` per table.

Visual corpora (images, clips, videos) take part through their text channel — the caption, alt text, sidecar,
transcript or title that ingestion embedded with the text encoder — as the paper's unified baselines embed
every modality into one space. Their visual vectors (another encoder's space) stay out of the shared index.

The table is an evaluation artefact, not part of the schema's migrations: :meth:`UnifiedIndex.build` (re)creates
it when the corpora's rows changed since it was built — their counts, or which rows in which version, so that a
file re-ingested with as many units as before is not searched under its old unit ids (recorded in the table's
comment).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from pgvector.sqlalchemy import Vector

from ..errors import InvalidInputError
from ..store.queries import index_key, index_order, query_vector, set_local
from ..store.scan_rule import MAX_EF_SEARCH
from ..store.vectors import half_indexed, hnsw_indexed
from ..types import Hit
from ..types import Vector as QueryVector

if TYPE_CHECKING:
    from ..embed.base import Embedder
    from ..store import Store

__all__ = ["UnifiedIndex", "UnifiedState"]

_MAX_WINDOW = 20000
_COPY_BATCH = 2000


def _version_token(key: sa.ColumnElement[Any]) -> sa.ColumnElement[Any]:
    """``sum(hashtext(key || xmin))`` over a table's rows (0 when empty): which rows, in which version."""
    row = sa.func.concat(sa.cast(key, sa.Text), ":", sa.cast(sa.literal_column("xmin"), sa.Text))
    return sa.func.coalesce(sa.func.sum(sa.func.hashtext(row)), 0)


@dataclass(frozen=True, slots=True)
class UnifiedState:
    """What the shared index holds: the ``corpora`` with their (units, parts) row counts, its ``rows`` and
    whether :meth:`UnifiedIndex.build` just (re)built it."""

    table: str
    corpora: dict[str, tuple[int, int]]
    rows: int
    built: bool


class UnifiedIndex:
    """One shared pgvector table + HNSW index over every corpus of ``store`` embedded by ``embedder``.

    The constructor does no I/O; :meth:`build` creates and fills the table, :meth:`search` searches it.
    """

    def __init__(self, store: Store, embedder: Embedder, *, table: str = "eval_unified", ef_search: int = 100) -> None:
        if not table.replace("_", "").isalnum() or not table[0].isalpha() or len(table) > 50:
            raise InvalidInputError(
                f"The unified index table name {table!r} must be a short identifier (letters, digits, underscores)."
            )
        self.store, self.embedder, self.name, self.ef_search = store, embedder, table, ef_search
        self.table = sa.Table(
            table,
            sa.MetaData(schema=store.tables.schema),
            sa.Column("row", sa.BigInteger, sa.Identity(), primary_key=True),
            sa.Column("corpus", sa.Text, nullable=False),
            sa.Column("unit_id", sa.Uuid(as_uuid=False), nullable=False),
            sa.Column("embedding", Vector(embedder.dimension), nullable=False),
        )
        dimension = embedder.dimension
        self.index: sa.Index | None = None  # wider than pgvector indexes: scanned exactly
        if hnsw_indexed(dimension):  # built as the corpora's (migrations 0011 and 0012)
            half = half_indexed(dimension)
            key = index_key(self.table.c.embedding, dimension)
            key = key.label("half") if half else key
            self.index = sa.Index(
                f"{table}_hnsw",
                key,
                postgresql_using="hnsw",
                postgresql_with={"m": 16, "ef_construction": 128},
                postgresql_ops={key.name: "halfvec_cosine_ops" if half else "vector_cosine_ops"},
            )
        self._state: UnifiedState | None = None

    def __repr__(self) -> str:
        return f"UnifiedIndex(table={self.name!r}, embedder={self.embedder.name!r})"

    def corpora(self) -> list[str]:
        """The non-empty corpora whose text vectors live in this embedder's space (the ones the index holds)."""
        out = []
        for name in self.store.nonempty():
            spec = self.store.corpus(name)
            if (not spec.embedder or spec.embedder == self.embedder.name) and spec.dimension == self.embedder.dimension:
                out.append(name)
        return out

    def _counts(self, corpora: Sequence[str]) -> tuple[dict[str, tuple[int, int]], dict[str, list[int]]]:
        """Each corpus's (units, parts) row counts, and a token of which rows it holds in which version: the sum of
        a hash of every row's id (the unit's, for parts) and transaction id (``xmin``), which changes when a source
        is replaced by one with as many units (new ids) or a row is rewritten in place."""
        counts, tokens = {}, {}
        for name in corpora:
            owner = self.store.owner(name)  # this database, or the member server holding the corpus
            tables = owner.tables.corpus(owner.corpus(name))
            keys = [tables.units.c.id] + ([] if tables.parts is None else [tables.parts.c.unit_id])
            with owner.transaction(f"count the rows of {name!r}") as conn:
                found = [conn.execute(sa.select(sa.func.count(), _version_token(key))).one() for key in keys]
            counts[name] = (int(found[0][0]), int(found[1][0]) if len(found) > 1 else 0)
            tokens[name] = [int(row[1]) for row in found]
        return counts, tokens

    def _vectors(self, name: str) -> list[sa.Select[Any]]:
        """The statements selecting ``(corpus, unit_id, embedding)`` of every vector of corpus ``name`` on the
        server that holds it: the units' own vectors, then the parts' (multi-vector corpora)."""
        owner = self.store.owner(name)
        tables = owner.tables.corpus(owner.corpus(name))
        u = tables.units
        out = [sa.select(sa.literal(name, sa.Text), u.c.id, u.c.embedding).where(u.c.embedding.is_not(None))]
        if tables.parts is not None:
            p = tables.parts
            out.append(sa.select(sa.literal(name, sa.Text), p.c.unit_id, p.c.embedding))
        return out

    def _copy_remote(self, conn: sa.Connection, name: str) -> None:
        """Copy the vectors of a corpus held by another server into the shared table, in batches."""
        owner = self.store.owner(name)
        with owner.transaction(f"read the vectors of {name!r}") as remote:
            for stmt in self._vectors(name):
                for batch in remote.execute(stmt).partitions(_COPY_BATCH):
                    conn.execute(
                        sa.insert(self.table),
                        [{"corpus": r[0], "unit_id": str(r[1]), "embedding": r[2]} for r in batch],
                    )

    def build(self, *, rebuild: bool = False) -> UnifiedState:
        """Create and fill the shared table and its HNSW index (in one transaction), unless it already holds the
        current corpora (the same rows in the same versions) and ``rebuild`` is false."""
        corpora = self.corpora()
        counts, tokens = self._counts(corpora)
        with self.store.transaction("build the unified evaluation index") as conn:
            fingerprint = json.dumps({"embedder": self.embedder.name, "counts": counts, "rows": tokens}, sort_keys=True)
            inspector = sa.inspect(conn)
            exists = inspector.has_table(self.name, schema=self.table.schema)
            if exists and not rebuild:
                comment = inspector.get_table_comment(self.name, schema=self.table.schema).get("text")
                if comment == fingerprint:
                    rows = int(conn.execute(sa.select(sa.func.count()).select_from(self.table)).scalar_one())
                    self._state = UnifiedState(self.name, counts, rows, built=False)
                    return self._state
            if exists:
                self.table.drop(conn)
            self.table.comment = fingerprint
            conn.execute(sa.schema.CreateTable(self.table))  # without the index: filled first, indexed once
            conn.execute(sa.schema.SetTableComment(self.table))
            columns = [self.table.c.corpus, self.table.c.unit_id, self.table.c.embedding]
            for name in corpora:
                if self.store.owner(name) is not self.store:
                    self._copy_remote(conn, name)
                    continue
                for stmt in self._vectors(name):  # same database: one INSERT … SELECT per table
                    conn.execute(sa.insert(self.table).from_select(columns, stmt))
            if self.index is not None:
                self.index.create(conn)
            rows = int(conn.execute(sa.select(sa.func.count()).select_from(self.table)).scalar_one())
        self._state = UnifiedState(self.name, counts, rows, built=True)
        return self._state

    def state(self) -> UnifiedState:
        """What the index holds (building it first when needed)."""
        return self._state or self.build()

    def search(self, vector: QueryVector, *, k: int = 5) -> list[Hit]:
        """The ``k`` units of all corpora nearest to ``vector`` in the shared index (a unit ranked by its best
        vector; ``score`` = cosine similarity), through the HNSW index with the iterative scan on."""
        if k < 1:
            raise InvalidInputError(f"k must be at least 1, got {k}.")
        self.state()
        t = self.table
        query = query_vector(vector, self.embedder.dimension)
        distance = t.c.embedding.cosine_distance(query)
        order = index_order(t.c.embedding, query, self.embedder.dimension)  # the index's expression
        limit = max(8 * k, 100)
        with self.store.transaction("search the unified evaluation index") as conn:
            while True:
                conn.execute(set_local("hnsw.ef_search", min(max(self.ef_search, limit), MAX_EF_SEARCH)))
                conn.execute(set_local("hnsw.iterative_scan", "relaxed_order"))
                rows = conn.execute(
                    sa.select(t.c.corpus, t.c.unit_id, distance.label("distance"))
                    .order_by(order)
                    .limit(sa.literal_column(str(int(limit))))
                ).all()
                best: dict[tuple[str, str], float] = {}
                for r in rows:
                    key = (str(r.corpus), str(r.unit_id))
                    best[key] = max(best.get(key, -2.0), 1.0 - float(r.distance))
                if len(best) >= k or len(rows) < limit or limit >= _MAX_WINDOW:
                    break
                limit = min(limit * 4, _MAX_WINDOW)
        ranked = sorted(best.items(), key=lambda kv: -kv[1])[:k]
        return self._hits(ranked)

    def _hits(self, ranked: Sequence[tuple[tuple[str, str], float]]) -> list[Hit]:
        by_corpus: dict[str, list[str]] = {}
        for (corpus, unit), _ in ranked:
            by_corpus.setdefault(corpus, []).append(unit)
        found: dict[tuple[str, str], Hit] = {}
        for corpus, ids in by_corpus.items():
            for hit in self.store.get_units(corpus, ids):
                found[(corpus, hit.id)] = hit
        return [replace(found[key], score=score) for key, score in ranked if key in found]

    def drop(self) -> bool:
        """Drop the shared table (and its index); whether it existed."""
        with self.store.transaction("drop the unified evaluation index") as conn:
            exists = sa.inspect(conn).has_table(self.name, schema=self.table.schema)
            if exists:
                self.table.drop(conn)
        self._state = None
        return exists

    def describe(self) -> dict[str, Any]:
        """The index's table, corpora and rows, for reports."""
        state = self.state()
        return {
            "table": state.table,
            "corpora": sorted(state.corpora),
            "rows": state.rows,
            "visual_corpora": "text channel (captions, transcripts, titles) embedded by "
            f"{self.embedder.name}; visual vectors are not in the shared index",
        }
