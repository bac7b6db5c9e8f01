"""The visual channel: an optional second vector column per corpus, for a visual encoder's space.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-26

``add_visual_channel(corpus, dimension, encoder)`` adds a ``visual vector(n)`` column with its own HNSW index to
a corpus (images, clips, videos) and records the encoder in the registry. Searches then fuse the text and visual
similarities. Idempotent for the same encoder and dimension; a different one is refused.
"""

from __future__ import annotations

from universalrag.migrations._sql import execute as _execute

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_REGISTRY = """
ALTER TABLE {s}.corpora
    ADD COLUMN visual_encoder text,
    ADD COLUMN visual_dimension integer CHECK (visual_dimension BETWEEN 1 AND 16000);
"""

_ADD_VISUAL = """
CREATE FUNCTION {s}.add_visual_channel(p_name text, p_dimension integer, p_encoder text)
RETURNS boolean LANGUAGE plpgsql AS $fn$
DECLARE
    s constant text := {schema_literal};
    t constant text := 'corpus_' || p_name;
    current_encoder text;
    current_dimension integer;
BEGIN
    SELECT visual_encoder, visual_dimension INTO current_encoder, current_dimension
    FROM {s}.corpora WHERE name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'corpus % does not exist', p_name USING ERRCODE = '42704';
    END IF;
    IF current_encoder IS NOT NULL THEN
        IF current_encoder = p_encoder AND current_dimension = p_dimension THEN
            RETURN false;
        END IF;
        RAISE EXCEPTION 'corpus % already has a visual channel from % (% dimensions)', p_name, current_encoder,
            current_dimension USING ERRCODE = '42P07',
            HINT = 'Use the same visual encoder, or drop and re-create the corpus.';
    END IF;
    EXECUTE format('ALTER TABLE %I.%I ADD COLUMN visual vector(%s)', s, t, p_dimension);
    EXECUTE format('CREATE INDEX %I ON %I.%I USING hnsw (visual vector_cosine_ops)', t || '_visual_hnsw', s, t);
    UPDATE {s}.corpora SET visual_encoder = p_encoder, visual_dimension = p_dimension WHERE name = p_name;
    RETURN true;
END
$fn$;
"""


def upgrade(*, schema: str) -> None:
    _execute(_REGISTRY, schema)
    _execute(_ADD_VISUAL, schema)


def downgrade(*, schema: str) -> None:
    _execute(
        """
        DO $do$
        DECLARE c text;
        BEGIN
            FOR c IN SELECT name FROM {s}.corpora WHERE visual_encoder IS NOT NULL LOOP
                EXECUTE format('ALTER TABLE %I.%I DROP COLUMN visual', {schema_literal}, 'corpus_' || c);
            END LOOP;
        END
        $do$;
        """,
        schema,
    )
    _execute("DROP FUNCTION {s}.add_visual_channel(text, integer, text)", schema)
    _execute("ALTER TABLE {s}.corpora DROP COLUMN visual_encoder, DROP COLUMN visual_dimension", schema)
