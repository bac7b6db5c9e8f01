"""The backfill of an attached table reports its progress: ``sync_status`` shows how many of the rows that were
there when it was attached are embedded, how many are left and since when it runs.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06

``attach_table`` queues every existing row in one statement; on a large table the worker then embeds them for
minutes or hours, and ``sync_status`` only showed the backlog. ``attach_table`` now records how many rows it
queued (``sync_tables.backfill_rows``) and the queue id of the last one (``backfill_last_id``): the queue entries up
to that id are the backfill, so the view counts those still queued (``backfill_left``) and parked
(``backfill_failed``) and says how long ago the table was attached (``attached_for``); rate and time left follow
(``universalrag.sync.sync_status``). Tables attached before this revision have no record and show no backfill. The
function is changed in place (as revisions 0014 and 0015 change it), and the view gains columns at its end.
"""

from __future__ import annotations

import importlib

from universalrag.migrations._sql import execute as _execute

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_sync = importlib.import_module("universalrag.migrations.versions.0003_sync")

_ATTACH = (
    "attach_table(regclass, text, text, text, text, text[], text, text, text, text[], text, text[], integer, text)"
)
# pasted into SQL string literals: quotes doubled; ``s`` is attach_table's variable holding the schema
_COUNTED = "GET DIAGNOSTICS n = ROW_COUNT;"
_RECORDED = (
    "GET DIAGNOSTICS n = ROW_COUNT; "
    "EXECUTE format(''UPDATE %1$I.sync_tables SET backfill_rows = $1, backfill_last_id = "
    "(SELECT max(q.id) FROM %1$I.sync_queue q WHERE q.corpus = $2) WHERE corpus = $2'', s) USING n, p_corpus;"
)

_SWAP = """
DO $do$
DECLARE
    definition text := pg_get_functiondef(to_regprocedure(format('%I.%s', {schema_literal}, '<attach>')));
    changed text;
BEGIN
    IF array_length(string_to_array(definition, '<from>'), 1) <> 2 THEN
        RAISE EXCEPTION 'attach_table is not the function this migration expects' USING ERRCODE = '55000';
    END IF;
    changed := replace(definition, '<from>', '<to>');
    EXECUTE changed;
END
$do$;
"""

_COLUMNS = """
ALTER TABLE {s}.sync_tables ADD COLUMN backfill_rows bigint, ADD COLUMN backfill_last_id bigint;
COMMENT ON COLUMN {s}.sync_tables.backfill_rows IS 'Rows attach_table queued (the table''s rows when attached).';
COMMENT ON COLUMN {s}.sync_tables.backfill_last_id IS
    'sync_queue id of the last row attach_table queued: entries up to it are the backfill.';
"""

_STATUS = """
CREATE OR REPLACE VIEW {s}.sync_status AS
WITH q AS (
    SELECT q.corpus,
           count(*) FILTER (WHERE q.parked_at IS NULL) AS backlog,
           count(*) FILTER (WHERE q.parked_at IS NULL AND q.locked_by IS NOT NULL) AS in_progress,
           count(*) FILTER (WHERE q.parked_at IS NULL AND q.last_error IS NOT NULL) AS retrying,
           count(*) FILTER (WHERE q.parked_at IS NOT NULL) AS failed,
           min(q.enqueued_at) FILTER (WHERE q.parked_at IS NULL) AS oldest,
           (array_agg(q.last_error ORDER BY q.id DESC) FILTER (WHERE q.last_error IS NOT NULL))[1] AS last_error,
           count(*) FILTER (WHERE q.parked_at IS NULL AND q.id <= t.backfill_last_id) AS backfill_left,
           count(*) FILTER (WHERE q.parked_at IS NOT NULL AND q.id <= t.backfill_last_id) AS backfill_failed
    FROM {s}.sync_queue q LEFT JOIN {s}.sync_tables t ON t.corpus = q.corpus
    GROUP BY q.corpus
)
SELECT c.name AS corpus, t.source::text AS source, coalesce(q.backlog, 0) AS backlog,
       coalesce(q.in_progress, 0) AS in_progress, coalesce(q.retrying, 0) AS retrying,
       coalesce(q.failed, 0) AS failed, coalesce(clock_timestamp() - q.oldest, interval '0') AS lag,
       q.last_error, t.backfill_rows, coalesce(q.backfill_left, 0) AS backfill_left,
       coalesce(q.backfill_failed, 0) AS backfill_failed, clock_timestamp() - t.created_at AS attached_for
FROM {s}.corpora c
LEFT JOIN {s}.sync_tables t ON t.corpus = c.name
LEFT JOIN q ON q.corpus = c.name
WHERE t.corpus IS NOT NULL OR q.corpus IS NOT NULL;
COMMENT ON VIEW {s}.sync_status IS
    'Per corpus: queued units (backlog), claimed by a worker, retrying after an error, parked after too many '
    'errors (failed, see sync_retry), age of the oldest queued unit (lag), the latest error, and for an attached '
    'table the rows queued when attached (backfill_rows), those of them still queued or parked, and since when.';
"""


def _swap(old: str, new: str) -> str:
    return _SWAP.replace("<attach>", _ATTACH).replace("<from>", old).replace("<to>", new)


def upgrade(*, schema: str) -> None:
    _execute(_COLUMNS, schema)
    _execute(_swap(_COUNTED, _RECORDED), schema)
    _execute(_STATUS, schema)


def downgrade(*, schema: str) -> None:
    _execute("DROP VIEW {s}.sync_status", schema)
    _execute(_sync._STATUS, schema)
    _execute(_swap(_RECORDED, _COUNTED), schema)
    _execute("ALTER TABLE {s}.sync_tables DROP COLUMN backfill_rows, DROP COLUMN backfill_last_id", schema)
