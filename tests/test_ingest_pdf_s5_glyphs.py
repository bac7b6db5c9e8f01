"""Glyphs without a Unicode mapping, as TeX's math extension font sets its big delimiters: a real PDF written byte by
byte in the test (a standard font whose encoding names glyphs no Unicode table knows), read end to end.

In a LaTeX paper (zlib's crc-doc) PDFium gave those glyphs as control characters ("CRCu \\x01 M(x) \\x11") that went
into passages and embeddings, and pdfplumber gave them as "(cid:1)": a display formula laid out in aligned pieces was
stored as a table of "(cid:0) (cid:1)" cells, which then ranked first for unrelated questions in the table corpus.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pypdfium2")
pytest.importorskip("pdfplumber")

from universalrag.ingest.documents import BlockKind, read_document

_FONT = (
    b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding << /Type /Encoding /BaseEncoding "
    b"/WinAnsiEncoding /Differences [1 /parenleftbigg 16 /parenleftBigg 17 /parenrightBigg] >> >>"
)


def _pdf(path: Path, pieces: list[tuple[int, int, bytes]]) -> Path:
    """A one-page PDF with each ``(x, y, text)`` of ``pieces`` drawn in that font at 10 pt."""
    content = b"BT /F1 10 Tf " + b" ".join(b"1 0 0 1 %d %d Tm (%s) Tj" % piece for piece in pieces) + b" ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> "
            b"/Contents 4 0 R >>"
        ),
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        _FONT,
    ]
    data, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, 1):
        offsets.append(len(data))
        data += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(data)
    data += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    data += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    data += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(data)
    return path


def test_unmapped_glyphs_leave_no_control_characters(tmp_path: Path) -> None:
    doc = read_document(_pdf(tmp_path / "paper.pdf", [(72, 700, b"The CRC \x01 M(x), v(x) \x11 is the remainder.")]))
    assert "The CRC M(x), v(x) is the remainder." in doc.text
    assert not [ch for ch in doc.text if ord(ch) < 0x20 and ch not in "\n\t"]


def test_a_formula_of_unmapped_delimiters_is_not_a_table(tmp_path: Path) -> None:
    pieces = [(72, 740, b"It is easy to see that the difference of the two values is")]
    for i, (left, middle, right) in enumerate(
        (
            (b"\x01 CRC B", b"= \x10 B", b"mod P \x11"),
            (b"\x01 x", b"\x11 y", b"\x10 z"),
            (b"\x10 u u", b"\x01 D", b"W \x11"),
            (b"\x11", b"\x10 v", b"\x01"),
        )
    ):
        y = 700 - 14 * i
        pieces += [(100, y, left), (250, y, middle), (400, y, right)]
    doc = read_document(_pdf(tmp_path / "paper.pdf", pieces))
    assert not [b for b in doc.blocks() if b.kind is BlockKind.TABLE]
    assert "(cid:" not in doc.text and "CRC B" in doc.text
