"""The corpus functions resolve ``vector`` and its operator classes in pgvector's own schema, not the caller's.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26

``create_corpus`` and ``add_visual_channel`` build ``vector(n)`` columns and ``vector_cosine_ops`` indexes in
dynamic SQL, which Postgres resolved through the *caller's* ``search_path``: a session whose path did not
include pgvector's schema got "type vector does not exist", and a path with a schema of the caller's in front
could hand the function another type named ``vector``. Each function now carries its own ``search_path``:
the schema pgvector is installed in, then ``pg_catalog``, then ``pg_temp`` last (nothing of the caller's is
consulted; every table is already schema-qualified with ``format('%I.%I')``).
"""

from __future__ import annotations

from universalrag.migrations._sql import execute as _execute

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

#: The functions that build vector columns or indexes, with their argument types.
_FUNCTIONS = (
    "create_corpus(text, text, text, integer, text, text, text, boolean, boolean, jsonb)",
    "add_visual_channel(text, integer, text)",
    "drop_corpus(text)",
)

_SET = """
DO $do$
DECLARE
    ext text;
    fn text;
BEGIN
    SELECT n.nspname INTO ext FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
    WHERE e.extname = 'vector';
    IF ext IS NULL THEN
        RAISE EXCEPTION 'the pgvector extension is not installed' USING ERRCODE = '42704';
    END IF;
    FOREACH fn IN ARRAY ARRAY[{functions}] LOOP
        EXECUTE format('ALTER FUNCTION %I.%s SET search_path = %I, pg_catalog, pg_temp', {schema_literal}, fn, ext);
    END LOOP;
END
$do$;
"""

_RESET = """
DO $do$
DECLARE fn text;
BEGIN
    FOREACH fn IN ARRAY ARRAY[{functions}] LOOP
        EXECUTE format('ALTER FUNCTION %I.%s RESET search_path', {schema_literal}, fn);
    END LOOP;
END
$do$;
"""


def _with_functions(template: str, functions: tuple[str, ...] = _FUNCTIONS) -> str:
    # the signatures are constants of the migrations, written as SQL string literals ('' doubles a quote)
    literals = ", ".join("'" + f.replace("'", "''") + "'" for f in functions)
    return template.replace("{functions}", literals.replace("{", "{{").replace("}", "}}"))


def set_search_path(schema: str, functions: tuple[str, ...]) -> None:
    """Give each of ``functions`` (signatures of the schema's functions) the search path of this revision."""
    _execute(_with_functions(_SET, functions), schema)


def upgrade(*, schema: str) -> None:
    set_search_path(schema, _FUNCTIONS)


def downgrade(*, schema: str) -> None:
    _execute(_with_functions(_RESET), schema)
