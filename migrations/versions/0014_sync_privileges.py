"""The sync triggers of attached tables run with their attacher's rights: an application role needs no right on
the universalrag schema to keep writing its own table.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06

``attach_table`` writes one trigger function per attached table; it queues changed rows in ``sync_queue`` and
removes the units of deleted rows. It ran with the rights of whoever wrote the table, so after ``attach_table`` a
role that could insert into its own table got "permission denied for schema universalrag". Each such function is
now ``SECURITY DEFINER`` (it runs as its owner, the role that attached the table) with its ``search_path`` pinned
to ``pg_catalog, pg_temp`` (every name in it is schema-qualified; nothing of the caller's is consulted), and
``EXECUTE`` on it is revoked from ``PUBLIC``, so that no other role can put it on a table of its own
(``CREATE TRIGGER`` requires that privilege; a trigger already on the attached table fires regardless). Existing
trigger functions are changed in place; ``attach_table`` writes new ones that way. docs/reliability.md lists the
grants each role needs.
"""

from __future__ import annotations

from universalrag.migrations._sql import execute as _execute

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_ATTACH = (
    "attach_table(regclass, text, text, text, text, text[], text, text, text, text[], text, text[], integer, text)"
)
_PLAIN = "EXECUTE format(''CREATE FUNCTION %I.%I() RETURNS trigger LANGUAGE plpgsql AS %L'', s, fn, body);"
_DEFINER = (
    "EXECUTE format(''CREATE FUNCTION %I.%I() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER "
    "SET search_path = pg_catalog, pg_temp AS %L'', s, fn, body);"
    " EXECUTE format(''REVOKE ALL ON FUNCTION %I.%I() FROM PUBLIC'', s, fn);"
)

_SWAP = """
DO $do$
DECLARE
    s constant text := {schema_literal};
    attach regprocedure := to_regprocedure(format('%I.%s', s, '<attach>'));
    definition text;
    changed text;
    corpus text;
    fn regprocedure;
BEGIN
    definition := pg_get_functiondef(attach);
    changed := replace(definition, '<from>', '<to>');
    IF changed = definition THEN
        RAISE EXCEPTION 'attach_table is not the function this migration expects' USING ERRCODE = '55000';
    END IF;
    EXECUTE changed;
    FOR corpus IN SELECT t.corpus FROM {s}.sync_tables t LOOP
        fn := to_regprocedure(format('%I.%I()', s, 'sync_trigger_' || corpus));
        CONTINUE WHEN fn IS NULL;
        IF <definer> THEN
            EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = pg_catalog, pg_temp', fn);
            EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', fn);
        ELSE
            EXECUTE format('ALTER FUNCTION %s SECURITY INVOKER RESET search_path', fn);
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO PUBLIC', fn);
        END IF;
    END LOOP;
END
$do$;
"""


def _swap(old: str, new: str, *, definer: bool) -> str:
    # constants of this migration, pasted into SQL string literals (their quotes are doubled already)
    return (
        _SWAP.replace("<attach>", _ATTACH)
        .replace("<from>", old)
        .replace("<to>", new)
        .replace("<definer>", "true" if definer else "false")
    )


def upgrade(*, schema: str) -> None:
    _execute(_swap(_PLAIN, _DEFINER, definer=True), schema)


def downgrade(*, schema: str) -> None:
    _execute(_swap(_DEFINER, _PLAIN, definer=False), schema)
