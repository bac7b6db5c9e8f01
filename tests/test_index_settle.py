"""What an ingest writes is settled in the full-text indexes: no entries wait in a GIN index's pending list.

New rows wait in that list until autovacuum merges it, which a corpus of a few hundred documents never triggers;
every lookup then reads the whole list, and over 276 whole Wikipedia pages the planner scanned the table row by row
instead (a typo's neighbour words: 655 ms against 2 ms). Checked on a real server: ``gin_clean_pending_list`` says how
many pending pages it merged (0 when the ingest settled them).
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from conftest import DATA
from support.schemas import pending_pages

from universalrag.ingest.pipeline import ingest_paths
from universalrag.store import Store
from universalrag.types import Unit


def paragraphs(minilm, texts: list[str]) -> list[Unit]:  # type: ignore[no-untyped-def]
    """Units of the paragraph corpus holding ``texts``, embedded by the real encoder."""
    return [
        Unit(id=str(uuid.uuid4()), corpus="paragraph", content=t, embedding=v.tolist())
        for t, v in zip(texts, minilm.embed(texts), strict=True)
    ]


def test_an_ingest_leaves_no_pending_index_entries(
    store: Store,
    minilm,
    tmp_path: Path,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    for name in ("apollo_11.txt", "honeybee_behaviour.md", "brennmoor_tramways.html"):
        shutil.copy(DATA / "corpus" / name, first / name)
    shutil.copy(DATA / "corpus" / "sourdough_baking.md", second / "sourdough_baking.md")

    report = ingest_paths(store, minilm, [first])
    assert report.count("added") == 3
    assert pending_pages(store) == 0

    # The same ingest without the settling step leaves pages pending: what the check above would have seen.
    monkeypatch.setattr(Store, "settle", lambda self, corpora: 0)
    assert ingest_paths(store, minilm, [second]).count("added") == 1
    assert pending_pages(store) > 0


def test_units_added_directly_are_settled_too(store: Store, minilm) -> None:  # type: ignore[no-untyped-def]
    units = paragraphs(
        minilm, ["The tram depot at Brennmoor closed in 1961.", "Sourdough starter needs feeding twice a day."]
    )
    assert store.add_units(units) == 2
    assert pending_pages(store) == 0
    assert store.settle(["paragraph", "no_such_corpus"]) == 0  # nothing left; an unknown corpus is skipped


def test_a_role_that_may_not_maintain_the_tables_still_writes(  # type: ignore[no-untyped-def]
    store: Store, minilm, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Settling needs the tables' owner (PostgreSQL 17+: the MAINTAIN privilege); a role that may only write them
    gets its rows written all the same, and the pending entries are left to autovacuum (logged)."""
    role = "t_writer_" + uuid.uuid4().hex[:8]
    admin = store.engine
    quote = admin.dialect.identifier_preparer.quote  # identifiers quoted by the dialect, never pasted in
    try:
        with admin.begin() as conn:
            conn.execute(sa.text(f"CREATE ROLE {quote(role)} LOGIN"))
    except sa.exc.DBAPIError:
        pytest.skip("the test database does not let this test create a role")
    try:
        with admin.begin() as conn:
            conn.execute(sa.text(f"GRANT USAGE ON SCHEMA {quote(store.schema)} TO {quote(role)}"))
            conn.execute(
                sa.text(
                    f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {quote(store.schema)} "
                    f"TO {quote(role)}"
                )
            )
        url = sa.engine.make_url(database_url).set(username=role, password=None)
        writer = Store(settings=store.settings.with_(database_url=url.render_as_string(hide_password=False)))
        units = paragraphs(
            minilm, ["The organ of St Aldric has four manuals.", "Kestrel Point light was automated in 1989."]
        )
        with caplog.at_level("INFO", logger="universalrag.store.sources"):
            assert writer.add_units(units) == 2
        writer.close()
        assert "left to autovacuum" in caplog.text
        assert pending_pages(store) > 0  # not settled by the writer; the owner's check merges them now
        assert len(store.get_units("paragraph", [u.id for u in units])) == 2
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP OWNED BY {quote(role)}"))
            conn.execute(sa.text(f"DROP ROLE {quote(role)}"))


def test_init_settles_what_an_earlier_version_left_pending(
    store: Store,
    minilm,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with monkeypatch.context() as patched:  # units written as an earlier version wrote them
        patched.setattr(Store, "settle", lambda self, corpora: 0)
        store.add_units(paragraphs(minilm, ["Honeybees dance to show where the flowers are."]))
    store.init(embedder=minilm.name, dimension=minilm.dimension)  # what `universalrag init` and an ingest run
    assert pending_pages(store) == 0
