"""A corpus may live on another PostgreSQL server: the registry names the server by an alias.

Revision ID: 0008
Revises: 0005
Create Date: 2026-11-26

``corpora.server`` is NULL for a corpus whose table is in this database, else the alias of the server that
holds it (resolved to a URL from ``UNIVERSALRAG_SERVERS`` at run time, so no URL or password is ever stored).
The registry row of a remote corpus mirrors its description, embedder and dimension for routing; its table,
sources and units live on that server, in a schema of the same name.
"""

from __future__ import annotations

from universalrag.migrations._sql import execute as _execute

revision = "0008"
down_revision = "0005"
branch_labels = None
depends_on = None

_UPGRADE = """
ALTER TABLE {s}.corpora ADD COLUMN server text
    CHECK (server IS NULL OR server ~ '^[a-z][a-z0-9_-]{{0,62}}$');
"""

# The old schema cannot say where a remote corpus lives: forget those registry rows (their data stays on their
# servers, which can be attached again after upgrading).
_DOWNGRADE = """
DELETE FROM {s}.corpora WHERE server IS NOT NULL;
ALTER TABLE {s}.corpora DROP COLUMN server;
"""


def upgrade(*, schema: str) -> None:
    _execute(_UPGRADE, schema)


def downgrade(*, schema: str) -> None:
    _execute(_DOWNGRADE, schema)
