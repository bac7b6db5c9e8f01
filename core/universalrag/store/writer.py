"""Bulk writes with binary COPY on the transaction's own psycopg connection."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from psycopg import sql
from psycopg.types.json import Jsonb

from ..errors import DimensionMismatchError, InvalidInputError
from ..types import CorpusSpec, PartBatch, Unit, Vector
from . import partitions
from .schema import CorpusTables, parts_table_name, unit_table_name
from .vectors import check_matrix, check_vector

__all__ = [
    "copy_rows",
    "copy_units",
    "copy_parts",
    "copy_part_batch",
    "check_part_batch",
    "check_units",
    "parents_first",
]

_UNIT_COLUMNS = ("id", "source_id", "parent_id", "content", "uri", "start_s", "end_s", "metadata", "embedding")
_UNIT_TYPES = ["uuid", "uuid", "uuid", "text", "text", "float8", "float8", "jsonb", "vector"]
_PART_COLUMNS = ("unit_id", "ord", "content", "embedding")
_PART_TYPES = ["uuid", "int4", "text", "vector"]


def copy_rows(
    raw: Any, schema: str, table: str, columns: Sequence[str], types: list[str], rows: Iterable[Sequence[Any]]
) -> int:
    """Binary COPY of ``rows`` into ``schema.table`` (identifiers quoted by psycopg); returns the row count."""
    statement = sql.SQL("COPY {}.{} ({}) FROM STDIN (FORMAT BINARY)").format(
        sql.Identifier(schema), sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns))
    )
    count = 0
    with raw.cursor() as cur, cur.copy(statement) as copy:
        copy.set_types(types)
        for row in rows:
            copy.write_row(row)
            count += 1
    return count


def _uuid(value: str | None) -> uuid.UUID | None:
    return None if value is None else uuid.UUID(str(value))


def _vector(values: Vector | None) -> np.ndarray | None:
    return None if values is None else np.asarray(values, dtype=np.float32)


def copy_units(raw: Any, schema: str, tables: CorpusTables, units: Sequence[Unit], *, source_id: str | None) -> int:
    """COPY ``units`` into the corpus's unit table; returns the number of rows written."""
    visual = bool(tables.spec.visual_dimension)
    rows = (
        (
            _uuid(u.id),
            _uuid(source_id),
            _uuid(u.parent_id),
            u.content,
            u.uri,
            u.start_s,
            u.end_s,
            Jsonb(dict(u.metadata)),
            _vector(u.embedding),
        )
        + ((_vector(u.visual_embedding),) if visual else ())
        + _key(tables, u, source_id)
        for u in units
    )
    columns = _UNIT_COLUMNS + (("visual",) if visual else ()) + _key_columns(tables)
    types = _UNIT_TYPES + (["vector"] if visual else []) + _key_types(tables)
    return copy_rows(raw, schema, unit_table_name(tables.spec.name), columns, types, rows)


# -- the partition key of a partitioned corpus's rows (store.partitions) ---------------------------------------------
def _key(tables: CorpusTables, unit: Unit, source_id: str | None) -> tuple[Any, ...]:
    partition = tables.spec.partition
    return () if partition is None else (partitions.unit_key(partition, unit, source_id),)


def _key_columns(tables: CorpusTables) -> tuple[str, ...]:
    return () if tables.spec.partition is None else (partitions.COLUMN,)


def _key_types(tables: CorpusTables) -> list[str]:
    partition = tables.spec.partition
    return [] if partition is None else ["timestamptz" if partition.by == "time" else "text"]


def _unit_key(raw: Any, schema: str, tables: CorpusTables, unit_id: uuid.UUID | None) -> tuple[Any, ...]:
    """The partition key of a unit already written (the parts of a streamed table follow their unit)."""
    if tables.spec.partition is None:
        return ()
    statement = sql.SQL("SELECT {} FROM {}.{} WHERE id = %s").format(
        sql.Identifier(partitions.COLUMN), sql.Identifier(schema), sql.Identifier(unit_table_name(tables.spec.name))
    )
    row = raw.execute(statement, [unit_id]).fetchone()
    if row is None:
        raise InvalidInputError(f"Parts of unit {unit_id} arrived before the unit; write the unit first.")
    return (row[0],)


def copy_parts(
    raw: Any, schema: str, tables: CorpusTables, units: Sequence[Unit], *, source_id: str | None = None
) -> int:
    """COPY the parts (chunks, rows) of multi-vector ``units`` (written with source ``source_id``); returns the number
    of rows written."""
    rows = (
        (_uuid(u.id), i, text, _vector(vec)) + _key(tables, u, source_id)
        for u in units
        for i, (text, vec) in enumerate(zip(u.parts, u.part_embeddings, strict=True))
    )
    columns, types = _PART_COLUMNS + _key_columns(tables), _PART_TYPES + _key_types(tables)
    return copy_rows(raw, schema, parts_table_name(tables.spec.name), columns, types, rows)


def copy_part_batch(raw: Any, schema: str, tables: CorpusTables, batch: PartBatch) -> int:
    """COPY one streamed batch of parts; returns the number of rows written."""
    unit_id = _uuid(batch.unit_id)
    vectors = np.asarray(batch.vectors, dtype=np.float32)
    key = _unit_key(raw, schema, tables, unit_id)
    rows = ((unit_id, batch.start + i, text, vectors[i]) + key for i, text in enumerate(batch.texts))
    columns, types = _PART_COLUMNS + _key_columns(tables), _PART_TYPES + _key_types(tables)
    return copy_rows(raw, schema, parts_table_name(tables.spec.name), columns, types, rows)


def check_part_batch(batch: PartBatch, spec: CorpusSpec) -> None:
    """Refuse a batch of parts for a single-vector corpus, or whose vectors do not fit the corpus."""
    if not spec.multi_vector:
        raise InvalidInputError(single_vector_message(spec.name))
    width = batch.vectors.shape[1] if getattr(batch.vectors, "ndim", 0) == 2 else -1
    if width != spec.dimension or len(batch.vectors) != len(batch.texts):
        raise DimensionMismatchError(spec.name, spec.dimension, width)
    check_matrix(spec.name, batch.vectors, spec.dimension, half=spec.vector_index == "halfvec")


def check_units(units: Sequence[Unit], specs: Mapping[str, CorpusSpec]) -> dict[str, list[Unit]]:
    """Units grouped by corpus, after checking every vector (finite, not all zeros, of its corpus's dimension:
    nothing is written when one is wrong)."""
    by_corpus: dict[str, list[Unit]] = {}
    for unit in units:
        spec = specs[unit.corpus]
        for vec in ([unit.embedding] if unit.embedding is not None else []) + list(unit.part_embeddings):
            check_vector(
                spec.name, vec, spec.dimension, what=f"vector of unit {unit.id!r}", half=spec.vector_index == "halfvec"
            )
        if unit.visual_embedding is not None:
            if not spec.visual_dimension:
                raise InvalidInputError(
                    f"Corpus {spec.name!r} has no visual channel; add one before writing "
                    "visual embeddings (Store.add_visual_channel)."
                )
            check_vector(
                spec.name, unit.visual_embedding, spec.visual_dimension, what=f"visual vector of unit {unit.id!r}"
            )
        if len(unit.parts) != len(unit.part_embeddings):
            raise InvalidInputError(
                f"Unit {unit.id}: {len(unit.parts)} parts but {len(unit.part_embeddings)} "
                "vectors; give one vector per part."
            )
        if unit.parts and not spec.multi_vector:
            raise InvalidInputError(single_vector_message(spec.name))
        by_corpus.setdefault(spec.name, []).append(unit)
    return by_corpus


def single_vector_message(corpus: str) -> str:
    """What to say when parts are written to a corpus that stores one vector per unit."""
    return f"Corpus {corpus!r} stores one vector per unit; it cannot take parts (write them to a multi-vector corpus)."


def parents_first(names: Sequence[str], specs: Mapping[str, CorpusSpec]) -> list[str]:
    """``names`` ordered so that a corpus comes after its parent (documents before paragraphs)."""

    def depth(name: str) -> int:
        d, parent = 0, specs[name].parent
        while parent is not None:
            d, parent = d + 1, specs[parent].parent
        return d

    return sorted(names, key=depth)
