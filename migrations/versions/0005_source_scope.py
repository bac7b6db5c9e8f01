"""Sources are scoped: one file can feed several corpora without one ingestion replacing another's units.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26

A source was unique by URI, so ingesting a file into a user corpus (``--corpus manuals``) replaced the source
that the default ingestion had made from the same file, deleting its documents and paragraphs. A source is
now identified by ``(uri, scope)``: ``scope`` is ``''`` for a file sent to the default corpora of its kind,
and the corpus name when the caller named one. Replacing, skipping unchanged files and deleting all work per
scope; units still belong to exactly one source (``ON DELETE CASCADE``).

Existing sources that feed only one user-defined corpus get that corpus as their scope (they were ingested
with ``--corpus``); all others keep ``''``. Downgrading keeps one source per URI (the default scope, else the
most recent) and deletes the others with their units, since the old schema cannot hold them.
"""

from __future__ import annotations

from universalrag.migrations._sql import execute as _execute

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_UPGRADE = """
ALTER TABLE {s}.sources ADD COLUMN scope text NOT NULL DEFAULT '';
UPDATE {s}.sources AS src SET scope = src.corpora[1]
WHERE cardinality(src.corpora) = 1
  AND EXISTS (SELECT 1 FROM {s}.corpora c WHERE c.name = src.corpora[1] AND NOT c.builtin);
ALTER TABLE {s}.sources DROP CONSTRAINT sources_uri_key;
ALTER TABLE {s}.sources ADD CONSTRAINT sources_uri_scope_key UNIQUE (uri, scope);
"""

_DOWNGRADE = """
DELETE FROM {s}.sources AS src
WHERE EXISTS (
    SELECT 1 FROM {s}.sources AS other
    WHERE other.uri = src.uri AND other.id <> src.id
      AND (other.scope = '' OR (src.scope <> '' AND other.ingested_at > src.ingested_at)
           OR (src.scope <> '' AND other.ingested_at = src.ingested_at AND other.id > src.id))
);
ALTER TABLE {s}.sources DROP CONSTRAINT sources_uri_scope_key;
ALTER TABLE {s}.sources DROP COLUMN scope;
ALTER TABLE {s}.sources ADD CONSTRAINT sources_uri_key UNIQUE (uri);
"""


def upgrade(*, schema: str) -> None:
    _execute(_UPGRADE, schema)


def downgrade(*, schema: str) -> None:
    _execute(_DOWNGRADE, schema)
