"""The SQL functions of the schema do not depend on the caller's ``search_path`` (migration 0010).

Real PostgreSQL + pgvector: a session whose path holds only the corpus schema (no pgvector schema) creates a
corpus and adds a visual channel; the functions carry their own path with ``pg_temp`` last.
"""

from __future__ import annotations

import sqlalchemy as sa

from universalrag.store import Store
from universalrag.store.migrate import SHIPPED_HEAD


def test_create_corpus_ignores_the_callers_search_path(store: Store) -> None:
    with store.engine.connect() as conn, conn.begin():
        conn.execute(sa.text("SELECT set_config('search_path', :p, true)"), {"p": f"{store.schema}, pg_temp"})
        conn.execute(
            sa.text(f'SELECT "{store.schema}".create_corpus(:n, :m, :g, :d)'),
            {"n": "manuals", "m": "text", "g": "paragraph", "d": 8},
        )
        conn.execute(
            sa.text(f'SELECT "{store.schema}".add_visual_channel(:n, :d, :e)'), {"n": "manuals", "d": 4, "e": "clip"}
        )
        types = dict(
            conn.execute(
                sa.text(
                    "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
                    "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = :s AND c.relname = 'corpus_manuals' AND a.attname IN ('embedding', 'visual')"
                ),
                {"s": store.schema},
            ).all()
        )
    assert set(types) == {"embedding", "visual"} and all("vector(" in t for t in types.values())
    assert "manuals" in store.corpora(refresh=True)


def test_functions_carry_their_own_search_path_with_pg_temp_last(store: Store) -> None:
    with store.engine.connect() as conn:
        rows = dict(
            conn.execute(
                sa.text(
                    "SELECT p.proname, array_to_string(p.proconfig, ',') FROM pg_proc p "
                    "JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = :s "
                    "AND p.proname IN ('create_corpus', 'add_visual_channel', 'drop_corpus')"
                ),
                {"s": store.schema},
            ).all()
        )
    assert set(rows) == {"create_corpus", "add_visual_channel", "drop_corpus"}
    for config in rows.values():
        assert config.startswith("search_path=") and config.endswith("pg_catalog, pg_temp"), config


def test_downgrade_and_upgrade_again(store: Store) -> None:
    store.downgrade("0009")
    with store.engine.connect() as conn:
        config = conn.execute(
            sa.text(
                "SELECT p.proconfig FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                "WHERE n.nspname = :s AND p.proname = 'create_corpus'"
            ),
            {"s": store.schema},
        ).scalar_one()
    assert config is None
    store.migrate()
    assert store.revision() == SHIPPED_HEAD
