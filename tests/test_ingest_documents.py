"""Documents → pages of blocks: real PDF (reportlab), Word (python-docx) and PowerPoint (python-pptx) files.

No database here: these tests read files made in the test and check reading order, headings, running
headers and footers, tables, figures with captions and citing sentences, formulas, OCR of a scanned page,
and the typed errors for encrypted, truncated, corrupt and unsupported files.
"""

from __future__ import annotations

import io
import random
import shutil
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("pypdfium2")
pytest.importorskip("pdfplumber")
pytest.importorskip("docx")
pytest.importorskip("pptx")
pytest.importorskip("reportlab")

from PIL import Image  # noqa: E402
from support.documents import (  # noqa: E402
    FIGURE_CAPTION,
    INTRO,
    KEEPERS_TABLE,
    KITCHEN,
    LEFT_COLUMN,
    RIGHT_COLUMN,
    SCANNED_LINES,
    TABLE_CAPTION,
    write_chart_pdf,
    write_corrupt_pdf,
    write_deck_pptx,
    write_encrypted_pdf,
    write_paper_pdf,
    write_report_docx,
    write_report_pdf,
    write_scanned_pdf,
    write_table_pdf,
    write_truncated_pdf,
    write_two_column_pdf,
)

from universalrag.errors import IngestError  # noqa: E402
from universalrag.ingest.documents import (  # noqa: E402
    BlockKind,
    DocumentOptions,
    document_format,
    open_document,
    read_document,
)
from universalrag.ingest.documents.layout import Line, is_page_number, reading_order, strip_running_lines  # noqa: E402


def _kind(doc, kind):  # type: ignore[no-untyped-def]
    return [b for b in doc.blocks() if b.kind is kind]


# --------------------------------------------------------------------------- PDF


@pytest.fixture(scope="module")
def report_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_report_pdf(tmp_path_factory.mktemp("pdf") / "report.pdf", extra_pages=2)


def test_pdf_headings_paragraphs_and_heading_paths(report_pdf: Path) -> None:
    doc = read_document(report_pdf)
    assert doc.info.format == "pdf" and doc.info.page_count == 5
    assert doc.title == "Kestrel Point Lighthouse"
    headings = [(b.page, b.text) for b in _kind(doc, BlockKind.HEADING)]
    assert headings[:5] == [
        (1, "Kestrel Point Lighthouse"),
        (1, "1 Introduction"),
        (1, "2 Keepers"),
        (2, "3 The lamp room"),
        (3, "4 Life at the light"),
    ]
    intro = next(b for b in _kind(doc, BlockKind.PARAGRAPH) if b.text.startswith("Kestrel Point"))
    assert intro.text == INTRO
    assert intro.page == 1 and intro.heading_path == ("1 Introduction",)
    x0, top, x1, bottom = intro.bbox
    assert 0 < x0 < x1 < 595.3 and 0 < top < bottom < 841.9


def test_pdf_running_headers_footers_and_page_numbers_are_removed(report_pdf: Path) -> None:
    doc = read_document(report_pdf)
    assert "Kestrel Point Lighthouse Trust" not in doc.text
    assert not any(b.text.startswith("Page ") for b in doc.blocks())
    # the same header line read from the raw text layer is there: the reader removed it, the file has it
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(report_pdf))
    assert "Lighthouse Trust" in pdf[0].get_textpage().get_text_range()
    pdf.close()


def test_pdf_table_keeps_cells_header_caption_and_page(report_pdf: Path) -> None:
    doc = read_document(report_pdf)
    [table] = _kind(doc, BlockKind.TABLE)
    assert table.page == 1
    assert table.table.rows == KEEPERS_TABLE
    assert table.table.header == KEEPERS_TABLE[0] and table.table.body == KEEPERS_TABLE[1:]
    assert table.table.caption == TABLE_CAPTION and table.table.label == "1"
    assert table.table.title == TABLE_CAPTION
    assert table.heading_path == ("2 Keepers",)
    assert table.table.cited_by == ("Table 1 lists the keepers and the fuel of the lamp in each decade.",)
    # the caption went with the table, not into a paragraph of its own; cell text is not repeated as paragraphs
    paragraphs = [b.text for b in _kind(doc, BlockKind.PARAGRAPH)]
    assert TABLE_CAPTION not in paragraphs and not any("Whale oil" in p for p in paragraphs)


def test_pdf_figure_has_picture_caption_and_citing_sentence_from_another_page(report_pdf: Path) -> None:
    doc = read_document(report_pdf)
    [figure] = _kind(doc, BlockKind.FIGURE)
    assert figure.page == 2 and figure.heading_path == ("3 The lamp room",)
    assert figure.figure.caption == FIGURE_CAPTION and figure.figure.label == "1"
    assert figure.figure.origin == "embedded"
    citing = KITCHEN.split(". ", 1)[1]
    assert figure.figure.cited_by == (citing,)
    picture = Image.open(io.BytesIO(figure.figure.image))
    assert picture.format == "JPEG" and picture.size == (figure.figure.width, figure.figure.height)
    # a coffee photograph is mostly brown: the picture is the real image, not a blank render
    r, g, b = picture.convert("RGB").resize((1, 1)).getpixel((0, 0))
    assert r > b + 15
    assert figure.bbox[2] - figure.bbox[0] == pytest.approx(240, abs=2)


def test_pdf_two_column_page_is_read_column_by_column(tmp_path: Path) -> None:
    doc = read_document(write_two_column_pdf(tmp_path / "two.pdf"))
    texts = [b.text for b in doc.blocks()]
    assert texts == ["Harbour and Quarry", " ".join(LEFT_COLUMN), " ".join(RIGHT_COLUMN)]
    assert "7" not in texts  # the page number


def test_pdf_two_column_article_with_a_title_across_both_columns(tmp_path: Path) -> None:
    doc = read_document(write_paper_pdf(tmp_path / "paper.pdf"))
    order = [b.text.split()[0] if b.kind is BlockKind.PARAGRAPH else b.kind.value for b in doc.blocks()]
    assert order[0] == "heading" and order[1:5] == ["P0", "P1", "P2", "heading"]
    paragraphs = [o for o in order if o.startswith("P")]
    assert paragraphs == [f"P{i}" for i in range(9)]
    assert order.index("figure") > order.index("P4")
    heading = next(b for b in doc.blocks() if b.text == "2 Methods")
    assert heading.level == 2 and heading.heading_path == ("A Study of Harbour Lights", "2 Methods")


def test_pdf_vector_chart_is_rendered_as_a_figure_with_its_caption(tmp_path: Path) -> None:
    doc = read_document(write_chart_pdf(tmp_path / "chart.pdf"))
    [figure] = _kind(doc, BlockKind.FIGURE)
    assert figure.figure.origin == "rendered" and figure.figure.label == "2"
    assert figure.figure.cited_by == ("Figure 2 shows the visitors per year.",)
    picture = Image.open(io.BytesIO(figure.figure.image)).convert("RGB")
    colours = picture.getcolors(maxcolors=1 << 20)
    assert any(b > r + 40 for _, (r, _g, b) in colours)  # the blue bars were drawn


@pytest.mark.parametrize("ruling", ["grid", "booktabs", "none"])
def test_pdf_tables_cell_accuracy_on_random_tables(tmp_path: Path, ruling: str) -> None:
    rng = random.Random(3)
    tables = []
    for _ in range(4):
        header = [f"Column {c}" for c in range(rng.randint(2, 5))]
        rows = [
            [
                rng.choice(["north", "south", "east"]) + f" {rng.randint(1, 999)}"
                if c % 2
                else f"{rng.uniform(0, 1000):.2f}"
                for c in range(len(header))
            ]
            for _ in range(rng.randint(3, 12))
        ]
        tables.append([header, *rows])
    doc = read_document(write_table_pdf(tmp_path / "tables.pdf", tables, ruling=ruling))
    found = [b.table.rows for b in _kind(doc, BlockKind.TABLE)]
    assert found == [tuple(tuple(r) for r in t) for t in tables]


@pytest.mark.skipif(
    shutil.which("tesseract") is None, reason="the tesseract program is not installed (apt-get install tesseract-ocr)"
)
def test_scanned_page_is_read_by_ocr(tmp_path: Path) -> None:
    doc = read_document(write_scanned_pdf(tmp_path / "scan.pdf"))
    [page] = doc.pages
    assert page.ocr
    words = " ".join(doc.text.split()).lower()
    for line in SCANNED_LINES:
        assert line.lower() in words
    assert not _kind(doc, BlockKind.FIGURE)


def test_scanned_page_without_ocr_is_kept_as_a_picture_with_a_warning(tmp_path: Path) -> None:
    doc = read_document(write_scanned_pdf(tmp_path / "scan.pdf"), options=DocumentOptions(ocr=False))
    [figure] = _kind(doc, BlockKind.FIGURE)
    assert figure.figure.origin == "scanned" and figure.page == 1
    assert doc.warnings and "no text layer" in doc.warnings[0] and "page 1" in doc.warnings[0]
    assert Image.open(io.BytesIO(figure.figure.image)).width > 500


@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda p: write_encrypted_pdf(p), "password-protected"),
        (lambda p: write_corrupt_pdf(p), "damaged"),
        (lambda p: write_truncated_pdf(p, write_report_pdf(p.with_name("whole.pdf"))), "truncated"),
    ],
)
def test_bad_pdfs_raise_typed_errors_with_the_reason(tmp_path: Path, make, reason: str) -> None:  # type: ignore[no-untyped-def]
    path = make(tmp_path / "bad.pdf")
    with pytest.raises(IngestError) as err:
        read_document(path)
    assert reason in err.value.reason and err.value.path == str(path)


def test_pages_are_streamed_one_at_a_time(report_pdf: Path) -> None:
    reader = open_document(report_pdf)
    info = reader.open()
    pages = reader.pages()
    first = next(pages)
    assert first.number == 1 and info.page_count == 5
    assert [p.number for p in pages] == [2, 3, 4, 5]
    reader.close()


# --------------------------------------------------------------------------- Word and PowerPoint


def test_docx_headings_table_figure_formula_and_pages(tmp_path: Path) -> None:
    doc = read_document(write_report_docx(tmp_path / "report.docx"))
    assert doc.info.format == "docx" and doc.title == "Kestrel Point Lighthouse"
    assert "Lighthouse Trust" not in doc.text and "Confidential footer" not in doc.text
    [table] = _kind(doc, BlockKind.TABLE)
    assert table.table.rows == KEEPERS_TABLE and table.table.header_rows == 1
    assert table.table.title == TABLE_CAPTION and table.page == 1
    formula = next(b for b in _kind(doc, BlockKind.PARAGRAPH) if "energy relation" in b.text)
    assert "$E=mc^{2}$" in formula.text
    assert formula.heading_path == ("The lamp room", "Optics") and formula.page == 2
    [figure] = _kind(doc, BlockKind.FIGURE)
    assert figure.figure.caption == FIGURE_CAPTION and figure.figure.alt_text == "A cup of coffee on a wooden table"
    assert figure.figure.cited_by and figure.figure.cited_by[0].startswith("Figure 1 shows")
    assert figure.bbox is None and Image.open(io.BytesIO(figure.figure.image)).size == (300, 200)


def test_pptx_slides_with_title_body_notes_picture_and_table(tmp_path: Path) -> None:
    doc = read_document(write_deck_pptx(tmp_path / "deck.pptx"))
    assert doc.info.format == "pptx" and doc.title == "Lighthouse Budget 2026"
    assert [p.kind for p in doc.pages] == ["slide"] * 4
    first = doc.pages[0].blocks
    assert [b.kind for b in first] == [BlockKind.HEADING, BlockKind.PARAGRAPH, BlockKind.NOTES]
    assert first[1].text == "Lantern repairs cost 4,200 pounds\nSolar panels replaced in March"
    assert first[2].text == "Remind the board that the fog bell needs a new clapper."
    assert all(b.heading_path == ("Budget overview",) for b in first)
    [figure] = _kind(doc, BlockKind.FIGURE)
    assert figure.page == 2 and figure.figure.label == "1" and figure.figure.alt_text == "A cup of coffee"
    assert figure.bbox == pytest.approx((72.0, 144.0, 360.0, 336.0))
    table, chart = _kind(doc, BlockKind.TABLE)
    assert table.page == 3 and table.table.header == ("Item", "Pounds") and table.table.title == "Spending by item"
    assert chart.page == 4 and chart.table.title == "Museum visitors in 2025"
    assert chart.table.rows == (("Category", "2025"), ("Spring", "120"), ("Summer", "840"), ("Autumn", "310"))


# --------------------------------------------------------------------------- detection and unsupported formats


def test_format_is_detected_by_content_not_extension(tmp_path: Path, report_pdf: Path) -> None:
    renamed = tmp_path / "notes.txt"
    renamed.write_bytes(report_pdf.read_bytes())
    assert document_format(renamed) == "pdf"
    deck = write_deck_pptx(tmp_path / "deck.zip")
    assert document_format(deck) == "pptx"
    assert document_format(write_report_docx(tmp_path / "r.bin")) == "docx"
    plain = tmp_path / "plain.pdf"
    plain.write_text("just text")
    assert document_format(plain) is None
    with pytest.raises(IngestError, match="not a PDF, Word"):
        read_document(plain)


def test_odt_and_legacy_office_files_name_the_conversion(tmp_path: Path) -> None:
    odt = tmp_path / "minutes.odt"
    with zipfile.ZipFile(odt, "w") as z:
        z.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        z.writestr("content.xml", "<office:document-content/>")
    with pytest.raises(IngestError, match="soffice --headless --convert-to docx minutes.odt"):
        read_document(odt)
    legacy = tmp_path / "old.doc"
    legacy.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600))
    with pytest.raises(IngestError, match="legacy Office"):
        read_document(legacy)


def test_corrupt_docx_is_a_typed_error(tmp_path: Path) -> None:
    path = write_report_docx(tmp_path / "r.docx")
    data = path.read_bytes()
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
    broken = tmp_path / "broken.docx"
    with zipfile.ZipFile(broken, "w") as z:  # the package without its main document part's content
        for name in names:
            z.writestr(
                name, "<not-xml" if name == "word/document.xml" else zipfile.ZipFile(io.BytesIO(data)).read(name)
            )
    with pytest.raises(IngestError, match="damaged|not a readable"):
        read_document(broken)


# --------------------------------------------------------------------------- layout rules


def test_page_number_patterns() -> None:
    for text in ("12", "- 3 -", "Page 4", "page 4 of 19", "iv", "7 / 20"):
        assert is_page_number(text), text
    for text in ("12 keepers", "Page four was lost", "1987 automation"):
        assert not is_page_number(text), text


def test_reading_order_keeps_full_width_items_between_column_runs() -> None:
    width = 600.0
    left = [((50, 100 + 20 * i, 280, 112 + 20 * i), f"L{i}") for i in range(4)]
    right = [((320, 100 + 20 * i, 550, 112 + 20 * i), f"R{i}") for i in range(4)]
    figure = [((50, 200, 550, 300), "wide")]
    after = [((50, 320 + 20 * i, 280, 332 + 20 * i), f"l{i}") for i in range(3)] + [
        ((320, 320 + 20 * i, 550, 332 + 20 * i), f"r{i}") for i in range(3)
    ]
    order = reading_order([*right, *after, *figure, *left], width=width)
    assert order == ["L0", "L1", "L2", "L3", "R0", "R1", "R2", "R3", "wide", "l0", "l1", "l2", "r0", "r1", "r2"]


def test_running_lines_need_a_repeat_on_a_neighbouring_page() -> None:
    def page(n: int, header: str) -> tuple[int, list[Line], float]:
        return (
            n,
            [
                Line(header, (50, 20, 300, 30), 8),
                Line(f"Body {n}", (50, 300, 300, 312), 10),
                Line(f"{n}", (290, 800, 300, 810), 8),
            ],
            842.0,
        )

    pages = [
        page(1, "Annual report 2026"),
        page(2, "Annual report 2026"),
        page(3, "Annual report 2026"),
        page(4, "A heading only here"),
    ]
    kept = {n: [ln.text for ln in lines] for n, lines in strip_running_lines(pages)}
    assert kept[1] == ["Body 1"] and kept[3] == ["Body 3"]
    assert kept[4] == ["A heading only here", "Body 4"]


def test_pdf_ligatures_become_letters(tmp_path: Path) -> None:
    import reportlab
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(TTFont("Vera", str(Path(reportlab.__file__).parent / "fonts" / "Vera.ttf")))
    path = tmp_path / "ligatures.pdf"
    c = canvas.Canvas(str(path))
    c.setFont("Vera", 12)
    c.drawString(72, 700, "The \ufb01nal \ufb02ight of the season")
    c.save()
    assert [b.text for b in read_document(path).blocks()] == ["The final flight of the season"]


def test_without_the_pdf_library_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import sys

    from universalrag.errors import MissingDependencyError

    path = write_two_column_pdf(tmp_path / "two.pdf")
    monkeypatch.setitem(sys.modules, "pypdfium2", None)
    with pytest.raises(MissingDependencyError, match=r"universalrag-postgres\[documents\]"):
        read_document(path)


def test_pdf_page_labels_as_printed(tmp_path: Path) -> None:
    from reportlab.pdfgen import canvas

    path = tmp_path / "labels.pdf"
    c = canvas.Canvas(str(path))
    c.addPageLabel(0, style="ROMAN_LOWER", start=4)
    c.addPageLabel(1, style="ARABIC", start=1)
    c.drawString(72, 700, "The preface thanks the keepers.")
    c.showPage()
    c.drawString(72, 700, "Chapter one begins at the harbour.")
    c.showPage()
    c.save()
    doc = read_document(path)
    assert [(p.number, p.label) for p in doc.pages] == [(1, "iv"), (2, "1")]


def test_a_line_leading_into_a_table_joins_its_title(tmp_path: Path) -> None:
    """Two tables under one heading, each introduced by a line ending in a colon: titled by the heading alone they
    were alike ("Fees", "Fees (2)"), so a question about mooring could not tell them apart."""
    import docx

    d = docx.Document()
    d.add_heading("Fees", 1)
    d.add_paragraph("Visiting boats pay by the night; members pay by the season.")
    for lead, rows in (
        ("Harbour dues:", [("Boat", "Per night"), ("Under 8 m", "12 euros")]),
        ("Mooring fees:", [("Berth", "Per season"), ("Pontoon", "640 euros")]),
    ):
        d.add_paragraph(lead)
        table = d.add_table(rows=0, cols=2)
        for row in rows:
            for cell, value in zip(table.add_row().cells, row, strict=True):
                cell.text = value
    d.save(str(tmp_path / "fees.docx"))
    doc = read_document(tmp_path / "fees.docx")
    titles = [b.table.title for b in doc.blocks() if b.kind is BlockKind.TABLE and b.table is not None]
    assert titles == ["Fees — Harbour dues", "Fees — Mooring fees"]
