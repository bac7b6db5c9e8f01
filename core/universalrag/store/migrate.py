"""Run the Alembic migrations in ``universalrag.migrations`` for one schema."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

__all__ = ["SHIPPED_HEAD", "current_revision", "downgrade", "head_revision", "is_current", "upgrade"]

#: The newest revision in ``migrations/versions`` (``tests/test_store.py`` checks it against Alembic's head). Kept
#: as a constant so that a command can tell "up to date" with one query, without importing Alembic.
SHIPPED_HEAD = "0018"


def _config(connection: sa.Connection, schema: str):  # type: ignore[no-untyped-def]
    from alembic.config import Config

    import universalrag.migrations as migrations

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(migrations.__file__).parent))
    cfg.attributes["connection"] = connection
    cfg.attributes["schema"] = schema
    return cfg


def upgrade(connection: sa.Connection, schema: str, revision: str = "head") -> None:
    """Upgrade ``schema`` to ``revision`` (creating the schema if needed)."""
    from alembic import command

    command.upgrade(_config(connection, schema), revision)


def downgrade(connection: sa.Connection, schema: str, revision: str = "base") -> None:
    """Downgrade ``schema`` to ``revision`` (``base`` removes every table and function)."""
    from alembic import command

    command.downgrade(_config(connection, schema), revision)


def current_revision(connection: sa.Connection, schema: str) -> str | None:
    """The revision ``schema`` is at, or ``None`` when it was never migrated (two plain queries, no Alembic)."""
    exists = connection.execute(sa.select(sa.func.to_regclass(sa.func.format("%I.alembic_version", schema))))
    if exists.scalar_one() is None:
        return None
    version = sa.table("alembic_version", sa.column("version_num"), schema=schema)
    return connection.execute(sa.select(version.c.version_num)).scalar_one_or_none()


def is_current(revision: str | None) -> bool:
    """Whether a schema at ``revision`` has every table and column this version of the library uses."""
    return revision == SHIPPED_HEAD


def head_revision() -> str:
    """The newest revision shipped with this version of the library."""
    from alembic.script import ScriptDirectory

    import universalrag.migrations as migrations

    script = ScriptDirectory(str(Path(migrations.__file__).parent))
    head = script.get_current_head()
    assert head is not None
    return head
