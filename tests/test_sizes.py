"""Corpus sizes as searches and routing read them (``universalrag.store.row_estimates``). Real PostgreSQL.

Right after an ingest the server's statistics lag: a writer's row counts reach the cumulative statistics when it
goes idle, and ANALYZE runs up to a minute later. The demo's 24-row paragraph table read 3 rows for a minute, and
routing, which reads corpus sizes, decided differently until they settled. A small table is therefore counted.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest
import sqlalchemy as sa

from universalrag.store import Store
from universalrag.store.row_estimates import COUNT_BELOW, forget, table_rows
from universalrag.types import Modality, SourceRecord, Unit

DIM = 384  # the conftest store's corpora are built for the bundled MiniLM


def _write(store: Store, uri: str, n: int) -> None:
    rng = np.random.default_rng(len(uri))
    units = [
        Unit(id=str(uuid.uuid4()), corpus="paragraph", content=f"p{i}", embedding=rng.normal(size=DIM).tolist())
        for i in range(n)
    ]
    store.write_source(SourceRecord(uri=uri, content_hash="h", modality=Modality.TEXT, corpora=("paragraph",)), units)


def test_a_small_table_is_counted_when_its_statistics_lag(store: Store) -> None:
    _write(store, "mem://a", 24)
    table = store.tables.corpus(store.corpus("paragraph")).units
    with store.engine.connect() as conn:
        if not conn.execute(sa.text("select rolsuper from pg_roles where rolname = current_user")).scalar():
            pytest.skip("making the statistics lag on purpose needs a superuser")
        oid = conn.execute(sa.select(sa.func.to_regclass(f"{store.schema}.{table.name}").cast(sa.Integer))).scalar()
        # What the server says just after an ingest: an old estimate, and no activity counted yet
        conn.execute(sa.text("update pg_class set reltuples = 3 where oid = :oid"), {"oid": oid})
        conn.execute(sa.text("select pg_stat_reset_single_table_counters(:oid)"), {"oid": oid})
        conn.commit()
        forget(store.schema)
        stats = conn.execute(
            sa.text("select reltuples, pg_stat_get_live_tuples(oid) from pg_class where oid = :oid"), {"oid": oid}
        ).one()
        assert max(stats) < 24  # the statistics are behind
        assert table_rows(conn, [table], ttl=0.0)[table.name] == 24  # the size is not
    assert COUNT_BELOW > 24
