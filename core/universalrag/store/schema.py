"""SQLAlchemy Core descriptions of the tables (for building queries; the DDL lives in the migrations).

Corpus tables are created by the SQL function ``create_corpus`` (see ``migrations/versions``); this module
only mirrors their columns so that queries are built with SQLAlchemy, never by formatting identifiers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR, UUID

from ..types import CorpusSpec
from .partitions import key_column

__all__ = ["Tables", "CorpusTables", "unit_table_name", "parts_table_name"]


def unit_table_name(corpus: str) -> str:
    """The table holding a corpus's units."""
    return f"corpus_{corpus}"


def parts_table_name(corpus: str) -> str:
    """The table holding the extra vectors (chunks, rows) of a multi-vector corpus."""
    return f"corpus_{corpus}_parts"


@dataclass(frozen=True, slots=True)
class CorpusTables:
    """The unit table of a corpus and, for multi-vector corpora, its parts table."""

    spec: CorpusSpec
    units: sa.Table
    parts: sa.Table | None


class Tables:
    """The registry and sources tables of one schema, and corpus tables built on demand."""

    def __init__(self, schema: str) -> None:
        self.schema = schema
        self.metadata = sa.MetaData(schema=schema)
        self.corpora = sa.Table(
            "corpora",
            self.metadata,
            sa.Column("name", sa.Text, primary_key=True),
            sa.Column("modality", sa.Text, nullable=False),
            sa.Column("granularity", sa.Text, nullable=False),
            sa.Column("description", sa.Text, nullable=False),
            sa.Column("embedder", sa.Text, nullable=False),
            sa.Column("dimension", sa.Integer, nullable=False),
            sa.Column("parent", sa.Text),
            sa.Column("multi_vector", sa.Boolean, nullable=False),
            sa.Column("builtin", sa.Boolean, nullable=False),
            sa.Column("metadata", JSONB, nullable=False),
            sa.Column("created_at", sa.DateTime(timezone=True)),
            sa.Column("visual_encoder", sa.Text),
            sa.Column("visual_dimension", sa.Integer),
            sa.Column("server", sa.Text),  # migration 0008: NULL here, else the alias of the server holding it
            sa.Column("partitioning", JSONB),  # migration 0017: NULL, or the Partitioning of a partitioned corpus
            sa.Column("vector_index", sa.Text),  # migration 0018: what the vectors' HNSW index is built on
            sa.Column("vector_index_auto", sa.Boolean, nullable=False),  # ... and whether the library may change it
        )
        self.sources = sa.Table(
            "sources",
            self.metadata,
            sa.Column("id", UUID(as_uuid=False), primary_key=True),
            sa.Column("uri", sa.Text, nullable=False),
            sa.Column("scope", sa.Text, nullable=False, server_default=""),  # migration 0005
            sa.Column("content_hash", sa.Text, nullable=False),
            sa.Column("modality", sa.Text, nullable=False),
            sa.Column("corpora", ARRAY(sa.Text), nullable=False),
            sa.Column("metadata", JSONB, nullable=False),
            sa.Column("ingested_at", sa.DateTime(timezone=True)),
            sa.UniqueConstraint("uri", "scope"),
        )
        self._corpus_cache: dict[tuple[str, int, bool, int | None, str | None], CorpusTables] = {}

    def corpus(self, spec: CorpusSpec) -> CorpusTables:
        """The tables of ``spec`` (cached per name, dimension and shape)."""
        key = (spec.name, spec.dimension, spec.multi_vector, spec.visual_dimension, spec.vector_index)
        cached = self._corpus_cache.get(key)
        if cached is not None and cached.spec == spec:
            return cached
        md = sa.MetaData(schema=self.schema)
        # a partitioned corpus's tables carry the partition column, and the declaration for the queries that prune
        info: dict[str, Any] = {"partition": spec.partition} if spec.partition else {}
        units = sa.Table(
            unit_table_name(spec.name),
            md,
            sa.Column("id", UUID(as_uuid=False), primary_key=True),
            sa.Column("source_id", UUID(as_uuid=False)),
            sa.Column("parent_id", UUID(as_uuid=False)),
            sa.Column("content", sa.Text, nullable=False),
            sa.Column("uri", sa.Text),
            sa.Column("start_s", sa.Float),
            sa.Column("end_s", sa.Float),
            sa.Column("metadata", JSONB, nullable=False),
            sa.Column("tsv", TSVECTOR),
            sa.Column("embedding", Vector(spec.dimension)),
            sa.Column("created_at", sa.DateTime(timezone=True)),
            *([sa.Column("visual", Vector(spec.visual_dimension))] if spec.visual_dimension else []),
            *([key_column(spec.partition)] if spec.partition else []),
            info=dict(info),
        )
        parts = None
        if spec.multi_vector:
            parts = sa.Table(
                parts_table_name(spec.name),
                md,
                sa.Column("unit_id", UUID(as_uuid=False), primary_key=True),
                sa.Column("ord", sa.Integer, primary_key=True),
                sa.Column("content", sa.Text, nullable=False),
                sa.Column("embedding", Vector(spec.dimension), nullable=False),
                *([key_column(spec.partition)] if spec.partition else []),
                info=dict(info),
            )
        tables = CorpusTables(spec=spec, units=units, parts=parts)
        self._corpus_cache[key] = tables
        return tables
