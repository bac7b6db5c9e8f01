"""Vector columns (migration 0012): their vectors stay in the row, and embedders wider than pgvector's 2,000-dimension
HNSW limit for ``vector`` get an index all the same.

Real PostgreSQL + pgvector. A 384-dimension vector beside a passage and its ``tsvector`` used to be moved to the
TOAST table (the largest value of a row over 2 kB goes first), so exact scans fetched every vector through it.
Up to 4,000 dimensions (OpenAI's ``text-embedding-3-large`` gives 3,072) a corpus's HNSW index is built on its
vectors cast to ``halfvec`` and searches order by that expression; wider corpora have no HNSW index and are scanned
exactly. Before 0012, ``init`` for such an embedder failed on its first corpus. The embedding service of the
end-to-end test is an OpenAI-compatible server on 127.0.0.1 (the real client, over HTTP), whose vectors come from
a hash of the text, not from a model.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from support.openai_server import OpenAICompatServer
from support.stores import hnsw_index_defs

from universalrag.config import Settings
from universalrag.errors import InvalidInputError
from universalrag.eval.unified import UnifiedIndex
from universalrag.store import Store
from universalrag.store.vectors import HNSW_MAX_HALFVEC, HNSW_MAX_VECTOR, half_indexed, hnsw_indexed
from universalrag.types import Unit

LARGE = "openai:text-embedding-3-large"


def _store(settings: Settings, dimension: int) -> Store:
    store = Store(settings=settings)
    store.init(embedder=LARGE, dimension=dimension)
    return store


def _unit_vectors(n: int, dimension: int, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, dimension)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _statements(store: Store) -> list[tuple[str, object]]:
    seen: list[tuple[str, object]] = []

    @sa.event.listens_for(store.read_engine, "before_cursor_execute")
    def record(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        seen.append((statement, parameters))

    return seen


def test_the_limits_are_those_of_the_servers_pgvector(store: Store) -> None:
    def builds(dimension: int, half: bool) -> bool:  # an HNSW index on a temporary table of that width
        key, ops = (f"(v::halfvec({dimension}))", "halfvec_cosine_ops") if half else ("v", "vector_cosine_ops")
        with store.engine.connect() as conn, conn.begin():  # test-owned names and integers only
            conn.exec_driver_sql(f"CREATE TEMPORARY TABLE widths (v vector({dimension}))")
            try:
                with conn.begin_nested():
                    conn.exec_driver_sql(f"CREATE INDEX ON widths USING hnsw ({key} {ops})")
                return True
            except sa.exc.DBAPIError:
                return False
            finally:
                conn.exec_driver_sql("DROP TABLE widths")

    assert builds(HNSW_MAX_VECTOR, half=False) and not builds(HNSW_MAX_VECTOR + 1, half=False)
    assert builds(HNSW_MAX_HALFVEC, half=True) and not builds(HNSW_MAX_HALFVEC + 1, half=True)
    assert not half_indexed(HNSW_MAX_VECTOR) and half_indexed(HNSW_MAX_VECTOR + 1) and half_indexed(3072)
    assert hnsw_indexed(HNSW_MAX_HALFVEC) and not hnsw_indexed(HNSW_MAX_HALFVEC + 1)


def test_a_3072_dimension_store_searches_through_half_precision_indexes(settings: Settings) -> None:
    store = _store(settings, 3072)
    definitions = hnsw_index_defs(store)
    assert {"corpus_paragraph_hnsw", "corpus_table_hnsw", "corpus_table_parts_hnsw"} <= set(definitions)
    assert all("halfvec(3072)) halfvec_cosine_ops" in d for d in definitions.values()), definitions
    assert set(_storage(store).values()) == {"e"}  # 12 kB vectors do not fit in a row: pgvector's default kept
    vectors = _unit_vectors(1200, 3072)
    store.add_units(
        [
            Unit(id=str(uuid.uuid4()), corpus="paragraph", content=f"passage {i}", embedding=v)
            for i, v in enumerate(vectors)
        ]
    )
    store.add_units(
        [
            Unit(
                id=str(uuid.uuid4()),
                corpus="table",
                content=f"table {i}",
                embedding=vectors[i],
                parts=("row a", "row b"),
                part_embeddings=(vectors[i], vectors[i + 1]),
            )
            for i in range(0, 400, 2)
        ]
    )
    query = vectors[7] + 0.6 * _unit_vectors(1, 3072, seed=1)[0]
    statements = _statements(store)
    through_index = store.search("paragraph", query.tolist(), k=5, exact_scan=False)
    exact = store.search("paragraph", query.tolist(), k=5, exact_scan=True)
    assert [h.content for h in through_index] == [h.content for h in exact]
    assert through_index[0].content == "passage 7"
    expected = vectors @ query / np.linalg.norm(query)
    for hit in through_index:  # the reported score is the full-precision similarity, not the half-precision key
        assert hit.score == pytest.approx(float(expected[int(hit.content.split()[1])]), abs=1e-5)
    statement, parameters = next((s, p) for s, p in statements if "corpus_paragraph" in s and "HALFVEC" in s)
    with store.engine.connect() as conn:  # the index serves the statement's order (the planner's choice aside)
        conn.exec_driver_sql("SET enable_seqscan = off")
        plan = "\n".join(r[0] for r in conn.exec_driver_sql("EXPLAIN " + statement, parameters))
    assert "corpus_paragraph_hnsw" in plan, plan
    parts = store.search("table", query.tolist(), k=2, exact_scan=False)
    assert parts[0].content == "table 6" and parts[0].matched_parts[0][1] == "row b"  # vectors[7] is its row b
    store.close()


def test_a_corpus_wider_than_4000_dimensions_is_scanned_exactly(settings: Settings) -> None:
    store = _store(settings, 4096)
    assert hnsw_index_defs(store) == {}  # no HNSW index can hold it
    vectors = _unit_vectors(300, 4096)
    store.add_units(
        [
            Unit(id=str(uuid.uuid4()), corpus="paragraph", content=f"passage {i}", embedding=v)
            for i, v in enumerate(vectors)
        ]
    )
    query = vectors[11] + 0.5 * _unit_vectors(1, 4096, seed=2)[0]
    statements = _statements(store)
    hits = store.search(
        "paragraph", query.tolist(), k=3, exact_scan=False
    )  # exact_scan=False cannot ask for a missing index
    ranking = np.argsort(-(vectors @ query))[:3]
    assert [h.content for h in hits] == [f"passage {i}" for i in ranking]
    assert not any("set_config" in s for s, _ in statements)  # the exact statement: no index settings
    store.close()


def test_values_beyond_half_precision_are_refused_before_anything_is_written(settings: Settings) -> None:
    store = _store(settings, 3072)
    vector = _unit_vectors(1, 3072)[0].copy()
    vector[5] = 70000.0  # beyond the 16-bit floats of the index (65504)
    with pytest.raises(InvalidInputError, match=r"16-bit floats .* \(±65504\)"):
        store.add_units(
            [
                Unit(id=str(uuid.uuid4()), corpus="paragraph", content="ok", embedding=vector / 1e6),
                Unit(id=str(uuid.uuid4()), corpus="paragraph", content="too large", embedding=vector),
            ]
        )
    with pytest.raises(InvalidInputError, match="position 5"):
        store.add_units(
            [
                Unit(
                    id=str(uuid.uuid4()),
                    corpus="table",
                    content="t",
                    embedding=vector / 1e6,
                    parts=("a",),
                    part_embeddings=(vector,),
                )
            ]
        )
    with pytest.raises(InvalidInputError, match="16-bit"):
        store.search("paragraph", vector.tolist(), k=1)
    assert store.counts().get("paragraph", 0) == 0 and store.counts().get("table", 0) == 0
    store.close()


def test_a_downgrade_to_0011_puts_back_the_functions_of_before(settings: Settings) -> None:
    from universalrag.errors import StoreError
    from universalrag.types import CorpusSpec

    store = _store(settings, 384)
    store.downgrade("0011")
    with pytest.raises(StoreError, match="2000 dimensions"):
        store.create_corpus(CorpusSpec(name="large", modality="text", granularity="paragraph", dimension=3072))
    store.migrate()
    store.create_corpus(CorpusSpec(name="large", modality="text", granularity="paragraph", dimension=3072))
    assert "halfvec(3072)" in hnsw_index_defs(store)["corpus_large_hnsw"]
    assert "halfvec" not in hnsw_index_defs(store)["corpus_paragraph_hnsw"]  # 384 dimensions: as before
    with store.engine.connect() as conn:  # the helper carries its own search_path, as the corpus functions do
        config = conn.execute(
            sa.text(
                "SELECT array_to_string(p.proconfig, ',') FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                "WHERE n.nspname = :s AND p.proname = 'prepare_vector_column'"
            ),
            {"s": store.schema},
        ).scalar_one()
    assert config.startswith("search_path=") and config.endswith("pg_catalog, pg_temp"), config
    store.close()


def test_the_large_openai_embedder_ingests_a_folder_and_answers(settings: Settings, tmp_path: Path) -> None:
    from universalrag.pipeline import UniversalRAG

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "kettles.md").write_text("# Kettles\n\nA kettle boils water for tea in about three minutes.\n")
    (folder / "bikes.md").write_text("# Bikes\n\nCheck the tyre pressure of a bike before every long ride.\n")
    with OpenAICompatServer(embedding_dim=3072) as server:
        wide = settings.with_(
            embedder="openai:text-embedding-3-large", embed_base_url=server.base_url, embed_api_key="sk-test"
        )
        with UniversalRAG(settings=wide, generator=None, visual_encoder=None, log_decisions=False) as rag:
            rag.init()
            report = rag.ingest([folder])
            assert not report.failed, report
            assert rag.store.corpus("paragraph").dimension == 3072
            decision, hits = rag.search("how long does a kettle take to boil?", k=3)
            unified = UnifiedIndex(rag.store, rag.embedder)  # the paper's shared-index baseline, same width
            assert unified.build().rows >= 2
            shared = unified.search(rag.embedder.embed_query("kettle"), k=2)
        sent = [r["body"] for r in server.requests if r["path"] == "/v1/embeddings"]
    assert hits and {h.corpus for h in hits} <= set(decision.routes) <= set(rag.store.corpora())
    assert sent and all(body["model"] == "text-embedding-3-large" for body in sent)
    assert "halfvec(3072)" in hnsw_index_defs(rag.store)["corpus_paragraph_hnsw"]
    assert "halfvec(3072)" in hnsw_index_defs(rag.store)["eval_unified_hnsw"] and len(shared) == 2


def test_a_wide_visual_channel_is_searched_through_its_half_precision_index(settings: Settings) -> None:
    store = _store(settings, 384)
    assert store.add_visual_channel("image", dimension=2304, encoder="wide-vision")  # wider than 2,000
    assert "halfvec(2304)" in hnsw_index_defs(store)["corpus_image_visual_hnsw"]
    text, visual = _unit_vectors(600, 384), _unit_vectors(600, 2304, seed=3)
    store.add_units(
        [
            Unit(
                id=str(uuid.uuid4()),
                corpus="image",
                content=f"photo {i}",
                embedding=text[i],
                visual_embedding=visual[i],
            )
            for i in range(600)
        ]
    )
    query = visual[123] + 0.5 * _unit_vectors(1, 2304, seed=4)[0]
    statements = _statements(store)
    hits = store.search(
        "image",
        _unit_vectors(1, 384, seed=5)[0].tolist(),
        k=3,
        visual_vector=query.tolist(),
        visual_weight=1.0,
        exact_scan=False,
    )
    assert hits[0].content == "photo 123"
    assert hits[0].channel_scores["visual"] == pytest.approx(
        float(visual[123] @ query / np.linalg.norm(query)), abs=1e-5
    )
    assert any("HALFVEC(2304)" in s for s, _ in statements)
    store.close()


def _storage(store: Store) -> dict[tuple[str, str], str]:
    """``{(table, column): attstorage}`` of every vector column of the store's corpus tables."""
    with store.engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT c.relname, a.attname, a.attstorage FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_type t ON t.oid = a.atttypid "
                "WHERE n.nspname = :s AND t.typname = 'vector' AND a.attnum > 0 AND c.relname LIKE 'corpus%'"
            ),
            {"s": store.schema},
        ).all()
    return {(table, column): storage for table, column, storage in rows}


def _external_vectors(store: Store, table: str) -> int:
    """How many of ``table``'s vectors are stored outside their rows (``pg_column_toast_chunk_id``, PostgreSQL 17+)."""
    with store.engine.connect() as conn:
        return int(
            conn.execute(
                sa.text(
                    f'SELECT count(*) FROM "{store.schema}"."{table}" '  # test-owned names, not user input
                    "WHERE pg_column_toast_chunk_id(embedding) IS NOT NULL"
                )
            ).scalar_one()
        )


def _passages(n: int, seed: int) -> list[Unit]:
    """Passages of about 900 characters of varied words (their text and tsvector pass 2 kB with the vector)."""
    rng = np.random.default_rng(seed)
    words = ("glacier", "moon", "coffee", "library", "roast", "orbit", "shelf", "ice")
    vocabulary = [f"{w}{i}" for i, w in enumerate(words * 40)]
    return [
        Unit(id=str(uuid.uuid4()), corpus="paragraph", content=" ".join(rng.choice(vocabulary, 110)), embedding=v)
        for v in _unit_vectors(n, 384, seed=seed)
    ]


def test_vectors_stay_in_their_rows_and_existing_columns_get_the_setting(settings: Settings) -> None:
    store = _store(settings, 384)
    store.add_visual_channel("image", dimension=8, encoder="tiny")
    storage = _storage(store)
    assert {("corpus_paragraph", "embedding"), ("corpus_table_parts", "embedding"), ("corpus_image", "visual")} <= set(
        storage
    )
    assert set(storage.values()) == {"m"}, storage  # MAIN: the text leaves the row first
    store.add_units(_passages(40, seed=1))
    assert _external_vectors(store, "corpus_paragraph") == 0
    store.downgrade("0011")  # pgvector's default: the largest value, the vector, leaves first
    assert set(_storage(store).values()) == {"e"}
    with store.engine.begin() as conn:  # rows written under 0011 (the store writes only to a current schema)
        for unit in _passages(40, seed=2):
            conn.execute(
                sa.text(
                    f'INSERT INTO "{store.schema}".corpus_paragraph (id, content, embedding) '
                    "VALUES (CAST(:id AS uuid), :content, CAST(:v AS vector))"
                ),
                {"id": unit.id, "content": unit.content, "v": str(list(map(float, unit.embedding)))},
            )
    assert _external_vectors(store, "corpus_paragraph") == 40  # the rows written under 0011
    store.migrate()
    assert set(_storage(store).values()) == {"m"}
    store.add_units(_passages(40, seed=3))
    assert _external_vectors(store, "corpus_paragraph") == 40  # new rows inline; old ones until VACUUM FULL
    with store.engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
            f'VACUUM FULL "{store.schema}".corpus_paragraph'
        )
    assert _external_vectors(store, "corpus_paragraph") == 0  # the rewrite the migration's docstring gives
    query = _passages(1, seed=2)[0].embedding
    assert store.search("paragraph", list(query), k=1, exact_scan=True)[0].score == pytest.approx(1.0, abs=1e-6)
    store.close()
