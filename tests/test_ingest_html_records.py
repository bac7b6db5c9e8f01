"""A table laid out as one record — each row a field's label beside its value, as a Wikipedia infobox — is read as
"label: value" rows. Read as columns it had no header but its title row, and each row read
"Race details: Dates | Race details_3: 22 June–14 July 1964": the label became a value and the title a column name,
in the text every row was embedded as. Data tables whose rows are labelled but hold several values keep their
columns. The synthetic tables are written in the test in MediaWiki's shapes (our own words); the real pages are
read from the WikiTableQuestions pages when present
(``support.shared_data``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.shared_data import WIKITABLES, WIKITABLES_PAGES, skip_unless

from universalrag.ingest.tables import read_tables, serialize_row

INFOBOX = """<table class="infobox vevent"><caption>1971 Harrow Cycle Race</caption>
<tr><th colspan="4">Race details</th></tr>
<tr><th colspan="2">Dates</th><td colspan="2">3–9 May 1971</td></tr>
<tr><th colspan="2">Stages</th><td colspan="2">7</td></tr>
<tr><th colspan="4">Results</th></tr>
<tr><td></td><th>Winner</th><td>Ada Brenner</td><td>(Team Lark)</td></tr></table>"""

# older infoboxes write their labels in bold data cells and have no infobox class
BOLD_LABELS = """<table style="width: 22em"><tr><th colspan="2">Ferry details</th></tr>
<tr><td><b>Launched</b></td><td>12 April 1958</td></tr>
<tr><td><b>Tonnage</b></td><td>4,212 GRT</td></tr>
<tr><td><b>Fate:</b></td><td>Scrapped 1989</td></tr></table>"""

# labelled rows that hold several values each: a transposed data table, not a record
TRANSPOSED = """<table class="wikitable"><tr><th>Isotope</th><td>A-1</td><td>A-2</td><td>A-3</td></tr>
<tr><th>Half-life</th><td>3 d</td><td>9 h</td><td>40 s</td></tr>
<tr><th>Decay</th><td>alpha</td><td>beta</td><td>beta</td></tr></table>"""

# a data table whose first column is written in row headers
ROW_HEADERS = """<table class="wikitable"><tr><th>No.</th><th>Title</th><th>Aired</th></tr>
<tr><th>1</th><td>The Long Bridge</td><td>4 May 1973</td></tr>
<tr><th>2</th><td>Rain at Dusk</td><td>11 May 1973</td></tr></table>"""


def _texts(html: str, tmp_path: Path) -> list[tuple[dict, list[str]]]:
    page = tmp_path / "page.html"
    page.write_text(f"<html><body><h1>Page</h1>{html}</body></html>", encoding="utf-8")
    return [(t.metadata, [serialize_row(t.header, r) for r in t.rows()]) for t in read_tables(page)]


def test_an_infobox_reads_as_label_value_rows(tmp_path: Path) -> None:
    [(meta, rows)] = _texts(INFOBOX, tmp_path)
    assert meta["layout"] == "record"
    assert rows == ["Race details", "Dates: 3–9 May 1971", "Stages: 7", "Results", "Winner: Ada Brenner (Team Lark)"]


def test_bold_labels_in_data_cells_are_labels_too(tmp_path: Path) -> None:
    [(meta, rows)] = _texts(BOLD_LABELS, tmp_path)
    assert meta["layout"] == "record"
    assert rows == [
        "Ferry details",
        "Launched: 12 April 1958 (1958-04-12)",
        "Tonnage: 4,212 GRT",
        "Fate: Scrapped 1989",
    ]


@pytest.mark.parametrize("html", [TRANSPOSED, ROW_HEADERS], ids=["transposed", "row-headers"])
def test_data_tables_with_labelled_rows_keep_their_columns(html: str, tmp_path: Path) -> None:
    [(meta, rows)] = _texts(html, tmp_path)
    assert "layout" not in meta
    assert all(" | " in row for row in rows), rows


@skip_unless(WIKITABLES_PAGES)
def test_real_infoboxes_read_as_fields() -> None:
    tour = read_tables(WIKITABLES / "pages" / "1964 Tour de France.html")
    rows = [serialize_row(tour[0].header, r) for r in tour[0].rows()]
    assert "Dates: 22 June–14 July 1964" in rows and "Winner: Jacques Anquetil (France) (Saint Raphael)" in rows
    assert tour[1].header[:2] == ["Stage", "Date"]  # the stage results stay a table of columns
    swiss = read_tables(WIKITABLES / "pages" / "1951 Swiss Grand Prix.html")
    fields = [serialize_row(swiss[0].header, r) for r in swiss[0].rows()]
    assert "Date: 27 May 1951 (1951-05-27)" in fields and "Weather: Overcast, rain" in fields
