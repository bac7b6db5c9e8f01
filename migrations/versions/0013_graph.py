"""The knowledge graph: entities, the relations between them and the units that mention them, in plain tables.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-06

Three tables (no graph extension: managed services lack Apache AGE, and bounded walks need only recursive CTEs over
an edge table indexed at both ends):

- ``graph_entities``: one row per alignment key (``universalrag.graph.normalise_key`` of the name), with the name, a
  type, a merged description, the other names it goes by (``aliases``, and their keys in ``alias_keys``, indexed for
  exact lookup), and a vector of "name, type, description" in the space of the store's text embedder;
- ``graph_relations``: entity → entity, with keywords, a description and a weight, and the source that stated it;
- ``graph_mentions``: which unit (corpus and id) names or *is* (role ``anchor``) which entity, from which source.

A source's relations and mentions go with it (``ON DELETE CASCADE`` on ``sources``), so do a corpus's mentions when
the corpus is dropped; an entity left with no mention is deleted when the transaction that removed its last mention
commits (a deferred constraint trigger: a source that is replaced keeps the ids of the entities it names again).

The vector column takes its width once the text embedder's is known: ``graph_set_dimension(n)`` (run here for a
schema whose built-in corpora exist, and by ``Store.init`` for a new one) types it ``vector(n)`` and builds its HNSW
index through ``prepare_vector_column`` (revision 0012).

Functions for database users: ``graph_key(name)``, the alignment key in SQL (equal to the Python one for names in
ASCII); ``graph_neighbours(name, hops, max_fanout, max_rows)``, the entities within ``hops`` (at most 3) relations of
the entity named, each with its distance and the path's keywords; ``graph_units(name, max_rows)``, the units that
mention it.
"""

from __future__ import annotations

import importlib

from universalrag.migrations._sql import execute as _execute

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_search_path = importlib.import_module("universalrag.migrations.versions.0010_function_search_path")

_FUNCTIONS = (
    "graph_set_dimension(integer)",
    "graph_neighbours(text, integer, integer, integer)",
    "graph_units(text, integer)",
)

_TABLES = """
CREATE TABLE {s}.graph_entities (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key         text NOT NULL UNIQUE CHECK (key <> ''),
    name        text NOT NULL,
    type        text NOT NULL DEFAULT 'concept',
    description text NOT NULL DEFAULT '',
    aliases     text[] NOT NULL DEFAULT '{{}}',
    alias_keys  text[] NOT NULL DEFAULT '{{}}',
    embedding   vector,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX graph_entities_alias_keys_idx ON {s}.graph_entities USING gin (alias_keys);
CREATE INDEX graph_entities_name_tsv_idx ON {s}.graph_entities
    USING gin (to_tsvector('simple'::regconfig, name));

CREATE TABLE {s}.graph_relations (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source_entity bigint NOT NULL REFERENCES {s}.graph_entities (id) ON DELETE CASCADE,
    target_entity bigint NOT NULL REFERENCES {s}.graph_entities (id) ON DELETE CASCADE,
    keywords      text NOT NULL,
    description   text NOT NULL DEFAULT '',
    weight        real NOT NULL DEFAULT 1,
    source_id     uuid REFERENCES {s}.sources (id) ON DELETE CASCADE,
    embedding     vector
);
CREATE INDEX graph_relations_source_entity_idx ON {s}.graph_relations (source_entity);
CREATE INDEX graph_relations_target_entity_idx ON {s}.graph_relations (target_entity);
CREATE INDEX graph_relations_source_id_idx ON {s}.graph_relations (source_id);

CREATE TABLE {s}.graph_mentions (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    entity_id bigint NOT NULL REFERENCES {s}.graph_entities (id) ON DELETE CASCADE,
    corpus    text NOT NULL REFERENCES {s}.corpora (name) ON DELETE CASCADE,
    unit_id   uuid NOT NULL,
    source_id uuid REFERENCES {s}.sources (id) ON DELETE CASCADE,
    role      text NOT NULL DEFAULT 'mention' CHECK (role IN ('anchor', 'mention')),
    weight    real NOT NULL DEFAULT 1,
    page      integer,
    start_s   double precision,
    end_s     double precision
);
CREATE INDEX graph_mentions_entity_idx ON {s}.graph_mentions (entity_id);
CREATE INDEX graph_mentions_unit_idx ON {s}.graph_mentions (corpus, unit_id);
CREATE INDEX graph_mentions_source_idx ON {s}.graph_mentions (source_id);
"""

_FORGET = """
CREATE FUNCTION {s}.graph_forget_entity() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    DELETE FROM {s}.graph_entities e WHERE e.id = OLD.entity_id
        AND NOT EXISTS (SELECT 1 FROM {s}.graph_mentions m WHERE m.entity_id = OLD.entity_id);
    RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER graph_mentions_forget AFTER DELETE ON {s}.graph_mentions
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {s}.graph_forget_entity();
"""

_KEY = """
CREATE FUNCTION {s}.graph_key(p_name text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT btrim(regexp_replace(lower(normalize(p_name, NFKC)), '[^[:alnum:]]+', ' ', 'g'))
$fn$;
"""

_DIMENSION = """
CREATE FUNCTION {s}.graph_set_dimension(p_dimension integer) RETURNS boolean LANGUAGE plpgsql AS $fn$
DECLARE typed integer;
BEGIN
    SELECT a.atttypmod INTO typed FROM pg_attribute a
    WHERE a.attrelid = format('%I.graph_entities', {schema_literal})::regclass AND a.attname = 'embedding';
    IF typed > 0 THEN
        RETURN false;  -- typed already
    END IF;
    UPDATE {s}.graph_entities SET embedding = NULL WHERE embedding IS NOT NULL;
    UPDATE {s}.graph_relations SET embedding = NULL WHERE embedding IS NOT NULL;
    EXECUTE format('ALTER TABLE %I.graph_entities ALTER COLUMN embedding TYPE vector(%s)', {schema_literal},
                   p_dimension);
    EXECUTE format('ALTER TABLE %I.graph_relations ALTER COLUMN embedding TYPE vector(%s)', {schema_literal},
                   p_dimension);
    PERFORM {s}.prepare_vector_column({schema_literal}, 'graph_entities', 'embedding', 'graph_entities_hnsw',
                                      p_dimension);
    RETURN true;
END
$fn$;
"""

# Bounded for any graph: at most 3 hops, ``p_max_fanout`` relations followed from each entity (the heaviest first),
# a path never visits an entity twice, and at most ``p_max_rows`` entities come back (nearest first).
_NEIGHBOURS = """
CREATE FUNCTION {s}.graph_neighbours(p_name text, p_hops integer DEFAULT 2, p_max_fanout integer DEFAULT 50,
                                     p_max_rows integer DEFAULT 200)
RETURNS TABLE (entity_id bigint, name text, type text, hops integer, keywords text[])
LANGUAGE sql STABLE AS $fn$
    WITH RECURSIVE
    seed AS (
        SELECT e.id FROM {s}.graph_entities e
        WHERE e.key = {s}.graph_key(p_name) OR {s}.graph_key(p_name) = ANY (e.alias_keys)
        ORDER BY e.key = {s}.graph_key(p_name) DESC, e.id LIMIT 1
    ),
    walk (id, depth, path, via) AS (
        SELECT seed.id, 0, ARRAY[seed.id], ARRAY[]::text[] FROM seed
        UNION ALL
        SELECT step.other, w.depth + 1, w.path || step.other, w.via || step.keywords
        FROM walk w
        CROSS JOIN LATERAL (
            SELECT x.other, x.keywords FROM (
                SELECT r.target_entity AS other, r.keywords, r.weight FROM {s}.graph_relations r
                WHERE r.source_entity = w.id
                UNION ALL
                SELECT r.source_entity, r.keywords, r.weight FROM {s}.graph_relations r
                WHERE r.target_entity = w.id
            ) x
            WHERE x.other <> ALL (w.path)
            ORDER BY x.weight DESC, x.other
            LIMIT greatest(least(p_max_fanout, 1000), 1)
        ) step
        WHERE w.depth < greatest(least(p_hops, 3), 0)
    ),
    nearest AS (
        SELECT DISTINCT ON (w.id) w.id, w.depth, w.via FROM walk w ORDER BY w.id, w.depth
    )
    SELECT e.id, e.name, e.type, n.depth, n.via
    FROM nearest n JOIN {s}.graph_entities e ON e.id = n.id
    ORDER BY n.depth, e.name
    LIMIT greatest(least(p_max_rows, 10000), 1)
$fn$;
"""

_UNITS = """
CREATE FUNCTION {s}.graph_units(p_name text, p_max_rows integer DEFAULT 100)
RETURNS TABLE (corpus text, unit_id uuid, role text, weight real, page integer, start_s double precision,
               end_s double precision)
LANGUAGE sql STABLE AS $fn$
    SELECT m.corpus, m.unit_id, m.role, m.weight, m.page, m.start_s, m.end_s
    FROM {s}.graph_mentions m
    WHERE m.entity_id = (
        SELECT e.id FROM {s}.graph_entities e
        WHERE e.key = {s}.graph_key(p_name) OR {s}.graph_key(p_name) = ANY (e.alias_keys)
        ORDER BY e.key = {s}.graph_key(p_name) DESC, e.id LIMIT 1
    )
    ORDER BY m.role = 'anchor' DESC, m.weight DESC, m.corpus, m.unit_id
    LIMIT greatest(least(p_max_rows, 10000), 1)
$fn$;
"""

# The text dimension of a schema that has corpora already: that of its built-in text corpora.
_EXISTING_DIMENSION = """
DO $do$
DECLARE n integer;
BEGIN
    SELECT c.dimension INTO n FROM {s}.corpora c
    WHERE c.builtin AND c.modality = 'text' ORDER BY c.name LIMIT 1;
    IF n IS NOT NULL THEN
        PERFORM {s}.graph_set_dimension(n);
    END IF;
END
$do$;
"""


def upgrade(*, schema: str) -> None:
    for template in (_TABLES, _FORGET, _KEY, _DIMENSION, _NEIGHBOURS, _UNITS):
        _execute(template, schema)
    _search_path.set_search_path(schema, _FUNCTIONS)
    _execute(_EXISTING_DIMENSION, schema)


def downgrade(*, schema: str) -> None:
    _execute(
        """
        DROP TABLE {s}.graph_mentions;
        DROP TABLE {s}.graph_relations;
        DROP TABLE {s}.graph_entities;
        DROP FUNCTION {s}.graph_units(text, integer);
        DROP FUNCTION {s}.graph_neighbours(text, integer, integer, integer);
        DROP FUNCTION {s}.graph_set_dimension(integer);
        DROP FUNCTION {s}.graph_key(text);
        DROP FUNCTION {s}.graph_forget_entity();
        """,
        schema,
    )
