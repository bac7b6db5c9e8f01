"""Staging tables: large sources are committed in resumable batches and become visible all at once.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26

A very large source (a 200 MB text file, a million-row CSV) is written batch by batch into ``staged_units`` and
``staged_parts`` under a row of ``stages`` (one per source uri and scope, with the content hash and the number
of batches committed). Searches never read these tables, so nothing of a half-written source is ever found.
The last step moves the staged rows into the corpus tables and records the source in one transaction; a
process killed before that leaves the stage behind, and the next ingestion of the same content continues
after its last committed batch (a changed file starts a new stage). Vectors are stored without a fixed
dimension here; they are cast to the corpus's dimension when moved.

A table too large to embed every row (only an evenly spaced sample becomes parts) keeps every row in
``table_rows`` (cells as JSONB keyed by column, GIN-indexed for containment filters), staged in ``staged_rows``
the same way and deleted with its source.
"""

from __future__ import annotations

from universalrag.migrations._sql import execute as _execute

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_UPGRADE = """
CREATE TABLE {s}.stages (
    id           uuid PRIMARY KEY,
    uri          text NOT NULL,
    scope        text NOT NULL DEFAULT '',
    content_hash text NOT NULL,
    batches      integer NOT NULL DEFAULT 0,
    started_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (uri, scope)
);
CREATE TABLE {s}.staged_units (
    stage_id  uuid NOT NULL REFERENCES {s}.stages (id) ON DELETE CASCADE,
    corpus    text NOT NULL,
    id        uuid NOT NULL,
    parent_id uuid,
    content   text NOT NULL,
    uri       text,
    start_s   double precision,
    end_s     double precision,
    metadata  jsonb NOT NULL DEFAULT '{{}}'::jsonb,
    embedding vector,
    visual    vector,
    PRIMARY KEY (stage_id, id)
);
CREATE TABLE {s}.staged_parts (
    stage_id  uuid NOT NULL REFERENCES {s}.stages (id) ON DELETE CASCADE,
    corpus    text NOT NULL,
    unit_id   uuid NOT NULL,
    ord       integer NOT NULL,
    content   text NOT NULL,
    embedding vector NOT NULL,
    PRIMARY KEY (stage_id, unit_id, ord)
);
CREATE TABLE {s}.staged_rows (
    stage_id  uuid NOT NULL REFERENCES {s}.stages (id) ON DELETE CASCADE,
    unit_id   uuid NOT NULL,
    ord       integer NOT NULL,
    cells     jsonb NOT NULL,
    PRIMARY KEY (stage_id, unit_id, ord)
);
CREATE TABLE {s}.table_rows (
    source_id uuid NOT NULL REFERENCES {s}.sources (id) ON DELETE CASCADE,
    unit_id   uuid NOT NULL,
    ord       integer NOT NULL,
    cells     jsonb NOT NULL,
    PRIMARY KEY (unit_id, ord)
);
CREATE INDEX table_rows_source_idx ON {s}.table_rows (source_id);
CREATE INDEX table_rows_cells_gin ON {s}.table_rows USING gin (cells jsonb_path_ops);
"""

_DOWNGRADE = """
DROP TABLE {s}.table_rows;
DROP TABLE {s}.staged_rows;
DROP TABLE {s}.staged_parts;
DROP TABLE {s}.staged_units;
DROP TABLE {s}.stages;
"""


def upgrade(*, schema: str) -> None:
    _execute(_UPGRADE, schema)


def downgrade(*, schema: str) -> None:
    _execute(_DOWNGRADE, schema)
