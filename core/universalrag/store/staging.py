"""Large sources in resumable batches: the staging tables of migration 0009 and the SQL that fills and empties
them. :meth:`universalrag.store.Store.write_staged` drives it.

A stage is the half-written state of one source (uri and scope): its batches are committed one by one into
``staged_units`` / ``staged_parts``, which no search reads. :func:`move` then copies the staged rows into the
corpus tables inside the transaction that records the source, so the source appears whole or not at all.
A stage left by a killed process is found again by the same uri, scope and content hash, and the ingestion
continues after its last committed batch.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sqlalchemy as sa
from pgvector.sqlalchemy import Vector
from psycopg.types.json import Jsonb
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects.postgresql import JSONB, UUID

from ..types import CorpusSpec, PartBatch, SourceRecord, Unit
from .schema import CorpusTables
from .writer import check_part_batch, check_units, copy_rows, parents_first

__all__ = [
    "BatchProducer",
    "StageTables",
    "StagedBatch",
    "copy_batch",
    "move",
    "move_rows",
    "open_stage",
    "rows_query",
    "unit_id",
    "write_staged",
]

_UNIT_COLUMNS = (
    "stage_id",
    "corpus",
    "id",
    "parent_id",
    "content",
    "uri",
    "start_s",
    "end_s",
    "metadata",
    "embedding",
    "visual",
)
_UNIT_TYPES = ["uuid", "text", "uuid", "uuid", "text", "text", "float8", "float8", "jsonb", "vector", "vector"]
_PART_COLUMNS = ("stage_id", "corpus", "unit_id", "ord", "content", "embedding")
_PART_TYPES = ["uuid", "text", "uuid", "int4", "text", "vector"]


@dataclass(frozen=True, slots=True)
class StagedBatch:
    """One committed step of a large source: some units and/or some batches of parts."""

    units: Sequence[Unit] = ()
    parts: Sequence[PartBatch] = ()
    #: ``(unit id, row number, {column: cell})`` of table rows kept whole in ``table_rows`` (see migration 0009).
    rows: Sequence[tuple[str, int, dict[str, str]]] = ()


#: ``produce(source_id, done)`` yields the source's batches after the first ``done`` ones, identically on every
#: call (unit ids from :func:`unit_id`), so a resumed ingestion skips the work already committed.
BatchProducer = Callable[[str, int], Iterable[StagedBatch]]


def unit_id(source_id: str, key: str) -> str:
    """A unit id that is the same on every run for the same stage and ``key`` (e.g. ``"passage:17"``)."""
    return str(uuid.uuid5(uuid.UUID(source_id), key))


class StageTables:
    """The staging tables of one schema, as SQLAlchemy Core tables."""

    def __init__(self, schema: str) -> None:
        md = sa.MetaData(schema=schema)
        self.stages = sa.Table(
            "stages",
            md,
            sa.Column("id", UUID(as_uuid=False), primary_key=True),
            sa.Column("uri", sa.Text),
            sa.Column("scope", sa.Text),
            sa.Column("content_hash", sa.Text),
            sa.Column("batches", sa.Integer),
        )
        self.units = sa.Table(
            "staged_units",
            md,
            sa.Column("stage_id", UUID(as_uuid=False)),
            sa.Column("corpus", sa.Text),
            sa.Column("id", UUID(as_uuid=False)),
            sa.Column("parent_id", UUID(as_uuid=False)),
            sa.Column("content", sa.Text),
            sa.Column("uri", sa.Text),
            sa.Column("start_s", sa.Float),
            sa.Column("end_s", sa.Float),
            sa.Column("metadata", JSONB),
            sa.Column("embedding", Vector()),
            sa.Column("visual", Vector()),
        )
        self.parts = sa.Table(
            "staged_parts",
            md,
            sa.Column("stage_id", UUID(as_uuid=False)),
            sa.Column("corpus", sa.Text),
            sa.Column("unit_id", UUID(as_uuid=False)),
            sa.Column("ord", sa.Integer),
            sa.Column("content", sa.Text),
            sa.Column("embedding", Vector()),
        )
        self.rows = sa.Table(
            "staged_rows",
            md,
            sa.Column("stage_id", UUID(as_uuid=False)),
            sa.Column("unit_id", UUID(as_uuid=False)),
            sa.Column("ord", sa.Integer),
            sa.Column("cells", JSONB),
        )
        self.table_rows = sa.Table(
            "table_rows",
            md,
            sa.Column("source_id", UUID(as_uuid=False)),
            sa.Column("unit_id", UUID(as_uuid=False)),
            sa.Column("ord", sa.Integer),
            sa.Column("cells", JSONB),
        )


def open_stage(conn: sa.Connection, st: StageTables, *, uri: str, scope: str, content_hash: str) -> tuple[str, int]:
    """``(stage id, batches already committed)`` for this content: the stage a killed run left, else a new
    one (a stage of other content for the same source is dropped with its rows)."""
    row = conn.execute(
        sa.select(st.stages.c.id, st.stages.c.content_hash, st.stages.c.batches).where(
            st.stages.c.uri == uri, st.stages.c.scope == scope
        )
    ).first()
    if row is not None and row.content_hash == content_hash:
        return str(row.id), int(row.batches)
    if row is not None:
        conn.execute(sa.delete(st.stages).where(st.stages.c.id == row.id))
    stage_id = str(uuid.uuid4())
    conn.execute(sa.insert(st.stages).values(id=stage_id, uri=uri, scope=scope, content_hash=content_hash, batches=0))
    return stage_id, 0


def _vec(values: Any) -> np.ndarray | None:
    return None if values is None else np.asarray(values, dtype=np.float32)


def copy_batch(conn: sa.Connection, st: StageTables, stage_id: str, batch: StagedBatch, *, number: int) -> int:
    """Write ``batch`` as the stage's batch ``number`` (1-based) and record it; returns the rows written."""
    raw = conn.connection.driver_connection
    sid = uuid.UUID(stage_id)
    schema = str(st.stages.schema)
    n = copy_rows(
        raw,
        schema,
        "staged_units",
        _UNIT_COLUMNS,
        _UNIT_TYPES,
        (
            (
                sid,
                u.corpus,
                uuid.UUID(u.id),
                None if u.parent_id is None else uuid.UUID(u.parent_id),
                u.content,
                u.uri,
                u.start_s,
                u.end_s,
                Jsonb(dict(u.metadata)),
                _vec(u.embedding),
                _vec(u.visual_embedding),
            )
            for u in batch.units
        ),
    )
    for part in batch.parts:
        vectors = np.asarray(part.vectors, dtype=np.float32)
        pid = uuid.UUID(part.unit_id)
        n += copy_rows(
            raw,
            schema,
            "staged_parts",
            _PART_COLUMNS,
            _PART_TYPES,
            ((sid, part.corpus, pid, part.start + i, text, vectors[i]) for i, text in enumerate(part.texts)),
        )
    n += copy_rows(
        raw,
        schema,
        "staged_rows",
        ("stage_id", "unit_id", "ord", "cells"),
        ["uuid", "uuid", "int4", "jsonb"],
        ((sid, uuid.UUID(uid), ord_, Jsonb(cells)) for uid, ord_, cells in batch.rows),
    )
    conn.execute(sa.update(st.stages).where(st.stages.c.id == stage_id).values(batches=number))
    return n


def move(conn: sa.Connection, st: StageTables, tables: CorpusTables, stage_id: str) -> dict[str, int]:
    """Copy the stage's rows of one corpus into its tables (units under source ``stage_id``, vectors cast to
    the corpus's dimension); returns the rows moved per table."""
    spec: CorpusSpec = tables.spec
    su, sp = st.units, st.parts
    columns = ["id", "source_id", "parent_id", "content", "uri", "start_s", "end_s", "metadata", "embedding"]
    picked = [
        su.c.id,
        sa.cast(sa.literal(stage_id), UUID(as_uuid=False)),
        su.c.parent_id,
        su.c.content,
        su.c.uri,
        su.c.start_s,
        su.c.end_s,
        su.c.metadata,
        sa.cast(su.c.embedding, Vector(spec.dimension)),
    ]
    if spec.visual_dimension:
        columns.append("visual")
        picked.append(sa.cast(su.c.visual, Vector(spec.visual_dimension)))
    mine = (su.c.stage_id == stage_id, su.c.corpus == spec.name)
    rows = {spec.name: int(conn.execute(sa.select(sa.func.count()).select_from(su).where(*mine)).scalar_one())}
    conn.execute(sa.insert(tables.units).from_select(columns, sa.select(*picked).where(*mine)))
    if tables.parts is not None:
        mine = (sp.c.stage_id == stage_id, sp.c.corpus == spec.name)
        parts = int(conn.execute(sa.select(sa.func.count()).select_from(sp).where(*mine)).scalar_one())
        conn.execute(
            sa.insert(tables.parts).from_select(
                ["unit_id", "ord", "content", "embedding"],
                sa.select(sp.c.unit_id, sp.c.ord, sp.c.content, sa.cast(sp.c.embedding, Vector(spec.dimension))).where(
                    *mine
                ),
            )
        )
        if parts:
            rows[f"{spec.name}.parts"] = parts
    return rows


def move_rows(conn: sa.Connection, st: StageTables, stage_id: str) -> int:
    """Copy the stage's whole table rows into ``table_rows`` under source ``stage_id``; returns how many."""
    mine = st.rows.c.stage_id == stage_id
    count = int(conn.execute(sa.select(sa.func.count()).select_from(st.rows).where(mine)).scalar_one())
    if count:
        conn.execute(
            sa.insert(st.table_rows).from_select(
                ["source_id", "unit_id", "ord", "cells"],
                sa.select(st.rows.c.stage_id, st.rows.c.unit_id, st.rows.c.ord, st.rows.c.cells).where(mine),
            )
        )
    return count


def rows_query(st: StageTables, unit_id: str, where: dict[str, str], limit: int) -> sa.Select[Any]:
    """The stored rows of table unit ``unit_id`` whose cells equal ``where`` (column → text), in file order."""
    t = st.table_rows
    query = sa.select(t.c.ord, t.c.cells).where(t.c.unit_id == unit_id)
    if where:
        query = query.where(t.c.cells.contains(where))
    return query.order_by(t.c.ord).limit(limit)


def write_staged(
    store: Any, source: SourceRecord, produce: BatchProducer, *, on_batch: Callable[[int], None] | None = None
) -> tuple[str, str, dict[str, int]]:
    """``(status, source id, rows)`` of writing a large source with ``store`` (a
    :class:`~universalrag.store.Store`, which calls this; see :meth:`~universalrag.store.Store.write_staged`)."""
    specs = {name: store.corpus(name) for name in source.corpora}
    st = StageTables(store.schema)
    s = store.tables.sources
    mine = (s.c.uri == source.uri, s.c.scope == source.scope)
    key = sa.func.hashtextextended(source.uri + "\n" + source.scope, 1)
    with store.connection(f"stage source {source.uri}") as lock:
        lock.execute(sa.select(sa.func.pg_advisory_lock(key)))
        lock.commit()
        try:
            with store.transaction(f"stage source {source.uri}") as conn:
                old = conn.execute(sa.select(s.c.id, s.c.content_hash, s.c.corpora).where(*mine)).first()
                if (
                    old is not None
                    and old.content_hash == source.content_hash
                    and sorted(old.corpora) == sorted(source.corpora)
                ):
                    return "unchanged", str(old.id), {}
                stage_id, done = open_stage(
                    conn, st, uri=source.uri, scope=source.scope, content_hash=source.content_hash
                )
            for number, batch in enumerate(produce(stage_id, done), start=done + 1):
                check_units(batch.units, specs)
                for part in batch.parts:
                    check_part_batch(part, specs[part.corpus])
                with store.transaction(f"stage a batch of {source.uri}") as conn:
                    copy_batch(conn, st, stage_id, batch, number=number)
                if on_batch is not None:
                    on_batch(number)
            with store.transaction(f"write source {source.uri}") as conn:
                conn.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtextextended(source.uri, 0))))
                old = conn.execute(sa.select(s.c.id).where(*mine)).first()
                if old is not None:
                    conn.execute(sa.delete(s).where(s.c.id == old.id))
                conn.execute(
                    sa.insert(s).values(
                        id=stage_id,
                        uri=source.uri,
                        scope=source.scope,
                        content_hash=source.content_hash,
                        modality=str(source.modality),
                        corpora=list(source.corpora),
                        metadata=dict(source.metadata),
                    )
                )
                rows: dict[str, int] = {}
                for name in parents_first(list(specs), store.corpora()):
                    rows.update(move(conn, st, store.tables.corpus(specs[name]), stage_id))
                if whole := move_rows(conn, st, stage_id):
                    rows["table_rows"] = whole
                conn.execute(sa.delete(st.stages).where(st.stages.c.id == stage_id))
        finally:
            with contextlib.suppress(sa_exc.DBAPIError):  # a lost connection has released the lock already
                lock.execute(sa.select(sa.func.pg_advisory_unlock(key)))
                lock.commit()
    return ("replaced" if old is not None else "added"), stage_id, rows
