"""How corpora index their vectors (migration 0018): a halfvec index by default from 384 dimensions, a binary-quantised
index whose candidates are ranked again at full precision, chosen per corpus or in the settings, grown into
automatically; existing corpora untouched by the upgrade. Real PostgreSQL with pgvector; MiniLM for the attached
table."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from psycopg import sql
from support.stores import hnsw_index_defs
from support.sync import app_sql, attach_table

from universalrag.config import Settings
from universalrag.errors import ConfigError, InvalidInputError
from universalrag.store import Store
from universalrag.store.index_build import BuildProgress, build_settings
from universalrag.store.vectors import default_vector_index, rerank_window
from universalrag.sync import Worker, WorkerOptions
from universalrag.types import CorpusSpec, Granularity, Modality, SourceRecord, Unit

DIM = 384


def _spec(name: str, kind: str | None = None, *, dimension: int = DIM, multi: bool = False) -> CorpusSpec:
    return CorpusSpec(
        name=name,
        modality=Modality.TABLE if multi else Modality.TEXT,
        granularity=Granularity.TABLE if multi else Granularity.PARAGRAPH,
        dimension=dimension,
        multi_vector=multi,
        vector_index=kind,
    )


def _registry(store: Store) -> dict[str, tuple[str | None, bool]]:
    c = store.tables.corpora
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(c.c.name, c.c.vector_index, c.c.vector_index_auto)).all()
    return {r.name: (r.vector_index, r.vector_index_auto) for r in rows}


def _filenodes(store: Store, *relations: str) -> dict[str, int]:
    with store.engine.connect() as conn:
        return {
            r: conn.execute(
                sa.text(
                    "SELECT pg_relation_filenode(to_regclass(format('%I.%I', CAST(:s AS text), CAST(:r AS text))))"
                ),
                {"s": store.schema, "r": r},
            ).scalar_one()
            for r in relations
        }


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v, axis=-1, keepdims=True)).astype(np.float32)


def _vectors(n: int, seed: int = 7) -> np.ndarray:
    """Clustered unit vectors, a few hundred small groups in a dozen topics (neighbours are not all tied)."""
    rng = np.random.default_rng(seed)
    topics, groups = rng.normal(size=(12, DIM)), rng.normal(size=(300, DIM))
    group = rng.integers(0, 300, size=n)
    return _unit(topics[group % 12] + 0.8 * groups[group] + 0.5 * rng.normal(size=(n, DIM)))


def _load(store: Store, corpus: str, vectors: np.ndarray, *, per_source: int = 500) -> list[str]:
    ids = [f"00000000-0000-4000-8000-{i:012d}" for i in range(len(vectors))]
    for start in range(0, len(vectors), per_source):
        store.write_source(
            SourceRecord(uri=f"test://{corpus}/{start}", content_hash="h", modality=Modality.TEXT, corpora=(corpus,)),
            [
                Unit(id=ids[i], corpus=corpus, content=f"unit {i}", embedding=vectors[i], metadata={"group": i % 3})
                for i in range(start, min(start + per_source, len(vectors)))
            ],
        )
    return ids


def test_the_default_and_the_overrides() -> None:
    assert default_vector_index(64) == "vector" and default_vector_index(384) == "halfvec"
    assert default_vector_index(3072) == "halfvec" and default_vector_index(8192) == "none"
    assert rerank_window(5) == 200 and rerank_window(40) == 600 and rerank_window(90) == 1000
    assert rerank_window(5000) == 5000
    # a larger table, a wider window: the cube root of its size past 100,000 vectors, in steps of 100, at most 1,000
    assert rerank_window(5, 100_000) == rerank_window(5, 0) == 200
    assert rerank_window(5, 833_334) == 500 and rerank_window(5, 5_000_000) == 800
    assert rerank_window(5, 50_000_000) == 1000 and rerank_window(40, 5_000_000) == 800
    assert rerank_window(5000, 5_000_000) == 5000
    assert Settings.from_env({"UNIVERSALRAG_VECTOR_INDEX": "Binary"}).vector_index == "binary"
    assert Settings.from_env({"UNIVERSALRAG_BINARY_MIN_ROWS": "5000"}).binary_min_rows == 5000
    with pytest.raises(ConfigError, match="UNIVERSALRAG_VECTOR_INDEX"):
        Settings.from_env({"UNIVERSALRAG_VECTOR_INDEX": "float16"})
    with pytest.raises(InvalidInputError, match="vector_index must be one of"):
        _spec("x", "half")
    big = build_settings(memory=64 << 30, cores=16)
    assert big == {"maintenance_work_mem": f"{4 << 20}kB", "max_parallel_maintenance_workers": "7"}
    small = build_settings(memory=1 << 30, cores=2)
    assert small == {"maintenance_work_mem": f"{256 << 10}kB", "max_parallel_maintenance_workers": "0"}


def test_an_upgrade_keeps_existing_corpora_and_new_ones_get_the_default(settings: Settings) -> None:
    store = Store(settings=settings)
    store.migrate("0017")
    store.create_corpus(_spec("old"))  # made by the revision before: a full-precision index
    store.create_corpus(_spec("wide", dimension=3072))
    before = hnsw_index_defs(store)
    nodes = _filenodes(store, "corpus_old", "corpus_old_hnsw", "corpus_wide_hnsw")
    store.migrate()
    assert hnsw_index_defs(store) == before and _filenodes(store, *nodes) == nodes  # nothing rebuilt or rewritten
    assert _registry(store) == {"old": ("vector", False), "wide": ("halfvec", False)}
    assert store.corpus("old").vector_index == "vector"
    with store.engine.connect() as conn:  # the new functions resolve pgvector's types in its own schema only
        configs = (
            conn.execute(
                sa.text(
                    "SELECT array_to_string(p.proconfig, ',') FROM pg_proc p "
                    "JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = :s "
                    "AND p.proname IN ('set_vector_index', 'build_vector_index', 'prepare_vector_column')"
                ),
                {"s": store.schema},
            )
            .scalars()
            .all()
        )
    assert len(configs) == 3 and all(c.startswith("search_path=") and c.endswith("pg_temp") for c in configs)
    store.create_corpus(_spec("fresh"))
    store.create_corpus(_spec("narrow", dimension=64))
    store.create_corpus(_spec("rows", "binary", multi=True))
    defs = hnsw_index_defs(store)
    assert "(embedding)::halfvec(384)) halfvec_cosine_ops" in defs["corpus_fresh_hnsw"]
    assert "(embedding vector_cosine_ops)" in defs["corpus_narrow_hnsw"]
    for index in ("corpus_rows_hnsw", "corpus_rows_parts_hnsw"):
        assert "(binary_quantize(embedding))::bit(384)) bit_hamming_ops" in defs[index]
        assert "ef_construction='128'" in defs[index]
    with store.engine.begin() as conn:  # the knowledge graph's entity vectors are indexed as before
        conn.execute(sa.select(getattr(sa.func, store.schema).graph_set_dimension(DIM)))
    assert "vector_cosine_ops" in hnsw_index_defs(store)["graph_entities_hnsw"]
    registry = _registry(store)
    assert registry["fresh"] == ("halfvec", True) and registry["narrow"] == ("vector", True)
    assert registry["rows"] == ("binary", False)  # chosen: never changed automatically

    store.downgrade("0017")  # what the revision before would have built, built again; nothing else
    defs = hnsw_index_defs(store)
    assert "halfvec" not in defs["corpus_fresh_hnsw"] and "vector_cosine_ops" in defs["corpus_fresh_hnsw"]
    assert "vector_cosine_ops" in defs["corpus_rows_parts_hnsw"]
    assert defs["corpus_old_hnsw"] == before["corpus_old_hnsw"]
    with store.engine.connect() as conn:
        columns = conn.execute(
            sa.text(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = :s AND table_name = 'corpora'"
            ),
            {"s": store.schema},
        ).scalars()
        assert not {"vector_index", "vector_index_auto"} & set(columns)
    store.migrate()
    assert _registry(store)["fresh"] == ("vector", False)
    store.close()


def test_binary_and_halfvec_searches_rank_like_an_exact_scan(store: Store) -> None:
    vectors = _vectors(3000)
    for name, kind in (("full", "vector"), ("half", "halfvec"), ("bits", "binary")):
        store.create_corpus(_spec(name, kind))
        ids = _load(store, name, vectors)
    rng = np.random.default_rng(11)
    queries = [_unit(vectors[i] + 0.4 * _unit(rng.normal(size=DIM))) for i in rng.integers(0, 3000, size=20)]
    recalls: dict[str, float] = {}
    for name in ("full", "half", "bits"):
        recall = []
        for q in queries:
            exact = store.search(name, q, k=5, exact_scan=True)
            found = store.search(name, q, k=5, exact_scan=False)
            recall.append(len({h.id for h in exact} & {h.id for h in found}) / 5)
            scores = [h.score for h in found]
            assert scores == sorted(scores, reverse=True)
            for h in found:  # the reported score is the full-precision similarity of the stored vector
                assert h.score == pytest.approx(float(vectors[ids.index(h.id)] @ q), abs=1e-5)
            flt = store.search(name, q, k=5, exact_scan=False, filter={"group": 1})
            assert len(flt) == 5 and all(h.metadata["group"] == 1 for h in flt)
            exact_flt = store.search(name, q, k=5, exact_scan=True, filter={"group": 1})
            recall.append(len({h.id for h in exact_flt} & {h.id for h in flt}) / 5)
        recalls[name] = float(np.mean(recall))
    assert recalls["full"] >= 0.95 and recalls["half"] >= recalls["full"] - 0.02, recalls
    assert recalls["bits"] >= 0.9, recalls


def test_a_binary_search_goes_through_its_index_and_sees_deletes(store: Store) -> None:
    store.create_corpus(_spec("bits", "binary"))
    vectors = _vectors(1200, seed=3)
    ids = _load(store, "bits", vectors, per_source=400)
    query = vectors[5]

    def scans() -> int:
        with store.engine.connect() as conn:
            return int(
                conn.execute(
                    sa.text("SELECT idx_scan FROM pg_stat_user_indexes WHERE schemaname = :s AND indexrelname = :i"),
                    {"s": store.schema, "i": "corpus_bits_hnsw"},
                ).scalar_one()
            )

    before = scans()
    assert store.search("bits", query, k=3, exact_scan=False)[0].id == ids[5]
    deadline = time.monotonic() + 5
    while scans() == before and time.monotonic() < deadline:  # statistics reach other sessions within a second
        time.sleep(0.2)
    assert scans() > before
    # the window's beam reaches the index (pgvector's default of 40 would end the window at 40 rows)
    wide = store.search("bits", query, k=60, exact_scan=False)
    exact = store.search("bits", query, k=60, exact_scan=True)
    assert len(wide) == 60 and len({h.id for h in wide} & {h.id for h in exact}) >= 54
    assert store.delete_source("test://bits/0")  # units 0-399
    hits = store.search("bits", query, k=3, exact_scan=False)
    assert hits and all(ids.index(h.id) >= 400 for h in hits)


def test_a_binary_multi_vector_corpus_finds_the_unit_of_the_nearest_part(store: Store) -> None:
    store.create_corpus(_spec("rows", "binary", multi=True))
    parts = _vectors(900, seed=5)
    units = [
        Unit(
            id=f"00000000-0000-4000-8000-{u:012d}",
            corpus="rows",
            content=f"table {u}",
            embedding=parts[u * 9],
            parts=[f"row {u}.{j}" for j in range(9)],
            part_embeddings=parts[u * 9 : u * 9 + 9].tolist(),
        )
        for u in range(100)
    ]
    store.write_source(
        SourceRecord(uri="test://rows", content_hash="h", modality=Modality.TABLE, corpora=("rows",)), units
    )
    for target in (17, 401, 888):
        hit = store.search("rows", parts[target], k=3, exact_scan=False)[0]
        assert hit.id == units[target // 9].id
        assert hit.matched_parts[0][0] == target % 9 and hit.matched_parts[0][2] == pytest.approx(1.0, abs=1e-5)


def test_an_attached_table_syncs_into_a_binary_corpus(database_url: str, store: Store, minilm: Any) -> None:
    app_schema = f"{store.schema}_shop"
    conn = app_sql(database_url)
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
                "('CHN-9', 'Nine-speed chain, 116 links'), ('LMP-2', 'Front lamp, 400 lumen, USB charged')"
            ).format(sql.Identifier(app_schema))
        )
        attach_table(conn, store.schema, f"{app_schema}.parts", corpus="parts", content="label")
        assert store.corpus("parts").vector_index == "halfvec"  # attached from SQL: the default
        assert store.set_vector_index("parts", "binary")
        with Worker(store, embedder=minilm) as worker:
            assert worker.drain().written == 3
            hits = store.search("parts", minilm.embed_query("brake pads"), k=1, exact_scan=False)
            assert hits[0].content.startswith("Rear brake pads")
            conn.execute(
                sql.SQL("UPDATE {}.parts SET label = 'Bicycle bell, brass' WHERE sku = 'BRK-118'").format(
                    sql.Identifier(app_schema)
                )
            )
            worker.drain()
        hits = store.search("parts", minilm.embed_query("a bell for my bicycle"), k=1, exact_scan=False)
        assert hits[0].content == "Bicycle bell, brass"
    finally:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(app_schema)))
        conn.close()


def test_a_backlog_past_the_threshold_is_written_into_a_binary_index(
    database_url: str, settings: Settings, minilm: Any
) -> None:
    """The sync worker sizes a corpus's index for what is queued for it before its first write: 40 attached rows
    past a threshold of 30 go into the binary index they end with (the choice stays ``auto``); 10 rows keep
    ``halfvec``. A corpus that grows past the threshold later gets its binary index when the queue runs dry."""
    store = Store(settings=settings.with_(binary_min_rows=30))
    store.init(embedder=minilm.name, dimension=minilm.dimension)
    app_schema = f"{store.schema}_shop"
    conn = app_sql(database_url)
    app = sql.Identifier(app_schema)

    def attach(table: str, rows: range) -> None:
        conn.execute(
            sql.SQL("CREATE TABLE {}.{} (sku text PRIMARY KEY, label text NOT NULL)").format(app, sql.Identifier(table))
        )
        conn.execute(
            sql.SQL(
                "INSERT INTO {}.{} SELECT 'S' || i, 'Spare part number ' || i FROM generate_series({}, {}) i"
            ).format(app, sql.Identifier(table), sql.Literal(rows.start), sql.Literal(rows.stop - 1))
        )
        attach_table(conn, store.schema, f"{app_schema}.{table}", corpus=table, content="label")

    try:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(app))
        attach("many", range(40))
        attach("few", range(10))
        with Worker(store, embedder=minilm, options=WorkerOptions(batch_size=8)) as worker:
            assert worker.run_batch().written == 8  # the first batch: rows of the table attached first
            assert _registry(store)["many"] == ("binary", True)
            assert "bit_hamming_ops" in hnsw_index_defs(store)["corpus_many_hnsw"]
            worker.drain()
            assert _registry(store)["few"] == ("halfvec", True), "10 rows stay below the threshold"
            conn.execute(
                sql.SQL(
                    "INSERT INTO {}.few SELECT 'T' || i, 'Brake cable number ' || i FROM generate_series(1, 25) i"
                ).format(app)
            )
            worker.drain()  # the queue ran dry with 35 rows: grown as ingest grows a corpus
        assert _registry(store)["few"] == ("binary", True)
        hits = store.search("many", minilm.embed_query("spare part number 17"), k=1, exact_scan=False)
        assert hits[0].content == "Spare part number 17"
    finally:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(app))
        conn.close()
        store.close()


def test_settings_choose_for_new_corpora_and_a_spec_overrides_them(settings: Settings) -> None:
    store = Store(settings=settings.with_(vector_index="vector"))
    store.init(embedder="test", dimension=DIM)
    store.create_corpus(_spec("plain"))
    store.create_corpus(_spec("chosen", "binary"))
    defs = hnsw_index_defs(store)
    assert "vector_cosine_ops" in defs["corpus_paragraph_hnsw"] and "vector_cosine_ops" in defs["corpus_plain_hnsw"]
    assert "bit_hamming_ops" in defs["corpus_chosen_hnsw"]
    assert store.corpus("plain").vector_index == "vector" and store.corpus("chosen").vector_index == "binary"
    with pytest.raises(InvalidInputError, match="Unknown vector index"):
        store.set_vector_index("plain", "bits")
    assert not store.set_vector_index("plain", "vector")  # already that kind: nothing rebuilt
    store.close()


@pytest.mark.slow
def test_a_corpus_left_to_auto_grows_a_binary_index_and_reports_the_build(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("universalrag.store.index_build.PROGRESS_EVERY_S", 0.02)  # builds of 2,500 rows are quick
    store = Store(settings=settings.with_(binary_min_rows=2000))
    store.init(embedder="test", dimension=DIM)
    store.create_corpus(_spec("grows"))
    store.create_corpus(_spec("kept", "halfvec"))
    vectors = _vectors(2500, seed=9)
    ids = _load(store, "grows", vectors)
    _load(store, "kept", vectors)
    readings: list[BuildProgress] = []
    assert store.grow_vector_indexes(on_progress=readings.append) == ["grows"]
    assert _registry(store)["grows"] == ("binary", True) and _registry(store)["kept"] == ("halfvec", False)
    assert "bit_hamming_ops" in hnsw_index_defs(store)["corpus_grows_hnsw"]
    assert store.search("grows", vectors[42], k=1, exact_scan=False)[0].id == ids[42]
    assert store.grow_vector_indexes() == []  # binary already
    # every reading names the table indexed and counts towards its total
    store.set_vector_index("grows", "vector", on_progress=readings.append)
    assert readings, "no progress was read during the builds"
    assert all(r.table == "corpus_grows" and 0 <= r.done <= max(r.total, r.done) for r in readings), readings
    assert any(r.total > 0 and "build" in r.phase for r in readings), readings
    store.close()


def test_the_partitions_of_a_partitioned_corpus_get_its_index(store: Store) -> None:
    from dataclasses import replace

    from universalrag.types import Partitioning

    store.create_corpus(replace(_spec("shards", "binary"), partition=Partitioning(by="source", partitions=2)))
    vectors = _vectors(600, seed=13)
    ids = _load(store, "shards", vectors, per_source=100)
    defs = hnsw_index_defs(store)
    partition_indexes = [d for name, d in defs.items() if name.startswith("corpus_shards") and "bit_hamming_ops" in d]
    assert len(partition_indexes) >= 3, defs  # the partitioned table's index and one per partition
    assert store.search("shards", vectors[321], k=1, exact_scan=False)[0].id == ids[321]
