"""PDF tables never swallow text they do not hold: real PDFs written with reportlab, read end to end.

Two ways a row used to vanish: PDFium's line boxes (which find a table set with white space) sit lower than
pdfminer's word boxes (which cut it into cells) in fonts whose ascent and descent span less than an em, so the first
row fell outside the crop; and every line inside a table's box was then dropped from the text, held by a cell or
not.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("pypdfium2")
pytest.importorskip("pdfplumber")
pytest.importorskip("reportlab")

from universalrag.ingest.documents import BlockKind, read_document

OPTIONS = (
    ("-c, --check", "checks the syntax only"),
    ("-o, --output=FILE", "output file"),
    ("-n, --name=NAME", "array name"),
    ("-h, --help", "display this help and exit"),
)


def _short_font(folder: Path) -> str:
    """Register a Type 1 font whose ascent and descent span 0.7 em (as TeX's Computer Modern fonts nearly do):
    reportlab's bundled Arial-like face with its metrics cut down. Returns the font's name."""
    import reportlab
    from reportlab.pdfbase import pdfmetrics

    fonts = Path(reportlab.__file__).parent / "fonts"
    afm = (fonts / "_a______.afm").read_text(encoding="latin-1")
    for key, value in (("FontBBox", "-222 -150 1006 550"), ("Ascender", "550"), ("Descender", "-150")):
        afm = re.sub(rf"^{key} .*$", f"{key} {value}", afm, flags=re.MULTILINE)
    (folder / "short.afm").write_text(afm, encoding="latin-1")
    face = pdfmetrics.EmbeddedType1Face(str(folder / "short.afm"), str(fonts / "_a______.pfb"))
    pdfmetrics.registerTypeFace(face)
    pdfmetrics.registerFont(pdfmetrics.Font("ShortArial", face.name, "WinAnsiEncoding"))
    return "ShortArial"


def test_first_row_of_a_table_set_with_white_space_is_kept(tmp_path: Path) -> None:
    """libtasn1's manual lost "-c, --check  checks the syntax only" from its option tables this way."""
    from reportlab.pdfgen import canvas

    font = _short_font(tmp_path)
    path = tmp_path / "options.pdf"
    c = canvas.Canvas(str(path), pagesize=(612, 792))
    c.setFont(font, 11)
    c.drawString(100, 700, "The program asn1Parser reads a schema and accepts these options:")
    for i, (option, meaning) in enumerate(OPTIONS):
        c.drawString(100, 670 - 13 * i, option)
        c.drawString(226, 670 - 13 * i, meaning)
    c.drawString(100, 590, "The output file holds the schema as a C array.")
    c.save()
    doc = read_document(path)
    [table] = [b.table for b in doc.blocks() if b.kind is BlockKind.TABLE and b.table is not None]
    assert table.rows == OPTIONS
    words = " ".join(doc.text.split())
    assert words.count("checks the syntax only") == 1  # in the table, not lost and not twice


def test_a_code_listing_set_in_columns_stays_text(tmp_path: Path) -> None:
    """libtasn1's manual sets an ASN.1 example's fields one to a line, names and types aligned like two columns:
    it was read as a table ("column_1 | Dss-Sig-Value ::= SEQUENCE {", rows "r | INTEGER,") and cut out of the
    passage that explains it. Its lines end as code does; an option table beside it stays a table."""
    from reportlab.pdfgen import canvas

    font = _short_font(tmp_path)
    path = tmp_path / "listing.pdf"
    c = canvas.Canvas(str(path), pagesize=(612, 792))
    c.setFont(font, 11)
    c.drawString(100, 720, "Given the following schema:")
    c.drawString(100, 700, "Dss-Sig-Value ::= SEQUENCE {")
    for i, (name, kind) in enumerate(
        (("r", "INTEGER,"), ("s", "INTEGER,"), ("other", "OtherStruct,"), ("z", "INTEGER OPTIONAL,"))
    ):
        c.drawString(120, 687 - 13 * i, name)
        c.drawString(200, 687 - 13 * i, kind)
    c.drawString(100, 635, "}")
    c.drawString(100, 600, "The program asn1Coding encodes a value of it and accepts these options:")
    for i, (option, meaning) in enumerate(OPTIONS):
        c.drawString(100, 570 - 13 * i, option)
        c.drawString(226, 570 - 13 * i, meaning)
    c.save()
    doc = read_document(path)
    tables = [b.table for b in doc.blocks() if b.kind is BlockKind.TABLE and b.table is not None]
    assert [t.rows for t in tables] == [OPTIONS]
    words = " ".join(doc.text.split())
    assert "other OtherStruct," in words and "z INTEGER OPTIONAL," in words


def test_text_inside_a_tables_box_but_in_no_cell_stays_text(tmp_path: Path) -> None:
    """A ruled table whose last row is narrower than the others: a note set beside that row lies inside the table's
    box but in none of its cells, and used to be dropped with the table's lines."""
    from reportlab.pdfgen import canvas

    path = tmp_path / "grid.pdf"
    c = canvas.Canvas(str(path), pagesize=(612, 792))
    c.setFont("Helvetica", 10)
    c.drawString(100, 740, "Opening hours of the harbour office are in the table below.")
    top, mid, low = 700, 680, 660
    for y, right in ((top, 400), (mid, 400), (low, 300)):
        c.line(100, y, right, y)
    for x, bottom in ((100, low), (200, low), (300, low), (400, mid)):
        c.line(x, top, x, bottom)
    for x, y, text in (
        (105, 686, "Day"),
        (205, 686, "Opens"),
        (305, 686, "Closes"),
        (105, 666, "Monday"),
        (205, 666, "08:00"),
    ):
        c.drawString(x, y, text)
    c.drawString(305, 666, "Closed on holidays")
    c.save()
    doc = read_document(path)
    tables = [b.table.rows for b in doc.blocks() if b.kind is BlockKind.TABLE and b.table is not None]
    assert tables and tables[0][0] == ("Day", "Opens", "Closes")
    paragraphs = " ".join(b.text for b in doc.blocks() if b.kind is BlockKind.PARAGRAPH)
    assert "Closed on holidays" in paragraphs


HEADER_FIELDS = (
    "MAJOR_VERSION",
    "MINOR_VERSION",
    "ALIAS_LIST_OFFSET",
    "PARENT_LIST_OFFSET",
    "REVERSE_SUFFIX_TREE_OFFSET_TOO",
    "GLOB_LIST_OFFSET",
    "MAGIC_LIST_OFFSET",
)


def test_a_wider_row_and_a_title_over_the_columns_stay_in_one_table(tmp_path: Path) -> None:
    """The mime.cache header of the shared-mime-info spec: a title ("Header:") over the columns, then rows of size,
    type and field name, one name longer than the rest. The long row cut the table in two (its cell was wider than
    a table set with white space allowed), and the title, once kept, bridged the gaps between the columns."""
    from reportlab.pdfbase.pdfmetrics import stringWidth
    from reportlab.pdfgen import canvas

    width = 595.0
    longest = stringWidth(f"CARD32 {HEADER_FIELDS[4]}", "Helvetica", 9)
    assert 0.3 * width < longest < 0.45 * width  # wider than a first row may be, narrow enough to continue one
    path = tmp_path / "cache.pdf"
    c = canvas.Canvas(str(path), pagesize=(width, 842))
    c.setFont("Helvetica", 10)
    c.drawString(120, 760, "The cache files hold the same information in a binary format that can be mapped:")
    c.setFont("Helvetica", 9)
    c.drawString(120, 730, "ReverseSuffixTreeLeafNode:")
    for i, field in enumerate(HEADER_FIELDS):
        y = 718 - 11.7 * i
        c.drawString(120, y, "2" if i < 2 else "4")
        c.drawString(141, y, "CARD16" if i < 2 else "CARD32")
        c.drawString(184, y, field)
    c.save()
    doc = read_document(path)
    [table] = [b.table for b in doc.blocks() if b.kind is BlockKind.TABLE and b.table is not None]
    assert table.rows[0] == ("ReverseSuffixTreeLeafNode:", "", "")
    assert [row[2] for row in table.rows[1:]] == list(HEADER_FIELDS)
    assert table.rows[1][:2] == ("2", "CARD16") and table.rows[-1][:2] == ("4", "CARD32")
