"""How each corpus's vectors are indexed is recorded, chosen per corpus, and changeable in place.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06

The registry gains two columns:

- ``vector_index``: what the HNSW index of the corpus's vectors (``embedding``, and its parts' ``embedding``) is
  built on — ``vector`` (the full-precision vectors, ``vector_cosine_ops``), ``halfvec`` (the vectors cast to half
  precision, ``(embedding::halfvec(n)) halfvec_cosine_ops``: an index half the size; the column keeps full
  precision, and exact scans and reported scores use it), ``binary`` (``(binary_quantize(embedding)::bit(n))
  bit_hamming_ops``: one bit a dimension; searches rank a window of its candidates again by their stored vectors) or
  ``none`` (no index: every search scans exactly);
- ``vector_index_auto``: whether the library may change it (to ``binary`` once the corpus outgrows
  :data:`universalrag.store.vectors.BINARY_MIN_ROWS`).

Corpora that exist keep the index they have, recorded as it is (``vector`` up to 2,000 dimensions, ``halfvec`` up to
4,000 — revision 0012 — else ``none``), and are not changed automatically: nothing in a user's tables is rebuilt by
this upgrade. New corpora get the default of :func:`default_vector_index` (``halfvec`` from 384 dimensions) and may be
changed automatically; ``set_vector_index(corpus, kind)`` rebuilds a corpus's indexes as another kind (``auto``: the
default again, changeable automatically).

The visual column of images, clips and videos is indexed as before (revision 0012).
"""

from __future__ import annotations

import importlib

from universalrag.migrations._sql import execute as _execute

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

_hnsw_build = importlib.import_module("universalrag.migrations.versions.0011_hnsw_build")
_vector_columns = importlib.import_module("universalrag.migrations.versions.0012_vector_columns")
_search_path = importlib.import_module("universalrag.migrations.versions.0010_function_search_path")

_SIGNATURES = (
    "default_vector_index(integer)",
    "build_vector_index(text, text, text, text, integer, text)",
    "prepare_vector_column(text, text, text, text, integer)",
    "set_vector_index(text, text)",
)

_REGISTRY = """
ALTER TABLE {s}.corpora
    ADD COLUMN vector_index text CHECK (vector_index IN ('vector', 'halfvec', 'binary', 'none')),
    ADD COLUMN vector_index_auto boolean NOT NULL DEFAULT false;
UPDATE {s}.corpora SET vector_index = CASE WHEN dimension <= 2000 THEN 'vector'
                                           WHEN dimension <= 4000 THEN 'halfvec' ELSE 'none' END;
ALTER TABLE {s}.corpora ALTER COLUMN vector_index_auto SET DEFAULT true;
"""

# The default for new corpora; universalrag.store.vectors.default_vector_index is the same rule.
_DEFAULT = """
CREATE FUNCTION {s}.default_vector_index(p_dimension integer) RETURNS text LANGUAGE sql IMMUTABLE AS $fn$
    SELECT CASE WHEN p_dimension < 384 THEN 'vector' WHEN p_dimension <= 4000 THEN 'halfvec' ELSE 'none' END
$fn$;
"""

# One HNSW index of one vector column, of one kind (the limits are pgvector's: 2,000 dimensions for vector, 4,000 for
# halfvec, 64,000 for bit).
_BUILD = """
CREATE FUNCTION {s}.build_vector_index(p_schema text, p_table text, p_column text, p_index text, p_dimension integer,
                                       p_kind text)
RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
    IF p_kind = 'vector' AND p_dimension <= 2000 THEN
        EXECUTE format('CREATE INDEX %I ON %I.%I USING hnsw (%I vector_cosine_ops) WITH ({built_with})',
                       p_index, p_schema, p_table, p_column);
    ELSIF p_kind = 'halfvec' AND p_dimension <= 4000 THEN
        EXECUTE format('CREATE INDEX %I ON %I.%I USING hnsw ((%I::halfvec(%s)) halfvec_cosine_ops) WITH ({built_with})',
                       p_index, p_schema, p_table, p_column, p_dimension);
    ELSIF p_kind = 'binary' AND p_dimension <= 64000 THEN
        EXECUTE format('CREATE INDEX %I ON %I.%I USING hnsw ((binary_quantize(%I)::bit(%s)) bit_hamming_ops) '
                       'WITH ({built_with})', p_index, p_schema, p_table, p_column, p_dimension);
    ELSIF p_kind IS DISTINCT FROM 'none' THEN
        RAISE EXCEPTION 'a % index cannot hold vectors of % dimensions', p_kind, p_dimension USING ERRCODE = '22023',
            HINT = 'vector indexes hold up to 2000 dimensions, halfvec up to 4000, binary up to 64000.';
    END IF;
END
$fn$;
""".replace("{built_with}", _hnsw_build.BUILT_WITH)

# Called by create_corpus (units and parts), add_visual_channel and graph_set_dimension: the text vectors of a corpus
# are indexed as its registry row says (filled with the default when empty), any other column as before.
_PREPARE = """
CREATE OR REPLACE FUNCTION {s}.prepare_vector_column(p_schema text, p_table text, p_column text, p_index text,
                                                     p_dimension integer)
RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
    corpus text;
    kind text;
BEGIN
    IF p_dimension <= 2000 THEN  -- a vector that a row can hold (8 kB a page): kept in it (revision 0012)
        EXECUTE format('ALTER TABLE %I.%I ALTER COLUMN %I SET STORAGE MAIN', p_schema, p_table, p_column);
    END IF;
    IF p_column = 'embedding' THEN
        SELECT name, vector_index INTO corpus, kind FROM {s}.corpora
        WHERE 'corpus_' || name = p_table OR ('corpus_' || name || '_parts' = p_table AND multi_vector)
        ORDER BY 'corpus_' || name = p_table DESC LIMIT 1;
        IF corpus IS NOT NULL AND kind IS NULL THEN
            kind := {s}.default_vector_index(p_dimension);
            UPDATE {s}.corpora SET vector_index = kind WHERE name = corpus;
        END IF;
    END IF;
    IF kind IS NULL THEN  -- not a corpus's text vectors (a visual column, the graph's entities): as revision 0012
        kind := CASE WHEN p_dimension <= 2000 THEN 'vector' WHEN p_dimension <= 4000 THEN 'halfvec' ELSE 'none' END;
    END IF;
    PERFORM {s}.build_vector_index(p_schema, p_table, p_column, p_index, p_dimension, kind);
END
$fn$;
"""

# Rebuild a corpus's text-vector indexes as another kind. The build runs with the caller's maintenance_work_mem and
# max_parallel_maintenance_workers (the library sets them locally, sized to the machine: store/index_build.py).
_SET = """
CREATE FUNCTION {s}.set_vector_index(p_name text, p_kind text) RETURNS boolean LANGUAGE plpgsql AS $fn$
DECLARE
    s constant text := {schema_literal};
    t constant text := 'corpus_' || p_name;
    kind text := p_kind;
    current_kind text;
    current_auto boolean;
    dim integer;
    multi boolean;
BEGIN
    SELECT vector_index, vector_index_auto, dimension, multi_vector INTO current_kind, current_auto, dim, multi
    FROM {s}.corpora WHERE name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'corpus % does not exist', p_name USING ERRCODE = '42704';
    END IF;
    IF p_kind = 'auto' THEN
        kind := {s}.default_vector_index(dim);
    ELSIF p_kind IS NULL OR p_kind NOT IN ('vector', 'halfvec', 'binary', 'none') THEN
        RAISE EXCEPTION 'unknown vector index %', p_kind USING ERRCODE = '22023',
            HINT = 'Use vector, halfvec, binary, none or auto.';
    END IF;
    UPDATE {s}.corpora SET vector_index = kind, vector_index_auto = (p_kind = 'auto') WHERE name = p_name;
    IF kind = current_kind THEN
        RETURN false;
    END IF;
    EXECUTE format('DROP INDEX IF EXISTS %I.%I', s, t || '_hnsw');
    PERFORM {s}.build_vector_index(s, t, 'embedding', t || '_hnsw', dim, kind);
    IF multi THEN
        EXECUTE format('DROP INDEX IF EXISTS %I.%I', s, t || '_parts_hnsw');
        PERFORM {s}.build_vector_index(s, t || '_parts', 'embedding', t || '_parts_hnsw', dim, kind);
    END IF;
    RETURN true;
END
$fn$;
"""

# Downgrade: corpora whose index an earlier revision would not have built are rebuilt as it would have.
_LEGACY = """
DO $do$
DECLARE c record;
BEGIN
    FOR c IN SELECT name, CASE WHEN dimension <= 2000 THEN 'vector' WHEN dimension <= 4000 THEN 'halfvec'
                               ELSE 'none' END AS kind
             FROM {s}.corpora
    LOOP
        PERFORM {s}.set_vector_index(c.name, c.kind);
    END LOOP;
END
$do$;
"""


def upgrade(*, schema: str) -> None:
    _execute(_REGISTRY, schema)
    _execute(_DEFAULT, schema)
    _execute(_BUILD, schema)
    _execute(_PREPARE, schema)
    _execute(_SET, schema)
    _search_path.set_search_path(schema, _SIGNATURES)


def downgrade(*, schema: str) -> None:
    _execute(_LEGACY, schema)
    _execute(_vector_columns._PREPARE_VECTOR_COLUMN.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1), schema)
    _search_path.set_search_path(schema, (_vector_columns._HELPER_SIGNATURE,))
    for signature in ("set_vector_index(text, text)", "build_vector_index(text, text, text, text, integer, text)"):
        _execute(f"DROP FUNCTION {{s}}.{signature}", schema)
    _execute("DROP FUNCTION {s}.default_vector_index(integer)", schema)
    _execute("ALTER TABLE {s}.corpora DROP COLUMN vector_index, DROP COLUMN vector_index_auto", schema)
