"""Page layout of real manuals and papers: PDFs written with reportlab in the shapes found in the bzip2 manual and a
LaTeX paper (zlib's crc-doc), read end to end (no database).

- A title wrapped over two lines ("Everything we know about CRC but afraid to" / "forget") was a title and a heading
  "forget" that began the heading path of every passage of the paper.
- A chapter opening with its own table of contents (DocBook's "Table of Contents" under "3. Programming with
  libbzip2"): the page counts as a contents page, and its prose — the chapter's introduction and first section —
  was dropped with the entries; its "Table of Contents" heading replaced the chapter in the heading path.
- LaTeX's article class sets the page number 12 % up from the bottom, outside the margin tenth that was searched,
  so "3" sat inside sentences running over the page break.
- A table set without rules whose header is two lines ("Compress" over "usage") and stands a blank line above the
  body lost its header to the passages; a ruled table with no rules between its body rows came out as one row
  ("CRC-32 CRC-64 CRC-128 | 2.083 2.093 2.914").
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pypdfium2")
pytest.importorskip("pdfplumber")
pytest.importorskip("reportlab")

from universalrag.ingest.documents import BlockKind, read_document


def _canvas(path: Path):  # type: ignore[no-untyped-def]
    from reportlab.pdfgen import canvas

    return canvas.Canvas(str(path), pagesize=(612, 792))


def _draw(c, *pieces: tuple[str, float, float, float, str]) -> None:  # type: ignore[no-untyped-def]
    """Draw each ``(font, size, x, y, text)``."""
    for font, size, x, y, text in pieces:
        c.setFont(font, size)
        c.drawString(x, y, text)


def test_a_title_wrapped_over_two_lines_is_one_heading(tmp_path: Path) -> None:
    path = tmp_path / "paper.pdf"
    c = _canvas(path)
    c.setFont("Times-Roman", 17.2)
    c.drawCentredString(306, 792 - 178, "Everything we know about CRC but afraid to")
    c.drawCentredString(306, 792 - 203, "forget")  # 25 pt below: a loose box ends 7 pt above the next line
    c.setFont("Times-Roman", 10)
    for i in range(6):
        c.drawString(72, 792 - 260 - 12 * i, f"Body text line {i} of the abstract, which says what the paper does and")
    c.save()
    doc = read_document(path)
    headings = [b.text for b in doc.blocks() if b.kind is BlockKind.HEADING]
    assert headings == ["Everything we know about CRC but afraid to forget"]
    assert doc.title == "Everything we know about CRC but afraid to forget"


def _chapter(path: Path) -> Path:
    """A chapter's first page as DocBook sets it: heading, "Table of Contents", entries, then the prose."""
    c = _canvas(path)
    _draw(
        c,
        ("Helvetica-Bold", 24, 72, 700, "3. Programming with libbzip2"),
        ("Helvetica-Bold", 17, 72, 660, "Table of Contents"),
    )
    c.setFont("Times-Roman", 10)
    for i in range(12):
        name = f"3.{i + 1}. Section number {i + 1}"
        c.drawString(72, 640 - 12 * i, name)
        start = 72 + c.stringWidth(name, "Times-Roman", 10) + 6
        c.drawString(start, 640 - 12 * i, " ".join("." * int((520 - start) / 5)))
        c.drawRightString(540, 640 - 12 * i, str(8 + i))
    c.drawString(72, 470, "This chapter describes the programming interface to libbzip2.")
    c.setFont("Helvetica-Bold", 20)
    c.drawString(72, 440, "3.1. Top-level structure")
    c.setFont("Times-Roman", 10)
    c.drawString(72, 420, "libbzip2 is a flexible library for compressing and decompressing data in the bzip2 format.")
    c.save()
    return path


def test_prose_on_a_chapter_contents_page_is_kept_under_the_chapter(tmp_path: Path) -> None:
    doc = read_document(_chapter(tmp_path / "manual.pdf"))
    paragraphs = {b.text: b.heading_path for b in doc.blocks() if b.kind is BlockKind.PARAGRAPH}
    intro = "This chapter describes the programming interface to libbzip2."
    assert intro in paragraphs
    assert paragraphs[intro][0] == "3. Programming with libbzip2"
    assert any(t.startswith("libbzip2 is a flexible library") for t in paragraphs)
    assert "Section number 4" not in doc.text  # the entries stay navigation


def test_a_page_number_a_little_inside_the_bottom_margin_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "paper.pdf"
    c = _canvas(path)
    for page in (1, 2, 3):
        c.setFont("Times-Roman", 10)
        for i in range(40):
            c.drawString(72, 720 - 14 * i, f"Sentence {i} on page {page} runs on and on about cyclic codes and")
        c.drawCentredString(306, 792 - 704, str(page))  # 11 % up from the bottom
        c.showPage()
    c.save()
    doc = read_document(path)
    text = " ".join(doc.text.split())
    assert not [b for b in doc.blocks() if b.text.strip() in ("1", "2", "3")]
    assert "codes and 1 Sentence" not in text and "codes and 2 Sentence" not in text


def test_a_two_line_header_over_a_table_set_without_rules(tmp_path: Path) -> None:
    path = tmp_path / "manual.pdf"
    c = _canvas(path)
    c.setFont("Times-Roman", 10)
    c.drawString(72, 792 - 121, "Here is a table which summarises the maximum memory usage for different block sizes.")
    xs = (90, 135, 190, 250, 317)
    for x, text in zip(xs, ("", "Compress", "Decompress", "Decompress", "Corpus"), strict=True):
        c.drawString(x, 792 - 177, text)
    for x, text in zip(xs, ("Flag", "usage", "usage", "-s usage", "Size"), strict=True):
        c.drawString(x, 792 - 189, text)
    for i in range(6):
        row = (f"-{i + 1}", f"{1200 + 800 * i}k", f"{500 + 400 * i}k", f"{350 + 250 * i}k", f"{914704 - 9000 * i}")
        for x, text in zip(xs, row, strict=True):
            c.drawString(x + 4, 792 - 212 - 12 * i, text)
    c.save()
    [table] = [b.table for b in read_document(path).blocks() if b.kind is BlockKind.TABLE and b.table is not None]
    assert table.header == ("Flag", "Compress usage", "Decompress usage", "Decompress -s usage", "Corpus Size")
    assert table.body[3][:2] == ("-4", "3600k")


def test_a_row_of_stacked_cells_is_split_into_rows() -> None:
    from universalrag.ingest.documents.cells import split_stacked

    rows = [
        ["Method", "Slicing", "Multiword", "Improvement"],
        ["CRC-32\nCRC-64\nCRC-128", "2.083\n2.093\n2.914", "1.16\n1.16\n1.68", "1.79\n1.79\n1.73"],
    ]
    assert split_stacked(rows)[1:] == [
        ["CRC-32", "2.083", "1.16", "1.79"],
        ["CRC-64", "2.093", "1.16", "1.79"],
        ["CRC-128", "2.914", "1.68", "1.73"],
    ]
    prose = [["Option", "Meaning", "Default"], ["--fast\n--best", "the block size of the\ncompressor", "off\non"]]
    assert split_stacked(prose)[1] == prose[1]  # a line of more than four words is wrapped text, not a row


def test_header_lines_stop_where_the_data_begins() -> None:
    from universalrag.ingest.documents.cells import header_rows

    assert header_rows([("", "Compress"), ("Flag", "usage"), ("-1", "1200k"), ("-2", "2000k")]) == 2
    assert header_rows([("Option", "Meaning"), ("-v", "verbose"), ("-q", "quiet")]) == 1
    assert header_rows([("1", "2"), ("3", "4")]) == 0


def test_a_ruled_table_without_rules_between_its_rows_keeps_its_rows(tmp_path: Path) -> None:
    """LaTeX's ``|l|r|r|r|`` with \\hline only around the header and at the end: pdfplumber sees one body cell per
    column holding every row."""
    path = tmp_path / "paper.pdf"
    c = _canvas(path)
    xs, top, bottom = (100, 180, 250, 330, 420), 600, 540
    for x in xs:
        c.line(x, top, x, bottom)
    for y in (top, 584, bottom):
        c.line(xs[0], y, xs[-1], y)
    c.setFont("Times-Roman", 10)
    for x, text in zip(xs, ("Method", "Slicing", "Multiword", "Improvement"), strict=False):
        c.drawString(x + 4, 589, text)
    for i, row in enumerate(
        (
            ("CRC-32", "2.083", "1.164", "1.79"),
            ("CRC-64", "2.093", "1.164", "1.79"),
            ("CRC-128", "2.914", "1.684", "1.73"),
        )
    ):
        for x, text in zip(xs, row, strict=False):
            c.drawString(x + 4, 572 - 12 * i, text)
    c.save()
    [table] = [b.table for b in read_document(path).blocks() if b.kind is BlockKind.TABLE and b.table is not None]
    assert table.header == ("Method", "Slicing", "Multiword", "Improvement")
    assert table.body == (
        ("CRC-32", "2.083", "1.164", "1.79"),
        ("CRC-64", "2.093", "1.164", "1.79"),
        ("CRC-128", "2.914", "1.684", "1.73"),
    )


def test_contents_entries_without_dot_leaders_are_navigation_not_a_table(tmp_path: Path) -> None:
    """LaTeX's \\tableofcontents sets chapter entries without leaders ("1  Definition of CRC  2") and section entries
    with them: the chapter entries were stored as a table, the first hit for "who wrote the paper"."""
    path = tmp_path / "paper.pdf"
    c = _canvas(path)
    intro = "This paper describes CRC algorithms as they evolved over time, in natural steps."
    _draw(c, ("Times-Roman", 10, 72, 760, intro), ("Times-Roman", 14.3, 72, 720, "Contents"))
    c.setFont("Times-Roman", 10)
    y = 696
    for number, name, page in (
        ("1", "Definition of CRC", "2"),
        ("2", "Related work", "3"),
        ("3", "CRC tricks and tips", "4"),
    ):
        c.drawString(72, y, f"{number} {name}")
        c.drawRightString(480, y, page)
        y -= 22
    for number, name, page in (
        ("3.1", "Incremental CRC computation", "4"),
        ("3.2", "Changing initial value", "4"),
        ("3.3", "Concatenation of CRCs", "5"),
    ):
        c.drawString(88, y + 10, f"{number} {name} " + " ".join("." * 20))
        c.drawRightString(480, y + 10, page)
        y -= 12
    c.save()
    doc = read_document(path)
    assert not [b for b in doc.blocks() if b.kind is BlockKind.TABLE]
    assert "Definition of CRC" not in doc.text and "Related work" not in doc.text
    assert "This paper describes CRC algorithms" in doc.text
