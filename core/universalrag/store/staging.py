"""Large sources in resumable batches: the staging tables of migration 0007 and the SQL that fills and empties
them. :meth:`universalrag.store.Store.write_staged` drives it.

A stage is the half-written state of one source (uri and scope): its batches are committed one by one into
``staged_units`` / ``staged_parts``, which no search reads. :func:`move` then copies the staged rows into the
corpus tables inside the transaction that records the source, so the source appears whole or not at all.
A stage left by a killed process is found again by the same uri, scope and content hash, and the ingestion
continues after its last committed batch.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sqlalchemy as sa
from pgvector.sqlalchemy import Vector
from psycopg.types.json import Jsonb
from sqlalchemy.dialects.postgresql import JSONB, UUID

from ..types import CorpusSpec, PartBatch, Unit
from .schema import CorpusTables
from .writer import copy_rows

__all__ = ["BatchProducer", "StageTables", "StagedBatch", "copy_batch", "move", "open_stage", "unit_id"]

_UNIT_COLUMNS = ("stage_id", "corpus", "id", "parent_id", "content", "uri", "start_s", "end_s", "metadata",
                 "embedding", "visual")
_UNIT_TYPES = ["uuid", "text", "uuid", "uuid", "text", "text", "float8", "float8", "jsonb", "vector", "vector"]
_PART_COLUMNS = ("stage_id", "corpus", "unit_id", "ord", "content", "embedding")
_PART_TYPES = ["uuid", "text", "uuid", "int4", "text", "vector"]


@dataclass(frozen=True, slots=True)
class StagedBatch:
    """One committed step of a large source: some units and/or some batches of parts."""

    units: Sequence[Unit] = ()
    parts: Sequence[PartBatch] = ()


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
            "stages", md,
            sa.Column("id", UUID(as_uuid=False), primary_key=True), sa.Column("uri", sa.Text),
            sa.Column("scope", sa.Text), sa.Column("content_hash", sa.Text), sa.Column("batches", sa.Integer),
        )
        self.units = sa.Table(
            "staged_units", md,
            sa.Column("stage_id", UUID(as_uuid=False)), sa.Column("corpus", sa.Text),
            sa.Column("id", UUID(as_uuid=False)), sa.Column("parent_id", UUID(as_uuid=False)),
            sa.Column("content", sa.Text), sa.Column("uri", sa.Text), sa.Column("start_s", sa.Float),
            sa.Column("end_s", sa.Float), sa.Column("metadata", JSONB), sa.Column("embedding", Vector()),
            sa.Column("visual", Vector()),
        )
        self.parts = sa.Table(
            "staged_parts", md,
            sa.Column("stage_id", UUID(as_uuid=False)), sa.Column("corpus", sa.Text),
            sa.Column("unit_id", UUID(as_uuid=False)), sa.Column("ord", sa.Integer), sa.Column("content", sa.Text),
            sa.Column("embedding", Vector()),
        )


def open_stage(conn: sa.Connection, st: StageTables, *, uri: str, scope: str, content_hash: str) -> tuple[str, int]:
    """``(stage id, batches already committed)`` for this content: the stage a killed run left, else a new
    one (a stage of other content for the same source is dropped with its rows)."""
    row = conn.execute(sa.select(st.stages.c.id, st.stages.c.content_hash, st.stages.c.batches)
                       .where(st.stages.c.uri == uri, st.stages.c.scope == scope)).first()
    if row is not None and row.content_hash == content_hash:
        return str(row.id), int(row.batches)
    if row is not None:
        conn.execute(sa.delete(st.stages).where(st.stages.c.id == row.id))
    stage_id = str(uuid.uuid4())
    conn.execute(sa.insert(st.stages).values(id=stage_id, uri=uri, scope=scope, content_hash=content_hash,
                                             batches=0))
    return stage_id, 0


def _vec(values: Any) -> np.ndarray | None:
    return None if values is None else np.asarray(values, dtype=np.float32)


def copy_batch(conn: sa.Connection, st: StageTables, stage_id: str, batch: StagedBatch, *, number: int) -> int:
    """Write ``batch`` as the stage's batch ``number`` (1-based) and record it; returns the rows written."""
    raw = conn.connection.driver_connection
    sid = uuid.UUID(stage_id)
    schema = str(st.stages.schema)
    n = copy_rows(raw, schema, "staged_units", _UNIT_COLUMNS, _UNIT_TYPES, (
        (sid, u.corpus, uuid.UUID(u.id), None if u.parent_id is None else uuid.UUID(u.parent_id), u.content,
         u.uri, u.start_s, u.end_s, Jsonb(dict(u.metadata)), _vec(u.embedding), _vec(u.visual_embedding))
        for u in batch.units
    ))
    for part in batch.parts:
        vectors = np.asarray(part.vectors, dtype=np.float32)
        pid = uuid.UUID(part.unit_id)
        n += copy_rows(raw, schema, "staged_parts", _PART_COLUMNS, _PART_TYPES, (
            (sid, part.corpus, pid, part.start + i, text, vectors[i]) for i, text in enumerate(part.texts)
        ))
    conn.execute(sa.update(st.stages).where(st.stages.c.id == stage_id).values(batches=number))
    return n


def move(conn: sa.Connection, st: StageTables, tables: CorpusTables, stage_id: str) -> dict[str, int]:
    """Copy the stage's rows of one corpus into its tables (units under source ``stage_id``, vectors cast to
    the corpus's dimension); returns the rows moved per table."""
    spec: CorpusSpec = tables.spec
    su, sp = st.units, st.parts
    columns = ["id", "source_id", "parent_id", "content", "uri", "start_s", "end_s", "metadata", "embedding"]
    picked = [su.c.id, sa.cast(sa.literal(stage_id), UUID(as_uuid=False)), su.c.parent_id, su.c.content, su.c.uri,
              su.c.start_s, su.c.end_s, su.c.metadata, sa.cast(su.c.embedding, Vector(spec.dimension))]
    if spec.visual_dimension:
        columns.append("visual")
        picked.append(sa.cast(su.c.visual, Vector(spec.visual_dimension)))
    mine = (su.c.stage_id == stage_id, su.c.corpus == spec.name)
    rows = {spec.name: int(conn.execute(sa.select(sa.func.count()).select_from(su).where(*mine)).scalar_one())}
    conn.execute(sa.insert(tables.units).from_select(columns, sa.select(*picked).where(*mine)))
    if tables.parts is not None:
        mine = (sp.c.stage_id == stage_id, sp.c.corpus == spec.name)
        parts = int(conn.execute(sa.select(sa.func.count()).select_from(sp).where(*mine)).scalar_one())
        conn.execute(sa.insert(tables.parts).from_select(
            ["unit_id", "ord", "content", "embedding"],
            sa.select(sp.c.unit_id, sp.c.ord, sp.c.content, sa.cast(sp.c.embedding, Vector(spec.dimension)))
            .where(*mine)))
        if parts:
            rows[f"{spec.name}.parts"] = parts
    return rows
