"""Gzip-compressed PDFs (``manual.pdf.gz``) are read like the PDF: real PDFs written with reportlab and gzipped in the
test, the real bundled MiniLM and a real PostgreSQL for the end-to-end check.

Debian compresses the manuals it ships (``/usr/share/doc/nettle-dev/nettle.pdf.gz``); a user who pointed
``universalrag ingest`` at such a folder got the file skipped as "a gzip-compressed PDF document; decompress it
first" although gzipped text and tables were read. The PDF is unpacked to a temporary file (PDFium and pdfplumber
read files) that is removed afterwards, also when the file turns out to be damaged.
"""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("pypdfium2")
pytest.importorskip("pdfplumber")
pytest.importorskip("reportlab")

from universalrag.errors import IngestError
from universalrag.ingest.detect import detect
from universalrag.ingest.documents import read_document
from universalrag.ingest.pipeline import ingest_paths
from universalrag.retrieve import search_corpus

ANSWER = "The block size flags -1 to -9 are ignored during decompression, since the block size is in the header."


def _pdf(path: Path) -> Path:
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=(612, 792))
    c.setFont("Times-Bold", 16)
    c.drawString(72, 720, "2.5. MEMORY MANAGEMENT")
    c.setFont("Times-Roman", 10)
    c.drawString(72, 696, ANSWER)
    c.save()
    return path


def _gzipped(pdf: Path, target: Path) -> Path:
    target.write_bytes(gzip.compress(pdf.read_bytes()))
    return target


@pytest.fixture
def unpack_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary folder of the test's own for the unpacked copies, to see that none is left behind."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_a_gzipped_pdf_is_a_pdf_document(tmp_path: Path) -> None:
    path = _gzipped(_pdf(tmp_path / "a.pdf"), tmp_path / "manual.pdf.gz")
    found = detect(path)
    assert (found.kind, found.format, found.compressed) == ("document", "pdf", True)


def test_a_gzipped_pdf_reads_like_the_pdf_and_leaves_no_copy(tmp_path: Path, unpack_dir: Path) -> None:
    pdf = _pdf(tmp_path / "a.pdf")
    doc = read_document(_gzipped(pdf, tmp_path / "manual.pdf.gz"))
    assert doc.text == read_document(pdf).text and ANSWER in doc.text
    assert not list(unpack_dir.iterdir())


def test_the_title_of_an_untitled_gzipped_pdf_drops_both_extensions(tmp_path: Path, unpack_dir: Path) -> None:
    from reportlab.pdfgen import canvas

    pdf = tmp_path / "plain.pdf"
    c = canvas.Canvas(str(pdf))
    c.setFont("Times-Roman", 10)
    c.drawString(72, 700, "Only a line of body text, no heading at all.")
    c.save()
    assert read_document(_gzipped(pdf, tmp_path / "nettle.pdf.gz")).title == "nettle"


def test_a_truncated_gzipped_pdf_fails_with_a_reason_and_leaves_no_copy(tmp_path: Path, unpack_dir: Path) -> None:
    data = gzip.compress(_pdf(tmp_path / "a.pdf").read_bytes())
    path = tmp_path / "manual.pdf.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(IngestError, match="damaged or truncated gzip"):
        read_document(path)
    assert not list(unpack_dir.iterdir())


def test_other_gzipped_binaries_are_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "logo.png.gz"
    path.write_bytes(gzip.compress(b"\x89PNG\r\n\x1a\n" + bytes(200)))
    found = detect(path)
    assert found.kind is None and "decompress it first" in found.reason


def test_a_folder_with_a_gzipped_pdf_is_ingested_once(  # type: ignore[no-untyped-def]
    tmp_path: Path, store, minilm, unpack_dir: Path
) -> None:
    folder = tmp_path / "doc" / "bzip2"
    folder.mkdir(parents=True)
    _gzipped(_pdf(tmp_path / "a.pdf"), folder / "manual.pdf.gz")
    result = ingest_paths(store, minilm, [folder])
    assert result.ok and not result.skipped, (result.failed, result.skipped)
    hits = search_corpus(store, minilm, "paragraph", "are the block size flags used when decompressing", k=3)
    assert hits and ANSWER in " ".join(hits[0].content.split())
    assert hits[0].uri is not None and hits[0].uri.endswith("manual.pdf.gz")
    again = ingest_paths(store, minilm, [folder])
    assert [o.status for o in again.outcomes] == ["unchanged"]
    assert not list(unpack_dir.iterdir())
