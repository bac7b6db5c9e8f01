"""Partitioned corpora on the real embedded PostgreSQL: declared by tenant, time or source, written into partitions
made on demand, searched with the same results as one table, pruned to one partition by a filter (EXPLAIN names it
alone), deleted by source, by id and by tenant, fed by an attached table through the worker, index-checked, and bad
declarations refused with a sentence."""

from __future__ import annotations

import hashlib
import importlib
import re
import threading
import uuid
from typing import Any

import numpy as np
import psycopg
import pytest
import sqlalchemy as sa
from psycopg import sql
from psycopg.types.json import Jsonb
from sqlalchemy.dialects.postgresql import JSONB
from support.sync import app_sql

from universalrag.errors import InvalidInputError, StoreError
from universalrag.store import queries
from universalrag.store.index_check import check_index
from universalrag.store.row_estimates import _statistics, table_rows
from universalrag.sync import Worker, WorkerOptions
from universalrag.types import CorpusSpec, Partitioning, SourceRecord, Unit

DIM = 16
TENANTS = ("acme", "globex", "initech")


def _spec(name: str, partition: Partitioning | None = None, **extra: Any) -> CorpusSpec:
    return CorpusSpec(name=name, modality="text", granularity="paragraph", dimension=DIM, partition=partition, **extra)


def _units(corpus: str, n: int, metadata: Any, *, seed: int = 0, parts: int = 0) -> list[Unit]:
    """``n`` units with seeded random vectors (the same for every corpus given the same seed) and ids derived from
    the index, so two corpora holding the same data have the same ids."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        texts = [f"part {j} of unit {i}" for j in range(parts)]
        out.append(
            Unit(
                id=str(uuid.UUID(hashlib.md5(f"{seed}/{i}".encode()).hexdigest())),
                corpus=corpus,
                content=f"unit {i}",
                embedding=rng.standard_normal(DIM).tolist(),
                metadata=metadata(i),
                parts=texts,
                part_embeddings=[rng.standard_normal(DIM).tolist() for _ in texts],
            )
        )
    return out


def _tenant(i: int) -> dict[str, Any]:
    return {"tenant": TENANTS[i % 3]} if i % 10 else {}  # every tenth unit has none: the default partition


def _same_hits(store: Any, a: str, b: str, filters: list[Any], *, seed: int = 7) -> None:
    """Searches of corpora ``a`` and ``b`` return the same units with the same scores, for every filter."""
    rng = np.random.default_rng(seed)
    for flt in filters:
        for _ in range(4):
            q = rng.standard_normal(DIM).tolist()
            got = [(h.id, round(h.score, 5)) for h in store.search(a, q, k=8, filter=flt)]
            want = [(h.id, round(h.score, 5)) for h in store.search(b, q, k=8, filter=flt)]
            assert got == want, flt
            assert got, flt


def _plan(store: Any, corpus: str, flt: Any, *, parts: bool = False) -> str:
    """EXPLAIN of the statement the library sends for a filtered nearest-neighbour search."""
    tables = store.tables.corpus(store.corpus(corpus))
    vector = [0.1] * DIM
    if parts:
        stmt = queries.nearest_parts(tables, vector, limit=8, filter=flt)
    else:
        stmt = queries.nearest_units(tables, vector, limit=8, filter=flt)
    with store.transaction() as conn:
        compiled = stmt.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
        params = {
            k: Jsonb(v) if k in compiled.binds and isinstance(compiled.binds[k].type, JSONB) else v
            for k, v in compiled.params.items()
        }
        params["query_vector"] = "[" + ",".join(map(str, vector)) + "]"
        rows = conn.exec_driver_sql("EXPLAIN " + str(compiled), params).scalars().all()
    return "\n".join(rows)


def _scanned(plan: str, corpus: str) -> set[str]:
    """The partitions of ``corpus`` an EXPLAIN output reads (its ``corpus_<name>$...`` relations)."""
    scanned = re.findall(r"\bon (\S+)", plan)  # "Index Scan using <index> on <relation>", "Seq Scan on <relation>"
    names = {w.split(".")[-1].strip('"') for w in scanned}
    return {n for n in names if n.startswith(f"corpus_{corpus}$")}


# -- declaring --------------------------------------------------------------------------------------------------------
def test_bad_declarations_are_refused_with_a_sentence() -> None:
    cases = [
        (dict(by="colour", key="x"), "Partitioning by 'colour' is not supported; use one of tenant, time, source"),
        (dict(by="tenant"), "Partitioning by tenant needs key="),
        (dict(by="tenant", key="a.b"), "Partitioning by tenant needs key="),
        (dict(by="time", key="published", interval="week"), "one month or one year long"),
        (dict(by="source", key="uri"), "takes no key"),
        (dict(by="source", partitions=1), "between 2 and 64 partitions"),
        (dict(by="source", partitions=True), "partitions must be a whole number"),
        (dict(by="tenant", key="t", max_partitions=0), "max_partitions must be between 1 and 1000"),
    ]
    for kwargs, message in cases:
        with pytest.raises(InvalidInputError, match=message.replace("(", r"\(").replace("=", "=")):
            Partitioning(**kwargs)
    with pytest.raises(InvalidInputError, match="partition must be a Partitioning"):
        CorpusSpec(name="x", modality="text", granularity="paragraph", partition="tenant")  # type: ignore[arg-type]
    assert Partitioning.from_dict(Partitioning(by="time", key="d", interval="year").as_dict()) == Partitioning(
        by="time", key="d", interval="year"
    )


def test_declaring_makes_partitioned_tables_with_one_hnsw_index_per_partition(store: Any) -> None:
    store.create_corpus(_spec("docs", Partitioning(by="tenant", key="tenant")))
    spec = store.corpus("docs")
    assert spec.partition == Partitioning(by="tenant", key="tenant")
    assert store.partitions("docs") == {"corpus_docs$default": "DEFAULT"}
    store.add_units(_units("docs", 30, _tenant))
    made = store.partitions("docs")
    assert set(made.values()) == {"DEFAULT", *(f"FOR VALUES IN ('{t}')" for t in TENANTS)}
    with store.transaction() as conn:
        hnsw = conn.execute(
            sa.text(
                "SELECT c.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
                "JOIN pg_class c ON c.oid = x.indrelid JOIN pg_am a ON a.oid = i.relam "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = :s AND a.amname = 'hnsw' "
                "AND c.relkind = 'r'"
            ),
            {"s": store.schema},
        ).scalars()
        assert set(made) <= set(hnsw)  # the index declared on the parent, built on every partition
        key = conn.execute(
            sa.text(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = to_regclass(:t) AND contype = 'p'"
            ),
            {"t": f'"{store.schema}".corpus_docs'},
        ).scalar_one()
    assert key == "PRIMARY KEY (id, partition_key)"


def test_a_partitioned_corpus_cannot_be_a_parent_nor_partitioned_twice(store: Any) -> None:
    store.create_corpus(_spec("books", Partitioning(by="tenant", key="tenant")))
    with pytest.raises(InvalidInputError, match="cannot have the partitioned corpus 'books' as its parent"):
        store.create_corpus(_spec("chapters", parent="books"))
    with pytest.raises(StoreError, match="already partitioned"):
        store.partition_corpus("books", Partitioning(by="tenant", key="tenant"))
    store.create_corpus(_spec("notes"))
    store.add_units(_units("notes", 3, _tenant))
    with pytest.raises(StoreError, match="only an empty corpus can be partitioned"):
        store.partition_corpus("notes", Partitioning(by="tenant", key="tenant"))
    assert store.corpus("notes").partition is None and store.counts()["notes"] == 3


# -- searching --------------------------------------------------------------------------------------------------------
def test_tenant_searches_match_one_table_and_a_tenant_filter_reads_one_partition(store: Any) -> None:
    store.create_corpus(_spec("plain"))
    store.create_corpus(_spec("split", Partitioning(by="tenant", key="tenant")))
    store.add_units(_units("plain", 240, _tenant))
    store.add_units(_units("split", 240, _tenant))
    filters = [
        None,
        {"tenant": "globex"},
        {"tenant": {"$in": ["acme", "initech"]}},
        {"$and": [{"tenant": "acme"}, {"tenant": {"$ne": "x"}}]},
        {"$or": [{"tenant": "acme"}, {"tenant": "globex"}]},  # not prunable, still the same hits
        {"tenant": {"$exists": False}},
    ]
    _same_hits(store, "split", "plain", filters)
    by_bound = {bound: name for name, bound in store.partitions("split").items()}
    one = _scanned(_plan(store, "split", {"tenant": "globex"}), "split")
    assert one == {by_bound["FOR VALUES IN ('globex')"]}
    two = _scanned(_plan(store, "split", {"tenant": {"$in": ["acme", "initech"]}}), "split")
    assert two == {by_bound["FOR VALUES IN ('acme')"], by_bound["FOR VALUES IN ('initech')"]}
    assert _scanned(_plan(store, "split", None), "split") == set(by_bound.values())


def test_numbers_as_tenants_prune_like_the_json_they_are(store: Any) -> None:
    store.create_corpus(_spec("plain"))
    store.create_corpus(_spec("split", Partitioning(by="tenant", key="org")))

    def org(i: int) -> dict[str, Any]:
        return {"org": [7, 7.0, 12, "7", True][i % 5]}

    store.add_units(_units("plain", 60, org))
    store.add_units(_units("split", 60, org))
    _same_hits(store, "split", "plain", [{"org": 7}, {"org": 7.0}, {"org": "7"}, {"org": {"$in": [12, 7]}}])


def test_time_partitions_made_by_month_and_a_date_range_reads_only_its_months(store: Any) -> None:
    store.create_corpus(_spec("plain"))
    store.create_corpus(_spec("news", Partitioning(by="time", key="published")))

    def published(i: int) -> dict[str, Any]:
        if i % 13 == 0:
            return {"published": "sometime in spring"}  # no readable date: the default partition
        return {"published": f"2026-{1 + i % 4:02d}-{1 + i % 28:02d}T{2 + i % 20:02d}:30:00+02:00"}

    store.add_units(_units("plain", 200, published))
    store.add_units(_units("news", 200, published))
    made = store.partitions("news")
    assert sorted(made) == [
        "corpus_news$202601",
        "corpus_news$202602",
        "corpus_news$202603",
        "corpus_news$202604",
        "corpus_news$default",
    ]
    march = {"published": {"$gte": "2026-03-05", "$lt": "2026-03-25"}}
    _same_hits(store, "news", "plain", [None, march, {"published": {"$gt": "2026-02-20"}}])
    assert _scanned(_plan(store, "news", march), "news") == {"corpus_news$202603", "corpus_news$default"}


def test_source_partitions_hash_each_source_whole(store: Any) -> None:
    store.create_corpus(_spec("plain"))
    store.create_corpus(_spec("wiki", Partitioning(by="source", partitions=4)))
    assert sorted(store.partitions("wiki")) == [f"corpus_wiki$h{i}" for i in range(4)]
    for corpus in ("plain", "wiki"):
        for s in range(6):
            units = _units(corpus, 20, lambda i: {"n": i}, seed=s)
            record = SourceRecord(
                uri=f"file:///{corpus}/{s}.txt", content_hash=str(s), modality="text", corpora=(corpus,)
            )
            assert store.write_source(record, units).status == "added"
    _same_hits(store, "wiki", "plain", [None, {"n": {"$lt": 5}}])
    with store.transaction() as conn:
        spread = conn.execute(
            sa.text(f'SELECT source_id, count(DISTINCT tableoid) FROM "{store.schema}".corpus_wiki GROUP BY 1')
        ).all()
    assert len(spread) == 6 and all(n == 1 for _, n in spread)  # a source lies in one partition
    assert store.delete_source("file:///wiki/3.txt")
    assert store.counts()["wiki"] == 100


def test_multi_vector_corpora_partition_their_parts_with_their_units(store: Any) -> None:
    store.create_corpus(_spec("plain", multi_vector=True))
    store.create_corpus(_spec("tables", Partitioning(by="tenant", key="tenant"), multi_vector=True))
    store.add_units(_units("plain", 60, _tenant, parts=3))
    store.add_units(_units("tables", 60, _tenant, parts=3))
    assert store.part_counts()["tables"] == 180
    _same_hits(store, "tables", "plain", [None, {"tenant": "acme"}])
    with store.transaction() as conn:
        bound = sa.text(
            "SELECT pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = to_regclass(:t) ORDER BY 1"
        )
        parts = conn.execute(bound, {"t": f'"{store.schema}".corpus_tables_parts'}).scalars().all()
    assert set(parts) == set(store.partitions("tables").values())
    acme = {"tenant": "acme"}
    assert _scanned(_plan(store, "tables", acme, parts=True), "tables_parts") == {
        name.replace("corpus_tables$", "corpus_tables_parts$")
        for name, b in store.partitions("tables").items()
        if b == "FOR VALUES IN ('acme')"
    }
    assert store.delete_partition("tables", "acme") == 18
    assert store.part_counts()["tables"] == 180 - 18 * 3  # the parts went with their units


# -- deleting ---------------------------------------------------------------------------------------------------------
def test_deletes_by_tenant_by_id_and_by_source(store: Any) -> None:
    store.create_corpus(_spec("docs", Partitioning(by="tenant", key="tenant")))
    units = _units("docs", 30, _tenant)
    record = SourceRecord(uri="file:///a.txt", content_hash="1", modality="text", corpora=("docs",))
    store.write_source(record, units[:10])
    store.add_units(units[10:])
    assert store.counts()["docs"] == 30
    assert store.delete_units("docs", [units[11].id, units[12].id]) == 2
    assert store.delete_source("file:///a.txt")
    assert store.counts()["docs"] == 18
    left = {u.metadata.get("tenant") for u in units[13:]}
    gone = store.delete_partition("docs", "globex")
    assert gone == sum(1 for u in units[13:] if u.metadata.get("tenant") == "globex") + (
        1 if units[10].metadata.get("tenant") == "globex" else 0
    )
    assert "FOR VALUES IN ('globex')" not in store.partitions("docs").values() and "globex" in left
    assert not store.search("docs", units[0].embedding, k=5, filter={"tenant": "globex"})
    # the tenant comes back: its partition is made again
    store.add_units(_units("docs", 3, lambda i: {"tenant": "globex"}, seed=9))
    assert "FOR VALUES IN ('globex')" in store.partitions("docs").values()
    with pytest.raises(InvalidInputError, match="Name the partition of corpus 'docs' to drop by a tenant value"):
        store.delete_partition("docs", ["globex"])


def test_past_the_bound_new_tenants_land_in_the_default_partition(store: Any) -> None:
    store.create_corpus(_spec("docs", Partitioning(by="tenant", key="tenant", max_partitions=2)))
    store.add_units(_units("docs", 40, lambda i: {"tenant": f"t{i % 5}"}))
    assert len(store.partitions("docs")) == 3  # two tenants and the default partition
    for t in range(5):
        assert len(store.search("docs", [0.1] * DIM, k=20, filter={"tenant": f"t{t}"})) == 8


# -- sync and the index check -----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_an_attached_table_syncs_into_its_tenant_partitions(store: Any, database_url: str, minilm: Any) -> None:
    app_schema = f"{store.schema}_app"
    conn: psycopg.Connection[Any] = app_sql(database_url)
    try:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(app_schema)))
        table = sql.Identifier(app_schema, "tickets")
        conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, body text, tenant text)").format(table))
        rows = [
            (1, "The printer jams on every page.", "acme"),
            (2, "The VPN drops hourly.", "globex"),
            (3, "The kettle leaks.", "acme"),
        ]
        conn.cursor().executemany(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s)").format(table), rows)
        conn.execute(
            sql.SQL(
                "SELECT {}.attach_table(%s::regclass, corpus => 'tickets', content => 'body', "
                "metadata => ARRAY['tenant'])"
            ).format(sql.Identifier(store.schema)),
            [f"{app_schema}.tickets"],
        )
        store.partition_corpus("tickets", Partitioning(by="tenant", key="tenant"))

        def placed() -> dict[str, str]:
            statement = sql.SQL("SELECT metadata->>'tenant', tableoid::regclass::text FROM {}").format(
                sql.Identifier(store.schema, "corpus_tickets")
            )
            return {f"{t}:{i}": p for i, (t, p) in enumerate(sorted(conn.execute(statement).fetchall()))}

        with Worker(store, embedder=minilm, options=WorkerOptions()) as worker:
            assert worker.drain().written == 3
            where = placed()
            assert len(where) == 3 and len(set(where.values())) == 2
            assert all("$default" not in p for p in where.values())
            conn.execute(sql.SQL("INSERT INTO {} VALUES (4, 'The lift is stuck.', 'initech')").format(table))
            conn.execute(sql.SQL("UPDATE {} SET tenant = 'globex' WHERE id = 3").format(table))
            assert worker.drain().written == 2
        bounds = set(store.partitions("tickets").values())
        assert "FOR VALUES IN ('initech')" in bounds
        hits = store.search("tickets", minilm.embed_query("kettle"), k=5, filter={"tenant": "globex"})
        assert {h.content for h in hits} == {"The VPN drops hourly.", "The kettle leaks."}
        conn.execute(sql.SQL("DELETE FROM {} WHERE id = 2").format(table))  # the trigger removes its unit at once
        hits = store.search("tickets", minilm.embed_query("VPN"), k=5, filter={"tenant": "globex"})
        assert [h.content for h in hits] == ["The kettle leaks."]
    finally:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(app_schema)))
        conn.close()


def test_the_index_check_measures_a_partitioned_corpus(store: Any) -> None:
    store.create_corpus(_spec("docs", Partitioning(by="tenant", key="tenant")))
    store.add_units(_units("docs", 150, _tenant))
    check = check_index(store, "docs", queries=12)
    assert check.rows == 150 and check.queries == 12 and check.recall >= 0.9
    # each tenant's graph measured by searches filtered on that tenant, the worst one and widest beam kept
    assert sorted(p for p, _, _ in check.partitions) == sorted(TENANTS)
    assert all(recall >= 0.9 and ef >= store.settings.ef_search for _, ef, recall in check.partitions)
    assert check.ef_search >= max(ef for _, ef, _ in check.partitions)
    stored = store.corpus("docs").metadata["index_check"]
    assert stored["rows"] == 150 and len(stored["partitions"]) == 3
    plain = _spec("plain")
    store.create_corpus(plain)
    store.add_units(_units("plain", 150, _tenant))
    assert check_index(store, "plain", queries=12).partitions == ()  # one table, one graph


def test_row_estimates_sum_the_partitions(store: Any) -> None:
    store.create_corpus(_spec("docs", Partitioning(by="tenant", key="tenant")))
    store.add_units(_units("docs", 90, _tenant))
    units = store.tables.corpus(store.corpus("docs")).units
    with store.transaction() as conn:
        conn.execute(sa.text(f'ANALYZE "{store.schema}".corpus_docs'))
        row = conn.execute(_statistics(units)).one()
    assert row.reltuples == 90  # the parent's own pg_class row says -1: its leaves hold the rows
    with store.transaction() as conn:
        assert table_rows(conn, [units], ttl=0.0) == {"corpus_docs": 90}


def test_hostile_tenant_values_stay_values_and_concurrent_writers_share_a_partition(store: Any) -> None:
    store.create_corpus(_spec("docs", Partitioning(by="tenant", key="tenant")))
    rng = np.random.default_rng(3)
    long = "".join(chr(c) for c in rng.integers(0x4E00, 0x9FFF, 3000))  # past the bound, and too big for a B-tree
    hostile = ["'); DROP TABLE sources; --", 'a"b', "Ünïcødé 🚀", long, "$default", "%s %I"]
    store.add_units(_units("docs", 24, lambda i: {"tenant": hostile[i % len(hostile)]}))
    assert len(store.partitions("docs")) == len(hostile)  # the long one is in the default partition
    for tenant in hostile:
        hits = store.search("docs", [0.1] * DIM, k=10, filter={"tenant": tenant})
        assert len(hits) == 4 and {h.metadata["tenant"] for h in hits} == {tenant}
    # writers of a new tenant at the same moment: one makes its partition, every unit lands in it
    errors: list[BaseException] = []

    def write(seed: int) -> None:
        try:
            store.add_units(_units("docs", 5, lambda i: {"tenant": "newcomer"}, seed=100 + seed))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert list(store.partitions("docs").values()).count("FOR VALUES IN ('newcomer')") == 1
    assert store.counts()["docs"] == 24 + 20
    with store.transaction() as conn:
        assert conn.execute(sa.text(f'SELECT count(*) FROM "{store.schema}"."corpus_docs$default"')).scalar_one() == 4


def test_downgrading_drops_partitioned_corpora_and_upgrading_brings_the_functions_back(store: Any) -> None:
    store.create_corpus(_spec("docs", Partitioning(by="tenant", key="tenant")))
    store.create_corpus(_spec("plain"))
    store.add_units(_units("docs", 12, _tenant) + _units("plain", 12, _tenant))
    revision = importlib.import_module("universalrag.migrations.versions.0017_partitioned_corpora")
    store.downgrade(revision.down_revision)
    with store.transaction() as conn:
        names = conn.execute(sa.text(f'SELECT name FROM "{store.schema}".corpora')).scalars().all()
        assert "docs" not in names and "plain" in names  # the older schema cannot hold a partitioned table
        assert conn.execute(sa.text("SELECT to_regclass(:t)"), {"t": f'"{store.schema}".corpus_docs'}).scalar() is None
    store.migrate()
    store.create_corpus(_spec("docs", Partitioning(by="tenant", key="tenant")))
    counts = store.counts()
    assert counts["docs"] == 0 and counts["plain"] == 12 and store.corpus("docs").partition is not None
