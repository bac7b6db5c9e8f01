"""Registry, sources, and the SQL functions that create and drop corpora.

Revision ID: 0001
Revises:
Create Date: 2026-11-26

Corpus tables are not created here: ``create_corpus`` makes them, from Python (``Store.create_corpus``), from
the CLI, or straight from SQL, so a database administrator manages corpora with the tools they already use.
Every identifier inside the functions goes through ``format('%I')``; the schema is bound as a literal when
the function is created (composed with ``psycopg.sql``, never by string formatting).
"""

from __future__ import annotations

from universalrag.migrations._sql import execute as _execute

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_REGISTRY = """
CREATE TABLE {s}.corpora (
    name         text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_]{{0,39}}$' AND name <> 'none'),
    modality     text NOT NULL CHECK (modality IN ('text', 'table', 'image', 'video')),
    granularity  text NOT NULL
                 CHECK (granularity IN ('paragraph', 'document', 'table', 'image', 'clip', 'video', 'other')),
    description  text NOT NULL DEFAULT '',
    embedder     text NOT NULL DEFAULT '',
    dimension    integer NOT NULL CHECK (dimension BETWEEN 1 AND 16000),
    parent       text REFERENCES {s}.corpora (name),
    multi_vector boolean NOT NULL DEFAULT false,
    builtin      boolean NOT NULL DEFAULT false,
    metadata     jsonb NOT NULL DEFAULT '{{}}'::jsonb,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE {s}.sources (
    id           uuid PRIMARY KEY,
    uri          text NOT NULL UNIQUE,
    content_hash text NOT NULL,
    modality     text NOT NULL,
    corpora      text[] NOT NULL DEFAULT '{{}}',
    metadata     jsonb NOT NULL DEFAULT '{{}}'::jsonb,
    ingested_at  timestamptz NOT NULL DEFAULT now()
);
"""

_CREATE_CORPUS = """
CREATE FUNCTION {s}.create_corpus(
    p_name text, p_modality text, p_granularity text, p_dimension integer,
    p_description text DEFAULT '', p_embedder text DEFAULT '', p_parent text DEFAULT NULL,
    p_multi_vector boolean DEFAULT false, p_builtin boolean DEFAULT false, p_metadata jsonb DEFAULT '{{}}'
) RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
    s constant text := {schema_literal};
    t constant text := 'corpus_' || p_name;
    parent_ref text := '';
BEGIN
    IF p_name IS NULL OR p_name !~ '^[a-z][a-z0-9_]{{0,39}}$' OR p_name = 'none' THEN
        RAISE EXCEPTION 'invalid corpus name: %', p_name USING ERRCODE = '22023',
            HINT = 'Use 1-40 characters: a lowercase letter, then lowercase letters, digits or underscores.';
    END IF;
    IF EXISTS (SELECT 1 FROM {s}.corpora WHERE name = p_name) THEN
        RAISE EXCEPTION 'corpus % already exists', p_name USING ERRCODE = '42P07';
    END IF;
    IF p_parent IS NOT NULL THEN
        IF NOT EXISTS (SELECT 1 FROM {s}.corpora WHERE name = p_parent) THEN
            RAISE EXCEPTION 'parent corpus % does not exist', p_parent USING ERRCODE = '42P01';
        END IF;
        parent_ref := format(' REFERENCES %I.%I (id) ON DELETE CASCADE', s, 'corpus_' || p_parent);
    END IF;
    INSERT INTO {s}.corpora (name, modality, granularity, description, embedder, dimension, parent,
                             multi_vector, builtin, metadata)
    VALUES (p_name, p_modality, p_granularity, coalesce(p_description, ''), coalesce(p_embedder, ''),
            p_dimension, p_parent, p_multi_vector, p_builtin, coalesce(p_metadata, '{{}}'));
    EXECUTE format(
        'CREATE TABLE %1$I.%2$I ('
        '  id uuid PRIMARY KEY,'
        '  source_id uuid REFERENCES %1$I.sources (id) ON DELETE CASCADE,'
        '  parent_id uuid%3$s,'
        '  content text NOT NULL,'
        '  uri text,'
        '  start_s double precision,'
        '  end_s double precision,'
        '  metadata jsonb NOT NULL DEFAULT ''{{}}''::jsonb,'
        '  tsv tsvector GENERATED ALWAYS AS (to_tsvector(''english''::regconfig, content)) STORED,'
        '  embedding vector(%4$s),'
        '  created_at timestamptz NOT NULL DEFAULT now(),'
        '  CHECK (end_s IS NULL OR start_s IS NULL OR end_s >= start_s))',
        s, t, parent_ref, p_dimension);
    EXECUTE format('CREATE INDEX %I ON %I.%I USING hnsw (embedding vector_cosine_ops)', t || '_hnsw', s, t);
    EXECUTE format('CREATE INDEX %I ON %I.%I USING gin (metadata)', t || '_meta_gin', s, t);
    EXECUTE format('CREATE INDEX %I ON %I.%I USING gin (tsv)', t || '_tsv_gin', s, t);
    EXECUTE format('CREATE INDEX %I ON %I.%I (source_id)', t || '_source_idx', s, t);
    EXECUTE format('CREATE INDEX %I ON %I.%I (parent_id)', t || '_parent_idx', s, t);
    IF p_multi_vector THEN
        EXECUTE format(
            'CREATE TABLE %1$I.%2$I ('
            '  unit_id uuid NOT NULL REFERENCES %1$I.%3$I (id) ON DELETE CASCADE,'
            '  ord integer NOT NULL,'
            '  content text NOT NULL,'
            '  embedding vector(%4$s) NOT NULL,'
            '  PRIMARY KEY (unit_id, ord))',
            s, t || '_parts', t, p_dimension);
        EXECUTE format('CREATE INDEX %I ON %I.%I USING hnsw (embedding vector_cosine_ops)',
                       t || '_parts_hnsw', s, t || '_parts');
    END IF;
END
$fn$;
"""

_DROP_CORPUS = """
CREATE FUNCTION {s}.drop_corpus(p_name text) RETURNS boolean LANGUAGE plpgsql AS $fn$
DECLARE
    s constant text := {schema_literal};
    children text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM {s}.corpora WHERE name = p_name) THEN
        RETURN false;
    END IF;
    SELECT string_agg(name, ', ') INTO children FROM {s}.corpora WHERE parent = p_name;
    IF children IS NOT NULL THEN
        RAISE EXCEPTION 'corpus % is the parent of %', p_name, children USING ERRCODE = '2BP01',
            HINT = 'Drop the child corpora first.';
    END IF;
    EXECUTE format('DROP TABLE IF EXISTS %I.%I', s, 'corpus_' || p_name || '_parts');
    EXECUTE format('DROP TABLE IF EXISTS %I.%I', s, 'corpus_' || p_name);
    DELETE FROM {s}.corpora WHERE name = p_name;
    UPDATE {s}.sources SET corpora = array_remove(corpora, p_name) WHERE p_name = ANY (corpora);
    DELETE FROM {s}.sources WHERE corpora = '{{}}';
    RETURN true;
END
$fn$;
"""


def upgrade(*, schema: str) -> None:
    _execute("CREATE EXTENSION IF NOT EXISTS vector", schema)
    _execute(_REGISTRY, schema)
    _execute(_CREATE_CORPUS, schema)
    _execute(_DROP_CORPUS, schema)


def downgrade(*, schema: str) -> None:
    # Children before parents: drop corpora whose name no other corpus names as parent, until none is left.
    _execute(
        """
        DO $do$
        DECLARE leaf text;
        BEGIN
            LOOP
                SELECT c.name INTO leaf FROM {s}.corpora c
                WHERE NOT EXISTS (SELECT 1 FROM {s}.corpora k WHERE k.parent = c.name) LIMIT 1;
                EXIT WHEN leaf IS NULL;
                PERFORM {s}.drop_corpus(leaf);
            END LOOP;
        END
        $do$;
        """,
        schema,
    )
    _execute("DROP FUNCTION {s}.drop_corpus(text)", schema)
    _execute(
        "DROP FUNCTION {s}.create_corpus(text, text, text, integer, text, text, text, boolean, boolean, jsonb)",
        schema,
    )
    _execute("DROP TABLE {s}.sources", schema)
    _execute("DROP TABLE {s}.corpora", schema)
