"""Partitioned corpora: a corpus's table split by tenant, by time or by source, one HNSW index per partition.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-07

``corpora.partitioning`` holds the declaration (``{"by": "tenant", "method": "LIST", "key": ..., "max_partitions":
...}``; NULL for a corpus kept in one table). Three functions:

- ``partition_corpus(name, declaration)`` turns the empty table that ``create_corpus`` just made (and its parts
  table) into a partitioned table with the same columns, checks, foreign keys and indexes — the server's own
  rendering of each index (``pg_get_indexdef``) is run again on the partitioned table, so every partition gets the
  HNSW index ``create_corpus`` would have built, with its options. The table gains ``partition_key`` (``text``, or
  ``timestamptz`` by time); a unique key must hold the partition key, so the primary key becomes ``(id,
  partition_key)`` and a parts table's ``(unit_id, ord, partition_key)``, its foreign key to the units ``(unit_id,
  partition_key)``. Tenant and time corpora get a ``DEFAULT`` partition, source corpora their hash partitions.
- ``corpus_partition(name, value)`` creates the partition of a tenant (a value) or of a time period (a timestamp in
  it) when it does not exist yet, at most ``max_partitions`` of them; returns its name, or NULL where the value's
  rows go to the default partition.
- ``drop_corpus_partition(name, value)`` deletes the units of one tenant or period and drops its partition.

Partition names are the table's name, ``$`` and a suffix (``$default``, ``$h3``, ``$202603``, ``$`` and 8 hex digits of
the tenant's md5): ``$`` appears in no corpus name, so no partition can take another corpus's table name. Every
identifier goes through ``format('%I')``, every value through ``format('%L')`` or ``USING``.
"""

from __future__ import annotations

import importlib

from universalrag.migrations._sql import execute as _execute

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

_search_path = importlib.import_module("universalrag.migrations.versions.0010_function_search_path")

_FUNCTIONS = (
    "partition_corpus(text, jsonb)",
    "corpus_partition(text, text)",
    "drop_corpus_partition(text, text)",
)

_REGISTRY = """
ALTER TABLE {s}.corpora ADD COLUMN partitioning jsonb
    CHECK (partitioning IS NULL OR partitioning->>'method' IN ('LIST', 'RANGE', 'HASH'));
"""

_PARTITION_CORPUS = """
CREATE FUNCTION {s}.partition_corpus(p_name text, p_declaration jsonb) RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
    s constant text := {schema_literal};
    t constant text := 'corpus_' || p_name;
    tp constant text := 'corpus_' || p_name || '_parts';
    method constant text := p_declaration->>'method';
    key_type constant text := CASE p_declaration->>'by' WHEN 'time' THEN 'timestamptz' ELSE 'text' END;
    like_options constant text :=
        'INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMMENTS';
    multi boolean;
    has_rows boolean;
    indexes text[];
    fk_names text[];
    fk_defs text[];
    statement text;
    n integer;
BEGIN
    SELECT multi_vector INTO multi FROM {s}.corpora WHERE name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'corpus % does not exist', p_name USING ERRCODE = '42704';
    END IF;
    IF method IS NULL OR method NOT IN ('LIST', 'RANGE', 'HASH')
       OR p_declaration->>'by' IS DISTINCT FROM (CASE method WHEN 'LIST' THEN 'tenant' WHEN 'RANGE' THEN 'time'
                                                                ELSE 'source' END) THEN
        RAISE EXCEPTION 'invalid partitioning declaration %', p_declaration USING ERRCODE = '22023',
            HINT = 'Declare {{"by": "tenant", "method": "LIST"}}, {{"by": "time", "method": "RANGE"}} or '
                   '{{"by": "source", "method": "HASH", "partitions": n}}.';
    END IF;
    IF EXISTS (SELECT 1 FROM {s}.corpora WHERE parent = p_name) THEN
        RAISE EXCEPTION 'corpus % is the parent of other corpora; a parent cannot be partitioned', p_name
            USING ERRCODE = '55000';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_partitioned_table WHERE partrelid = format('%I.%I', s, t)::regclass) THEN
        RAISE EXCEPTION 'corpus % is already partitioned', p_name USING ERRCODE = '55000';
    END IF;
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.%I)', s, t) INTO has_rows;
    IF has_rows THEN
        RAISE EXCEPTION 'corpus % holds units; only an empty corpus can be partitioned', p_name
            USING ERRCODE = '55000', HINT = 'Create a new partitioned corpus and ingest into it.';
    END IF;
    -- what the tables have besides their columns, as the server renders it (names the tables by their names)
    SELECT coalesce(array_agg(pg_get_indexdef(x.indexrelid) ORDER BY x.indexrelid), '{{}}') INTO indexes
    FROM pg_index x WHERE x.indrelid = format('%I.%I', s, t)::regclass AND NOT x.indisprimary;
    SELECT coalesce(array_agg(c.conname ORDER BY c.conname), '{{}}'),
           coalesce(array_agg(pg_get_constraintdef(c.oid) ORDER BY c.conname), '{{}}')
    INTO fk_names, fk_defs
    FROM pg_constraint c WHERE c.conrelid = format('%I.%I', s, t)::regclass AND c.contype = 'f';
    EXECUTE format('CREATE TABLE %1$I.%2$I (LIKE %1$I.%3$I %4$s, partition_key %5$s NOT NULL) PARTITION BY %6$s '
                   '(partition_key)', s, t || ' new', t, like_options, key_type, method);
    IF multi THEN
        SELECT indexes || coalesce(array_agg(pg_get_indexdef(x.indexrelid) ORDER BY x.indexrelid), '{{}}')
        INTO indexes FROM pg_index x WHERE x.indrelid = format('%I.%I', s, tp)::regclass AND NOT x.indisprimary;
        EXECUTE format('CREATE TABLE %1$I.%2$I (LIKE %1$I.%3$I %4$s, partition_key %5$s NOT NULL) '
                       'PARTITION BY %6$s (partition_key)', s, tp || ' new', tp, like_options, key_type, method);
        EXECUTE format('DROP TABLE %I.%I', s, tp);
    END IF;
    EXECUTE format('DROP TABLE %I.%I', s, t);
    EXECUTE format('ALTER TABLE %I.%I RENAME TO %I', s, t || ' new', t);
    EXECUTE format('ALTER TABLE %I.%I ADD PRIMARY KEY (id, partition_key)', s, t);
    FOR n IN 1 .. coalesce(array_length(fk_names, 1), 0) LOOP
        EXECUTE format('ALTER TABLE %I.%I ADD CONSTRAINT %I ', s, t, fk_names[n]) || fk_defs[n];
    END LOOP;
    IF multi THEN
        EXECUTE format('ALTER TABLE %I.%I RENAME TO %I', s, tp || ' new', tp);
        EXECUTE format('ALTER TABLE %I.%I ADD PRIMARY KEY (unit_id, ord, partition_key)', s, tp);
        EXECUTE format('ALTER TABLE %1$I.%2$I ADD FOREIGN KEY (unit_id, partition_key) '
                       'REFERENCES %1$I.%3$I (id, partition_key) ON DELETE CASCADE', s, tp, t);
    END IF;
    FOREACH statement IN ARRAY indexes LOOP
        EXECUTE statement;
    END LOOP;
    IF method = 'HASH' THEN
        n := (p_declaration->>'partitions')::integer;
        IF n IS NULL OR n NOT BETWEEN 2 AND 64 THEN
            RAISE EXCEPTION 'partitioning by source needs 2 to 64 partitions, got %', p_declaration->'partitions'
                USING ERRCODE = '22023';
        END IF;
        FOR i IN 0 .. n - 1 LOOP
            EXECUTE format('CREATE TABLE %I.%I PARTITION OF %I.%I FOR VALUES WITH (MODULUS %s, REMAINDER %s)',
                           s, t || '$h' || i, s, t, n, i);
            IF multi THEN
                EXECUTE format('CREATE TABLE %I.%I PARTITION OF %I.%I FOR VALUES WITH (MODULUS %s, REMAINDER %s)',
                               s, tp || '$h' || i, s, tp, n, i);
            END IF;
        END LOOP;
    ELSE
        EXECUTE format('CREATE TABLE %I.%I PARTITION OF %I.%I DEFAULT', s, t || '$default', s, t);
        IF multi THEN
            EXECUTE format('CREATE TABLE %I.%I PARTITION OF %I.%I DEFAULT', s, tp || '$default', s, tp);
        END IF;
    END IF;
    UPDATE {s}.corpora SET partitioning = p_declaration WHERE name = p_name;
END
$fn$;
"""

# The variables of the functions that find the partition of one value (_BOUNDS)
_VARIABLES = """
    s constant text := {schema_literal};
    t constant text := 'corpus_' || p_name;
    declaration jsonb;
    multi boolean;
    suffix text;
    bound text;
    low timestamptz;
    high timestamptz;"""

# The partition of one value: its table's suffix and its bound, or NULL (no partition: the default one holds it).
_BOUNDS = """
    SELECT partitioning, multi_vector INTO declaration, multi FROM {s}.corpora WHERE name = p_name;
    IF declaration IS NULL OR declaration->>'method' NOT IN ('LIST', 'RANGE') OR coalesce(p_value, '') = '' THEN
        RETURN NULL;
    END IF;
    IF declaration->>'method' = 'LIST' THEN
        suffix := '$' || left(md5(p_value), 8);
        bound := format('IN (%L)', p_value);
    ELSE
        low := date_trunc(declaration->>'interval', p_value::timestamptz AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
        high := low + ('1 ' || (declaration->>'interval'))::interval;
        suffix := '$' || to_char(low AT TIME ZONE 'UTC', CASE declaration->>'interval' WHEN 'year' THEN 'YYYY'
                                                          ELSE 'YYYYMM' END);
        bound := format('FROM (%L) TO (%L)', low, high);
    END IF;
"""

_CORPUS_PARTITION = (
    """
CREATE FUNCTION {s}.corpus_partition(p_name text, p_value text) RETURNS text LANGUAGE plpgsql AS $fn$
DECLARE
"""
    + _VARIABLES
    + """
    made integer;
    held boolean;
BEGIN
"""
    + _BOUNDS
    + """
    IF to_regclass(format('%I.%I', s, t || suffix)) IS NOT NULL THEN
        RETURN t || suffix;
    END IF;
    -- one creator at a time per corpus; the parent's lock is waited for at most 10 s (an error, never a hang)
    PERFORM pg_advisory_xact_lock(hashtextextended('universalrag partitions ' || s || '.' || t, 0));
    PERFORM set_config('lock_timeout', '10s', true);
    IF to_regclass(format('%I.%I', s, t || suffix)) IS NOT NULL THEN
        RETURN t || suffix;
    END IF;
    SELECT count(*) INTO made FROM pg_inherits WHERE inhparent = format('%I.%I', s, t)::regclass;
    IF made - 1 >= (declaration->>'max_partitions')::integer THEN
        RETURN NULL;  -- the bound is reached: the default partition holds the value's rows
    END IF;
    -- rows of the value written while it had no partition stay in the default one
    IF declaration->>'method' = 'LIST' THEN
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.%I WHERE partition_key = $1)', s, t || '$default')
            INTO held USING p_value;
    ELSE
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.%I WHERE partition_key >= $1 AND partition_key < $2)',
                       s, t || '$default') INTO held USING low, high;
    END IF;
    IF held THEN
        RETURN NULL;
    END IF;
    EXECUTE format('CREATE TABLE %I.%I PARTITION OF %I.%I FOR VALUES ', s, t || suffix, s, t) || bound;
    IF multi THEN
        EXECUTE format('CREATE TABLE %I.%I PARTITION OF %I.%I FOR VALUES ', s, t || '_parts' || suffix, s,
                       t || '_parts') || bound;
    END IF;
    RETURN t || suffix;
END
$fn$;
"""
)

_DROP_CORPUS_PARTITION = (
    """
CREATE FUNCTION {s}.drop_corpus_partition(p_name text, p_value text) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
"""
    + _VARIABLES
    + """
    deleted bigint;
BEGIN
"""
    + _BOUNDS
    + """
    IF declaration->>'method' = 'LIST' THEN
        EXECUTE format('DELETE FROM %I.%I WHERE partition_key = $1', s, t) USING p_value;
    ELSE
        EXECUTE format('DELETE FROM %I.%I WHERE partition_key >= $1 AND partition_key < $2', s, t) USING low, high;
    END IF;
    GET DIAGNOSTICS deleted = ROW_COUNT;
    IF to_regclass(format('%I.%I', s, t || suffix)) IS NOT NULL THEN
        PERFORM set_config('lock_timeout', '10s', true);
        IF multi THEN
            EXECUTE format('DROP TABLE %I.%I', s, t || '_parts' || suffix);
        END IF;
        -- the parts' foreign key points at each partition of the units: detached first, then dropped
        EXECUTE format('ALTER TABLE %I.%I DETACH PARTITION %I.%I', s, t, s, t || suffix);
        EXECUTE format('DROP TABLE %I.%I', s, t || suffix);
    END IF;
    RETURN deleted;
END
$fn$;
"""
)


def upgrade(*, schema: str) -> None:
    _execute(_REGISTRY, schema)
    _execute(_PARTITION_CORPUS, schema)
    _execute(_CORPUS_PARTITION, schema)
    _execute(_DROP_CORPUS_PARTITION, schema)
    _search_path.set_search_path(schema, _FUNCTIONS)


def downgrade(*, schema: str) -> None:
    # The older schema has no partitioned corpora: drop them (their units cannot stay in a table it knows).
    _execute(
        """
        DO $do$
        DECLARE name text;
        BEGIN
            FOR name IN SELECT c.name FROM {s}.corpora c WHERE c.partitioning IS NOT NULL LOOP
                PERFORM {s}.drop_corpus(name);
            END LOOP;
        END
        $do$;
        """,
        schema,
    )
    for signature in reversed(_FUNCTIONS):
        _execute(f"DROP FUNCTION {{s}}.{signature}", schema)
    _execute("ALTER TABLE {s}.corpora DROP COLUMN partitioning", schema)
