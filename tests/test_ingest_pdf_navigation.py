"""Tables of contents and indexes stay out of the text corpora: a real PDF (reportlab), the real bundled MiniLM and a
real PostgreSQL for the end-to-end check.

A manual's contents page and index are lists of names with dot leaders and page numbers ("threads . . . . 1"). As
passages they matched every question that named a chapter and pushed the chapter's own text down; like an HTML
page's navigation, they point at the text rather than say anything.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pypdfium2")
pytest.importorskip("pdfplumber")
pytest.importorskip("reportlab")

from universalrag.ingest.documents import BlockKind, read_document
from universalrag.ingest.documents.units import passages
from universalrag.ingest.pipeline import ingest_paths
from universalrag.retrieve import search_corpus
from universalrag.store import Store

CHAPTERS = (
    ("1 Introduction", 2),
    ("1.1 Thread safety", 2),
    ("2 Parsing schemas", 3),
    ("2.1 Naming of elements", 3),
    ("3 Encoding values", 3),
    ("Concept Index", 4),
)
INDEX = (
    ("A", None),
    ("ASN.1 schema", 3),
    ("element names", 3),
    ("T", None),
    ("thread safety", 2),
    ("threads", 2),
    ("V", None),
    ("values, encoding of", 3),
)
THREADS = (
    "The library keeps no global variables, so it is thread safe: several threads may parse schemas and "
    "encode values at the same time, each with its own structures."
)


def _leaders(c, entries, *, top: float) -> None:  # type: ignore[no-untyped-def]
    """Entries as TeX sets them: the name, spaced dots, the page number flush right (letters alone on a line)."""
    for i, (name, page) in enumerate(entries):
        y = top - 14 * i
        c.drawString(72, y, name)
        if page is None:
            continue
        start = 72 + c.stringWidth(name, "Times-Roman", 11) + 6
        c.drawString(start, y, " ".join("." * int((520 - start) / 5.6)))
        c.drawRightString(540, y, str(page))


def _manual(path: Path) -> Path:
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=(612, 792))
    c.setFont("Times-Bold", 16)
    c.drawString(72, 720, "Table of Contents")
    c.setFont("Times-Roman", 11)
    _leaders(c, CHAPTERS, top=690)
    c.showPage()
    c.setFont("Times-Bold", 16)
    c.drawString(72, 720, "1 Introduction")
    c.setFont("Times-Roman", 11)
    c.drawString(72, 696, "This manual describes a small library for schemas and their encodings.")
    c.setFont("Times-Bold", 13)
    c.drawString(72, 668, "1.1 Thread safety")
    c.setFont("Times-Roman", 11)
    cut = THREADS.rindex(" ", 0, 96)
    c.drawString(72, 646, THREADS[:cut])
    c.drawString(72, 632, THREADS[cut + 1 :])
    c.drawString(72, 600, "This chapter covers:")
    _leaders(c, (("Thread safety", 2), ("Naming of elements", 3), ("Encoding values", 3)), top=580)
    c.showPage()
    c.setFont("Times-Bold", 16)
    c.drawString(72, 720, "2 Parsing schemas")
    c.setFont("Times-Roman", 11)
    c.drawString(72, 696, "A schema is read once and kept as a tree; elements without a name are numbered.")
    c.showPage()
    c.setFont("Times-Bold", 16)
    c.drawString(72, 720, "Concept Index")
    c.setFont("Times-Roman", 11)
    _leaders(c, INDEX, top=690)
    c.showPage()
    c.save()
    return path


def test_contents_and_index_pages_are_navigation_not_text(tmp_path: Path) -> None:
    doc = read_document(_manual(tmp_path / "manual.pdf"))
    navigation = [b for b in doc.blocks() if b.kind is BlockKind.NAVIGATION]
    assert {b.page for b in navigation} == {1, 2, 4}  # the contents, a chapter's own list, the index
    assert doc.navigation == len(navigation)
    kept = " ".join(b.text for b in navigation)
    assert "values, encoding of" in kept and "2 Parsing schemas" in kept and "Naming of elements" in kept
    assert ". . . ." not in doc.text and "Table of Contents" in doc.text  # the headings stay
    found = passages(doc)
    assert found and not [p for p in found if ". . ." in p.text]
    assert any(THREADS in " ".join(p.text.split()) for p in found)
    headings = [b.text for b in doc.blocks() if b.kind is BlockKind.HEADING]
    assert headings == [
        "Table of Contents",
        "1 Introduction",
        "1.1 Thread safety",
        "2 Parsing schemas",
        "Concept Index",
    ]


def test_contents_stay_out_of_the_stored_passages_and_are_counted(store: Store, minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = _manual(tmp_path / "manual.pdf")
    result = ingest_paths(store, minilm, [path])
    assert result.ok, result.failed
    hits = search_corpus(store, minilm, "paragraph", "is the library thread safe", k=10)
    assert hits and not [h for h in hits if ". . ." in h.content]
    assert THREADS in " ".join(hits[0].content.split())
    [document] = search_corpus(store, minilm, "document", "schema library manual", k=1)
    assert document.metadata["navigation_removed"] == read_document(path).navigation >= 3
    assert ". . ." not in document.content
