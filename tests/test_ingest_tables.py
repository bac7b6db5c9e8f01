"""Table ingestion: every format read from real files, streaming memory bound, bad inputs, row text."""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
import os
import subprocess
import sys
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from universalrag.errors import ConfigError, IngestError
from universalrag.ingest import tables as tables_module
from universalrag.ingest.tables import (
    ParsedTable,
    read_tables,
    render_markdown,
    serialize_row,
    table_from_dataframe,
    table_from_records,
    tables_from_html,
    tables_from_markdown,
)

DATA = Path(__file__).parent / "data" / "tables"


def all_rows(table: ParsedTable) -> list[list[str]]:
    return [row for batch in table.batches(3) for row in batch]


def only(path: Path) -> ParsedTable:
    found = read_tables(path)
    assert len(found) == 1, [t.title for t in found]
    return found[0]


def subset(metadata: dict[str, object], expected: dict[str, object]) -> bool:
    return {k: metadata.get(k) for k in expected} == expected


def write(path: Path, data: bytes | str) -> Path:
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8", newline="")
    else:
        path.write_bytes(data)
    return path


def test_public_api_is_pinned() -> None:
    assert sorted(tables_module.__all__) == sorted(
        [
            "TABLE_FORMATS",
            "ParsedTable",
            "read_tables",
            "render_markdown",
            "serialize_row",
            "table_from_dataframe",
            "table_from_records",
            "tables_from_html",
            "tables_from_markdown",
        ]
    )


def test_importing_tables_loads_neither_pandas_nor_openpyxl() -> None:
    code = (
        "import sys, universalrag.ingest.tables as t; t.read_tables(sys.argv[1]); "
        "print(sorted(m for m in ('pandas', 'openpyxl') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(DATA / "nba_2023.csv")], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


# --------------------------------------------------------------------------- CSV and TSV


def test_csv_header_rows_and_metadata() -> None:
    table = only(DATA / "nba_2023.csv")
    assert table.title == "nba_2023"
    assert table.header == ["Team", "Conference", "Wins", "Losses", "Win %"]
    rows = all_rows(table)
    assert rows[2] == ["Los Angeles Lakers, The", "West", "43", "39", ".524"]  # quoted comma kept
    assert len(rows) == table.metadata["row_count"] == 4
    assert subset(
        table.metadata,
        {
            "format": "csv",
            "source": "nba_2023.csv",
            "delimiter": ",",
            "index_in_file": 0,
            "column_count": 5,
            "header_synthesized": False,
        },
    )
    json.dumps(table.metadata)  # JSON-ready


def test_tsv_keeps_commas_inside_cells() -> None:
    table = only(DATA / "elements.tsv")
    assert table.metadata["format"] == "tsv" and table.metadata["delimiter"] == "\t"
    assert table.header == ["Element", "Symbol", "Atomic number", "Notes"]
    assert all_rows(table) == [
        ["Hydrogen", "H", "1", "lightest, most abundant"],
        ["Helium", "He", "2", "noble gas"],
        ["Lithium", "Li", "3", ""],
    ]


def test_semicolon_csv_with_decimal_commas() -> None:
    table = only(DATA / "prices_de.csv")
    assert table.metadata["delimiter"] == ";"
    assert table.header == ["Artikel", "Preis", "Menge"]
    assert all_rows(table) == [["Äpfel", "1,99", "3"], ["Birnen", "2,49", "12"], ["Kaffee, gemahlen", "7,50", "1"]]


def test_pipe_delimited_csv(tmp_path: Path) -> None:
    table = only(write(tmp_path / "p.csv", "a|b|c\n1|2|3\n4|5|6\n"))
    assert table.metadata["delimiter"] == "|" and table.header == ["a", "b", "c"]
    assert all_rows(table) == [["1", "2", "3"], ["4", "5", "6"]]


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-be"])
def test_csv_byte_order_marks(tmp_path: Path, encoding: str) -> None:
    data = "id,name\n1,Zoë\n2,Łódź\n".encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data
    table = only(write(tmp_path / "bom.csv", data))
    assert table.header == ["id", "name"]  # no BOM character glued to the first name
    assert all_rows(table) == [["1", "Zoë"], ["2", "Łódź"]]


def test_numeric_first_row_is_data_and_header_is_synthesized(tmp_path: Path) -> None:
    table = only(write(tmp_path / "series.csv", "2024-01-01,3.5,12\n2024-01-02,4,-7\n"))
    assert table.header == ["column_1", "column_2", "column_3"]
    assert table.metadata["header_synthesized"] is True
    assert all_rows(table) == [["2024-01-01", "3.5", "12"], ["2024-01-02", "4", "-7"]]


def test_ragged_rows_blank_lines_and_header_names(tmp_path: Path) -> None:
    text = "name,name,,x,\n1,2,3\n\n1,2,3,4,,9\n1,2,3,4,\n  ,\n5\n"
    table = only(write(tmp_path / "ragged.csv", text))
    # Duplicate and blank names are repaired; the trailing blank-named column that is always
    # empty is dropped, the blank-named column with values is kept, and so is the "9" past the header.
    assert table.header == ["name", "name_2", "column_3", "x", "column_5"]
    assert all_rows(table) == [
        ["1", "2", "3", "", ""],
        ["1", "2", "3", "4", "9"],
        ["1", "2", "3", "4", ""],
        ["5", "", "", "", ""],
    ]
    meta = table.metadata
    assert meta["ragged_rows"] == 3  # short "1,2,3", long "…,,9", short "5"; "1,2,3,4," is exact
    assert meta["blank_rows_skipped"] == 2 and meta["empty_columns_dropped"] == 1
    assert meta["row_count"] == 4


def test_rows_wider_than_the_header_keep_every_cell(tmp_path: Path) -> None:
    # a header naming the first columns only, over rows with two values more
    text = "player,team,points\nAyo,Bulls,21,7,3\nZach,Bulls,30,4,5\n"
    table = only(write(tmp_path / "stats.csv", text))
    assert table.header == ["player", "team", "points", "column_4", "column_5"]
    assert all_rows(table) == [["Ayo", "Bulls", "21", "7", "3"], ["Zach", "Bulls", "30", "4", "5"]]
    assert subset(table.metadata, {"column_count": 5, "ragged_rows": 2, "empty_columns_dropped": 0})


def test_trailing_empty_cells_add_no_column(tmp_path: Path) -> None:
    table = only(write(tmp_path / "wide.csv", "x,y\n1,2,3,\n4,5,\n"))
    assert table.header == ["x", "y", "column_3"]
    assert all_rows(table) == [["1", "2", "3"], ["4", "5", ""]]
    headerless = only(write(tmp_path / "numbers.csv", "1,2,\n3,4,\n"))
    assert headerless.header == ["column_1", "column_2"]
    assert all_rows(headerless) == [["1", "2"], ["3", "4"]]


def test_whitespace_aligned_columns_but_never_over_a_delimiter(tmp_path: Path) -> None:
    # scikit-learn's linnerud_exercise.csv
    table = only(write(tmp_path / "linnerud_exercise.csv", "Chins Situps Jumps\n5 162 60\n2 110 60\n12 101 101\n"))
    assert table.header == ["Chins", "Situps", "Jumps"] and table.metadata["delimiter"] == " "
    assert all_rows(table) == [["5", "162", "60"], ["2", "110", "60"], ["12", "101", "101"]]
    aligned = '  name        city      n\n  "Ann Lee"   Oslo      3  \n\n  Bob         "New York"  12\n'
    table = only(write(tmp_path / "aligned.csv", aligned))
    assert table.header == ["name", "city", "n"] and table.metadata["delimiter"] == " "
    assert all_rows(table) == [["Ann Lee", "Oslo", "3"], ["Bob", "New York", "12"]]
    # Spaces never win over a real delimiter (here every line would split into three at spaces too),
    # nor split lines into differing numbers of fields.
    table = only(write(tmp_path / "people.csv", "full name,home city\nAnn Lee,New York\nBob Ray,Los Angeles\n"))
    assert table.metadata["delimiter"] == "," and table.header == ["full name", "home city"]
    assert all_rows(table) == [["Ann Lee", "New York"], ["Bob Ray", "Los Angeles"]]
    sentences = "Notes\nThe glacier retreated\nSurvey by ski patrol in spring\nfastest so far\n"
    table = only(write(tmp_path / "notes.csv", sentences))
    assert table.header == ["Notes"] and table.metadata["delimiter"] == ","
    assert all_rows(table) == [["The glacier retreated"], ["Survey by ski patrol in spring"], ["fastest so far"]]


def test_batches_stream_again_and_notice_a_changed_file(tmp_path: Path) -> None:
    path = write(tmp_path / "five.csv", "n,sq\n" + "".join(f"{i},{i * i}\n" for i in range(5)))
    table = only(path)
    assert [len(b) for b in table.batches(2)] == [2, 2, 1]
    assert list(table.batches(10)) == list(table.batches(10)) == [[[str(i), str(i * i)] for i in range(5)]]
    with pytest.raises(ConfigError, match="at least 1"):
        table.batches(0)
    with path.open("a") as fh:
        fh.write("5,25\n")
    with pytest.raises(IngestError, match="changed or disappeared"):
        next(table.batches())


def test_unclosed_quote_is_reported_as_malformed(tmp_path: Path) -> None:
    path = write(tmp_path / "quote.csv", 'a,b\n1,"never closed\n' + "x" * 200_000 + "\n")
    with pytest.raises(IngestError, match="not well-formed CSV") as info:
        read_tables(path)
    assert info.value.path == str(path)


@pytest.mark.slow
def test_100k_row_csv_streams_with_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([f"col{i}" for i in range(8)])
        for r in range(100_000):
            writer.writerow(
                [r, f"name {r}", r * 3, f"city-{r % 97}", f"{r / 7:.3f}", "x" * 12, r % 2, f"note {r}, lorem ipsum"]
            )
    assert path.stat().st_size > 8_000_000
    tracemalloc.start()
    try:
        table = only(path)
        count, last = 0, None
        for batch in table.batches(2048):
            count += len(batch)
            last = batch[-1]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == table.metadata["row_count"] == 100_000
    assert last == ["99999", "name 99999", "299997", "city-89", "14285.571", "x" * 12, "1", "note 99999, lorem ipsum"]
    # Measured about 2.6 MB; the same file as a list of rows takes about 60 MB.
    assert peak < 12_000_000, f"peak {peak / 1e6:.1f} MB"


# --------------------------------------------------------------------------- Excel


def _workbook(path: Path) -> Path:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    standings = book.active
    standings.title = "Standings"
    standings.append([])  # a blank first row: the header is the first non-blank row
    standings.append(["Team", "Wins", "Ratio", "Founded", "Last game", "Champion", None, "Team"])
    standings.append(["Lakers", 57, 0.695, dt.date(1947, 1, 1), dt.datetime(2024, 4, 14, 20, 30), True, None, "LA"])
    standings.append(["Celtics", 64.0, 0.5, dt.datetime(1946, 6, 6), None, False])
    standings.append([None] * 3)
    standings.append(["Nuggets", 53, 1 / 3])
    other = book.create_sheet("Sheet2")
    other.append(["City", "Arena"])
    other.append(["Denver", "Ball Arena"])
    book.create_sheet("Empty")
    header_only = book.create_sheet("Header only")
    header_only.append(["a", "b"])
    book.save(path)
    return path


def test_excel_workbook_one_table_per_sheet_with_data(tmp_path: Path) -> None:
    found = read_tables(_workbook(tmp_path / "league.xlsx"))
    assert [t.title for t in found] == ["Standings", "league"]  # "Sheet2" is a default name → file stem
    standings, arenas = found
    assert standings.header == ["Team", "Wins", "Ratio", "Founded", "Last game", "Champion", "column_7", "Team_2"]
    assert all_rows(standings) == [
        ["Lakers", "57", "0.695", "1947-01-01", "2024-04-14T20:30:00", "true", "", "LA"],
        ["Celtics", "64", "0.5", "1946-06-06", "", "false", "", ""],
        ["Nuggets", "53", "0.3333333333333333", "", "", "", "", ""],
    ]
    assert subset(
        standings.metadata,
        {
            "format": "xlsx",
            "sheet": "Standings",
            "sheet_index": 0,
            "header_row": 2,
            "row_count": 3,
            "index_in_file": 0,
            "blank_rows_skipped": 1,
        },
    )
    assert arenas.metadata["sheet"] == "Sheet2" and arenas.metadata["index_in_file"] == 1
    assert all_rows(arenas) == [["Denver", "Ball Arena"]]
    assert all_rows(arenas) == [["Denver", "Ball Arena"]]  # re-opens the workbook


# --------------------------------------------------------------------------- HTML and Markdown


def test_html_page_with_two_tables() -> None:
    found = read_tables(DATA / "observatory.html")
    assert [t.title for t in found] == ["Opening hours", "Telescopes"]  # caption; preceding heading
    hours, scopes = found
    assert hours.header == ["Day", "Hours Open", "Hours Close"]  # two header rows joined, colspan expanded
    assert all_rows(hours) == [["Monday", "closed", ""], ["Friday", "18:00", "23:30"], ["Saturday", "16:00", "01:00"]]
    assert hours.metadata["title_from"] == "caption" and hours.metadata["html_id"] == "hours"
    assert scopes.metadata["title_from"] == "heading" and scopes.metadata["index_in_file"] == 1
    assert all_rows(scopes) == [
        ["Great Refractor", "305", "refractor | achromat"],
        ["Dobson", "406", "reflector Newtonian"],
    ]


def test_a_paragraph_leading_into_a_table_names_it() -> None:
    """Docs introduce tables with a short line ending in a colon ("SA structure:"); under one heading the heading
    alone titled every table alike, so a question about one of them could not tell them apart."""
    text = (
        "## Kddcup 99 dataset\n\nThe data set is split in two subsets.\n\nSA structure:\n\n"
        "| Samples total | 976158 |\n|---|---|\n| Dimensionality | 41 |\n\nSF structure:\n\n"
        "| Samples total | 699691 |\n|---|---|\n| Dimensionality | 4 |\n\n"
        "The following table lists every feature of the data set with its type and its range of values:\n\n"
        "| Feature | Type |\n|---|---|\n| duration | int |\n"
    )
    found = tables_from_markdown(text, name="kddcup99.md")
    assert [t.title for t in found] == [
        "Kddcup 99 dataset — SA structure",
        "Kddcup 99 dataset — SF structure",
        "Kddcup 99 dataset",
    ]  # a long paragraph is prose, not a lead-in
    assert [t.metadata["title_from"] for t in found] == ["heading and lead-in", "heading and lead-in", "heading"]
    alone = tables_from_html(
        "<p>Transfers in:</p><table><tr><th>Player</th></tr><tr><td>Kreek</td></tr></table>", name="club.html"
    )
    assert alone[0].title == "Transfers in" and alone[0].metadata["title_from"] == "lead-in"


def test_html_rowspan_nesting_unclosed_cells_and_fallback_titles() -> None:
    html = """
    <table><tr><th>Region</th><th>City</th></tr>
      <tr><td rowspan="2">North</td><td>Oslo</td></tr><tr><td>Tromsø</td></tr>
      <tr><td>South<script>var x = 1;</script></td><td><table><tr><th>inner</th></tr>
            <tr><td>deep</td></tr></table>Kristiansand</td></tr></table>
    <table><tr><td>a<td>b<tr><td>1<td>2</table>
    <table><tr><td>7</td><td>8</td></tr><tr><td>9</td><td>10</td></tr></table>
    <table><tr><th>only a header</th></tr></table>
    """
    found = tables_from_html(html, name="regions.html")
    assert [t.title for t in found] == ["regions table 1", "regions table 2", "regions table 3", "regions table 4"]
    outer, inner, unclosed, numeric = found
    assert all_rows(outer) == [["North", "Oslo"], ["North", "Tromsø"], ["South", "Kristiansand"]]
    assert (inner.header, all_rows(inner)) == (["inner"], [["deep"]])
    assert (unclosed.header, all_rows(unclosed)) == (["a", "b"], [["1", "2"]])
    assert numeric.header == ["column_1", "column_2"] and all_rows(numeric) == [["7", "8"], ["9", "10"]]
    assert tables_from_html("<p>no tables</p>", name="x.html") == []


def test_repeated_titles_are_numbered() -> None:
    html = "<h2>Scores</h2>" + "<table><tr><th>a</th></tr><tr><td>1</td></tr></table>" * 3
    assert [t.title for t in tables_from_html(html, name="s.html")] == ["Scores", "Scores (2)", "Scores (3)"]


def test_markdown_pipe_table() -> None:
    table = only(DATA / "glacier_notes.md")  # the table inside the code block is not a table
    assert table.title == "Retreat by decade"
    assert table.header == ["Decade", "Retreat (m)", "Note"]
    assert all_rows(table) == [
        ["1980s", "120", "survey by ski patrol"],
        ["1990s", "210", "fastest so far | revised"],
        ["2000s", "185", ""],
    ]
    assert table.metadata["format"] == "markdown"
    assert tables_from_markdown("a | b\n--|--\n1 | 2\n", name="n.md")[0].title == "n table 1"


# --------------------------------------------------------------------------- JSON, records, DataFrames


def test_json_records_union_of_keys_and_nested_values() -> None:
    table = only(DATA / "library_loans.json")
    assert table.header == ["title", "author", "loans", "available", "tags", "branch"]
    rows = all_rows(table)
    assert rows[1] == ["Solaris", "Stanisław Lem", "17", "false", '["sf", "classic"]', ""]
    assert json.loads(rows[2][5]) == {"name": "Larkspur", "floor": 2}
    assert rows[2][1] == ""


def test_json_streams_across_chunks(tmp_path: Path) -> None:
    records = [{"i": i, "text": f"record {i} " + "é" * (i % 50)} for i in range(6000)]
    records[3000]["long"] = "z" * 300_000  # one item spanning several read chunks
    path = tmp_path / "many.json"
    path.write_text(json.dumps(records, indent=1), encoding="utf-16")
    table = only(path)
    assert table.header == ["i", "text", "long"] and table.metadata["row_count"] == 6000
    rows = all_rows(table)
    assert [r[0] for r in rows] == [str(i) for i in range(6000)]
    assert rows[3000][2] == "z" * 300_000 and rows[5999][1] == "record 5999 " + "é" * 49


def test_json_is_streamed_not_loaded(tmp_path: Path) -> None:
    path = tmp_path / "loans.json"
    path.write_text(json.dumps([{"id": r, "note": "lorem ipsum " * 8} for r in range(30_000)]), encoding="utf-8")
    tracemalloc.start()
    try:
        table = only(path)
        count = sum(len(batch) for batch in table.batches(1000))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 30_000
    assert peak < path.stat().st_size / 1.5, f"peak {peak / 1e6:.1f} MB for a {path.stat().st_size / 1e6:.1f} MB file"


def test_table_from_records() -> None:
    table = table_from_records([{"a": 1, "b": None}, {"b": 2.5, "c": [1]}, {}], title="mixed")
    assert (table.title, table.header) == ("mixed", ["a", "b", "c"])
    assert all_rows(table) == [["1", "", ""], ["", "2.5", "[1]"], ["", "", ""]]  # one row per record
    with pytest.raises(IngestError, match="record 1 is a str"):
        table_from_records([{"a": 1}, "b"], title="bad")  # type: ignore[list-item]


def test_table_from_dataframe() -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(
        {
            "team": ["Lakers", "Celtics"],
            "wins": [57, 64],
            "ratio": [0.695, math.nan],
            "day": pd.to_datetime(["2024-04-14", "2024-04-15 19:00"], format="ISO8601"),
            "champion": [True, False],
            "note": [None, pd.NA],
        }
    )
    table = table_from_dataframe(df, title="standings")
    assert table.header == ["team", "wins", "ratio", "day", "champion", "note"]
    assert all_rows(table) == [
        ["Lakers", "57", "0.695", "2024-04-14", "true", ""],
        ["Celtics", "64", "", "2024-04-15T19:00:00", "false", ""],
    ]
    indexed = table_from_dataframe(df.set_index("team")[["wins"]], title="by team")
    assert indexed.header == ["team", "wins"] and all_rows(indexed)[1] == ["Celtics", "64"]
    with pytest.raises(IngestError, match="no rows"):
        table_from_dataframe(df.iloc[0:0], title="empty")


def test_dataframe_is_duck_typed() -> None:
    class Frame:
        columns = ("x", "x")
        index = range(2)

        def __len__(self) -> int:
            return 2

        def itertuples(self, *, index: bool, name: str | None) -> list[tuple[object, ...]]:
            return [(1, 2.0), (3, "y")]

    table = table_from_dataframe(Frame(), title="t")
    assert table.header == ["x", "x_2"] and all_rows(table) == [["1", "2"], ["3", "y"]]
    with pytest.raises(ConfigError):
        table_from_dataframe([1, 2], title="t")


# --------------------------------------------------------------------------- bad input


def _xlsx_header_only(path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    book.active.append(["a", "b"])
    book.save(path)


def _xlsx_blank(path: Path) -> None:
    pytest.importorskip("openpyxl").Workbook().save(path)


def _zip_not_workbook(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("hello.txt", "hi")


BAD_INPUTS: list[tuple[str, object, str]] = [
    ("empty.csv", b"", "empty (0 bytes)"),
    ("blank.csv", b"\n \n\n", "only blank lines"),
    ("header.csv", b"a,b\n\n", "has a header but no rows"),
    ("bom-latin1.csv", b"\xef\xbb\xbf" + "caf\u00e9,prix\n1,2\n".encode("latin-1"), "byte-order mark"),
    ("broken.csv.gz", b"\x1f\x8b\x08\x00" + bytes(20), "gzip"),
    ("picture.csv", b"\x89PNG\r\n\x1a\n" + bytes(100), "PNG image"),
    ("nul.csv", b"a,b\n1\x002,3\n", "NUL bytes"),
    ("text.xlsx", b"a,b\n1,2\n", "not an Excel .xlsx workbook"),
    ("old.xlsx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(100), "Excel 97-2003 (.xls)"),
    ("other.xlsx", _zip_not_workbook, "not a readable Excel workbook"),
    ("header.xlsx", _xlsx_header_only, "has a header but no rows"),
    ("blank.xlsx", _xlsx_blank, "no filled cells"),
    ("object.json", b'{"data": {"a": 1}}', "an object with no array of records under any of its keys"),
    ("numbers.json", b"[1, 2]", "item 0 of the array is a number"),
    ("empty.json", b" [ ] ", "has no records"),
    ("nofields.json", b"[{}, {}]", "no fields"),
    ("invalid.json", b'[{"a": 1},\n {"a": 2}, ]', "not valid JSON"),
    ("junk.json", b'[{"a": 1}] trailing', "extra data after the closing"),
    ("prose.md", b"# Notes\n\nJust | prose, no table.\n", "no table found"),
    ("page.html", b"<h1>Hi</h1><table><tr><th>a</th></tr></table>", "no table found"),
    ("legacy.xls", b"x", "Re-save .xls workbooks as .xlsx"),
    ("notes.txt", b"a,b\n1,2\n", "unsupported extension '.txt'"),
]


@pytest.mark.parametrize(("name", "content", "reason"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_raises_an_actionable_ingest_error(tmp_path: Path, name: str, content: object, reason: str) -> None:
    path = tmp_path / name
    if callable(content):
        content(path)
    else:
        assert isinstance(content, bytes)
        path.write_bytes(content)
    with pytest.raises(IngestError) as info:
        read_tables(path)
    assert info.value.path == str(path)
    assert reason in info.value.reason
    assert str(info.value).startswith(str(path))


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="no such file"):
        read_tables(tmp_path / "absent.csv")
    os.mkdir(tmp_path / "folder.csv")
    with pytest.raises(IngestError, match="not a regular file"):
        read_tables(tmp_path / "folder.csv")


# --------------------------------------------------------------------------- row text and Markdown


def test_serialize_row() -> None:
    header = ["Team", "Wins", "Notes", "Ratio"]
    assert serialize_row(header, ["Lakers", "57", "", "0.5"]) == "Team: Lakers | Wins: 57 | Ratio: 0.5"
    assert serialize_row(header, ["  Los\nAngeles ", 57, None]) == "Team: Los Angeles | Wins: 57"
    assert serialize_row(header, ["", "", "", ""]) == ""
    with pytest.raises(ConfigError, match="5 cells"):
        serialize_row(header, ["a"] * 5)


def test_render_markdown_escapes_and_round_trips() -> None:
    rows = [["a|b", "line\nbreak"], ["plain", ""]]
    text = render_markdown("Pipes", ["x|y", "z"], rows)
    assert text.splitlines()[:4] == ["Pipes", "", "| x\\|y | z |", "| --- | --- |"]
    assert "more row" not in text
    parsed = tables_from_markdown(text, name="r.md")
    assert len(parsed) == 1 and parsed[0].header == ["x|y", "z"]
    assert all_rows(parsed[0]) == [["a|b", "line break"], ["plain", ""]]


def test_render_markdown_truncates_by_rows_and_chars() -> None:
    header = ["n", "square"]
    text = render_markdown("Squares", header, ([str(i), str(i * i)] for i in range(10)), max_rows=4)
    assert text.count("\n| ") == 6 and text.endswith("(… 6 more rows)")  # header, separator, 4 rows
    assert render_markdown("T", header, [["1", "1"], ["2", "4"]], max_rows=1).endswith("(… 1 more row)")
    for limit in (60, 90, 120):
        cut = render_markdown("Squares", header, ([str(i), "x" * 10] for i in range(50)), max_chars=limit)
        shown = sum(1 for line in cut.splitlines()[4:] if line.startswith("| "))
        assert len(cut) <= limit
        assert cut.endswith(f"(… {50 - shown} more rows)")
    assert render_markdown("", header, [], max_rows=0).splitlines() == ["| n | square |", "| --- | --- |"]
