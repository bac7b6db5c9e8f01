"""Tables as real files write them: lines that lead into a CSV table (a comment, a title, scikit-learn's line of
counts), headers with numbers in them, and a blank first header cell over the rows' labels. Files are generated in
the test with the structure of the real ones (matplotlib's Stocks.csv, scikit-learn's iris.csv, breast_cancer.csv and
the tables of statistics of its .rst descriptions); the tests that search run the real
bundled MiniLM and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from universalrag.ingest.pipeline import ingest_paths
from universalrag.ingest.tables import ParsedTable, read_tables, serialize_row, tables_from_html
from universalrag.retrieve import search_corpus
from universalrag.store import Store

#: matplotlib's Stocks.csv: a comment line, the header, monthly rows, and rows that hold only a date.
STOCKS = """\
# Data source: https://finance.yahoo.com
Date,IBM,AAPL,MSFT,^GSPC
1990-01-01,10.97,0.24,0.40,329.08
1990-02-01,11.15,0.24,0.45,331.89
1990-02-05,,,,
1990-03-01,11.89,0.29,0.47,339.94
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", newline="")
    return path


def only(path: Path) -> ParsedTable:
    found = read_tables(path)
    assert len(found) == 1
    return found[0]


def texts(table: ParsedTable) -> list[str]:
    return [serialize_row(table.header, row) for row in table.rows()]


def test_comment_lines_before_the_header_are_the_description(tmp_path: Path) -> None:
    table = only(write(tmp_path / "Stocks.csv", STOCKS))
    assert table.header == ["Date", "IBM", "AAPL", "MSFT", "^GSPC"]
    assert texts(table)[0] == "Date: 1990-01-01 | IBM: 10.97 | AAPL: 0.24 | MSFT: 0.40 | ^GSPC: 329.08"
    assert "Date: 1990-02-05" in texts(table)  # a row holding only its date is kept: nothing is lost
    assert table.metadata["description"] == "Data source: https://finance.yahoo.com"
    assert table.metadata["leading_rows"] == 1 and table.metadata["row_count"] == 4
    assert table.metadata["header_synthesized"] is False
    # Several comment lines, blank lines among them, and a VCF-like "##" line without a space.
    vcf = write(tmp_path / "calls.csv", "##fileformat=VCFv4.2\n# made by caller 1.2, 2024\n\nchrom,pos,ref\n1,100,A\n")
    table = only(vcf)
    assert table.header == ["chrom", "pos", "ref"] and texts(table) == ["chrom: 1 | pos: 100 | ref: A"]
    assert table.metadata["description"] == "fileformat=VCFv4.2\nmade by caller 1.2, 2024"
    assert table.metadata["blank_rows_skipped"] == 0


def test_a_column_named_hash_is_not_a_comment(tmp_path: Path) -> None:
    # A row-number column named "#" (Pokémon lists and many exports), and a header "#CHROM" as wide as the rows.
    table = only(write(tmp_path / "pokemon.csv", "#,Name,Type\n1,Bulbasaur,Grass\n4,Charmander,Fire\n"))
    assert table.header == ["#", "Name", "Type"] and "description" not in table.metadata
    assert texts(table)[0] == "#: 1 | Name: Bulbasaur | Type: Grass"
    table = only(write(tmp_path / "calls.tsv", "#CHROM\tPOS\tREF\n1\t100\tA\n2\t200\tC\n"))
    assert table.header == ["#CHROM", "POS", "REF"]


def test_a_line_of_counts_is_not_the_header(tmp_path: Path) -> None:
    # scikit-learn's iris.csv: sample count, feature count, class names, as wide as the rows below.
    iris = write(tmp_path / "iris.csv", "150,4,setosa,versicolor,virginica\n5.1,3.5,1.4,0.2,0\n7.9,3.8,6.4,2.0,2\n")
    table = only(iris)
    assert table.header == ["column_1", "column_2", "column_3", "column_4", "column_5"]
    assert texts(table) == [
        "column_1: 5.1 | column_2: 3.5 | column_3: 1.4 | column_4: 0.2 | column_5: 0",
        "column_1: 7.9 | column_2: 3.8 | column_3: 6.4 | column_4: 2.0 | column_5: 2",
    ]
    assert table.metadata["description"] == "150, 4, setosa, versicolor, virginica"
    assert table.metadata["header_synthesized"] is True and table.metadata["row_count"] == 2
    # breast_cancer.csv: 4 cells over 31-wide rows (here 12): not the header of those rows.
    row = ",".join(str(i / 10) for i in range(1, 12)) + ",0"
    table = only(write(tmp_path / "breast_cancer.csv", f"569,30,malignant,benign\n{row}\n{row}\n"))
    assert table.header == [f"column_{i}" for i in range(1, 13)]
    assert table.metadata["description"] == "569, 30, malignant, benign" and table.metadata["row_count"] == 2
    assert texts(table)[0].startswith("column_1: 0.1 | column_2: 0.2 |")


def test_a_title_line_leads_into_the_header(tmp_path: Path) -> None:
    table = only(write(tmp_path / "sales.csv", "Quarterly sales\nRegion,Q1,Q2,Q3\nNorth,10,12,9\nSouth,7,8,11\n"))
    assert table.header == ["Region", "Q1", "Q2", "Q3"] and table.metadata["description"] == "Quarterly sales"


def test_headers_with_numbers_stay_headers(tmp_path: Path) -> None:
    years = only(
        write(tmp_path / "population.csv", "Country,1990,2000,2010\nFrance,56.7,59.0,62.9\nPeru,22.1,26.0,29.2\n")
    )
    assert years.header == ["Country", "1990", "2000", "2010"] and "description" not in years.metadata
    assert texts(years)[0] == "Country: France | 1990: 56.7 | 2000: 59.0 | 2010: 62.9"
    # A year column beside a named one: the first cell is a word, so the line is the header.
    mixed = only(write(tmp_path / "mixed.csv", "Country,1990,Population\nFrance,56.7,67000000\n"))
    assert mixed.header == ["Country", "1990", "Population"]


def test_a_first_line_that_starts_with_a_number_over_numbers_is_a_row(tmp_path: Path) -> None:
    # No header: the first line is a row like the others, never a header nor left out.
    table = only(write(tmp_path / "people.csv", "1,Alice,30\n2,Bob,25\n3,N/A,41\n"))
    assert table.header == ["column_1", "column_2", "column_3"] and table.metadata["row_count"] == 3
    assert texts(table)[0] == "column_1: 1 | column_2: Alice | column_3: 30"
    # A missing-value marker over a column of numbers does not make a row a line of counts.
    table = only(write(tmp_path / "readings.csv", "1,N/A,3\n2,5,6\n4,7,8\n"))
    assert table.metadata["row_count"] == 3 and "description" not in table.metadata


def test_a_blank_first_header_cell_over_row_labels_stays_blank(tmp_path: Path) -> None:
    # The table of statistics of scikit-learn's wine_data.rst, as an HTML table.
    html = (
        "<table><thead><tr><th></th><th>Min</th><th>Max</th><th>Mean</th><th>SD</th></tr></thead><tbody>"
        "<tr><td>Alcohol:</td><td>11.0</td><td>14.8</td><td>13.0</td><td>0.8</td></tr>"
        "<tr><td>Proline:</td><td>278</td><td>1680</td><td>746</td><td>315</td></tr></tbody></table>"
    )
    table = tables_from_html(html, name="wine_data.html")[0]
    assert table.header == ["", "Min", "Max", "Mean", "SD"]
    assert texts(table)[1] == "Proline: | Min: 278 | Max: 1680 | Mean: 746 | SD: 315"
    assert table.metadata["header_synthesized"] is False
    # A header row with no name at all (docutils' output for that table today) names no column.
    blank = tables_from_html(
        html.replace("Min", "").replace("Max", "").replace("Mean", "").replace("SD", ""), name="wine_data.html"
    )[0]
    assert texts(blank)[1] == "Proline: | column_2: 278 | column_3: 1680 | column_4: 746 | column_5: 315"
    assert blank.metadata["header_synthesized"] is True
    # A blank name over numbers (a DataFrame's index) is named: a bare "0" would say nothing.
    index = tables_from_html(html.replace("Alcohol:", "0").replace("Proline:", "1"), name="frame.html")[0]
    assert index.header[0] == "column_1"
    # The same in CSV.
    table = only(write(tmp_path / "stats.csv", ",Min,Max\nAlcohol,11.0,14.8\nProline,278,1680\n"))
    assert texts(table) == ["Alcohol | Min: 11.0 | Max: 14.8", "Proline | Min: 278 | Max: 1680"]


def test_a_commented_csv_is_found_by_its_column_names(store: Store, minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Before, the comment was the header: the rows read "# Data source: ...: 1990-01-01 | column_2: 10.97", and
    # nothing said which number was IBM's.
    write((tmp_path / "kb").mkdir() or tmp_path / "kb" / "Stocks.csv", STOCKS)
    assert ingest_paths(store, minilm, [tmp_path / "kb"]).ok
    hit = search_corpus(store, minilm, "table", "IBM stock value on 1990-01-01", k=1)[0]
    assert hit.matched_parts[0][1] == "Date: 1990-01-01 | IBM: 10.97 | AAPL: 0.24 | MSFT: 0.40 | ^GSPC: 329.08"
    assert hit.metadata["description"] == "Data source: https://finance.yahoo.com"


def test_a_date_spelled_otherwise_is_followed_by_its_iso_spelling() -> None:
    header = ["Date", "Close", "Note"]
    assert serialize_row(header, ["19-Sep-03", "29.96", ""]) == "Date: 19-Sep-03 (2003-09-19) | Close: 29.96"
    assert serialize_row(header, ["1-Jan-70", "", "September 19, 2003"]) == (
        "Date: 1-Jan-70 (1970-01-01) | Note: September 19, 2003 (2003-09-19)"
    )
    assert serialize_row(header, ["June 1996"]) == "Date: June 1996 (1996-06)"
    # ISO already, ambiguous (9 March or September 3?), no such day, or no date: as it is.
    for cell in ("2003-09-19", "9/3/2003", "31-Feb-03", "Warty Warthog", "Mayor 2020"):
        assert serialize_row(header, [cell]) == f"Date: {cell}"


def test_the_row_of_a_day_is_found_however_the_question_spells_it(store: Store, minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """matplotlib's msft.csv dates its rows "19-Sep-03"; asked for "2003-09-19" or "September 10, 2003", the row
    nearest in meaning was another day's (the encoder puts every date near every other)."""
    days = [f"{d}-{m}-03" for m in ("Jun", "Jul", "Aug", "Sep") for d in range(1, 29, 3)]
    lines = [f"{day},{20 + i / 10:.2f},{21 + i / 10:.2f},{5000000 + i * 1000}" for i, day in enumerate(days)]
    write((tmp_path / "kb").mkdir() or tmp_path / "kb" / "msft.csv", "Date,Open,Close,Volume\n" + "\n".join(lines))
    assert ingest_paths(store, minilm, [tmp_path / "kb"]).ok
    for query, day in (
        ("msft closing price on 2003-09-19", "19-Sep-03"),
        ("msft close on 19-Sep-03", "19-Sep-03"),
        ("Microsoft stock opening price on September 10, 2003", "10-Sep-03"),
        ("what did msft open at on 4 July 2003", "4-Jul-03"),
    ):
        hit = search_corpus(store, minilm, "table", query, k=1)[0]
        assert hit.matched_parts[0][1].startswith(f"Date: {day} ("), query


def test_a_row_of_the_month_asked_comes_before_one_holding_a_bare_number(store: Store, minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """matplotlib's Stocks.csv: "S&P 500 index level in June 1996" put first the row of March 1995, whose index
    stood at 500.7 ("500" is a term too); of rows holding as many terms, those holding the earlier one (the date)
    come first."""
    months = [f"{y}-{m:02d}-01" for y in (1995, 1996) for m in range(1, 13)]
    index = {d: 500.7 if d == "1995-03-01" else 600.3 + 3 * i for i, d in enumerate(months)}
    note = {"1995-03-01": "S&P 500 index level record"}  # nearer in meaning than June 1996's row
    lines = [f"{d},{10 + i / 7:.2f},{index[d]:.1f},{note.get(d, '')}" for i, d in enumerate(months)]
    write((tmp_path / "kb").mkdir() or tmp_path / "kb" / "stocks.csv", "Date,IBM,^GSPC,Note\n" + "\n".join(lines))
    assert ingest_paths(store, minilm, [tmp_path / "kb"]).ok
    hit = search_corpus(store, minilm, "table", "S&P 500 index level in June 1996", k=1)[0]
    assert hit.matched_parts[0][1].startswith("Date: 1996-06-01 |")
