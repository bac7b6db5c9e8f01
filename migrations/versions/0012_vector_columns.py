"""Vector columns: their vectors kept in the row, and indexed whatever the embedder's width.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27

**Stored in the row.** A ``vector`` column may be moved out of the row (``STORAGE EXTERNAL``, pgvector's default),
and Postgres moves the largest value out first once a row passes 2 kB: a passage of 500 characters with its
``tsvector`` and its 384-dimension vector (1,540 bytes) had its *vector* moved to the TOAST table, so every exact
scan, and every similarity computed for a candidate, fetched each vector through the TOAST index (three buffers a
row). Over the 4,184 chunks of the 250 Wikipedia pages an exact best-parts scan took 10.8 ms that way and 3.2 ms
with the vectors in the row. Vector columns are now ``STORAGE MAIN``: the text, its ``tsvector`` and the metadata
leave the row first, a vector only when the row cannot hold it otherwise. New corpora are made so (up to 2,000
dimensions: a wider vector does not fit in a row and keeps pgvector's default); the columns of existing ones get the
setting too, which applies to rows written from now on: the rows already there keep their vectors where they are until
the table is rewritten, which this revision leaves to the administrator (``VACUUM FULL schema.corpus_<name>``, and
``..._parts``: it locks the table and rebuilds its indexes, minutes on a large corpus).

**Indexed whatever the width.** pgvector indexes ``vector`` columns of at most 2,000 dimensions. ``create_corpus``
built that index unconditionally, so a store whose embedder was wider — OpenAI's ``text-embedding-3-large``
(3,072) among them — could not create a single corpus ("column cannot have more than 2000 dimensions for hnsw
index"), and ``universalrag init`` failed. Each HNSW index is now built by ``prepare_vector_column``:

- up to 2,000 dimensions, as before (``vector_cosine_ops``, a candidate list of 128: revision 0011);
- up to 4,000, on the column cast to half precision (``(embedding::halfvec(n)) halfvec_cosine_ops``, pgvector 0.7
  and later), the expression index pgvector documents for such vectors; the column keeps full precision, exact
  scans and reported scores use it, and searches through the index order by the same expression
  (:func:`universalrag.store.queries.index_order`);
- wider (up to the 16,000 a ``vector`` column holds), no HNSW index: every search of such a corpus scans exactly.

Corpora that exist are below 2,001 dimensions (no other could be created) and keep their indexes.
"""

from __future__ import annotations

import importlib
import re

from universalrag.migrations._sql import execute as _execute

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_initial = importlib.import_module("universalrag.migrations.versions.0001_initial")
_visual = importlib.import_module("universalrag.migrations.versions.0002_visual_channel")
_search_path = importlib.import_module("universalrag.migrations.versions.0010_function_search_path")
_hnsw_build = importlib.import_module("universalrag.migrations.versions.0011_hnsw_build")

_HELPER_SIGNATURE = "prepare_vector_column(text, text, text, text, integer)"

# The limits are those of pgvector's HNSW index (universalrag.store.vectors has them for the query side).
_PREPARE_VECTOR_COLUMN = """
CREATE FUNCTION {s}.prepare_vector_column(p_schema text, p_table text, p_column text, p_index text,
                                          p_dimension integer)
RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
    IF p_dimension <= 2000 THEN  -- a vector that a row can hold (8 kB a page): kept in it
        EXECUTE format('ALTER TABLE %I.%I ALTER COLUMN %I SET STORAGE MAIN', p_schema, p_table, p_column);
        EXECUTE format('CREATE INDEX %I ON %I.%I USING hnsw (%I vector_cosine_ops) WITH ({built_with})',
                       p_index, p_schema, p_table, p_column);
    ELSIF p_dimension <= 4000 THEN
        EXECUTE format('CREATE INDEX %I ON %I.%I USING hnsw ((%I::halfvec(%s)) halfvec_cosine_ops) WITH ({built_with})',
                       p_index, p_schema, p_table, p_column, p_dimension);
    END IF;  -- wider vectors have no HNSW index: their searches scan exactly
END
$fn$;
""".replace("{built_with}", _hnsw_build.BUILT_WITH)

# An index statement of the corpus functions: EXECUTE format('CREATE INDEX ... (column vector_cosine_ops) WITH
# (...)', index name, s, table);
_INDEX_STATEMENT = re.compile(
    r"EXECUTE format\('CREATE INDEX %I ON %I\.%I USING hnsw \((\w+) vector_cosine_ops\) WITH \([^)]*\)',"
    r"\s*([^;]+?), s, ([^;]+?)\);"
)

# Every vector column of the schema's corpus tables (all made by the corpus functions), given a storage.
_EXISTING = """
DO $do$
DECLARE col record;
BEGIN
    FOR col IN
        SELECT c.relname, a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_type t ON t.oid = a.atttypid
        WHERE n.nspname = {schema_literal} AND c.relkind = 'r' AND c.relname LIKE 'corpus\\_%'
          AND t.typname = 'vector' AND a.attnum > 0 AND NOT a.attisdropped AND a.atttypmod <= 2000
    LOOP
        EXECUTE format('ALTER TABLE %I.%I ALTER COLUMN %I SET STORAGE {storage}', {schema_literal}, col.relname,
                       col.attname);
    END LOOP;
END
$do$;
"""


def _through_helper(template: str, occurrences: int) -> str:
    """``template`` with each HNSW index statement replaced by a call of ``prepare_vector_column``."""
    text, n = _INDEX_STATEMENT.subn(
        lambda m: f"PERFORM {{s}}.prepare_vector_column(s, {m.group(3)}, '{m.group(1)}', {m.group(2)}, p_dimension);",
        template,
    )
    if n != occurrences:  # an earlier revision changed: this one must be rewritten
        raise RuntimeError(f"expected {occurrences} HNSW index statement(s) in the template, found {n}")
    return text


def upgrade(*, schema: str) -> None:
    _execute(_PREPARE_VECTOR_COLUMN, schema)
    functions = ((_initial._CREATE_CORPUS, "embedding", 2), (_visual._ADD_VISUAL, "visual", 1))
    for template, column, occurrences in functions:
        function = _hnsw_build.corpus_function(template, column, occurrences, _hnsw_build.BUILT_WITH)
        _execute(_through_helper(function, occurrences), schema)
    # CREATE OR REPLACE drops a function's SET clauses: give the corpus functions their search_path (revision
    # 0010) back, and the helper its own (it names halfvec and its operator class)
    _search_path.upgrade(schema=schema)
    _search_path.set_search_path(schema, (_HELPER_SIGNATURE,))
    _execute(_EXISTING.replace("{storage}", "MAIN"), schema)


def downgrade(*, schema: str) -> None:
    _execute(_EXISTING.replace("{storage}", "EXTERNAL"), schema)
    _hnsw_build.upgrade_functions(schema)
    _execute(f"DROP FUNCTION {{s}}.{_HELPER_SIGNATURE}", schema)
