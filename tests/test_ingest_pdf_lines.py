"""PDF lines as a person reads them: real PDFs written with reportlab, read end to end (no database).

Checks that the pieces of one visual line stay in order when their fonts give them slightly different tops, that
a line-end hyphen is dropped only where it splits a lower-case word, and that a page of vector drawing without
text is called what it is rather than a scan waiting for OCR.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pypdfium2")
pytest.importorskip("pdfplumber")
pytest.importorskip("reportlab")

from universalrag.ingest.documents import BlockKind, DocumentOptions, read_document


def _paragraphs(path: Path, pieces: list[tuple[str, float, float, str]]) -> list[str]:
    """The paragraphs read from a one-page PDF with each ``(font, x, y, text)`` of ``pieces`` drawn at 10 pt."""
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=(612, 792))
    for font, x, y, text in pieces:
        c.setFont(font, 10)
        c.drawString(x, y, text)
    c.save()
    return [b.text for b in read_document(path).blocks() if b.kind is BlockKind.PARAGRAPH]


def test_pieces_of_one_line_in_two_fonts_stay_left_to_right(tmp_path: Path) -> None:
    """An option in a typewriter font and its meaning in a text font on one baseline: PDFium's box of the text font
    starts about a point higher, and sorting on the top put the meaning first ("... and exit -v, --version")."""
    found = _paragraphs(
        tmp_path / "usage.pdf",
        [
            ("Helvetica", 72, 700, "The last option of the program is:"),
            ("Courier", 72, 680, "-v, --version"),
            ("Helvetica", 226, 680, "output version information and exit"),
        ],
    )
    assert "-v, --version output version information and exit" in found


def test_a_line_end_hyphen_is_dropped_only_inside_a_lower_case_word(tmp_path: Path) -> None:
    """PDFium marks every line-end hyphen as a possible word break; "YYMMDDhhmm-hh'mm'" lost its minus sign."""
    lines = [
        'A time is written in one of these formats: "YYMMDDhhmmssZ", "YYMMDDhhmm-',
        "hh'mm'\" or the longer form with seconds. The library does the manip-",
        "ulation of the trees for you, and the UTF-",
        "8 strings are kept as they are.",
    ]
    [text] = _paragraphs(tmp_path / "hyphens.pdf", [("Helvetica", 72, 700 - 12 * i, t) for i, t in enumerate(lines)])
    assert "\"YYMMDDhhmm-hh'mm'\"" in text
    assert "the manipulation of the trees" in text and "the UTF-8 strings" in text


def test_a_page_of_vector_drawing_without_text_is_a_drawing_not_a_scan(tmp_path: Path) -> None:
    """A logo drawn with paths (matplotlib's icon PDF is one) was labelled "Scanned page 1", with advice to install
    Tesseract, which has nothing to read there."""
    from reportlab.pdfgen import canvas

    path = tmp_path / "logo.pdf"
    c = canvas.Canvas(str(path), pagesize=(300, 300))
    c.setFillColorRGB(0.1, 0.3, 0.7)
    for i in range(6):
        c.circle(150, 150, 120 - 18 * i, stroke=1, fill=i % 2)
    c.line(30, 30, 270, 270)
    c.save()
    doc = read_document(path, options=DocumentOptions(ocr=None))
    [figure] = [b for b in doc.blocks() if b.kind is BlockKind.FIGURE]
    assert figure.figure is not None and figure.figure.origin == "rendered"
    assert figure.text == "Drawing on page 1"
    [warning] = doc.warnings
    assert "drawings only" in warning and "Tesseract" not in warning and "scan" not in warning.lower()
