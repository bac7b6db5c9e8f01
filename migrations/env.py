"""Alembic environment.

Used two ways: programmatically by :mod:`universalrag.store.migrate` (which passes an open connection and the
schema in ``config.attributes``), or by the ``alembic`` command with the repository's ``alembic.ini``
(``alembic -x schema=NAME upgrade head``; the URL comes from ``UNIVERSALRAG_DATABASE_URL``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context
from sqlalchemy.schema import CreateSchema

config = context.config


def _run(connection: sa.Connection, schema: str) -> None:
    connection.execute(CreateSchema(schema, if_not_exists=True))
    context.configure(
        connection=connection,
        target_metadata=None,
        version_table_schema=schema,
        transactional_ddl=True,
    )
    with context.begin_transaction():
        # Two processes running `init` at once: the second waits, then finds nothing to do.
        connection.execute(
            sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtextextended("universalrag.migrate." + schema, 0)))
        )
        context.run_migrations(schema=schema)


def main() -> None:
    from universalrag.config import Settings, validate_schema_name

    connection = config.attributes.get("connection")
    schema = config.attributes.get("schema") or context.get_x_argument(as_dictionary=True).get("schema")
    settings = Settings.from_env()
    schema = validate_schema_name(schema or settings.schema)
    if connection is not None:
        _run(connection, schema)
        return
    url = config.get_main_option("sqlalchemy.url") or settings.database_url
    if not url:
        raise SystemExit("Set UNIVERSALRAG_DATABASE_URL (or sqlalchemy.url in alembic.ini) to run alembic directly.")
    from universalrag.store.engine import make_engine

    engine = make_engine(url)
    with engine.connect() as conn:
        _run(conn, schema)
        conn.commit()
    engine.dispose()


if context.is_offline_mode():
    raise SystemExit("Offline (--sql) mode is not supported: the migrations need a live connection.")
main()
