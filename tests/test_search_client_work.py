"""What a search call does on the client, against a real PostgreSQL + pgvector: the query vector is checked and
converted once (float32, what pgvector stores), ids arrive as text, hits carry every field by name, the search
connection goes back to the pool out of autocommit, and the row-estimate cache is keyed per database (shared by
two engines on one URL, dropped by ``forget``)."""

from __future__ import annotations

import math
import uuid
from dataclasses import fields

import numpy as np
import pytest
import sqlalchemy as sa
from support.stores import DIM

from universalrag.errors import DimensionMismatchError, InvalidInputError
from universalrag.store import Store
from universalrag.store import row_estimates as sizes
from universalrag.store.corpus_search import hit_from_row
from universalrag.store.engine import SearchConnection, make_engine
from universalrag.store.vectors import check_vector
from universalrag.types import CorpusSpec, Granularity, Hit, Modality, SourceRecord, Unit


def _unit_vectors(n: int, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, DIM))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def test_check_vector_returns_the_float32_vector_once_and_refuses_what_float32_cannot_hold() -> None:
    as_list = [0.5, -1.25, 3.0, 0.0]
    out = check_vector("c", as_list, 4)
    assert out.dtype == np.float32 and out.tolist() == as_list
    given = np.array(as_list, dtype=np.float32)
    assert check_vector("c", given, 4) is given  # already what the driver sends: not copied
    assert check_vector("c", np.array(as_list), 4).dtype == np.float32  # float64 in, float32 out
    large = np.full(4, 1e20, dtype=np.float32)  # its squares overflow float32, its values do not
    assert check_vector("c", large, 4) is large
    assert check_vector("c", [3e38, 3e38, 0.0, 1e-30], 4).tolist()[:2] == [np.float32(3e38)] * 2
    with pytest.raises(InvalidInputError, match=r"1e\+39 at position 2.*32-bit floats"):
        check_vector("c", [0.5, 0.5, 1e39, 0.5], 4)
    for bad, where in (([0.5, math.nan, 1.0, 1.0], "position 1"), ([0.5, 1.0, -math.inf, 1.0], "position 2")):
        with pytest.raises(InvalidInputError, match=where):
            check_vector("c", bad, 4)
    with pytest.raises(InvalidInputError, match="all zeros"):
        check_vector("c", np.zeros(4, dtype=np.float32), 4)
    with pytest.raises(InvalidInputError, match="bool values"):
        check_vector("c", [True, False, True, True], 4)
    with pytest.raises(DimensionMismatchError):
        check_vector("c", [1.0, 2.0], 4)


def test_hit_from_row_fills_every_field_by_name() -> None:
    spec = CorpusSpec(name="clips", modality=Modality.VIDEO, granularity=Granularity.CLIP, dimension=DIM)
    row = {
        "id": "u1",
        "source_id": "s1",
        "parent_id": "p1",
        "content": "a clip",
        "uri": "file:///v.mp4",
        "start_s": 1.5,
        "end_s": 4.0,
        "metadata": {"lang": "en"},
    }
    parts = ((0, "first", 0.9),)
    hit = hit_from_row(spec, row, 0.75, parts=parts, channels={"text": 0.7, "visual": 0.8})
    expected = Hit(
        corpus="clips",
        id="u1",
        score=0.75,
        content="a clip",
        uri="file:///v.mp4",
        metadata={"lang": "en"},
        parent_id="p1",
        start_s=1.5,
        end_s=4.0,
        source_id="s1",
        modality=Modality.VIDEO,
        granularity=Granularity.CLIP,
        matched_parts=parts,
        channel_scores={"text": 0.7, "visual": 0.8},
    )
    assert {f.name: getattr(hit, f.name) for f in fields(Hit)} == {
        f.name: getattr(expected, f.name) for f in fields(Hit)
    }
    bare = hit_from_row(spec, {**row, "parent_id": None, "source_id": None, "metadata": None}, 0.5)
    assert (bare.parent_id, bare.source_id, bare.metadata, bare.channel_scores) == (None, None, {}, {})
    assert bare.metadata is not bare.channel_scores


def test_a_search_returns_string_ids_and_leaves_its_connection_in_the_pool_out_of_autocommit(small: Store) -> None:
    vectors = _unit_vectors(40)
    ids = [str(uuid.uuid4()) for _ in vectors]
    small.write_source(
        SourceRecord(uri="mem://a", content_hash="h", modality=Modality.TEXT, corpora=("paragraph",)),
        [
            Unit(id=i, corpus="paragraph", content=f"unit {n}", embedding=v, metadata={"n": n})
            for n, (i, v) in enumerate(zip(ids, vectors, strict=True))
        ],
    )
    for query in (vectors[3], vectors[3].tolist(), vectors[3].astype(np.float64)):  # every form, one answer
        hits = small.search("paragraph", query, k=3)
        assert hits[0].id == ids[3] and math.isclose(hits[0].score, 1.0, abs_tol=1e-5)
        assert all(type(h.id) is str and type(h.source_id) is str for h in hits)
        assert str(uuid.UUID(hits[0].source_id)) == hits[0].source_id  # the canonical text form
        assert hits[0].metadata == {"n": 3}
    with small.engine.connect() as conn:  # the pool's connection, as the next transaction gets it
        driver = conn.connection.driver_connection
        assert driver.autocommit is False
        conn.execute(sa.text("SELECT 1"))
        assert driver.info.transaction_status.name == "INTRANS"  # a transaction opened, as SQLAlchemy expects
        conn.rollback()


def test_search_connection_is_in_autocommit_inside_and_returned_out_of_it(small: Store) -> None:
    with SearchConnection(small.engine) as conn:
        driver = conn.connection.driver_connection
        assert driver.autocommit is True
        conn.exec_driver_sql("SELECT 1")
        assert driver.info.transaction_status.name == "IDLE"  # no transaction left open by the statement
    assert driver.autocommit is False and not driver.closed
    with pytest.raises(ZeroDivisionError), SearchConnection(small.engine):
        raise ZeroDivisionError  # an error inside still returns the connection, out of autocommit
    assert driver.autocommit is False


def test_row_estimates_are_cached_per_database_shared_by_engines_and_dropped_by_forget(small: Store) -> None:
    tables = small.tables.corpus(small.corpus("paragraph"))
    sizes.forget(small.schema)
    other = make_engine(small.resolve_url())
    try:
        with small.engine.connect() as conn:
            assert sizes.table_rows(conn, [tables.units]) == {tables.units.name: 0}
        small.write_source(
            SourceRecord(uri="mem://b", content_hash="h", modality=Modality.TEXT, corpora=("paragraph",)),
            [
                Unit(id=str(uuid.uuid4()), corpus="paragraph", content=f"u{n}", embedding=v)
                for n, v in enumerate(_unit_vectors(5, seed=1))
            ],
        )
        with other.connect() as conn:  # another engine on the same database reads the same cached estimate
            assert sizes.table_rows(conn, [tables.units]) == {tables.units.name: 0}
            assert sizes.table_rows(conn, [tables.units], ttl=0) == {tables.units.name: 5}  # read now
        sizes.forget(small.schema)
        with small.engine.connect() as conn:
            assert sizes.table_rows(conn, [tables.units, tables.units]) == {tables.units.name: 5}
    finally:
        other.dispose()


def test_the_pool_hands_out_the_connection_used_last(small: Store) -> None:
    first, second = small.engine.connect(), small.engine.connect()
    a, b = first.connection.driver_connection, second.connection.driver_connection
    first.close()
    second.close()  # b is back last: the next checkout gets it (awake, and recent enough to skip its ping)
    with small.engine.connect() as conn:
        assert conn.connection.driver_connection is b and b is not a
