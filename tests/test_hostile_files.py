"""Small files that expand to gigabytes: Office packages whose parts unpack far past their size on disk, a CSV
row of thousands of columns, texts far longer than an encoder reads. Each file is built small-but-hostile and
the caps are scaled down through ``IngestOptions(limits=…)``, so the tests stay small and fast; a subprocess
measures the peak memory where the cap is what keeps it bounded."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import pytest

from universalrag.errors import IngestError
from universalrag.ingest import IngestOptions, ingest_paths
from universalrag.ingest.limits import InputLimits, check_archive, use_limits

SMALL = InputLimits(member_bytes=1 << 20, archive_bytes=4 << 20, text_chars=200_000, columns=100)


def docx_with_text(path: Path, chars: int) -> Path:
    import docx

    document = docx.Document()
    document.add_heading("Quarterly report", level=1)
    document.add_paragraph("revenue " * (chars // 8))
    document.save(str(path))
    return path


def pptx_with_text(path: Path, chars: int) -> Path:
    """A one-slide deck whose text box holds ``chars`` characters, streamed into the slide's XML (the test
    process never holds the text whole)."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Roadmap"
    box = slide.shapes.add_textbox(Inches(1), Inches(2), Inches(6), Inches(3))
    box.text_frame.text = "MARKER"
    small = path.with_suffix(".small.pptx")
    deck.save(str(small))
    with zipfile.ZipFile(small) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            data = src.read(info)
            if info.filename != "ppt/slides/slide1.xml":
                out.writestr(info, data)
                continue
            head, tail = data.split(b"MARKER")
            with out.open("ppt/slides/slide1.xml", "w", force_zip64=True) as member:
                member.write(head)
                chunk = b"milestone " * 1_000 + b"</a:t></a:r><a:r><a:t>"  # runs of 10 kB: lxml's node limit
                for _ in range(chars // 10_000):
                    member.write(chunk)
                member.write(tail)
    small.unlink()
    return path


def xlsx_with_shared_strings(path: Path, strings: int, length: int) -> Path:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["id", "note"])
    for i in range(strings):
        sheet.append([i, f"{i:06d}" + "n" * length])
    book.save(str(path))
    return path


def good_text(folder: Path) -> Path:
    path = folder / "notes.txt"
    path.write_text("The heating in the north wing is switched on in October.\n")
    return path


def failures(report: Any) -> dict[str, str]:
    return {Path(o.path).name: o.error or "" for o in report.outcomes if o.status == "failed"}


def test_office_files_that_unpack_past_the_caps_fail_alone(store: Any, minilm: Any, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    docx_with_text(folder / "big.docx", 3_000_000)  # document.xml about 3 MB, the file a few kB
    pptx_with_text(folder / "big.pptx", 3_000_000)
    xlsx_with_shared_strings(folder / "big.xlsx", 3_000, 1_000)  # sharedStrings.xml about 3 MB
    good_text(folder)
    assert all((folder / n).stat().st_size < 200_000 for n in ("big.docx", "big.pptx", "big.xlsx"))
    report = ingest_paths(store, minilm, [folder], options=IngestOptions(limits=SMALL))
    failed = failures(report)
    assert set(failed) == {"big.docx", "big.pptx", "big.xlsx"}
    for name, error in failed.items():
        assert "member_bytes" in error and "over the cap" in error, (name, error)
    assert [o.status for o in report.outcomes if o.path.endswith("notes.txt")] == ["added"]
    assert not any(s["uri"].endswith(("big.docx", "big.pptx", "big.xlsx")) for s in store.sources())


def test_an_archive_whose_directory_understates_a_part_is_refused(tmp_path: Path) -> None:
    honest = docx_with_text(tmp_path / "honest.docx", 3_000_000)
    lying = tmp_path / "lying.docx"
    data = bytearray(honest.read_bytes())
    # Declare 1,000 bytes for word/document.xml in its local header and in the central directory.
    name = b"word/document.xml"
    with zipfile.ZipFile(honest) as z:
        info = z.getinfo("word/document.xml")
        real = info.file_size
    assert real > SMALL.member_bytes
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        start = 0
        while (at := data.find(signature, start)) >= 0:
            name_at = at + (30 if signature == b"PK\x03\x04" else 46)
            if data[name_at : name_at + len(name)] == name:
                struct.pack_into("<I", data, at + offset, 1000)
            start = at + 4
    lying.write_bytes(bytes(data))
    with zipfile.ZipFile(lying) as z:
        assert z.getinfo("word/document.xml").file_size == 1000
    with use_limits(SMALL), pytest.raises(IngestError) as caught:
        check_archive(lying)
    assert "document.xml" in caught.value.reason


def test_a_table_wider_than_the_column_cap_fails_alone(store: Any, minilm: Any, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "wide.csv").write_text(
        ",".join(f"c{i}" for i in range(500)) + "\n" + ",".join(str(i) for i in range(500)) + "\n"
    )
    (folder / "narrow.csv").write_text("city,population\nLyon,522000\nNantes,320000\n")
    report = ingest_paths(store, minilm, [folder], options=IngestOptions(limits=SMALL))
    failed = failures(report)
    assert set(failed) == {"wide.csv"} and "InputLimits.columns" in failed["wide.csv"]
    assert [o.status for o in report.outcomes if o.path.endswith("narrow.csv")] == ["added"]


def test_a_document_with_more_text_than_the_cap_fails_alone(store: Any, minilm: Any, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    docx_with_text(folder / "long.docx", 400_000)  # 400 kB of text, document.xml under the member cap
    good_text(folder)
    report = ingest_paths(store, minilm, [folder], options=IngestOptions(limits=SMALL))
    failed = failures(report)
    assert set(failed) == {"long.docx"} and "InputLimits.text_chars" in failed["long.docx"]


def run_measured(code: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; it prints one JSON line, which is returned."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_the_encoder_reads_a_bounded_prefix_of_a_huge_text(tmp_path: Path) -> None:
    """8 MB of text in one passage: the bundled encoder reads its first 256 tokens; memory must not follow the
    text's length (the tokenizer used to split all of it first)."""
    result = run_measured(
        """
        import json, resource
        import numpy as np
        from universalrag.embed import bundled_minilm
        enc = bundled_minilm()
        short = enc.embed(["alpha beta gamma " * 200])
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        huge = enc.embed(["alpha beta gamma " * 500_000])
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({"grew_kb": after - before, "same": bool(np.allclose(short, huge, atol=1e-5))}))
        """
    )
    assert result["same"]
    assert result["grew_kb"] < 64 * 1024, result


def test_peak_memory_of_a_hostile_slide_stays_bounded(tmp_path: Path) -> None:
    """A PowerPoint file of a few hundred kB whose slide unpacks to 200 MB, read with the default caps."""
    path = pptx_with_text(tmp_path / "bomb.pptx", 200_000_000)
    assert path.stat().st_size < 2_000_000
    result = run_measured(
        f"""
        import json, resource
        from universalrag.errors import IngestError
        from universalrag.ingest.documents import read_document
        import pptx, docx  # the readers' own imports, before the baseline
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            read_document({str(path)!r})
            reason = None
        except IngestError as e:
            reason = e.reason
        grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        print(json.dumps({{"reason": reason, "grew_kb": grew}}))
        """
    )
    assert result["reason"] and "member_bytes" in result["reason"]
    assert result["grew_kb"] < 64 * 1024, result


def test_unpacked_copies_left_by_a_killed_process_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A gzip-compressed PDF is unpacked into a folder named with the process id; a folder of a process that is
    gone (killed with SIGKILL mid-unpack) is removed by the next unpack, one of a live process is kept."""
    import gzip
    import tempfile

    pytest.importorskip("reportlab")
    from reportlab.pdfgen import canvas

    from universalrag.ingest.documents import read_document

    unpack = tmp_path / "tmp"
    unpack.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(unpack))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    stale = unpack / f"universalrag-unpack-{gone.pid}-x1"
    stale.mkdir()
    (stale / "manual.pdf").write_bytes(b"%PDF-1.4 half written")
    alive = unpack / f"universalrag-unpack-{os.getppid()}-x2"
    alive.mkdir()
    pdf = tmp_path / "a.pdf"
    page = canvas.Canvas(str(pdf))
    page.drawString(72, 700, "Keepers rotate the lamp every four hours.")
    page.save()
    packed = tmp_path / "manual.pdf.gz"
    packed.write_bytes(gzip.compress(pdf.read_bytes()))
    assert "four hours" in read_document(packed).text
    assert sorted(p.name for p in unpack.iterdir()) == [alive.name]


def test_text_after_an_entity_reference_in_a_word_file_is_kept(tmp_path: Path) -> None:
    """A Word part that declares its own entity and uses it inside a run: the text after the reference is read
    (it used to be dropped without a word); the entity is shown as written, never expanded."""
    from universalrag.ingest.documents import read_document

    plain = tmp_path / "plain.docx"
    document = __import__("docx").Document()
    document.add_paragraph("MARKER")
    document.save(str(plain))
    hostile = tmp_path / "entity.docx"
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(hostile, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "word/document.xml":
                head, body = data.split(b"?>", 1)
                data = head + b'?><!DOCTYPE w:document [<!ENTITY co "ACME">]>' + body
                data = data.replace(b"MARKER", b"Shipped by &co; to the harbour office on Monday")
            out.writestr(info, data)
    text = read_document(hostile).text
    assert "to the harbour office on Monday" in text and "Shipped by" in text


def test_the_caps_come_from_the_environment() -> None:
    from universalrag.config import Settings
    from universalrag.errors import ConfigError

    env = {
        "UNIVERSALRAG_MAX_PART_BYTES": "1048576",
        "UNIVERSALRAG_MAX_ARCHIVE_BYTES": "4194304",
        "UNIVERSALRAG_MAX_TEXT_CHARS": "200000",
        "UNIVERSALRAG_MAX_COLUMNS": "100",
    }
    options = IngestOptions.from_settings(Settings.from_env(env))
    assert options.limits == SMALL
    assert IngestOptions.from_settings(Settings.from_env({})).limits == InputLimits()
    with pytest.raises(ConfigError, match="UNIVERSALRAG_MAX_COLUMNS"):
        IngestOptions.from_settings(Settings.from_env({"UNIVERSALRAG_MAX_COLUMNS": "0"}))


def test_text_after_an_entity_reference_in_slide_tables_and_notes_is_kept(tmp_path: Path) -> None:
    from pptx import Presentation
    from pptx.util import Inches

    from universalrag.ingest.documents import read_document

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Deliveries"
    table = slide.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(6), Inches(2)).table
    table.cell(0, 0).text, table.cell(0, 1).text = "Carrier", "Note"
    table.cell(1, 0).text, table.cell(1, 1).text = "North line", "CELLMARK"
    slide.notes_slide.notes_text_frame.text = "NOTEMARK"
    plain = tmp_path / "plain.pptx"
    deck.save(str(plain))
    hostile = tmp_path / "entity.pptx"
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(hostile, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            data = src.read(info)
            if b"CELLMARK" in data or b"NOTEMARK" in data:
                head, body = data.split(b"?>", 1)
                root = body.split(b"<", 2)[1].split(b" ", 1)[0]
                data = head + b"?><!DOCTYPE " + root + b' [<!ENTITY co "ACME">]>' + body
                data = data.replace(b"CELLMARK", b"via &co; every Monday").replace(b"NOTEMARK", b"Ask &co; for the key")
            out.writestr(info, data)
    text = read_document(hostile).text
    assert "every Monday" in text and "for the key" in text
