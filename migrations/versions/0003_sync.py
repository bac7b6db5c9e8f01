"""SQL-managed corpora: application tables attached as corpora, kept in sync through a queue.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26

``attach_table(source, corpus, content, ...)`` registers a corpus (through ``create_corpus``), installs triggers on
the source table and queues its existing rows; ``detach_table`` removes the triggers (and, optionally, the corpus)
and never touches the source table. ``add_text``/``add_image``/``add_file`` queue units straight from SQL;
``remove_unit`` deletes one; ``sync_retry`` gives parked items another chance. The ``universalrag worker``
process embeds the queue (``sync_queue``); ``sync_status`` shows backlog, lag and failures per corpus.

Trust model: the ``content``/``caption``/``uri`` arguments are SQL expressions over the source row, written by
whoever may attach the table (its owner) and evaluated by the worker, exactly like a generated column's
expression. They are validated when attached (parsed over the table as one column of a temporary view, no ``;``)
and used verbatim in the worker's fetch query; every identifier is quoted with ``format('%I')`` and every
literal with ``format('%L')``. Plain SQL and PL/pgSQL, no extension of ours.
"""

from __future__ import annotations

from universalrag.migrations._sql import execute as _execute

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_TABLES = """
CREATE TABLE {s}.sync_tables (
    corpus           text PRIMARY KEY REFERENCES {s}.corpora (name) ON DELETE CASCADE,
    source           regclass NOT NULL,
    key_columns      text[] NOT NULL CHECK (cardinality(key_columns) BETWEEN 1 AND 16),
    content_kind     text NOT NULL CHECK (content_kind IN ('text', 'bytes', 'path')),
    content          text NOT NULL,
    caption          text,
    uri              text,
    metadata_columns text[] NOT NULL DEFAULT '{{}}',
    watch_columns    text[],
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE {s}.sync_queue (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    corpus      text NOT NULL REFERENCES {s}.corpora (name) ON DELETE CASCADE,
    unit_id     uuid NOT NULL,
    row_key     jsonb,
    kind        text CHECK (kind IN ('text', 'bytes', 'path')),
    content     text,
    data        bytea,
    metadata    jsonb,
    uri         text,
    enqueued_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    attempts    integer NOT NULL DEFAULT 0,
    last_error  text,
    locked_at   timestamptz,
    locked_by   integer,
    run_after   timestamptz NOT NULL DEFAULT '-infinity',
    parked_at   timestamptz,
    CHECK ((row_key IS NULL) <> (kind IS NULL))
);
CREATE INDEX sync_queue_ready ON {s}.sync_queue (id) WHERE parked_at IS NULL;
CREATE INDEX sync_queue_unit ON {s}.sync_queue (corpus, unit_id);
COMMENT ON TABLE {s}.sync_queue IS
    'Units waiting for the universalrag worker: a source row (row_key) or a unit queued by add_text, add_image '
    'or add_file.';
"""

_HELPERS = """
CREATE FUNCTION {s}.sync_unit_id(p_corpus text, p_key jsonb) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$ SELECT md5(p_corpus || '/' || p_key::text)::uuid $fn$;

CREATE FUNCTION {s}.sync_key_sql(p_columns text[], p_alias text) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$
    SELECT 'jsonb_build_object(' || string_agg(format('%L, %s.%I', c, p_alias, c), ', ' ORDER BY o) || ')'
    FROM unnest(p_columns) WITH ORDINALITY AS u(c, o)
$fn$;

CREATE FUNCTION {s}.sync_columns_sql(p_columns text[], p_alias text) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$
    SELECT string_agg(format('%s.%I', p_alias, c), ', ' ORDER BY o) FROM unnest(p_columns) WITH ORDINALITY AS u(c, o)
$fn$;

CREATE FUNCTION {s}.sync_require_corpus(p_corpus text, p_modalities text[]) RETURNS void
LANGUAGE plpgsql STABLE AS $fn$
DECLARE m text;
BEGIN
    SELECT modality INTO m FROM {s}.corpora WHERE name = p_corpus;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'corpus % does not exist', p_corpus USING ERRCODE = '42704',
            HINT = 'Create it with create_corpus() or attach_table() first.';
    END IF;
    IF NOT m = ANY (p_modalities) THEN
        RAISE EXCEPTION 'corpus % holds % units, not %', p_corpus, m, array_to_string(p_modalities, ' or ')
            USING ERRCODE = '22023';
    END IF;
END
$fn$;
"""

_ATTACH = """
CREATE FUNCTION {s}.attach_table(
    source regclass, corpus text, content text,
    modality text DEFAULT 'text', granularity text DEFAULT NULL, metadata text[] DEFAULT '{{}}',
    description text DEFAULT '', caption text DEFAULT NULL, uri text DEFAULT NULL, key text[] DEFAULT NULL,
    content_kind text DEFAULT NULL, require_filter text[] DEFAULT NULL, dimension integer DEFAULT NULL,
    embedder text DEFAULT NULL
) RETURNS bigint LANGUAGE plpgsql AS $fn$
#variable_conflict use_variable
DECLARE
    s constant text := {schema_literal};
    p_corpus constant text := attach_table.corpus;
    rel record;
    keys text[];
    kind text;
    gran text;
    view_name constant text := 'universalrag_attach_check';
    view_oid oid;
    ctype regtype;
    deps text[];
    watch text[];
    dim integer;
    emb text;
    meta jsonb;
    fn constant text := 'sync_trigger_' || attach_table.corpus;
    tg constant text := 'universalrag_' || attach_table.corpus;
    body text;
    n bigint;
    missing text;
BEGIN
    IF p_corpus IS NULL OR p_corpus !~ '^[a-z][a-z0-9_]{{0,39}}$' OR p_corpus = 'none' THEN
        RAISE EXCEPTION 'invalid corpus name: %', p_corpus USING ERRCODE = '22023',
            HINT = 'Use 1-40 characters: a lowercase letter, then lowercase letters, digits or underscores.';
    END IF;
    IF modality IS NULL OR modality NOT IN ('text', 'table', 'image', 'video') THEN
        RAISE EXCEPTION 'invalid modality: %', modality USING ERRCODE = '22023',
            HINT = 'Use text, table, image or video.';
    END IF;
    SELECT c.relkind, c.relowner INTO rel FROM pg_class c WHERE c.oid = source;
    IF rel.relkind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '% is not a table', source USING ERRCODE = '42809',
            HINT = 'Attach an ordinary or partitioned table (views have no triggers to keep a corpus in sync).';
    END IF;
    IF NOT pg_has_role(current_user, rel.relowner, 'USAGE') THEN
        RAISE EXCEPTION 'only the owner of % may attach it', source USING ERRCODE = '42501',
            HINT = 'The content expression runs in the worker like a generated column; ask the table owner.';
    END IF;
    IF content IS NULL OR btrim(content) = '' THEN
        RAISE EXCEPTION 'content must be an SQL expression over the rows of %', source USING ERRCODE = '22023';
    END IF;
    IF position(';' IN content) > 0 OR position(';' IN coalesce(caption, '')) > 0
       OR position(';' IN coalesce(uri, '')) > 0 THEN
        RAISE EXCEPTION 'content, caption and uri must be single SQL expressions (no ";")' USING ERRCODE = '22023';
    END IF;

    -- The row key: the primary key unless given.
    IF key IS NULL THEN
        SELECT array_agg(a.attname::text ORDER BY array_position(i.indkey::int2[], a.attnum)) INTO keys
        FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
        WHERE i.indrelid = source AND i.indisprimary;
        IF keys IS NULL THEN
            RAISE EXCEPTION '% has no primary key', source USING ERRCODE = '22023',
                HINT = 'Pass key => ARRAY[...] naming columns that identify a row (unique and not null).';
        END IF;
    ELSE
        keys := key;
    END IF;
    SELECT string_agg(c, ', ') INTO missing FROM unnest(keys || metadata || coalesce(require_filter, '{{}}')) c
    WHERE NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = source AND a.attname = c
                      AND a.attnum > 0 AND NOT a.attisdropped);
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION '% has no column %', source, missing USING ERRCODE = '42703';
    END IF;
    IF require_filter IS NOT NULL AND NOT require_filter <@ metadata THEN
        RAISE EXCEPTION 'require_filter keys must also be metadata columns' USING ERRCODE = '22023',
            HINT = 'Add them to metadata => ARRAY[...] so that every unit carries them.';
    END IF;

    -- Validate the expressions by parsing them over the table as one temporary view; its dependencies name
    -- exactly the columns an update must touch to change a unit.
    EXECUTE format('DROP VIEW IF EXISTS pg_temp.%I', view_name);
    BEGIN
        EXECUTE format('CREATE TEMPORARY VIEW %I AS SELECT (%s) AS c, (%s)::text AS cap, (%s)::text AS u FROM %s AS r',
                       view_name, content, coalesce(caption, 'NULL'), coalesce(uri, 'NULL'), source);
    EXCEPTION WHEN syntax_error OR undefined_column OR undefined_function OR datatype_mismatch
                   OR invalid_text_representation OR cannot_coerce OR undefined_table OR ambiguous_column THEN
        RAISE EXCEPTION 'invalid content, caption or uri expression for %: %', source, SQLERRM
            USING ERRCODE = '22023', HINT = 'Write SQL expressions over the columns of the table, for example '
            || 'content => ''subject || E''''\\n'''' || body''.';
    END;
    view_oid := format('pg_temp.%I', view_name)::regclass;
    IF (SELECT count(*) FROM pg_attribute WHERE attrelid = view_oid AND attnum > 0) <> 3 THEN
        RAISE EXCEPTION 'content, caption and uri must each be one SQL expression' USING ERRCODE = '22023';
    END IF;
    SELECT atttypid::regtype INTO ctype FROM pg_attribute WHERE attrelid = view_oid AND attname = 'c';
    SELECT array_agg(DISTINCT a.attname::text) INTO deps
    FROM pg_depend d
    JOIN pg_rewrite rw ON d.classid = 'pg_rewrite'::regclass AND d.objid = rw.oid
    JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
    WHERE rw.ev_class = view_oid AND d.refobjid = source AND d.refobjsubid > 0;
    EXECUTE format('DROP VIEW pg_temp.%I', view_name);
    -- No column named (a whole-row reference such as to_jsonb(r)): any change of the row re-embeds it.
    watch := CASE WHEN deps IS NULL THEN NULL
                  ELSE ARRAY(SELECT DISTINCT c FROM unnest(coalesce(deps, '{{}}') || keys || metadata) c
                             ORDER BY 1) END;

    kind := coalesce(content_kind, CASE WHEN ctype = 'bytea'::regtype THEN 'bytes'
                                        WHEN modality IN ('image', 'video') THEN 'path' ELSE 'text' END);
    IF kind NOT IN ('text', 'bytes', 'path') THEN
        RAISE EXCEPTION 'invalid content_kind: %', kind USING ERRCODE = '22023',
            HINT = 'Use text (the expression is the content), bytes (image bytes) or path (a file path or URL).';
    END IF;
    IF kind = 'bytes' AND (ctype <> 'bytea'::regtype OR modality <> 'image') THEN
        RAISE EXCEPTION 'content_kind bytes needs an image corpus and a bytea content expression, got % and %',
            modality, ctype USING ERRCODE = '22023';
    END IF;
    IF kind = 'text' AND modality IN ('image', 'video') THEN
        RAISE EXCEPTION 'an % corpus needs the image bytes or a path as content', modality USING ERRCODE = '22023',
            HINT = 'Give a bytea column or a path/URL column as content, and the text channel as caption.';
    END IF;
    gran := coalesce(granularity, CASE modality WHEN 'text' THEN 'paragraph' WHEN 'table' THEN 'table'
                                                WHEN 'image' THEN 'image' ELSE 'video' END);
    SELECT c.dimension, c.embedder INTO dim, emb FROM {s}.corpora c WHERE c.builtin ORDER BY c.created_at LIMIT 1;
    meta := jsonb_build_object('attached_table', source::text);
    IF require_filter IS NOT NULL THEN
        meta := meta || jsonb_build_object('require_filter', to_jsonb(require_filter));
    END IF;
    PERFORM {s}.create_corpus(p_corpus, modality, gran, coalesce(dimension, dim, 384), coalesce(description, ''),
                              coalesce(embedder, emb, ''), NULL, false, false, meta);
    INSERT INTO {s}.sync_tables (corpus, source, key_columns, content_kind, content, caption, uri,
                                 metadata_columns, watch_columns)
    VALUES (p_corpus, source, keys, kind, content, caption, uri, metadata, watch);

    -- One trigger function for this table: inserts and updates queue the row, deletes remove its unit at once.
    body := format($body$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO %1$I.sync_queue (corpus, unit_id, row_key)
        SELECT %2$L, %1$I.sync_unit_id(%2$L, q.k), q.k FROM (SELECT %3$s AS k FROM sync_new AS n) AS q;
    ELSIF TG_OP = 'UPDATE' THEN
        IF %5$s IS DISTINCT FROM %6$s THEN
            DELETE FROM %1$I.%4$I WHERE id = %1$I.sync_unit_id(%2$L, %5$s);
        END IF;
        INSERT INTO %1$I.sync_queue (corpus, unit_id, row_key) VALUES (%2$L, %1$I.sync_unit_id(%2$L, %6$s), %6$s);
    ELSIF TG_OP = 'DELETE' THEN
        DELETE FROM %1$I.%4$I WHERE id IN (SELECT %1$I.sync_unit_id(%2$L, %7$s) FROM sync_old AS o);
        RETURN NULL;
    ELSE
        DELETE FROM %1$I.%4$I WHERE metadata ? 'source_key';
        DELETE FROM %1$I.sync_queue WHERE corpus = %2$L AND row_key IS NOT NULL;
        RETURN NULL;
    END IF;
    PERFORM pg_notify('universalrag_sync', %1$L);
    RETURN NULL;
END
$body$, s, p_corpus, {s}.sync_key_sql(keys, 'n'), 'corpus_' || p_corpus, {s}.sync_key_sql(keys, 'OLD'),
        {s}.sync_key_sql(keys, 'NEW'), {s}.sync_key_sql(keys, 'o'));
    EXECUTE format('CREATE FUNCTION %I.%I() RETURNS trigger LANGUAGE plpgsql AS %L', s, fn, body);
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s REFERENCING NEW TABLE AS sync_new '
                   'FOR EACH STATEMENT EXECUTE FUNCTION %I.%I()', tg || '_ins', source, s, fn);
    EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %s REFERENCING OLD TABLE AS sync_old '
                   'FOR EACH STATEMENT EXECUTE FUNCTION %I.%I()', tg || '_del', source, s, fn);
    EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION %I.%I()',
                   tg || '_trunc', source, s, fn);
    IF watch IS NULL THEN
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %s FOR EACH ROW WHEN (record_image_ne(OLD, NEW)) '
                       'EXECUTE FUNCTION %I.%I()', tg || '_upd', source, s, fn);
    ELSE
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE OF %s ON %s FOR EACH ROW '
                       'WHEN (record_image_ne(ROW(%s), ROW(%s))) '
                       'EXECUTE FUNCTION %I.%I()', tg || '_upd',
                       (SELECT string_agg(format('%I', c), ', ') FROM unnest(watch) c), source,
                       {s}.sync_columns_sql(watch, 'OLD'), {s}.sync_columns_sql(watch, 'NEW'), s, fn);
    END IF;

    -- The rows already there (the triggers' lock on the table keeps writers out until this commits).
    EXECUTE format('INSERT INTO %1$I.sync_queue (corpus, unit_id, row_key) '
                   'SELECT %2$L, %1$I.sync_unit_id(%2$L, q.k), q.k FROM (SELECT %3$s AS k FROM %4$s AS r) AS q',
                   s, p_corpus, {s}.sync_key_sql(keys, 'r'), source);
    GET DIAGNOSTICS n = ROW_COUNT;
    PERFORM pg_notify('universalrag_sync', s);
    RETURN n;
END
$fn$;
COMMENT ON FUNCTION {s}.attach_table(regclass, text, text, text, text, text[], text, text, text, text[], text,
                                     text[], integer, text) IS
    'Make a table a corpus kept in sync by the universalrag worker; returns the number of rows queued.';
"""

_DETACH = """
CREATE FUNCTION {s}.sync_tables_cleanup() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    s constant text := {schema_literal};
    tg constant text := 'universalrag_' || OLD.corpus;
    suffix text;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_class WHERE oid = OLD.source) THEN
        FOREACH suffix IN ARRAY ARRAY['_ins', '_upd', '_del', '_trunc'] LOOP
            EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', tg || suffix, OLD.source);
        END LOOP;
    END IF;
    EXECUTE format('DROP FUNCTION IF EXISTS %I.%I()', s, 'sync_trigger_' || OLD.corpus);
    DELETE FROM {s}.sync_queue q WHERE q.corpus = OLD.corpus AND q.row_key IS NOT NULL;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER sync_tables_cleanup AFTER DELETE ON {s}.sync_tables
    FOR EACH ROW EXECUTE FUNCTION {s}.sync_tables_cleanup();

CREATE FUNCTION {s}.detach_table(source regclass, drop_corpus boolean DEFAULT false, corpus text DEFAULT NULL)
RETURNS integer LANGUAGE plpgsql AS $fn$
#variable_conflict use_variable
DECLARE
    detached text[];
    c text;
BEGIN
    WITH gone AS (
        DELETE FROM {s}.sync_tables t WHERE t.source = detach_table.source
            AND (detach_table.corpus IS NULL OR t.corpus = detach_table.corpus)
        RETURNING t.corpus
    ) SELECT array_agg(g.corpus) INTO detached FROM gone g;
    IF detached IS NULL THEN
        RAISE EXCEPTION '% is not attached%', source,
            CASE WHEN detach_table.corpus IS NULL THEN '' ELSE ' to corpus ' || detach_table.corpus END
            USING ERRCODE = '42704';
    END IF;
    IF drop_corpus THEN
        FOREACH c IN ARRAY detached LOOP
            PERFORM {s}.drop_corpus(c);
        END LOOP;
    END IF;
    RETURN cardinality(detached);
END
$fn$;
"""

_FETCH = """
CREATE FUNCTION {s}.sync_fetch(p_corpus text, p_keys jsonb)
RETURNS TABLE (row_key jsonb, kind text, body text, data bytea, caption text, uri text, metadata jsonb)
LANGUAGE plpgsql STABLE AS $fn$
DECLARE t {s}.sync_tables;
BEGIN
    SELECT * INTO t FROM {s}.sync_tables st WHERE st.corpus = p_corpus;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'corpus % is not attached to a table', p_corpus USING ERRCODE = '42704';
    END IF;
    RETURN QUERY EXECUTE format(
        'SELECT %1$s, %10$L, %2$s, %3$s, %4$s, %5$s, jsonb_build_object(''source_key'', %1$s) || %6$s '
        'FROM %7$s AS r WHERE (%8$s) IN (SELECT %9$s FROM jsonb_populate_recordset(NULL::%7$s, $1) AS k)',
        {s}.sync_key_sql(t.key_columns, 'r'),
        CASE WHEN t.content_kind = 'bytes' THEN 'NULL::text' ELSE '(' || t.content || ')::text' END,
        CASE WHEN t.content_kind = 'bytes' THEN '(' || t.content || ')::bytea' ELSE 'NULL::bytea' END,
        CASE WHEN t.caption IS NULL THEN 'NULL::text' ELSE '(' || t.caption || ')::text' END,
        CASE WHEN t.uri IS NULL THEN 'NULL::text' ELSE '(' || t.uri || ')::text' END,
        CASE WHEN cardinality(t.metadata_columns) = 0 THEN '''{{}}''::jsonb'
             ELSE {s}.sync_key_sql(t.metadata_columns, 'r') END,
        t.source, {s}.sync_columns_sql(t.key_columns, 'r'), {s}.sync_columns_sql(t.key_columns, 'k'),
        t.content_kind)
    USING p_keys;
END
$fn$;

CREATE FUNCTION {s}.sync_check(p_corpus text, p_keys jsonb) RETURNS TABLE (row_key jsonb, state text)
LANGUAGE plpgsql AS $fn$
DECLARE
    t {s}.sync_tables;
    q text;
    locked jsonb[];
    present jsonb[];
BEGIN
    SELECT * INTO t FROM {s}.sync_tables st WHERE st.corpus = p_corpus;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'corpus % is not attached to a table', p_corpus USING ERRCODE = '42704';
    END IF;
    q := format('SELECT %1$s AS k FROM %2$s AS r WHERE (%3$s) IN '
                '(SELECT %4$s FROM jsonb_populate_recordset(NULL::%2$s, $1) AS k)',
                {s}.sync_key_sql(t.key_columns, 'r'), t.source, {s}.sync_columns_sql(t.key_columns, 'r'),
                {s}.sync_columns_sql(t.key_columns, 'k'));
    -- Locked rows cannot be deleted (nor their key changed) until the caller commits; rows another transaction
    -- is deleting or re-keying right now are skipped and reported busy.
    EXECUTE 'SELECT array_agg(x.k) FROM (' || q || ' FOR KEY SHARE OF r SKIP LOCKED) AS x' INTO locked USING p_keys;
    EXECUTE 'SELECT array_agg(x.k) FROM (' || q || ') AS x' INTO present USING p_keys;
    RETURN QUERY SELECT e.k, CASE WHEN e.k = ANY (coalesce(locked, '{{}}')) THEN 'present'
                                  WHEN e.k = ANY (coalesce(present, '{{}}')) THEN 'busy' ELSE 'gone' END
                 FROM jsonb_array_elements(p_keys) AS e(k);
END
$fn$;
"""

_SQL_WRITES = """
CREATE FUNCTION {s}.sync_enqueue(p_corpus text, p_kind text, p_content text, p_data bytea, p_metadata jsonb,
                                 p_uri text, p_id uuid) RETURNS uuid LANGUAGE plpgsql AS $fn$
DECLARE uid constant uuid := coalesce(p_id, gen_random_uuid());
BEGIN
    IF p_metadata IS NOT NULL AND jsonb_typeof(p_metadata) <> 'object' THEN
        RAISE EXCEPTION 'metadata must be a JSON object' USING ERRCODE = '22023';
    END IF;
    INSERT INTO {s}.sync_queue (corpus, unit_id, kind, content, data, metadata, uri)
    VALUES (p_corpus, uid, p_kind, p_content, p_data, coalesce(p_metadata, '{{}}'), p_uri);
    PERFORM pg_notify('universalrag_sync', {schema_literal});
    RETURN uid;
END
$fn$;

CREATE FUNCTION {s}.add_text(corpus text, content text, metadata jsonb DEFAULT '{{}}', uri text DEFAULT NULL,
                             id uuid DEFAULT NULL) RETURNS uuid LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM {s}.sync_require_corpus(corpus, ARRAY['text', 'table']);
    IF content IS NULL THEN
        RAISE EXCEPTION 'content must not be null' USING ERRCODE = '22004';
    END IF;
    RETURN {s}.sync_enqueue(corpus, 'text', content, NULL, metadata, uri, id);
END
$fn$;

CREATE FUNCTION {s}.add_image(corpus text, data bytea, caption text DEFAULT NULL, metadata jsonb DEFAULT '{{}}',
                              uri text DEFAULT NULL, id uuid DEFAULT NULL) RETURNS uuid LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM {s}.sync_require_corpus(corpus, ARRAY['image']);
    IF data IS NULL THEN
        RAISE EXCEPTION 'data must hold the image bytes' USING ERRCODE = '22004';
    END IF;
    RETURN {s}.sync_enqueue(corpus, 'bytes', caption, data, metadata, uri, id);
END
$fn$;

CREATE FUNCTION {s}.add_file(corpus text, path text, caption text DEFAULT NULL, metadata jsonb DEFAULT '{{}}',
                             id uuid DEFAULT NULL) RETURNS uuid LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM {s}.sync_require_corpus(corpus, ARRAY['text', 'image', 'video']);
    IF path IS NULL OR path = '' THEN
        RAISE EXCEPTION 'path must name a file or an http(s) URL' USING ERRCODE = '22004';
    END IF;
    RETURN {s}.sync_enqueue(corpus, 'path', caption, NULL, metadata, path, id);
END
$fn$;

CREATE FUNCTION {s}.remove_unit(corpus text, id uuid) RETURNS boolean LANGUAGE plpgsql AS $fn$
DECLARE n integer;
BEGIN
    PERFORM {s}.sync_require_corpus(corpus, ARRAY['text', 'table', 'image', 'video']);
    DELETE FROM {s}.sync_queue q WHERE q.corpus = remove_unit.corpus AND q.unit_id = remove_unit.id;
    EXECUTE format('DELETE FROM %I.%I WHERE id = $1', {schema_literal}, 'corpus_' || corpus) USING id;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n > 0;
END
$fn$;

CREATE FUNCTION {s}.sync_retry(corpus text DEFAULT NULL) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE n bigint;
BEGIN
    UPDATE {s}.sync_queue q SET parked_at = NULL, attempts = 0, run_after = '-infinity', locked_by = NULL,
                                locked_at = NULL
    WHERE q.parked_at IS NOT NULL AND (sync_retry.corpus IS NULL OR q.corpus = sync_retry.corpus);
    GET DIAGNOSTICS n = ROW_COUNT;
    PERFORM pg_notify('universalrag_sync', {schema_literal});
    RETURN n;
END
$fn$;
"""

_STATUS = """
CREATE VIEW {s}.sync_status AS
WITH q AS (
    SELECT corpus,
           count(*) FILTER (WHERE parked_at IS NULL) AS backlog,
           count(*) FILTER (WHERE parked_at IS NULL AND locked_by IS NOT NULL) AS in_progress,
           count(*) FILTER (WHERE parked_at IS NULL AND last_error IS NOT NULL) AS retrying,
           count(*) FILTER (WHERE parked_at IS NOT NULL) AS failed,
           min(enqueued_at) FILTER (WHERE parked_at IS NULL) AS oldest,
           (array_agg(last_error ORDER BY id DESC) FILTER (WHERE last_error IS NOT NULL))[1] AS last_error
    FROM {s}.sync_queue GROUP BY corpus
)
SELECT c.name AS corpus, t.source::text AS source, coalesce(q.backlog, 0) AS backlog,
       coalesce(q.in_progress, 0) AS in_progress, coalesce(q.retrying, 0) AS retrying,
       coalesce(q.failed, 0) AS failed, coalesce(clock_timestamp() - q.oldest, interval '0') AS lag,
       q.last_error
FROM {s}.corpora c
LEFT JOIN {s}.sync_tables t ON t.corpus = c.name
LEFT JOIN q ON q.corpus = c.name
WHERE t.corpus IS NOT NULL OR q.corpus IS NOT NULL;
COMMENT ON VIEW {s}.sync_status IS
    'Per corpus: queued units (backlog), claimed by a worker, retrying after an error, parked after too many '
    'errors (failed, see sync_retry), age of the oldest queued unit (lag) and the latest error.';
"""

_FUNCTIONS = (
    "sync_retry(text)",
    "remove_unit(text, uuid)",
    "add_file(text, text, text, jsonb, uuid)",
    "add_image(text, bytea, text, jsonb, text, uuid)",
    "add_text(text, text, jsonb, text, uuid)",
    "sync_enqueue(text, text, text, bytea, jsonb, text, uuid)",
    "sync_check(text, jsonb)",
    "sync_fetch(text, jsonb)",
    "detach_table(regclass, boolean, text)",
    "attach_table(regclass, text, text, text, text, text[], text, text, text, text[], text, text[], integer, text)",
    "sync_require_corpus(text, text[])",
    "sync_columns_sql(text[], text)",
    "sync_key_sql(text[], text)",
    "sync_unit_id(text, jsonb)",
)


def upgrade(*, schema: str) -> None:
    _execute(_TABLES, schema)
    _execute(_HELPERS, schema)
    _execute(_ATTACH, schema)
    _execute(_DETACH, schema)
    _execute(_FETCH, schema)
    _execute(_SQL_WRITES, schema)
    _execute(_STATUS, schema)


def downgrade(*, schema: str) -> None:
    _execute("DROP VIEW {s}.sync_status", schema)
    # Detaching removes every source table's triggers (through sync_tables_cleanup); source tables stay.
    _execute("DELETE FROM {s}.sync_tables", schema)
    _execute("DROP TABLE {s}.sync_tables", schema)
    _execute("DROP FUNCTION {s}.sync_tables_cleanup()", schema)
    for signature in _FUNCTIONS:
        _execute("DROP FUNCTION {s}." + signature, schema)
    _execute("DROP TABLE {s}.sync_queue", schema)
