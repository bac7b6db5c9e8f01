"""The routing log and stored combiners.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26

``routing_log`` keeps one row per routing decision: when, a hash of the query (its text only when the
application enables it), the candidate corpora, the scores, the evidence the combiner read (JSONB), the routes
chosen, the latency and the router's version; ``feedback_routes``/``feedback_at`` record a user's correction.
``router_combiners`` stores combiners adapted to this database's content (``universalrag router adapt``);
the row named ``default`` is what ``UniversalRAG()`` uses.
"""

from __future__ import annotations

from universalrag.migrations._sql import execute as _execute

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_TABLES = """
CREATE TABLE {s}.routing_log (
    id              uuid PRIMARY KEY,
    created_at      timestamptz NOT NULL DEFAULT now(),
    query_hash      text NOT NULL,
    query_text      text,
    candidates      text[] NOT NULL DEFAULT '{{}}',
    scores          jsonb NOT NULL DEFAULT '{{}}'::jsonb,
    prior           jsonb NOT NULL DEFAULT '{{}}'::jsonb,
    evidence        jsonb NOT NULL DEFAULT '{{}}'::jsonb,
    routes          text[] NOT NULL DEFAULT '{{}}',
    latency_ms      real,
    router          text NOT NULL DEFAULT '',
    router_version  text NOT NULL DEFAULT '',
    feedback_routes text[],
    feedback_at     timestamptz
);
CREATE INDEX routing_log_query_hash ON {s}.routing_log (query_hash, created_at DESC);
CREATE INDEX routing_log_feedback ON {s}.routing_log (feedback_at) WHERE feedback_at IS NOT NULL;
CREATE TABLE {s}.router_combiners (
    name       text PRIMARY KEY,
    version    text NOT NULL,
    weights    jsonb NOT NULL,
    report     jsonb NOT NULL DEFAULT '{{}}'::jsonb,
    created_at timestamptz NOT NULL DEFAULT now()
);
"""


def upgrade(*, schema: str) -> None:
    _execute(_TABLES, schema)


def downgrade(*, schema: str) -> None:
    _execute("DROP TABLE {s}.router_combiners; DROP TABLE {s}.routing_log;", schema)
