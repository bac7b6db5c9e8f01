"""``attach_table`` no longer prints ``NOTICE: schema "pg_temp" does not exist, skipping``.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06

To read which columns its expressions use, ``attach_table`` parses them as a temporary view, and first dropped a
view of that name left by an earlier call with ``DROP VIEW IF EXISTS pg_temp.<name>``. In a session that had no
temporary schema yet — every fresh psql session — Postgres answered that with a notice the user saw on each attach.
The view is now dropped only when it exists in the session's own temporary schema (``pg_my_temp_schema()``). The
function is changed in place (as revision 0014 changes it), so what earlier revisions made of it stays.
"""

from __future__ import annotations

from universalrag.migrations._sql import execute as _execute

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_ATTACH = (
    "attach_table(regclass, text, text, text, text, text[], text, text, text, text[], text, text[], integer, text)"
)
# pasted into SQL string literals: quotes doubled
_LOUD = "EXECUTE format(''DROP VIEW IF EXISTS pg_temp.%I'', view_name);"
_QUIET = (
    "IF EXISTS (SELECT 1 FROM pg_class WHERE relname = view_name AND relnamespace = pg_my_temp_schema()) THEN "
    "EXECUTE format(''DROP VIEW pg_temp.%I'', view_name); END IF;"
)

_SWAP = """
DO $do$
DECLARE
    definition text := pg_get_functiondef(to_regprocedure(format('%I.%s', {schema_literal}, '<attach>')));
    changed text;
BEGIN
    changed := replace(definition, '<from>', '<to>');
    IF changed = definition THEN
        RAISE EXCEPTION 'attach_table is not the function this migration expects' USING ERRCODE = '55000';
    END IF;
    EXECUTE changed;
END
$do$;
"""


def _swap(old: str, new: str) -> str:
    return _SWAP.replace("<attach>", _ATTACH).replace("<from>", old).replace("<to>", new)


def upgrade(*, schema: str) -> None:
    _execute(_swap(_LOUD, _QUIET), schema)


def downgrade(*, schema: str) -> None:
    _execute(_swap(_QUIET, _LOUD), schema)
