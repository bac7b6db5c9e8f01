"""Run the Alembic migrations in ``universalrag.migrations`` for one schema."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

__all__ = ["upgrade", "downgrade", "current_revision", "head_revision"]


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
    """The revision ``schema`` is at, or ``None`` when it was never migrated."""
    from alembic.runtime.migration import MigrationContext

    if not sa.inspect(connection).has_table("alembic_version", schema=schema):
        return None
    ctx = MigrationContext.configure(connection, opts={"version_table_schema": schema})
    return ctx.get_current_revision()


def head_revision() -> str:
    """The newest revision shipped with this version of the library."""
    from alembic.script import ScriptDirectory

    import universalrag.migrations as migrations

    script = ScriptDirectory(str(Path(migrations.__file__).parent))
    head = script.get_current_head()
    assert head is not None
    return head
