"""SQLAlchemy Core descriptions of the knowledge graph's tables (the DDL is revision 0013 of the migrations).

Here, below the graph package, so that the store can forget the mentions of units it deletes and the graph package
(:mod:`universalrag.graph.store`) can build its statements from the same description.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import sqlalchemy as sa
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import ARRAY, UUID

__all__ = ["GraphTables", "graph_tables"]


@dataclass(frozen=True, slots=True)
class GraphTables:
    """``graph_entities``, ``graph_relations`` and ``graph_mentions`` of one schema."""

    entities: sa.Table
    relations: sa.Table
    mentions: sa.Table


#: Schemas (and vector widths) whose table descriptions are kept: each walk and each deletion reuses them, and with
#: them the statements SQLAlchemy compiled for them (a fresh description misses its cache: 7 ms more a walk).
CACHED_SCHEMAS = 128


@functools.lru_cache(maxsize=CACHED_SCHEMAS)
def graph_tables(schema: str, dimension: int | None = None) -> GraphTables:
    """The graph tables of ``schema``; ``dimension`` types the vector columns (``None``: untyped, as before
    ``Store.init`` knew the text embedder's width). The same description for the same arguments (kept for
    :data:`CACHED_SCHEMAS` of them): treat it as read-only."""
    md = sa.MetaData(schema=schema)
    vector = Vector(dimension) if dimension else Vector()
    entities = sa.Table(
        "graph_entities",
        md,
        sa.Column("id", sa.BigInteger, primary_key=True),
        sa.Column("key", sa.Text, nullable=False, unique=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("type", sa.Text, nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("aliases", ARRAY(sa.Text), nullable=False),
        sa.Column("alias_keys", ARRAY(sa.Text), nullable=False),
        sa.Column("embedding", vector),
        sa.Column("created_at", sa.DateTime(timezone=True)),
        sa.Column("updated_at", sa.DateTime(timezone=True)),
    )
    relations = sa.Table(
        "graph_relations",
        md,
        sa.Column("id", sa.BigInteger, primary_key=True),
        sa.Column("source_entity", sa.BigInteger, nullable=False),
        sa.Column("target_entity", sa.BigInteger, nullable=False),
        sa.Column("keywords", sa.Text, nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("weight", sa.Float, nullable=False),
        sa.Column("source_id", UUID(as_uuid=False)),
        sa.Column("embedding", vector),
    )
    mentions = sa.Table(
        "graph_mentions",
        md,
        sa.Column("id", sa.BigInteger, primary_key=True),
        sa.Column("entity_id", sa.BigInteger, nullable=False),
        sa.Column("corpus", sa.Text, nullable=False),
        sa.Column("unit_id", UUID(as_uuid=False), nullable=False),
        sa.Column("source_id", UUID(as_uuid=False)),
        sa.Column("role", sa.Text, nullable=False),
        sa.Column("weight", sa.Float, nullable=False),
        sa.Column("page", sa.Integer),
        sa.Column("start_s", sa.Float),
        sa.Column("end_s", sa.Float),
    )
    return GraphTables(entities, relations, mentions)
