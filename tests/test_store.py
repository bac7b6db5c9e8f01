"""The store against a real PostgreSQL + pgvector: migrations, registry, SQL functions, writes, search."""

from __future__ import annotations

import time
import uuid

import numpy as np
import pytest
import sqlalchemy as sa
from conftest import REPO
from support.stores import DIM

from universalrag.errors import (
    CorpusExistsError,
    CorpusNotFoundError,
    DimensionMismatchError,
    FilterError,
    StoreError,
)
from universalrag.store import Store, migrate
from universalrag.types import BUILTIN_CORPORA, CorpusSpec, Modality, PartBatch, SourceRecord, Unit


def _vec(rng: np.random.Generator, dim: int = DIM) -> list[float]:
    v = rng.normal(size=dim)
    return (v / np.linalg.norm(v)).tolist()


def _source(uri: str, h: str = "h1", corpora: tuple[str, ...] = ("paragraph",)) -> SourceRecord:
    return SourceRecord(uri=uri, content_hash=h, modality=Modality.TEXT, corpora=corpora)


def _tables(conn: sa.Connection, schema: str) -> set[str]:
    return set(sa.inspect(conn).get_table_names(schema=schema))


def test_migrations_upgrade_and_downgrade(settings) -> None:  # type: ignore[no-untyped-def]
    store = Store(settings=settings)
    assert store.revision() is None
    created = store.init(embedder="e", dimension=DIM)
    assert sorted(created) == sorted(name for name, *_ in BUILTIN_CORPORA)
    newest = max(p.name[:4] for p in (REPO / "migrations" / "versions").glob("0*.py"))
    assert store.revision() == migrate.head_revision() == newest  # one line of revisions, the newest on top
    assert migrate.SHIPPED_HEAD == newest and migrate.is_current(store.revision())
    with store.engine.connect() as conn:
        tables = _tables(conn, settings.schema)
    assert {
        "corpora",
        "sources",
        "alembic_version",
        "corpus_paragraph",
        "corpus_document",
        "corpus_document_parts",
        "corpus_table_parts",
        "corpus_clip",
        "corpus_video",
    } <= tables
    assert store.init(embedder="e", dimension=DIM) == []  # idempotent

    store.add_visual_channel("image", dimension=4, encoder="tiny-clip")
    store.downgrade("0001")  # one step: the visual channel goes, the corpora stay
    assert store.revision() == "0001"
    with store.engine.connect() as conn:
        columns = {c["name"] for c in sa.inspect(conn).get_columns("corpus_image", schema=settings.schema)}
    assert "visual" not in columns and "embedding" in columns
    store.migrate()
    assert store.revision() == newest
    store.downgrade("base")
    assert store.revision() is None
    with store.engine.connect() as conn:
        assert _tables(conn, settings.schema) <= {"alembic_version"}
        functions = (
            conn.execute(
                sa.text(
                    "SELECT proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE nspname = :s"
                ),
                {"s": settings.schema},
            )
            .scalars()
            .all()
        )
    assert functions == []
    assert store.init(embedder="e", dimension=DIM)  # and up again
    store.close()


def test_corpus_tables_have_the_indexes(small: Store) -> None:
    with small.engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = :s AND tablename = 'corpus_paragraph'"
            ),
            {"s": small.schema},
        ).all()
    defs = " ".join(r.indexdef for r in rows)
    assert "USING hnsw (embedding vector_cosine_ops)" in defs
    assert "USING gin (metadata)" in defs
    assert "USING gin (tsv)" in defs


def test_sql_functions_manage_corpora_without_python(small: Store) -> None:
    with small.engine.begin() as conn:
        conn.execute(sa.text(f"SELECT {small.schema}.create_corpus('slides', 'image', 'image', 8, 'Lecture slides')"))
    assert small.corpus("slides").description == "Lecture slides"  # discovered from the registry
    with pytest.raises(CorpusExistsError):
        small.create_corpus(CorpusSpec(name="slides", modality=Modality.IMAGE, granularity="image", dimension=8))
    with small.engine.begin() as conn:
        assert conn.execute(sa.text(f"SELECT {small.schema}.drop_corpus('slides')")).scalar_one() is True
    with pytest.raises(StoreError):
        small.search("slides", [0.1] * 8)  # the table is gone, whatever the cache says
    with pytest.raises(CorpusNotFoundError):
        small.corpus("slides")  # ...and the failed query made the store re-read the registry


def test_sql_function_rejects_bad_names(small: Store) -> None:
    for bad in ["Robert'); DROP TABLE x; --", "none", "1abc", "a" * 41]:
        with pytest.raises(StoreError, match="invalid corpus name"), small.transaction() as conn:
            conn.execute(sa.text(f"SELECT {small.schema}.create_corpus(:n, 'text', 'other', 8)"), {"n": bad})
    with pytest.raises(ValueError):
        CorpusSpec(name="Bad-Name", modality=Modality.TEXT, granularity="other")


def test_drop_refuses_parent_with_children(small: Store) -> None:
    with pytest.raises(StoreError, match="parent"):
        small.drop_corpus("document")
    assert "document" in small.corpora(refresh=True)


def test_dimension_mismatch_writes_nothing(small: Store) -> None:
    rng = np.random.default_rng(0)
    units = [
        Unit(id=str(uuid.uuid4()), corpus="paragraph", content="ok", embedding=_vec(rng)),
        Unit(id=str(uuid.uuid4()), corpus="paragraph", content="bad", embedding=_vec(rng, DIM + 1)),
    ]
    with pytest.raises(DimensionMismatchError) as info:
        small.write_source(_source("mem://a"), units)
    assert info.value.expected == DIM and info.value.got == DIM + 1
    assert small.counts()["paragraph"] == 0
    assert small.sources() == []
    with pytest.raises(DimensionMismatchError):
        small.search("paragraph", [0.1] * (DIM + 2))


def test_failed_write_rolls_back_everything(small: Store) -> None:
    rng = np.random.default_rng(1)
    same = str(uuid.uuid4())  # duplicate primary key: the second COPY row fails inside the transaction
    units = [
        Unit(id=same, corpus="paragraph", content="one", embedding=_vec(rng)),
        Unit(id=same, corpus="paragraph", content="two", embedding=_vec(rng)),
    ]
    with pytest.raises(StoreError):
        small.write_source(_source("mem://dup"), units)
    assert small.counts()["paragraph"] == 0
    assert small.source_state("mem://dup") is None


def test_write_is_idempotent_and_replaces_changed_sources(small: Store) -> None:
    rng = np.random.default_rng(2)

    def units(n: int) -> list[Unit]:
        doc = str(uuid.uuid4())
        return [
            Unit(
                id=doc,
                corpus="document",
                content="doc",
                embedding=_vec(rng),
                parts=["a", "b"],
                part_embeddings=[_vec(rng), _vec(rng)],
            )
        ] + [
            Unit(id=str(uuid.uuid4()), corpus="paragraph", content=f"p{i}", embedding=_vec(rng), parent_id=doc)
            for i in range(n)
        ]

    corpora = ("document", "paragraph")
    first = small.write_source(_source("mem://doc", "h1", corpora), units(3))
    assert first.status == "added" and first.rows == {"document": 1, "paragraph": 3}
    again = small.write_source(_source("mem://doc", "h1", corpora), units(3))
    assert again.status == "unchanged"
    assert small.counts()["paragraph"] == 3
    changed = small.write_source(_source("mem://doc", "h2", corpora), units(5))
    assert changed.status == "replaced"
    counts = small.counts()
    assert (counts["document"], counts["paragraph"]) == (1, 5)
    with small.engine.connect() as conn:
        parts = conn.execute(sa.text(f"SELECT count(*) FROM {small.schema}.corpus_document_parts")).scalar_one()
    assert parts == 2
    assert small.delete_source("mem://doc") is True
    counts = small.counts()
    assert (counts["document"], counts["paragraph"]) == (0, 0)
    assert small.delete_source("mem://doc") is False


def test_search_orders_by_cosine_and_returns_hit_fields(small: Store) -> None:
    rng = np.random.default_rng(3)
    target = _vec(rng)
    noisy = (np.asarray(target) + rng.normal(scale=0.05, size=DIM)).tolist()
    others = [_vec(rng) for _ in range(50)]
    units = [
        Unit(
            id=str(uuid.uuid4()),
            corpus="clip",
            content="the match",
            embedding=noisy,
            uri="file:///v.mp4",
            start_s=12.5,
            end_s=30.0,
            metadata={"lang": "en"},
        )
    ]
    units += [
        Unit(id=str(uuid.uuid4()), corpus="clip", content=f"other {i}", embedding=v) for i, v in enumerate(others)
    ]
    small.write_source(_source("mem://v", corpora=("clip",)), units)
    hits = small.search("clip", target, k=5)
    assert len(hits) == 5
    assert hits[0].content == "the match" and hits[0].score > 0.95
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    top = hits[0]
    assert (top.start_s, top.end_s, top.uri, top.metadata) == (12.5, 30.0, "file:///v.mp4", {"lang": "en"})
    assert top.corpus == "clip" and top.source_id and top.modality == Modality.VIDEO
    d = top.to_dict()
    assert d["start_s"] == 12.5 and "end_s" in d and d["corpus"] == "clip"
    expected = max(float(np.dot(target, v)) for v in others)
    assert hits[1].score == pytest.approx(expected, abs=1e-5)


def test_multi_vector_search_returns_whole_unit_with_matched_parts(small: Store) -> None:
    rng = np.random.default_rng(4)
    query = _vec(rng)
    docs = []
    for i in range(20):
        chunks = [_vec(rng) for _ in range(4)]
        if i == 7:
            chunks[2] = (np.asarray(query) * 0.99 + 0.01).tolist()
        docs.append(
            Unit(
                id=str(uuid.uuid4()),
                corpus="document",
                content=f"document {i}",
                embedding=_vec(rng),
                parts=[f"d{i} chunk {j}" for j in range(4)],
                part_embeddings=chunks,
            )
        )
    small.write_source(_source("mem://docs", corpora=("document",)), docs)
    hits = small.search("document", query, k=3)
    assert len(hits) == 3 and len({h.id for h in hits}) == 3
    assert hits[0].content == "document 7"
    assert hits[0].matched_parts[0][:2] == (2, "d7 chunk 2")


def test_filters_with_iterative_scan_return_k_rows_for_a_selective_filter(small: Store) -> None:
    rng = np.random.default_rng(5)
    n, rare_every = 3000, 100  # 1% of rows carry the rare tag
    units = [
        Unit(
            id=str(uuid.uuid4()),
            corpus="paragraph",
            content=f"row {i}",
            embedding=_vec(rng),
            metadata={"tag": "rare" if i % rare_every == 0 else "common", "n": i, "tags": ["x", f"t{i % 3}"]},
        )
        for i in range(n)
    ]
    small.write_source(_source("mem://many"), units)
    with small.engine.begin() as conn:
        conn.execute(sa.text(f"ANALYZE {small.schema}.corpus_paragraph"))
    query = _vec(rng)
    k = 10
    hits = small.search("paragraph", query, k=k, filter={"tag": "rare"})
    assert len(hits) == k
    assert all(h.metadata["tag"] == "rare" for h in hits)

    # Without the iterative scan, the HNSW index returns its ef_search nearest rows and the filter keeps ~1%:
    # fewer than k. This shows the setting is what makes the filtered search complete.
    with small.engine.begin() as conn:
        conn.execute(sa.text("SET LOCAL enable_seqscan = off"))
        conn.execute(sa.text("SET LOCAL enable_bitmapscan = off"))
        conn.execute(sa.text("SET LOCAL hnsw.ef_search = 40"))
        plain = conn.execute(
            sa.text(
                f'SELECT id FROM {small.schema}.corpus_paragraph WHERE metadata @> \'{{"tag": "rare"}}\' '
                f"ORDER BY embedding <=> CAST(:q AS vector({DIM})) LIMIT {k}"
            ),
            {"q": str(query)},
        ).all()
    assert len(plain) < k

    ranged = small.search("paragraph", query, k=5, filter={"n": {"$gte": 100, "$lt": 200}, "tags": {"$contains": "t1"}})
    assert ranged and all(100 <= h.metadata["n"] < 200 and h.metadata["n"] % 3 == 1 for h in ranged)
    either = small.search("paragraph", query, k=50, filter={"$or": [{"n": {"$in": [5, 6]}}, {"n": 7}]})
    assert sorted(h.metadata["n"] for h in either) == [5, 6, 7]
    none_rare = small.search("paragraph", query, k=20, filter={"tag": {"$ne": "rare"}})
    assert len(none_rare) == 20 and all(h.metadata["tag"] == "common" for h in none_rare)


def test_bad_filters_raise_filter_error(small: Store) -> None:
    for bad in [{"n": {"$regex": "x"}}, {"bad key!": 1}, {"n": {"$in": []}}, {"$xor": []}, {"n": {"$gt": [1]}}]:
        with pytest.raises(FilterError):
            small.search("paragraph", [0.1] * DIM, filter=bad)


def test_unknown_corpus_and_uninitialised_schema(settings) -> None:  # type: ignore[no-untyped-def]
    store = Store(settings=settings)
    with pytest.raises(StoreError, match="universalrag init"):
        store.corpora()
    store.init(embedder="e", dimension=DIM)
    with pytest.raises(CorpusNotFoundError, match="paragraph"):
        store.corpus("nope")
    store.close()


def test_unreachable_server_gives_a_store_error_without_password(settings) -> None:  # type: ignore[no-untyped-def]
    store = Store("postgresql://user:s3cret@127.0.0.1:1/db", settings=settings)
    with pytest.raises(StoreError) as info:
        store.server_info()
    assert "s3cret" not in str(info.value) and "***" in str(info.value)


def test_visual_channel_fuses_text_and_visual_scores(small: Store) -> None:
    rng = np.random.default_rng(6)
    assert small.add_visual_channel("image", dimension=4, encoder="tiny-clip") is True
    assert small.add_visual_channel("image", dimension=4, encoder="tiny-clip") is False  # idempotent
    with pytest.raises(CorpusExistsError, match="tiny-clip"):
        small.add_visual_channel("image", dimension=6, encoder="other-clip")
    spec = small.corpus("image")
    assert (spec.visual_encoder, spec.visual_dimension) == ("tiny-clip", 4)

    text_q, visual_q = _vec(rng), _vec(rng, 4)
    far_text, far_visual = [-x for x in text_q], [-x for x in visual_q]
    units = [
        Unit(
            id=str(uuid.uuid4()), corpus="image", content="looks right", embedding=far_text, visual_embedding=visual_q
        ),
        Unit(
            id=str(uuid.uuid4()),
            corpus="image",
            content="captioned right",
            embedding=text_q,
            visual_embedding=far_visual,
        ),
        Unit(id=str(uuid.uuid4()), corpus="image", content="caption only", embedding=_vec(rng)),
    ]
    small.write_source(_source("mem://imgs", corpora=("image",)), units)
    hits = {h.content: h for h in small.search("image", text_q, visual_vector=visual_q, k=3)}
    top = max(hits.values(), key=lambda h: h.score)
    assert top.content == "looks right"  # the visual channel weighs 0.8
    assert top.channel_scores == pytest.approx({"visual": 1.0, "text": -1.0}, abs=1e-5)
    assert top.score == pytest.approx(0.8 * 1.0 + 0.2 * -1.0, abs=1e-5)
    assert hits["captioned right"].score == pytest.approx(0.8 * -1.0 + 0.2 * 1.0, abs=1e-5)
    only = hits["caption only"]  # no visual vector: ranked by its text channel alone
    assert set(only.channel_scores) == {"text"} and only.score == pytest.approx(only.channel_scores["text"])
    text_first = small.search("image", text_q, visual_vector=visual_q, k=1, visual_weight=0.2)
    assert text_first[0].content == "captioned right"
    text_only = small.search("image", text_q, k=1)  # no query in the visual space: the text channel alone
    assert text_only[0].content == "captioned right" and not text_only[0].channel_scores
    with pytest.raises(DimensionMismatchError):
        small.search("image", text_q, visual_vector=[0.5] * 5)
    with pytest.raises(ValueError, match="no visual channel"):
        small.write_source(
            _source("mem://v"),
            [
                Unit(
                    id=str(uuid.uuid4()),
                    corpus="paragraph",
                    content="x",
                    embedding=_vec(rng),
                    visual_embedding=[0.1] * 4,
                )
            ],
        )


def test_streamed_part_batches_are_written_in_the_same_transaction(small: Store) -> None:
    rng = np.random.default_rng(7)
    table_id = str(uuid.uuid4())
    unit = Unit(id=table_id, corpus="table", content="| a | b |", embedding=_vec(rng))
    target = np.asarray(_vec(rng), dtype=np.float32)

    def batches(n_batches: int, size: int, bad_at: int | None = None):  # type: ignore[no-untyped-def]
        for b in range(n_batches):
            vectors = rng.normal(size=(size, DIM if b != bad_at else DIM + 1)).astype(np.float32)
            if b == 2:
                vectors[5] = target
            yield PartBatch(
                corpus="table",
                unit_id=table_id,
                start=b * size,
                texts=[f"row {b * size + i}" for i in range(size)],
                vectors=vectors,
            )

    with pytest.raises(DimensionMismatchError):
        small.write_source(_source("mem://t", corpora=("table",)), [unit], parts=batches(4, 50, bad_at=3))
    assert small.counts()["table"] == 0 and small.sources() == []  # the failed stream left nothing

    result = small.write_source(_source("mem://t", corpora=("table",)), [unit], parts=batches(4, 50))
    assert result.rows == {"table": 1, "table.parts": 200}
    hit = small.search("table", target.tolist(), k=1)[0]
    assert hit.id == table_id and hit.matched_parts[0][:2] == (105, "row 105")


@pytest.mark.parametrize(
    ("available", "message"),
    [
        ([], "no pgvector extension"),
        ([("0.6.2", None)], "older than 0.7"),
    ],
)
def test_missing_or_old_pgvector_is_a_clear_error(settings, available, message) -> None:  # type: ignore[no-untyped-def]
    # A view in the test schema shadows pg_catalog.pg_available_extensions for this engine's connections, so
    # the real server looks as if it had no pgvector, or an old one.
    from universalrag.store.engine import make_engine

    schema = settings.schema
    rows = (
        " UNION ALL ".join(f"SELECT 'vector'::name, '{d}'::text, NULL::text" for d, _ in available)
        or "SELECT NULL::name, NULL::text, NULL::text WHERE false"
    )
    setup = make_engine(settings.database_url)
    with setup.begin() as conn:
        conn.execute(sa.schema.CreateSchema(schema, if_not_exists=True))
        conn.execute(
            sa.text(
                f"CREATE VIEW {schema}.pg_available_extensions (name, default_version, installed_version) AS {rows}"
            )
        )
    setup.dispose()
    engine = sa.create_engine(
        make_engine(settings.database_url).url, connect_args={"options": f"-c search_path={schema},pg_catalog,public"}
    )
    store = Store(settings=settings, engine=engine)
    with pytest.raises(StoreError, match=message):
        store.init(embedder="e", dimension=DIM)
    assert store.revision() is None  # nothing was created
    engine.dispose()


def test_units_without_a_source_can_be_added_read_replaced_and_deleted(small: Store) -> None:
    rng = np.random.default_rng(8)
    ids = [str(uuid.uuid4()) for _ in range(3)]
    units = [
        Unit(id=i, corpus="paragraph", content=f"text {n}", embedding=_vec(rng), metadata={"n": n})
        for n, i in enumerate(ids)
    ]
    assert small.add_units(units) == 3
    got = small.get_units("paragraph", [ids[2], "00000000-0000-0000-0000-000000000000", ids[0]])
    assert [h.content for h in got] == ["text 2", "text 0"] and got[0].source_id is None
    small.add_units([Unit(id=ids[1], corpus="paragraph", content="replaced", embedding=_vec(rng))])
    assert small.counts()["paragraph"] == 3 and small.get_units("paragraph", [ids[1]])[0].content == "replaced"
    assert small.delete_units("paragraph", ids[:2]) == 2
    assert small.counts()["paragraph"] == 1
    with pytest.raises(DimensionMismatchError):
        small.add_units([Unit(id=str(uuid.uuid4()), corpus="paragraph", content="x", embedding=[0.1] * 3)])


def test_bad_arguments_are_typed_errors_and_url_starts_nothing(  # type: ignore[no-untyped-def]
    small: Store, tmp_path
) -> None:
    from universalrag.config import Settings
    from universalrag.errors import InvalidInputError, UniversalRAGError

    rng = np.random.default_rng(8)
    with pytest.raises(InvalidInputError, match="k must be"):
        small.search("paragraph", _vec(rng), k=0)
    with pytest.raises(InvalidInputError, match="visual_weight"):
        small.search("image", _vec(rng), visual_weight=1.5)
    with pytest.raises(InvalidInputError, match="one vector per unit"):
        small.write_source(
            _source("mem://p"),
            [
                Unit(
                    id=str(uuid.uuid4()),
                    corpus="paragraph",
                    content="x",
                    embedding=_vec(rng),
                    parts=["a"],
                    part_embeddings=[_vec(rng)],
                )
            ],
        )
    for bad in [dict(name="Bad"), dict(modality="sound"), dict(dimension=0), dict(dimension="8")]:
        with pytest.raises(InvalidInputError):
            CorpusSpec(**{"name": "ok", "modality": "text", "granularity": "paragraph", **bad})
    assert issubclass(InvalidInputError, UniversalRAGError)
    home = tmp_path / "never"
    lazy = Store(settings=Settings(home=home))
    assert lazy.url is None and "embedded" in repr(lazy) and not home.exists()  # no server was started


def test_driver_errors_are_told_apart_by_sqlstate(small: Store) -> None:
    from universalrag.store.translate import UNDEFINED_TABLE, sqlstate

    with pytest.raises(StoreError, match="dropped meanwhile") as info:
        with small.transaction("read a table") as conn:
            conn.execute(sa.text(f"SELECT 1 FROM {small.schema}.corpus_missing"))
    assert sqlstate(info.value) == UNDEFINED_TABLE


def _statements(store: Store) -> list[str]:
    """Every SQL statement ``store`` sends from now on (appended to the returned list)."""
    seen: list[str] = []
    sa.event.listen(store.engine, "before_cursor_execute", lambda _c, _cur, statement, *_a: seen.append(statement))
    return seen


def test_a_search_counts_nothing_and_takes_few_statements(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Table sizes come from cached statistics (no COUNT per query); the index settings are one
    statement, an exact scan needs no setting flipped, and a single-vector corpus gets its rows with its
    distances — two statements for a paragraph search, four for a multi-vector one (search, rows, part texts)."""
    from universalrag.store import index_check
    from universalrag.store import row_estimates as sizes
    from universalrag.store import store as store_module

    monkeypatch.setattr(sizes, "TTL_S", 3600.0)  # a loaded machine must not expire the caches mid-test
    monkeypatch.setattr(store_module, "REGISTRY_TTL_S", 3600.0)
    unchecked: list[str] = []  # the background index check, recorded instead of run (it would reset the cache)
    monkeypatch.setattr(index_check, "check_in_background", lambda _store, corpus: unchecked.append(corpus))
    s = Store(settings=settings.with_(exact_scan_rows=100))
    s.init(embedder="test-encoder", dimension=DIM)
    try:
        rng = np.random.default_rng(11)
        s.write_source(
            _source("mem://p"),
            [Unit(id=str(uuid.uuid4()), corpus="paragraph", content=f"p{i}", embedding=_vec(rng)) for i in range(300)],
        )
        s.write_source(
            _source("mem://d", corpora=("document",)),
            [
                Unit(
                    id=str(uuid.uuid4()),
                    corpus="document",
                    content=f"d{i}",
                    embedding=_vec(rng),
                    parts=[f"d{i} c{j}" for j in range(3)],
                    part_embeddings=[_vec(rng) for _ in range(3)],
                )
                for i in range(10)
            ],
        )  # 30 parts: below the threshold, scanned exactly
        query = _vec(rng)
        expected = s.search("paragraph", query, k=5, exact_scan=True)
        s.search("paragraph", query, k=5)  # sizes read once, then cached
        s.search("document", query, k=3)
        seen = _statements(s)
        hits = s.search("paragraph", query, k=5)
        assert [h.id for h in hits] == [h.id for h in expected]  # 300 rows through the index: the same five
        paragraph, seen[:] = list(seen), []
        docs = s.search("document", query, k=3)
        assert len(docs) == 3 and docs[0].matched_parts
        document = list(seen)
    finally:
        s.close()
    for statements in (paragraph, document):
        text = " ".join(statements).lower()  # (the parts' grouping counts the rows of its window, not a table)
        assert "select count(" not in text and "enable_indexscan" not in text and "pg_class" not in text
    # 300 rows > 100: the index, its settings inside the one statement (no BEGIN/COMMIT: autocommit)
    assert len(paragraph) == 1 and "+ 0" not in paragraph[0] and "set_config" in paragraph[0]
    # 30 parts <= 100: exact (no index settings), then the units' rows, then the matched parts' texts
    assert len(document) == 3 and "row_number" in document[0].lower() and "set_config" not in document[0]
    assert set(unchecked) == {"paragraph"}  # above the threshold and never checked: a check is asked for


def test_the_scan_rule_follows_the_stored_index_check(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Above ``exact_scan_rows`` a table goes through the index, unless its stored check (measured at about
    this size) found the index unreliable, and then only up to ``exact_scan_max_rows``; a real check is stored."""
    from universalrag.store import index_check
    from universalrag.store import row_estimates as sizes
    from universalrag.store.index_check import check_index
    from universalrag.store.scan_rule import CHECK_KEY, needs_check, scan_exactly

    monkeypatch.setattr(index_check, "check_in_background", lambda *_a: False)  # the test sets the checks itself

    s = Store(settings=settings.with_(exact_scan_rows=100, exact_scan_max_rows=1000))
    s.init(embedder="test-encoder", dimension=DIM)
    try:
        rng = np.random.default_rng(12)
        s.write_source(
            _source("mem://p"),
            [Unit(id=str(uuid.uuid4()), corpus="paragraph", content=f"p{i}", embedding=_vec(rng)) for i in range(400)],
        )
        check = check_index(s, "paragraph", queries=12)
        assert check.rows == 400 and check.queries == 12 and 0.0 <= check.recall <= 1.0
        assert s.corpus("paragraph").metadata[CHECK_KEY]["rows"] == 400

        def path(metadata: dict) -> str:  # type: ignore[type-arg]
            c = s.tables.corpora
            with s.transaction() as conn:
                conn.execute(sa.update(c).where(c.c.name == "paragraph").values(metadata=metadata))
            s.corpora(refresh=True)
            seen = _statements(s)
            s.search("paragraph", _vec(rng), k=5)
            return "exact" if "+ 0" in seen[-1] else "index"

        assert path({}) == "index"  # never checked: the index
        assert path({CHECK_KEY: {"rows": 400, "recall": 0.5, "queries": 12}}) == "exact"  # unreliable index
        assert path({CHECK_KEY: {"rows": 100, "recall": 0.5, "queries": 12}}) == "index"  # measured at 1/4 the size
        assert needs_check({CHECK_KEY: {"rows": 100, "recall": 0.5}}, 400)
        assert not scan_exactly(
            2000, {CHECK_KEY: {"rows": 2000, "recall": 0.5}}, exact_scan_rows=100, exact_scan_max_rows=1000
        )
        assert scan_exactly(50, {}, exact_scan_rows=100, exact_scan_max_rows=1000)
        assert path({CHECK_KEY: check.as_dict()}) == ("index" if check.reliable else "exact")
        # sizes: a table never analysed is counted; after ANALYZE, new rows are seen through the activity statistics
        sizes.forget(s.schema)
        with s.transaction() as conn:
            units = s.tables.corpus(s.corpus("paragraph")).units
            assert sizes.table_rows(conn, [units])[units.name] == 400
            conn.execute(sa.text(f"ANALYZE {s.schema}.{units.name}"))
        s.write_source(
            _source("mem://p2"),
            [Unit(id=str(uuid.uuid4()), corpus="paragraph", content=f"q{i}", embedding=_vec(rng)) for i in range(400)],
        )
        estimate, deadline = 0, time.monotonic() + 30
        while estimate < 700 and time.monotonic() < deadline:  # activity statistics lag ~1 s
            time.sleep(0.2)
            with s.transaction() as conn:
                estimate = sizes.table_rows(conn, [units], ttl=0)[units.name]
        assert 700 <= estimate <= 1600  # the 400 new rows are seen; an estimate, within the rule's factor of 2
    finally:
        s.close()


def test_a_filter_on_uri_keeps_one_files_units_in_every_kind_of_search(small: Store) -> None:
    """``uri`` is a unit's column, not a metadata key: a filter naming it (one file, a folder's files by ``$like``,
    inside ``$or``/``$not``) keeps those files' units, in single-vector and multi-vector searches alike."""
    rng = np.random.default_rng(6)
    query = _vec(rng)
    for name in ("a", "b", "c"):
        uri = f"file:///docs/{'api/' if name != 'c' else ''}{name}.md"
        small.write_source(
            _source(uri, corpora=("paragraph", "document")),
            [
                *(
                    Unit(
                        id=str(uuid.uuid4()),
                        corpus="paragraph",
                        content=f"{name} {i}",
                        embedding=_vec(rng),
                        uri=uri,
                        metadata={"lang": "en"},
                    )
                    for i in range(5)
                ),
                Unit(
                    id=str(uuid.uuid4()),
                    corpus="document",
                    content=f"{name} doc",
                    embedding=_vec(rng),
                    uri=uri,
                    parts=[f"{name} part {j}" for j in range(3)],
                    part_embeddings=[_vec(rng) for _ in range(3)],
                ),
            ],
        )

    def uris(corpus: str, flt: dict) -> set[str]:
        return {h.uri for h in small.search(corpus, query, k=20, filter=flt)}

    for corpus in ("paragraph", "document"):
        assert uris(corpus, {"uri": "file:///docs/api/a.md"}) == {"file:///docs/api/a.md"}
        assert uris(corpus, {"uri": {"$like": "file:///docs/api/%"}}) == {
            "file:///docs/api/a.md",
            "file:///docs/api/b.md",
        }
        assert uris(corpus, {"$or": [{"uri": "file:///docs/c.md"}, {"uri": {"$in": ["file:///docs/api/b.md"]}}]}) == {
            "file:///docs/c.md",
            "file:///docs/api/b.md",
        }
        assert "file:///docs/c.md" not in uris(corpus, {"$not": {"uri": "file:///docs/c.md"}})
    assert uris("paragraph", {"uri": "file:///docs/c.md", "lang": "en"}) == {"file:///docs/c.md"}  # with metadata


def test_paths_as_uris_turns_a_shown_path_into_the_units_uri() -> None:
    from universalrag.store.filters import paths_as_uris

    assert paths_as_uris({"source": "/docs/a b.md", "lang": "en"}, "source") == {
        "uri": "file:///docs/a%20b.md",
        "lang": "en",
    }  # as ingestion stores it (Path.as_uri)
    assert paths_as_uris(
        {"$or": [{"source": {"$in": ["/x.md", "https://e.org/p"]}}, {"source": {"$like": "/docs/%"}}]}, "source"
    ) == {"$or": [{"uri": {"$in": ["file:///x.md", "https://e.org/p"]}}, {"uri": {"$like": "file:///docs/%"}}]}
    assert paths_as_uris({"title": "x"}, "source") == {"title": "x"}
    # a bare file name: that file in any folder, percent-encoded as stored, LIKE's wildcards taken literally
    assert paths_as_uris({"source": "a b_1.md", "lang": "en"}, "source") == {
        "lang": "en",
        "uri": {"$like": "%/a\\%20b\\_1.md"},
    }
    assert paths_as_uris({"source": {"$nin": ["x.md", "/d/y.md"]}}, "source") == {
        "$and": [{"$not": {"$or": [{"uri": {"$like": "%/x.md"}}, {"uri": {"$in": ["file:///d/y.md"]}}]}}]
    }


def test_a_text_repeated_word_for_word_is_returned_once(small: Store) -> None:
    """Documentation repeats itself (npm's docs give one flag's description on 25 command pages): a search returns
    the first of identical texts and fills ``k`` with distinct ones, in every corpus of text."""
    rng = np.random.default_rng(7)
    query = _vec(rng)
    near = [(np.asarray(query) * 0.9 + np.asarray(_vec(rng)) * 0.1).tolist() for _ in range(6)]
    for i, vector in enumerate(near):  # six pages carry the same passage, nearest of all
        small.write_source(
            _source(f"mem://page{i}"),
            [
                Unit(
                    id=str(uuid.uuid4()),
                    corpus="paragraph",
                    content="ignore-scripts\n\nDefault: false",
                    embedding=vector,
                ),
                Unit(id=str(uuid.uuid4()), corpus="paragraph", content=f"page {i} prose", embedding=_vec(rng)),
            ],
        )
    texts = [h.content for h in small.search("paragraph", query, k=4)]
    assert texts[0] == "ignore-scripts\n\nDefault: false" and len(set(texts)) == len(texts) == 4
    exact = [h.content for h in small.search("paragraph", query, k=4, exact_scan=True)]
    assert exact == texts


def test_long_texts_are_compared_whole_only_when_they_begin_alike() -> None:
    from universalrag.fusion import SeenTexts, text_key

    opening = " ".join(f"word{i}" for i in range(40))
    seen = SeenTexts()
    assert seen.add(opening + " ends one way")
    assert not seen.add(opening.replace(" ", "\n  ", 5) + "   ends one   way\n")  # the same words, other spaces
    assert seen.add(opening + " ends another way")  # begins alike, differs after the first words
    assert not seen.add(opening + " ends another way")
    assert seen.add("a short text") and not seen.add(" a  short\ttext ") and seen.add("a short text, longer")
    assert seen.add("") and seen.add("") and seen.add("   ")  # empty texts are never repeats
    pages = [opening + f" page {i}" for i in range(3)] * 2
    together = SeenTexts()  # the same answers as a set of whole keys
    assert (
        [together.add(p) for p in pages]
        == [text_key(p) not in {text_key(q) for q in pages[:i]} for i, p in enumerate(pages)]
        == [True] * 3 + [False] * 3
    )


def test_fused_hits_drop_repeated_texts_as_whole_keys_would(monkeypatch: pytest.MonkeyPatch) -> None:
    """``fusion.distinct`` reads whole texts only for hits whose first words another hit shares: the same hits
    kept as when every text's whitespace-collapsed key is compared, for texts that begin alike and differ later,
    repeat with other spacing, are shorter than the first words compared, or are empty, and for a whole document
    whose text is also a passage's (the passage is kept)."""
    import itertools

    from universalrag import fusion
    from universalrag.types import Granularity, Hit

    def whole_keys(hits: list[Hit]) -> list[str | None]:  # the definition: every text keyed whole
        return [fusion.text_key(h.content) or None if h.modality in fusion._TEXTUAL else None for h in hits]

    opening = " ".join(f"w{i}" for i in range(40))
    texts = [
        opening + " ends one way",
        opening.replace(" ", "\n ", 3) + " ends  one way",
        opening + " other end",
        "a short text",
        " a  short\ttext",
        "",
        "   ",
        opening[:20],
        opening,
    ]
    kinds = [
        (Modality.TEXT, Granularity.PARAGRAPH),
        (Modality.TEXT, Granularity.DOCUMENT),
        (Modality.TABLE, Granularity.TABLE),
        (Modality.IMAGE, Granularity.IMAGE),
    ]
    for n, combo in enumerate(itertools.product(range(len(texts)), range(len(kinds)), repeat=3)):
        hits = [
            Hit(corpus="c", id=f"{n}-{i}", score=1.0, content=texts[t], modality=kinds[m][0], granularity=kinds[m][1])
            for i, (t, m) in enumerate(zip(combo[::2], combo[1::2], strict=True))
        ]
        kept = [h.id for h in fusion.distinct(hits)]
        with monkeypatch.context() as patched:
            patched.setattr(fusion, "_text_keys", whole_keys)
            assert kept == [h.id for h in fusion.distinct(hits)], [h.content for h in hits]
    copies = [
        Hit(
            corpus="c",
            id=str(i),
            score=1.0,
            content=texts[i % 2],
            modality=Modality.TEXT,
            granularity=Granularity.PARAGRAPH,
        )
        for i in range(3)
    ]
    assert [h.id for h in fusion.distinct(copies)] == ["0"]  # the same words, whatever the spacing: one answer
