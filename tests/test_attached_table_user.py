"""What a user of ``attach_table`` sees: hits of an attached table named by the application row's key (not a unit
id), and no notices from the attaching call itself. A real table, the real worker and the bundled MiniLM."""

from __future__ import annotations

import io
from typing import Any

from psycopg import sql
from support.sync import app_sql, attach_table

from universalrag.cli.context import Output
from universalrag.cli.output import hit_label, print_hits
from universalrag.sync import Worker


def test_attached_rows_are_named_by_their_key_and_attaching_prints_nothing(
    database_url: str, store: Any, minilm: Any
) -> None:
    app_schema = f"{store.schema}_shop"
    conn = app_sql(database_url)
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(str(d.message_primary)))
    try:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(app_schema)))
        conn.execute(
            sql.SQL("CREATE TABLE {}.parts (sku text PRIMARY KEY, label text NOT NULL)").format(
                sql.Identifier(app_schema)
            )
        )
        conn.execute(
            sql.SQL(
                "INSERT INTO {}.parts VALUES ('BRK-118', 'Rear brake pads for city bikes'), "
                "('CHN-9', 'Nine-speed chain, 116 links')"
            ).format(sql.Identifier(app_schema))
        )
        notices.clear()
        attach_table(conn, store.schema, f"{app_schema}.parts", corpus="parts", content="label")
        assert notices == []  # a fresh session has no temporary schema: attaching must not say so
        with Worker(store, embedder=minilm) as worker:
            assert worker.drain().written == 2
        hit = store.search("parts", minilm.embed_query("brake pads"), k=1)[0]
        assert hit_label(hit) == "sku=BRK-118"
        buffer = io.StringIO()
        print_hits(Output(terminal=False, stdout=buffer), [hit])
        assert "sku=BRK-118" in buffer.getvalue() and hit.id not in buffer.getvalue()
    finally:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(app_schema)))
        conn.close()
