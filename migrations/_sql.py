"""Run a SQL template on the migration's own connection, with the schema bound safely.

``{s}`` becomes the quoted schema identifier and ``{schema_literal}`` the schema as a string literal (for
functions that build identifiers with ``format('%I')``); composed with ``psycopg.sql``, never by string
formatting, and executed without parameter parsing so ``%`` in function bodies is left alone.
"""

from __future__ import annotations

from alembic import op
from psycopg import sql

__all__ = ["execute"]


def execute(template: str, schema: str) -> None:
    """Execute ``template`` in the current migration transaction."""
    raw = op.get_bind().connection.driver_connection
    raw.execute(sql.SQL(template).format(s=sql.Identifier(schema), schema_literal=sql.Literal(schema)))
