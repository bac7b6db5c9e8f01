"""Round trips of a search, counted on the wire (libpq's protocol trace of the pooled connections: every
ReadyForQuery the server sends ends one round trip): a plain search is one statement and one round trip, a
recently used connection is not pinged, probes of several corpora share their round trips, and a filtered search
through the index finds at least what the earlier statement found, on real text embedded by the bundled MiniLM."""

from __future__ import annotations

import itertools
import re
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
import sqlalchemy as sa
from conftest import REPO

from universalrag.store import Store, queries
from universalrag.store import engine as engine_module
from universalrag.store.corpus_search import CorpusQuery
from universalrag.types import SourceRecord, Unit

DIM = 384


def _vec(rng: np.random.Generator) -> list[float]:
    v = rng.normal(size=DIM)
    return (v / np.linalg.norm(v)).tolist()


def _traced(settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Store, Callable[[], int]]:
    """A store whose every new pooled connection writes libpq's protocol trace to a file; the returned function
    counts the round trips (ReadyForQuery messages) traced so far."""
    from universalrag.store import index_check

    monkeypatch.setattr(index_check, "check_in_background", lambda *_a: False)  # no background index check
    store = Store(settings=settings)
    traced: list[tuple[psycopg.Connection, Path, Any]] = []

    def start(connection: psycopg.Connection, handle: Any) -> None:
        connection.pgconn.trace(handle.fileno())
        connection.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)

    @sa.event.listens_for(store.engine, "connect")
    def trace(dbapi_connection: psycopg.Connection, _record: Any) -> None:
        path = tmp_path / f"trace-{len(traced)}.log"
        handle = path.open("w")
        start(dbapi_connection, handle)
        traced.append((dbapi_connection, path, handle))

    def round_trips() -> int:
        for connection, _, handle in traced:  # PQuntrace flushes libpq's buffered trace; then trace on
            if not connection.closed:
                connection.pgconn.untrace()
                start(connection, handle)
        return sum(len(re.findall(r"^B\t\d+\tReadyForQuery", p.read_text(), re.MULTILINE)) for _, p, _ in traced)

    return store, round_trips


@pytest.fixture
def filled(store: Store) -> Store:
    """300 paragraphs, 300 images and 300 clips (single-vector) and 60 documents of 3 parts (multi-vector)."""
    rng = np.random.default_rng(0)
    for corpus in ("paragraph", "image", "clip"):
        store.write_source(
            SourceRecord(uri=f"mem://{corpus}", content_hash="h", modality="text", corpora=(corpus,)),
            [
                Unit(
                    id=str(uuid.uuid4()), corpus=corpus, content=f"{corpus} {i}", embedding=_vec(rng), metadata={"n": i}
                )
                for i in range(300)
            ],
        )
    store.write_source(
        SourceRecord(uri="mem://d", content_hash="h", modality="text", corpora=("document",)),
        [
            Unit(
                id=str(uuid.uuid4()),
                corpus="document",
                content=f"d{i}",
                embedding=_vec(rng),
                parts=[f"d{i} c{j}" for j in range(3)],
                part_embeddings=[_vec(rng) for _ in range(3)],
            )
            for i in range(60)
        ],
    )
    with store.transaction() as conn:
        for corpus in ("paragraph", "image", "clip", "document"):
            tables = store.tables.corpus(store.corpus(corpus))
            for table in (tables.units, tables.parts):
                if table is not None:
                    conn.execute(sa.text(f'ANALYZE "{table.schema}"."{table.name}"'))
    return store


def test_a_plain_search_is_one_round_trip_and_a_recent_connection_is_not_pinged(
    filled: Store, settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, round_trips = _traced(
        settings.with_(exact_scan_rows=100), tmp_path, monkeypatch
    )  # 300 rows > 100: the index
    try:
        query = _vec(np.random.default_rng(1))
        store.search("paragraph", query, k=5)  # registry, pgvector version and table sizes read once
        before = round_trips()
        hits = store.search("paragraph", query, k=5)
        assert round_trips() - before == 1  # settings inside the statement, no BEGIN/COMMIT, no ping
        assert [h.id for h in hits] == [h.id for h in store.search("paragraph", query, k=5, exact_scan=True)]
        monkeypatch.setattr(engine_module, "PING_AFTER_S", 0.05)
        time.sleep(0.2)  # the connection was last used longer ago than that: it is pinged first
        before = round_trips()
        assert [h.id for h in store.search("paragraph", query, k=5)] == [h.id for h in hits]
        assert round_trips() - before == 2
    finally:
        store.close()


def test_probes_of_several_corpora_share_their_round_trips(
    filled: Store, settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, round_trips = _traced(
        settings.with_(exact_scan_rows=100), tmp_path, monkeypatch
    )  # parts: 180 > 100, the index
    try:
        query = _vec(np.random.default_rng(2))
        corpora = ["paragraph", "image", "clip", "document"]
        store.search_many([CorpusQuery(c, query, k=5) for c in corpora])  # warm: registry, sizes
        alone: dict[str, tuple[list[str], int]] = {}
        for corpus in corpora:
            before = round_trips()
            hits = store.search(corpus, query, k=5)
            alone[corpus] = ([h.id for h in hits], round_trips() - before)
        before = round_trips()
        together = store.search_many([CorpusQuery(c, query, k=5) for c in corpora])
        trips = round_trips() - before
        assert [[h.id for h in hits] for hits in together] == [alone[c][0] for c in corpora]
        assert [alone[c][1] for c in corpora[:3]] == [1, 1, 1]  # a single-vector corpus: one statement
        # nearest parts, the units' rows, the matched parts' texts (units of 3 parts are not refined:
        # store/corpus_search.py)
        assert alone["document"][1] == 3
        assert trips == max(n for _, n in alone.values()) == 3  # not 1 + 1 + 1 + 3
        assert together[3][0].matched_parts and together[3][0].matched_parts[0][1].startswith("d")
    finally:
        store.close()


def _sentences() -> list[str]:
    text = " ".join(p.read_text(encoding="utf-8") for p in sorted((REPO / "tests" / "data" / "corpus").iterdir()))
    text = re.sub(r"<[^>]+>|[#*_`|]", " ", text)
    sentences = [" ".join(s.split()) for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) >= 5]
    return (
        sentences
        + [f"{a} {b}" for a, b in itertools.pairwise(sentences)]  # and overlapping pairs, triples
        + [f"{a} {b} {c}" for a, b, c in zip(sentences, sentences[1:], sentences[2:], strict=False)]
    )


def _earlier_statement(store: Store, vector: list[float], k: int, flt: dict[str, Any]) -> list[str]:
    """What a filtered index search sent before this change: beam ``ef_search``, iterative scan, LIMIT k."""
    tables = store.tables.corpus(store.corpus("paragraph"))
    with store.transaction() as conn:
        conn.execute(
            queries.set_locals({"hnsw.ef_search": store.settings.ef_search, "hnsw.iterative_scan": "relaxed_order"})
        )
        return [str(r.unit_id) for r in conn.execute(queries.nearest_units(tables, vector, limit=k, filter=flt))]


def test_a_filtered_index_search_of_real_text_finds_at_least_what_the_earlier_statement_found(
    store: Store, minilm: Any
) -> None:  # type: ignore[no-untyped-def]
    sentences = _sentences()
    assert len(sentences) > 500
    vectors = minilm.embed(sentences)
    ids = [str(uuid.uuid4()) for _ in sentences]
    store.write_source(
        SourceRecord(uri="mem://sentences", content_hash="h", modality="text", corpora=("paragraph",)),
        [
            Unit(id=i, corpus="paragraph", content=s, embedding=v, metadata={"bucket": n % 20})
            for n, (i, s, v) in enumerate(zip(ids, sentences, vectors, strict=True))
        ],
    )
    store.settings = store.settings.with_(exact_scan_rows=0)  # every search through the HNSW index
    questions = [
        "When did the lunar module land?",
        "How do bees tell others where flowers are?",
        "How often should a starter be fed?",
        "Who tends the lighthouse lamp?",
        "How old is the organ?",
        "What temperature does dough need to rise?",
        "What did the astronauts bring back?",
        "Why do honeybees swarm?",
        "How far can the light be seen at sea?",
        "Who built the organ pipes?",
    ]
    new, old = [], []
    for n, question in enumerate(questions):
        q = minilm.embed_query(question)
        for bucket in (n % 20, (n + 7) % 20):
            flt = {"bucket": {"$gte": bucket, "$lt": bucket + 1}}  # 5 % of the rows; a range: no GIN index serves it
            members = [i for i, (_, b) in enumerate(zip(ids, range(len(ids)), strict=True)) if b % 20 == bucket]
            truth = {ids[i] for i in sorted(members, key=lambda i: -float(vectors[i] @ q))[:10]}
            new.append(len(truth & {h.id for h in store.search("paragraph", q.tolist(), k=10, filter=flt)}) / 10)
            old.append(len(truth & set(_earlier_statement(store, q.tolist(), 10, flt))) / 10)
    assert np.mean(new) >= np.mean(old)
    assert np.mean(new) >= 0.95, (np.mean(new), np.mean(old))
