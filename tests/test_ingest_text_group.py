"""Text files ingested as a group: the tables of Markdown and HTML pages are embedded in the group's one encoder
call with the pages' paragraphs, and their vectors come back to the right rows. Real files, the real bundled
MiniLM (wrapped only to count its calls), a real PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from psycopg import sql

from universalrag.ingest.pipeline import IngestOptions, ingest_paths
from universalrag.retrieve import search_corpus
from universalrag.store import Store
from universalrag.types import CorpusSpec, Granularity, Modality

FERRIES = """# Harbour ferries

The ferries of Sandwick harbour cross to the three islands every day of the year, weather allowing; the
timetable changes twice a year, at the spring and autumn equinoxes.

| Ferry | Departs | Arrives | Crossing |
|---|---|---|---|
| Morning Star | 07:10 | 07:55 | Sandwick to Holm |
| Gannet | 09:30 | 10:40 | Sandwick to Fara |
| Kittiwake | 12:15 | 12:50 | Holm to Fara |
| Evening Star | 18:05 | 18:50 | Holm to Sandwick |
"""

MUSEUM = """<html><head><title>Lens museum</title></head><body>
<h1>The lens museum</h1>
<p>The museum in the old keeper's cottage shows the lighthouse's Fresnel lenses, the keepers' logbooks and a
brass telescope; it opened in 2024.</p>
<table><caption>Museum opening hours</caption>
<tr><th>Season</th><th>Days</th><th>Hours</th></tr>
<tr><td>Spring</td><td>Saturday and Sunday</td><td>10:00 to 16:00</td></tr>
<tr><td>Summer</td><td>Every day</td><td>09:00 to 18:00</td></tr>
<tr><td>Winter</td><td>Sunday only</td><td>11:00 to 15:00</td></tr>
</table></body></html>
"""

HUTS = """# Mountain huts

Walkers on the ridge route sleep in huts run by the mountain club; bookings open in March.

| Hut | Altitude | Beds | Warden |
|---|---|---|---|
| Corrie Hut | 910 m | 24 | Ailsa Grant |
| Summit Bothy | 1240 m | 8 | none |
| Lochan Lodge | 620 m | 40 | Ewan Ross |
"""

PLAIN = (
    "The harbour's tide gauge has recorded the water level every fifteen minutes since 1952; spring tides "
    "follow the full and new moon.\n"
)


class Counting:
    """The real encoder, recording the texts of each ``embed`` call."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls = inner, []
        self.name, self.dimension = inner.name, inner.dimension

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.calls.append(list(texts))
        return self.inner.embed(texts)

    def embed_query(self, text):  # type: ignore[no-untyped-def]
        return self.inner.embed_query(text)


@pytest.fixture
def pages(tmp_path: Path) -> Path:
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "a_ferries.md").write_text(FERRIES, encoding="utf-8")
    (folder / "b_museum.html").write_text(MUSEUM, encoding="utf-8")
    (folder / "c_huts.md").write_text(HUTS, encoding="utf-8")
    (folder / "d_tides.txt").write_text(PLAIN, encoding="utf-8")
    return folder


def _table_rows(store: Store) -> list[dict[str, Any]]:
    """Every stored table row: its table unit (id, title, uri, content, vector) and the row (ord, text, vector)."""
    tables = store.tables.corpus(store.corpus("table"))
    units, parts = tables.units, tables.parts
    assert parts is not None
    query = (
        sa.select(
            units.c.id,
            units.c.uri,
            units.c.content,
            units.c.metadata,
            units.c.embedding.label("unit_vec"),
            parts.c.ord,
            parts.c.content.label("row"),
            parts.c.embedding.label("row_vec"),
        )
        .join(parts, parts.c.unit_id == units.c.id)
        .order_by(units.c.uri, units.c.id, parts.c.ord)
    )
    with store.transaction() as conn:
        return [dict(r) for r in conn.execute(query).mappings()]


def _rows_of(store: Store, uri: str) -> int:
    """Units of every corpus (and the source record) stored for ``uri``."""
    total = sum(1 for s in store.sources() if s["uri"] == uri)
    with store.transaction() as conn:
        for name in ("document", "paragraph", "table"):
            units = store.tables.corpus(store.corpus(name)).units
            total += conn.execute(sa.select(sa.func.count()).where(units.c.uri == uri)).scalar_one()
    return total


def test_the_tables_of_a_groups_pages_are_embedded_in_its_one_call(store: Store, minilm, pages: Path) -> None:
    counting = Counting(minilm)
    report = ingest_paths(store, counting, [pages])
    assert report.ok and [Path(o.path).name for o in report.outcomes] == sorted(p.name for p in pages.iterdir())
    assert len(counting.calls) == 1, [len(c) for c in counting.calls]  # no separate calls per page or table
    rows = _table_rows(store)
    titles = {r["metadata"]["title"] for r in rows}
    assert titles == {"Harbour ferries", "Museum opening hours", "Mountain huts"}
    assert len(rows) == 4 + 3 + 3 and store.counts()["table"] == 3
    embedded = set(counting.calls[0])
    for r in rows:
        assert f"{r['metadata']['title']}: {r['row']}" in embedded
        assert r["content"] in embedded  # the table unit's preview
    # the paragraphs of every page are in the same call
    assert any("tide gauge" in t for t in embedded) and any("Fresnel lenses" in t for t in embedded)


def test_each_row_and_table_gets_its_own_vector(store: Store, minilm, pages: Path) -> None:
    assert ingest_paths(store, minilm, [pages]).ok
    rows = _table_rows(store)
    wanted = minilm.embed([f"{r['metadata']['title']}: {r['row']}" for r in rows])
    stored = np.array([np.asarray(r["row_vec"]) for r in rows])
    assert np.allclose(stored, wanted, atol=1e-4)  # each row holds the vector of its own text
    units = {r["id"]: r for r in rows}
    unit_wanted = minilm.embed([u["content"] for u in units.values()])
    assert np.allclose(np.array([np.asarray(u["unit_vec"]) for u in units.values()]), unit_wanted, atol=1e-4)
    for r in rows:  # and a search for a row's exact text finds that row of that table
        hit = search_corpus(store, minilm, "table", f"{r['metadata']['title']}: {r['row']}", k=1)[0]
        assert hit.id == r["id"] and hit.uri == r["uri"]
        index, text, score = hit.matched_parts[0]
        assert (index, text) == (r["ord"], r["row"]) and score > 0.99


def test_a_page_whose_table_fails_leaves_no_rows_and_the_others_are_written(store: Store, minilm, pages: Path) -> None:
    (pages / "b_museum.html").write_text(MUSEUM.replace("Sunday only", "Sunday only (refused)"), encoding="utf-8")
    parts = store.tables.corpus(store.corpus("table")).parts
    assert parts is not None
    trigger = sql.SQL(
        "CREATE TRIGGER refuse BEFORE INSERT ON {}.{} FOR EACH ROW "
        "WHEN (position('(refused)' in NEW.content) > 0) EXECUTE FUNCTION {}.refuse_row()"
    )
    with store.transaction() as conn:  # a real database error, raised while this page's rows are copied
        raw = conn.connection.driver_connection
        raw.execute(
            sql.SQL(
                "CREATE FUNCTION {}.refuse_row() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'row refused by the test trigger'; END $$"
            ).format(sql.Identifier(store.schema))
        )
        raw.execute(
            trigger.format(sql.Identifier(store.schema), sql.Identifier(parts.name), sql.Identifier(store.schema))
        )
    try:
        report = ingest_paths(store, minilm, [pages])
    finally:
        with store.transaction() as conn:
            conn.connection.driver_connection.execute(
                sql.SQL("DROP FUNCTION {}.refuse_row() CASCADE").format(sql.Identifier(store.schema))
            )
    outcomes = {Path(o.path).name: o for o in report.outcomes}
    assert [Path(o.path).name for o in report.outcomes] == sorted(outcomes)  # file order kept
    assert outcomes["b_museum.html"].status == "failed"
    assert "refused by the test trigger" in (outcomes["b_museum.html"].error or "")
    assert _rows_of(store, (pages / "b_museum.html").resolve().as_uri()) == 0  # nothing of it, not even its text
    for name in ("a_ferries.md", "c_huts.md", "d_tides.txt"):
        assert outcomes[name].status == "added"
        assert _rows_of(store, (pages / name).resolve().as_uri()) > 2
    assert {r["metadata"]["title"] for r in _table_rows(store)} == {"Harbour ferries", "Mountain huts"}


def test_a_page_with_more_table_rows_than_a_batch_streams_them(store: Store, minilm, pages: Path) -> None:
    counting = Counting(minilm)
    report = ingest_paths(store, counting, [pages], options=IngestOptions(table_batch_rows=3))
    assert report.ok
    group = set(counting.calls[0])
    assert (
        "Harbour ferries: Ferry: Gannet | Departs: 09:30 | Arrives: 10:40 | Crossing: Sandwick to Fara" not in group
    )  # 4 rows > 3: streamed in batches of 3 while the page is written
    assert "Mountain huts: Hut: Corrie Hut | Altitude: 910 m | Beds: 24 | Warden: Ailsa Grant" in group
    assert sorted(len(c) for c in counting.calls[1:]) == [1, 1, 3]  # its preview, then rows 3 + 1
    rows = _table_rows(store)
    assert len(rows) == 10
    hit = search_corpus(store, minilm, "table", "Harbour ferries: Ferry: Evening Star | Departs: 18:05", k=1)[0]
    assert hit.metadata["title"] == "Harbour ferries" and "Evening Star" in hit.matched_parts[0][1]


MARKDOWN_TABLES = [
    "| Team | Wins |\n|---|---|\n| Lakers | 57 |\n",
    "Team | Wins\n--|--\nLakers | 57\n",
    "|Team|\n|:-:|\n|Lakers|\n",
    "Team |\n--- |\nLakers |\n",
    "> | Team | Wins |\n> | :--- | ---: |\n> | Lakers | 57 |\n",
    "- item\n\n  | Team | Wins |\n  |------|------|\n  | Lakers | 57 |\n",
    "Intro.\n\n<TABLE><tr><th>Team</th></tr><tr><td>Lakers</td></tr></TABLE>\n",
]


@pytest.mark.parametrize("text", MARKDOWN_TABLES)
def test_a_pages_tables_are_found_in_every_table_syntax(tmp_path: Path, text: str) -> None:
    from universalrag.ingest.tables import read_tables
    from universalrag.ingest.text_group import page_tables

    page = tmp_path / "page.md"
    page.write_text("# Scores\n\n" + text, encoding="utf-8")
    expected = read_tables(page, format="markdown")  # the table reader on the whole file
    found = page_tables(page, "md")
    assert [(t.title, t.header, list(t.rows())) for t in found] == [
        (t.title, t.header, list(t.rows())) for t in expected
    ]
    assert found and found[0].header[0] == "Team"


def test_pages_without_tables_have_none(tmp_path: Path) -> None:
    from universalrag.ingest.text_group import page_tables

    (tmp_path / "a.md").write_text(
        "# Notes\n\nA pipe | and a dash - in prose, and `|---|` in code.\n", encoding="utf-8"
    )
    (tmp_path / "b.html").write_text("<html><body><p>No tables | here --</p></body></html>", encoding="utf-8")
    assert page_tables(tmp_path / "a.md", "md") == [] and page_tables(tmp_path / "b.html", "html") == []
    # decoded before it is searched: a UTF-16 page's table is found
    utf16 = "<table><tr><th>Team</th></tr><tr><td>Lakers</td></tr></table>".encode("utf-16-le")
    (tmp_path / "c.html").write_bytes(b"\xff\xfe" + utf16)
    assert [list(t.rows()) for t in page_tables(tmp_path / "c.html", "html")] == [[["Lakers"]]]


def test_an_encoder_that_returns_too_few_vectors_fails_the_group_and_writes_nothing(
    store: Store, minilm, pages: Path
) -> None:
    class DropsOne(Counting):  # a broken plug-in encoder: one vector short
        def embed(self, texts):  # type: ignore[no-untyped-def]
            return super().embed(texts)[:-1]

    report = ingest_paths(store, DropsOne(minilm), [pages])
    assert [o.status for o in report.outcomes] == ["failed"] * 4
    assert all("one vector per text" in (o.error or "") for o in report.outcomes)
    assert store.sources() == [] and sum(store.counts().values()) == 0


def _texts(store: Store, corpus: str, uri_end: str) -> list[str]:
    units = store.tables.corpus(store.corpus(corpus)).units
    with store.transaction() as conn:
        return [r for r in conn.execute(sa.select(units.c.content).where(units.c.uri.endswith(uri_end))).scalars()]


def test_a_pages_table_is_searched_as_a_table_not_again_as_passages_of_its_cells(
    store: Store, minilm, pages: Path
) -> None:
    """The rows of a page's table go to the table corpus; the page's passages hold one line naming the table
    instead of its run-together cells, so a question about the table finds the table, not a passage of its cells
    (on real Wikipedia pages the flattened rows outranked the tables they came from). The whole document keeps
    its tables."""
    assert ingest_paths(store, minilm, [pages]).ok
    museum = " ".join(_texts(store, "paragraph", "b_museum.html"))
    assert "Fresnel lenses" in museum  # the prose stays
    assert "10:00 to 16:00" not in museum and "Sunday only" not in museum  # the cells do not
    assert "[Table: Museum opening hours — 3 rows; columns: Season, Days, Hours]" in museum
    ferries = " ".join(_texts(store, "paragraph", "a_ferries.md"))
    assert "Morning Star" not in ferries and "[Table — 4 rows; columns: Ferry, Departs, Arrives, Crossing]" in ferries
    assert "Sunday only" in " ".join(_texts(store, "document", "b_museum.html"))  # the whole page is whole
    assert "tide gauge" in " ".join(_texts(store, "paragraph", "d_tides.txt"))  # a page without tables: as before
    hits = search_corpus(store, minilm, "paragraph", "When is the museum open in winter?", k=3)
    assert all("Sunday only" not in h.content for h in hits)
    table = search_corpus(store, minilm, "table", "When is the museum open in winter?", k=1)[0]
    assert table.uri.endswith("b_museum.html") and "Sunday only" in table.matched_parts[0][1]


def test_a_page_ingested_into_a_named_corpus_keeps_its_tables_in_its_text(store: Store, minilm, pages: Path) -> None:
    """Named corpus: the page's tables are not ingested as tables, so nothing of them may be left out."""
    store.create_corpus(
        CorpusSpec(
            name="notes",
            modality=Modality.TEXT,
            granularity=Granularity.PARAGRAPH,
            embedder=minilm.name,
            dimension=minilm.dimension,
        )
    )
    report = ingest_paths(store, minilm, [pages / "b_museum.html"], corpus="notes")
    assert report.ok
    notes = " ".join(_texts(store, "notes", "b_museum.html"))
    assert "Sunday only" in notes and "[Table" not in notes


def test_pages_ingested_under_the_earlier_rule_are_replaced_once(store: Store, minilm, pages: Path) -> None:
    """A page's identity covers what a page becomes (PAGE_RULES), so pages ingested when their passages still
    held their tables' cells are replaced by the next ingest, once; a plain text file's identity covers how text is
    cut into passages (PASSAGE_RULES), so it is read again once when that changes."""
    from universalrag.ingest.files import hash_file

    assert ingest_paths(store, minilm, [pages]).ok
    museum, tides = (pages / "b_museum.html").resolve(), (pages / "d_tides.txt").resolve()
    for page in (museum, tides):
        assert store.source_state(page.as_uri())[0] not in (None, hash_file(page))
    with store.transaction() as conn:  # as the earlier rules stored them: identified by their file hash alone
        for page in (museum, tides):
            conn.execute(
                sa.update(store.tables.sources)
                .where(store.tables.sources.c.uri == page.as_uri())
                .values(content_hash=hash_file(page))
            )
    report = ingest_paths(store, minilm, [pages])
    statuses = {Path(o.path).name: o.status for o in report.outcomes}
    assert statuses["b_museum.html"] == statuses["d_tides.txt"] == "replaced"
    assert all(o.status == "unchanged" for o in ingest_paths(store, minilm, [pages]).outcomes)
