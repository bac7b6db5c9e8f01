"""A GNU manual's reference entries as PDF lines: real PDFs written with reportlab in the shape Texinfo gives them,
read end to end (no database).

Texinfo sets each definition as "void sha256_update (struct sha256_ctx *ctx, size_t length)" with its category
"[Function]" flush right on the same line, and TeX draws the underscores of the argument list (a text font, not
typewriter) as short rules. Read naively (Nettle's manual), the tags formed a column of their own — pulled away from
their definitions, and a run of constants became a "table" of names and tags — and every argument read "struct
sha256 ctx", "size t", so a search for ``size_t`` or ``sha256_ctx`` found nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pypdfium2")
pytest.importorskip("pdfplumber")
pytest.importorskip("reportlab")

from universalrag.ingest.documents import BlockKind, read_document

_SIZE = 11.0


def _definition(c, y: float, pieces: list[str], tag: str, *, x: float = 90.0) -> None:  # type: ignore[no-untyped-def]
    """One definition line: ``pieces`` joined by underscores drawn as rules (as TeX does outside typewriter fonts),
    and ``tag`` flush right."""
    c.setFont("Times-Roman", _SIZE)
    for i, piece in enumerate(pieces):
        if i:
            c.rect(x, y - 0.6, 4.2, 0.8, stroke=0, fill=1)  # the underscore, on the baseline
            x += 4.6
        c.drawString(x, y, piece)
        x += c.stringWidth(piece, "Times-Roman", _SIZE)
    c.drawRightString(522, y, tag)


def _reference(path: Path) -> Path:
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=(612, 792))
    c.setFont("Times-Bold", 14)
    c.drawString(90, 720, "7.1.1 SHA256")
    c.setFont("Times-Roman", _SIZE)
    c.drawString(90, 700, "SHA256 is a member of the SHA2 family. It outputs hash values of 256 bits.")
    y = 676.0
    for name in ("SHA256_DIGEST_SIZE", "SHA256_BLOCK_SIZE", "SHA256_DATA_SIZE", "SHA256_STATE_SIZE"):
        c.setFont("Courier", _SIZE)
        c.drawString(90, y, name)
        c.setFont("Times-Roman", _SIZE)
        c.drawRightString(522, y, "[Constant]")
        y -= 18
    _definition(
        c, y, ["void sha256", "update (struct sha256", "ctx *ctx, size", "t length, const uint8", "t"], "[Function]"
    )
    c.drawString(130, y - 13, "*data)")
    c.drawString(118, y - 27, "Hash some more data. The result is the digest of everything hashed so far.")
    c.drawString(118, y - 50, "Extracts the digest. length may be smaller than SHA256_DIGEST_")
    c.drawString(118, y - 63, "SIZE, in which case only the first length octets are written.")
    c.save()
    return path


def test_a_definition_keeps_its_category_tag_and_its_underscores(tmp_path: Path) -> None:
    doc = read_document(_reference(tmp_path / "nettle.pdf"))
    paragraphs = [b.text for b in doc.blocks() if b.kind is BlockKind.PARAGRAPH]
    definition = "[Function] void sha256_update (struct sha256_ctx *ctx, size_t length, const uint8_t *data)"
    assert [p for p in paragraphs if p.startswith(definition)]
    assert "[Function]" not in paragraphs  # no tag stands alone, away from its definition


def test_a_run_of_tagged_constants_is_text_not_a_table(tmp_path: Path) -> None:
    doc = read_document(_reference(tmp_path / "nettle.pdf"))
    assert not [b for b in doc.blocks() if b.kind is BlockKind.TABLE]
    paragraphs = [b.text for b in doc.blocks() if b.kind is BlockKind.PARAGRAPH]
    assert "[Constant] SHA256_DIGEST_SIZE" in paragraphs and "[Constant] SHA256_STATE_SIZE" in paragraphs


def test_an_identifier_broken_after_its_underscore_is_joined(tmp_path: Path) -> None:
    """TeX may break ``SHA256_DIGEST_SIZE`` after an underscore; the two halves are one word again."""
    doc = read_document(_reference(tmp_path / "nettle.pdf"))
    assert "smaller than SHA256_DIGEST_SIZE, in which case" in doc.text


def test_a_rule_that_is_no_underscore_adds_nothing(tmp_path: Path) -> None:
    """A fraction bar (above the baseline) and a long rule between words stay what they were: spaces."""
    from reportlab.pdfgen import canvas

    path = tmp_path / "rules.pdf"
    c = canvas.Canvas(str(path), pagesize=(612, 792))
    c.setFont("Times-Roman", _SIZE)
    c.drawString(90, 700, "half of")
    c.rect(124.5, 703.5, 4.0, 0.6, stroke=0, fill=1)  # at the math axis, not the baseline
    c.drawString(130, 700, "the value is taken from the table on the next page.")
    c.save()
    assert "half of the value is taken" in read_document(path).text
