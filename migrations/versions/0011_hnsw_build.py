"""HNSW graphs built with a candidate list of 128 (``ef_construction``) instead of pgvector's default 64.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27

Real questions are farther from their answers than the noisy copies the index check searches with, and a graph
built with pgvector's default list misses some of their answers that an exact scan finds. Over the 250 wikitables
pages (1,786 tables, 20,883 rows), 1,996 crowd-written questions found their answering table in the top 5 of the
table corpus in 60.55 % of searches through graphs built with 64 (three builds: 60.52-60.57 %), 60.92 % with 128
(60.57-61.17 %) and 61.52 % by an exact scan; a search took 4.30 ms against 4.14, the build of the rows' index 3.4 s
against 2.3 (``benchmarks/hnsw_build.py``; ``docs/benchmarks.md``, "HNSW graph build"). ``create_corpus`` and
``add_visual_channel`` now build their indexes with the wider list.

Indexes that already exist get the option too, so vectors inserted from now on are linked with it; the vectors
already in them keep their links until the index is rebuilt, which this migration leaves to the administrator
(``REINDEX INDEX CONCURRENTLY schema.corpus_<name>_hnsw``, and ``..._parts_hnsw``): on a large corpus a rebuild
takes minutes, too long to hide inside an upgrade.
"""

from __future__ import annotations

import importlib

from universalrag.migrations._sql import execute as _execute

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

#: The candidate list of every HNSW index the corpus functions build (pgvector's default is 64).
EF_CONSTRUCTION = 128

_initial = importlib.import_module("universalrag.migrations.versions.0001_initial")
_visual = importlib.import_module("universalrag.migrations.versions.0002_visual_channel")
_search_path = importlib.import_module("universalrag.migrations.versions.0010_function_search_path")


def corpus_function(template: str, column: str, occurrences: int, built_with: str) -> str:
    """``template`` (a ``CREATE FUNCTION`` of an earlier revision) as ``CREATE OR REPLACE``, its HNSW indexes on
    ``column`` built ``WITH (...)`` ``built_with`` (empty: as the earlier revision built them)."""
    plain = f"USING hnsw ({column} vector_cosine_ops)'"
    if template.count(plain) != occurrences:  # the earlier revision changed: this one must be rewritten
        raise RuntimeError(f"expected {occurrences} HNSW index statement(s) on {column!r} in the template")
    with_options = f"USING hnsw ({column} vector_cosine_ops) WITH ({built_with})'" if built_with else plain
    return template.replace(plain, with_options).replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)


# Every HNSW index of the schema's corpus tables, set or reset (the tables were all made by the corpus functions).
_EXISTING = """
DO $do$
DECLARE idx text;
BEGIN
    FOR idx IN
        SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_am a ON a.oid = c.relam
        WHERE n.nspname = {schema_literal} AND c.relkind = 'i' AND a.amname = 'hnsw' AND c.relname LIKE 'corpus\\_%'
    LOOP
        EXECUTE format('ALTER INDEX %I.%I {action}', {schema_literal}, idx);
    END LOOP;
END
$do$;
"""


def _rebuild_functions(schema: str, built_with: str) -> None:
    _execute(corpus_function(_initial._CREATE_CORPUS, "embedding", 2, built_with), schema)
    _execute(corpus_function(_visual._ADD_VISUAL, "visual", 1, built_with), schema)
    # CREATE OR REPLACE drops a function's SET clauses: give them back their own search_path (revision 0010)
    _search_path.upgrade(schema=schema)


#: The options every HNSW index of the corpus functions is built with.
BUILT_WITH = f"ef_construction = {EF_CONSTRUCTION}"


def upgrade_functions(schema: str) -> None:
    """The corpus functions as this revision builds them (revision 0012's downgrade puts them back)."""
    _rebuild_functions(schema, BUILT_WITH)


def upgrade(*, schema: str) -> None:
    upgrade_functions(schema)
    _execute(_EXISTING.replace("{action}", f"SET ({BUILT_WITH})"), schema)


def downgrade(*, schema: str) -> None:
    _rebuild_functions(schema, "")
    _execute(_EXISTING.replace("{action}", "RESET (ef_construction)"), schema)
