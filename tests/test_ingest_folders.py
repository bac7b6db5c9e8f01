"""Real folders: files we do not ingest are skipped (not failed), kinds come from the content, legacy encodings
are decoded, HTML boilerplate stays out, multi-page TIFFs and .ts/.ogv videos are read.

Every file is real: written by the test with the library that makes that kind of file (gzip, NumPy, Pillow,
PyAV), the committed Texinfo-style page ``tests/data/html/texinfo_tides.html`` (ISO-8859-1, a navigation
header, a layout table with a nested menu, one real data table), and Debian's HTML manuals under
/usr/share/doc and the Rust toolchain's Cargo book (mdBook) when this machine has them. The database tests use the
real PostgreSQL and MiniLM encoder.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from support.kb import VIDEO_OPTIONS
from support.video import ContainerCodecs, encoder_available, write_video

from universalrag.errors import IngestError
from universalrag.ingest.detect import detect
from universalrag.ingest.pipeline import IngestOptions, ingest_paths
from universalrag.ingest.tables import read_tables, tables_from_html
from universalrag.ingest.text import read_text_file
from universalrag.retrieve import search_corpus
from universalrag.store import Store

DATA = Path(__file__).resolve().parent / "data"
TEXINFO = DATA / "html" / "texinfo_tides.html"
LIBFFI = Path("/usr/share/doc/libffi8/html")
LIBXSLT = Path("/usr/share/doc/libxslt1-dev/html")

RST = """\
=================
Sandwick Moorings
=================

.. contents::
   :local:

Visitor berths
--------------

Visitors moor on the :term:`north pontoon`; see `the harbour guide <https://example.org/guide>`_.
Call ``Port Control`` first::

    VHF channel 12

.. note:: The pontoon gate is locked at dusk in winter.

.. _fees:

.. image:: pontoon.png
   :alt: the pontoon

Fees are paid at the café.
"""


def _write_source_tree(root: Path) -> None:
    """A project folder as users have them: docs, code, caches, arrays, compressed data."""
    (root / "__pycache__").mkdir(parents=True)
    (root / "README").write_text(
        "Harbour tools\n=============\n\nScripts that print the tide tables of "
        "Sandwick harbour for the harbour master.\n",
        encoding="utf-8",
    )
    (root / "LICENSE").write_text(
        "MIT License\n\nPermission is hereby granted, free of charge, to any person "
        "obtaining a copy of this software.\n",
        encoding="utf-8",
    )
    (root / "moorings.rst").write_text(RST, encoding="utf-8")
    (root / "tides.py").write_text(
        '"""Tide tables for Sandwick harbour."""\n\n\ndef high_water(day: int) -> str:\n'
        '    """Time of high water on ``day``."""\n    return "06:10"\n',
        encoding="utf-8",
    )
    (root / "__pycache__" / "tides.cpython-311.pyc").write_bytes(b"\xa7\r\r\n\x00\x00\x00\x00" + bytes(range(256)))
    np.save(root / "heights.npy", np.linspace(0.0, 4.6, 50))
    (root / "chart.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"><circle r="4"/></svg>')
    with gzip.open(root / "ferries.csv.gz", "wt", encoding="utf-8") as fh:
        fh.write("route,crossing minutes\nSandwick - Gull Island,40\nSandwick - Mousa,15\n")
    with gzip.open(root / "settings.json.gz", "wt", encoding="utf-8") as fh:
        json.dump({"name": "harbour-tools", "harbour": {"port": "Sandwick", "vhf_channel": 12}}, fh)
    (root / "notes.txt.gz").write_bytes(
        gzip.compress(b"Pilot notes\n===========\n\nThe leading lights line up at 312 degrees.\n")
    )
    (root / "berths-cp1252.csv").write_bytes("berth,owner\nA1,Zoë Müller\nA2,François Lefèvre\n".encode("cp1252"))
    (root / "crew-utf16.csv").write_text("name,role\nJosé,skipper\nMàiri,crew\n", encoding="utf-16")
    (root / "orphan.srt").write_text("1\n00:00:01,000 --> 00:00:02,000\nNo video is named orphan.\n")
    (root / "berths.ts").write_text("export const berths: string[] = ['A1', 'A2'];\n", encoding="utf-8")


# --------------------------------------------------------------------------- detection (no database)


def test_kinds_come_from_the_content_then_the_extension(tmp_path: Path) -> None:
    _write_source_tree(tmp_path)
    found = {p.relative_to(tmp_path).as_posix(): detect(p) for p in tmp_path.rglob("*") if p.is_file()}
    kinds = {name: (d.kind, d.format) for name, d in found.items()}
    assert kinds == {
        "README": ("text", "txt"),
        "LICENSE": ("text", "txt"),
        "moorings.rst": ("text", "rst"),
        "tides.py": ("text", "code"),
        "ferries.csv.gz": ("table", "csv"),
        "settings.json.gz": ("text", "json"),
        "notes.txt.gz": ("text", "txt"),
        "berths-cp1252.csv": ("table", "csv"),
        "crew-utf16.csv": ("table", "csv"),
        "__pycache__/tides.cpython-311.pyc": (None, None),
        "heights.npy": (None, None),
        "chart.svg": (None, None),
        "berths.ts": ("text", "code"),  # TypeScript, not an MPEG transport stream
        "orphan.srt": (None, None),  # subtitles are a video's text, not a document
    }
    assert found["ferries.csv.gz"].compressed and not found["README"].compressed
    assert "NumPy array" in found["heights.npy"].reason and "SVG" in found["chart.svg"].reason
    assert "binary file" in found["__pycache__/tides.cpython-311.pyc"].reason
    page = tmp_path / "page"  # no extension: HTML by its content
    page.write_text("<!DOCTYPE html><html><body><p>Hello</p></body></html>")
    assert (detect(page).kind, detect(page).format) == ("text", "html")


def test_text_formats_read_cleanly(tmp_path: Path) -> None:
    _write_source_tree(tmp_path)
    readme = read_text_file(tmp_path / "README")
    assert readme.title == "Harbour tools" and "===" not in readme.text
    rst = read_text_file(tmp_path / "moorings.rst")
    assert rst.title == "Sandwick Moorings" and rst.metadata["headings"][:2] == ["Sandwick Moorings", "Visitor berths"]
    for markup in ("===", "---", ".. ", ":term:", "``", "contents::", "https://example.org", "pontoon.png", "_fees"):
        assert markup not in rst.text, markup
    assert "Visitors moor on the north pontoon; see the harbour guide." in rst.text
    assert "VHF channel 12" in rst.text and "The pontoon gate is locked at dusk in winter." in rst.text
    code = read_text_file(tmp_path / "tides.py")
    assert code.title == "tides.py" and '    return "06:10"' in code.text  # code keeps its indentation
    settings = read_text_file(tmp_path / "settings.json.gz")
    assert settings.title == "harbour-tools" and "harbour.vhf_channel: 12" in settings.text
    notes = read_text_file(tmp_path / "notes.txt.gz")
    assert notes.title == "Pilot notes" and notes.text.endswith("line up at 312 degrees.")


def test_tables_in_other_encodings_and_gzip(tmp_path: Path) -> None:
    _write_source_tree(tmp_path)
    [ferries] = read_tables(tmp_path / "ferries.csv.gz")
    assert ferries.title == "ferries" and ferries.header == ["route", "crossing minutes"]
    assert [r for batch in ferries.batches(10) for r in batch][0] == ["Sandwick - Gull Island", "40"]
    [berths] = read_tables(tmp_path / "berths-cp1252.csv")
    assert [r for batch in berths.batches(10) for r in batch] == [["A1", "Zoë Müller"], ["A2", "François Lefèvre"]]
    [crew] = read_tables(tmp_path / "crew-utf16.csv")
    assert [r for batch in crew.batches(10) for r in batch] == [["José", "skipper"], ["Màiri", "crew"]]
    # the first 64 KB are ASCII, a Windows-1252 name comes after: the whole file is checked, not the head
    late = tmp_path / "late.csv"
    late.write_bytes(b"id,name\n" + b"".join(b"%d,plain\n" % i for i in range(12000)) + "9999,Renée\n".encode("cp1252"))
    [table] = read_tables(late)
    assert [r for batch in table.batches(20000) for r in batch][-1] == ["9999", "Renée"]


def test_declared_html_encoding_and_boilerplate() -> None:
    doc = read_text_file(TEXINFO)
    assert doc.metadata["encoding"] == "cp1252"  # declared ISO-8859-1, read as browsers do
    assert "The harbour master's café on the north quay" in doc.text
    for chrome in ("Next:", "Previous:", "Up:", "Main Menu", "Downloads", "Skip to main content", "Guide >"):
        assert chrome not in doc.text, chrome
    assert doc.text.startswith("2.4 Harbour Tides")
    assert "ask at the café for the code." in doc.text  # content after the data table is kept
    [table] = tables_from_html(TEXINFO.read_bytes().decode("latin-1"), name=str(TEXINFO))
    assert table.title == "Spring and neap tides at Sandwick"  # the layout tables are not data tables
    assert table.header == ["Tide", "High water", "Low water", "Range (m)"]
    assert [r for batch in table.batches(10) for r in batch] == [
        ["Spring", "06:10", "12:25", "4.6"],
        ["Neap", "09:40", "15:55", "2.1"],
    ]


@pytest.mark.skipif(not (LIBFFI / "Thread-Safety.html").is_file(), reason="Debian's libffi manual is not installed")
def test_real_texinfo_manual() -> None:
    page = LIBFFI / "Thread-Safety.html"
    doc = read_text_file(page)
    assert doc.text.startswith("2.7 Thread Safety") and "is not completely thread-safe" in doc.text
    assert "Previous:" not in doc.text and "Closure Example" not in doc.text and "[Index]" not in doc.text
    assert tables_from_html(page.read_text(encoding="utf-8"), name=str(page)) == []


@pytest.mark.skipif(not (LIBXSLT / "news.html").is_file(), reason="Debian's libxslt HTML docs are not installed")
def test_real_latin1_manual_with_layout_tables() -> None:
    page = LIBXSLT / "news.html"
    assert b"charset=ISO-8859-1" in page.read_bytes()[:1000]
    doc = read_text_file(page)
    assert "Jérôme Carretero" in doc.text and "Main Menu" not in doc.text
    assert doc.metadata["layout_tables"] > 5
    with pytest.raises(IngestError, match="no table found"):
        read_tables(page)  # every table on the page is layout


def test_multi_page_tiff_is_its_first_page(tmp_path: Path) -> None:
    from PIL import Image

    from universalrag.ingest.images.read import read_image
    from universalrag.media import load_rgb

    path = tmp_path / "scan.tiff"
    pages = [Image.new("RGB", (40, 30), colour) for colour in ("red", "green", "blue")]
    pages[0].save(path, save_all=True, append_images=pages[1:], compression="tiff_lzw")
    info = read_image(path)
    assert (info.format, info.frames, info.width, info.height) == ("tiff", 3, 40, 30)
    assert load_rgb(path).getpixel((5, 5)) == (255, 0, 0)


# --------------------------------------------------------------------------- a folder, end to end


def _videos(root: Path) -> list[str]:
    written = []
    if encoder_available("mpeg2video"):
        write_video(
            root / "harbour.ts",
            [("astronaut", 1.0), ("coffee", 1.0)],
            fps=10,
            size=(96, 64),
            codecs=ContainerCodecs("mpeg2video", "mp2", None),
        )
        written.append("harbour.ts")
    if encoder_available("libvpx"):
        write_video(
            root / "quay.ogv",
            [("rocket", 1.0), ("chelsea", 1.0)],
            fps=10,
            size=(96, 64),
            codecs=ContainerCodecs("libvpx", "libvorbis", None, (("deadline", "realtime"),)),
        )
        written.append("quay.ogv")
    return written


def test_a_real_folder_skips_what_is_not_ingested(store: Store, minilm, tmp_path: Path) -> None:
    root = tmp_path / "harbour-tools"
    _write_source_tree(root)
    (root / "docs").mkdir()
    (root / "docs" / "tides.html").write_bytes(TEXINFO.read_bytes())
    videos = _videos(root)
    report = ingest_paths(store, minilm, [root], options=IngestOptions(video=VIDEO_OPTIONS))
    assert report.ok, report.failed
    skipped = {Path(o.path).name: o.reason for o in report.skipped}
    assert set(skipped) == {"tides.cpython-311.pyc", "heights.npy", "chart.svg", "orphan.srt"}
    assert all(reason and "not ingested" in reason for reason in skipped.values())
    kinds = {Path(o.path).name: o.kind for o in report.outcomes if o.status == "added"}
    assert kinds == {
        "README": "text",
        "LICENSE": "text",
        "moorings.rst": "text",
        "tides.py": "text",
        "ferries.csv.gz": "table",
        "settings.json.gz": "text",
        "notes.txt.gz": "text",
        "berths-cp1252.csv": "table",
        "crew-utf16.csv": "table",
        "tides.html": "text",
        "berths.ts": "text",
        **{name: "video" for name in videos},
    }
    summary = report.to_dict()
    assert summary["failed"] == [] and len(summary["skipped"]) == 4  # type: ignore[arg-type]
    assert store.counts()["table"] == 4  # three files and the tide table of the page (not its layout tables)

    hit = search_corpus(store, minilm, "paragraph", "when does the pontoon gate get locked in winter", k=3)
    assert any("pontoon gate is locked at dusk" in h.content for h in hit)
    assert not any(
        "Previous:" in h.content or "Main Menu" in h.content
        for h in search_corpus(store, minilm, "paragraph", "Previous Up Next main menu home downloads", k=10)
    )
    berth = search_corpus(store, minilm, "table", "which berth does Zoë Müller own", k=1)[0]
    assert "Zoë Müller" in berth.matched_parts[0][1]

    again = ingest_paths(store, minilm, [root], options=IngestOptions(video=VIDEO_OPTIONS))
    assert again.count("unchanged") == len(kinds) and len(again.skipped) == 4 and again.ok

    strict = ingest_paths(store, minilm, [root], strict=True, options=IngestOptions(video=VIDEO_OPTIONS))
    assert not strict.ok and {Path(o.path).name for o in strict.failed} == set(skipped)
    assert "Supported:" in (strict.failed[0].error or "")
    named = ingest_paths(store, minilm, [root / "heights.npy"])
    assert not named.ok and "NumPy array file" in (named.failed[0].error or "") and not named.skipped
    junk = tmp_path / "junk.bin"
    junk.write_bytes(np.random.default_rng(1).integers(0, 256, 5000, dtype=np.uint8).tobytes())
    refused = ingest_paths(store, minilm, [junk])
    assert "binary file of a type that is not ingested" in (refused.failed[0].error or "")


def test_a_tiff_pillow_cannot_decode_says_so(tmp_path: Path) -> None:
    tifffile = pytest.importorskip("tifffile")
    from universalrag.ingest.images.read import read_image

    path = tmp_path / "stack.tif"  # three float32 planes in one page, as scientific tools write them
    tifffile.imwrite(
        path, np.random.default_rng(0).random((3, 16, 16)).astype("float32"), photometric="rgb", planarconfig="separate"
    )
    with pytest.raises(IngestError) as info:
        read_image(path)
    assert "layout Pillow cannot decode" in info.value.reason and "damaged" not in info.value.reason


def test_html5_landmarks_and_link_lists_are_not_content() -> None:
    from universalrag.ingest.text.document import parse_text

    page = b"""<!doctype html><html><head><meta charset="windows-1252"><title>Quay</title></head><body>
    <header><a href="/">Harbour</a> <a href="/news">News</a> <a href="/about">About</a></header>
    <nav aria-label="breadcrumb"><a href="/">Home</a> / <a href="/guide">Guide</a></nav>
    <main><article><header><h1>The north quay</h1></header>
    <p>The north quay was rebuilt in 1998 with granite from Mousa \x96 the old timber piles are still visible.</p>
    <ul><li><a href="/a">Tides</a></li><li><a href="/b">Moorings</a></li><li><a href="/c">Fees</a></li></ul>
    <p>Berthing is free for boats under <a href="/fees">eight metres</a> for the first night.</p>
    </article></main>
    <div role="navigation"><a href="/prev">Previous</a> <a href="/next">Next</a></div>
    <footer><p>&copy; Harbour Trust <a href="/privacy">Privacy</a> <a href="/terms">Terms</a></p></footer>
    </body></html>"""
    doc = parse_text(page, format="html", name="quay.html")
    assert doc.metadata["encoding"] == "cp1252" and "Mousa \u2013 the old" in doc.text
    assert doc.text.split("\n\n") == [
        "The north quay",
        "The north quay was rebuilt in 1998 with granite from Mousa \u2013 the old timber piles are still visible.",
        "Berthing is free for boats under eight metres for the first night.",
    ]


def test_cli_skips_with_one_summary_line_and_strict_fails(cli_env: dict[str, str], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from universalrag.cli import app

    def run(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(app, list(args), env=cli_env, prog_name="universalrag")
        return result.exit_code, result.stdout

    root = tmp_path / "project"
    root.mkdir()
    (root / "README").write_text("Harbour tools\n=============\n\nPrints tide tables for Sandwick.\n")
    (root / "__pycache__").mkdir()
    for name in ("a", "b", "c"):
        (root / "__pycache__" / f"{name}.cpython-311.pyc").write_bytes(b"\xa7\r\r\n" + bytes(range(256)))
    np.save(root / "heights.npy", np.arange(5))
    code, out = run("ingest", str(root))
    assert code == 0, out
    summary = [" ".join(line.split()) for line in out.splitlines() if line.startswith("skipped ")]
    assert summary == [
        "skipped 4 not ingested (binary file of a type that is not ingested ×3, NumPy array file "
        "×1; --strict fails on them)"
    ]
    assert "Supported:" not in out and "failed /" not in out
    code, out = run("ingest", "--strict", "--json", str(root))
    report = json.loads(out)
    assert code == 1 and len(report["failed"]) == 4 and report["unchanged"] == 1
    code, out = run("ingest", "--json", str(root / "heights.npy"))  # named explicitly: a typed error
    assert code == 1 and "NumPy array file" in json.loads(out)["failed"][0]["error"]

    # the same file in a user corpus is a second source; deleting it with --corpus keeps the first
    assert (
        run(
            "corpora",
            "create",
            "manuals",
            "--modality",
            "text",
            "--granularity",
            "paragraph",
            "--description",
            "Tool manuals",
        )[0]
        == 0
    )
    assert run("ingest", "--corpus", "manuals", str(root / "README"))[0] == 0
    sources = json.loads(run("sources", "list", "--json")[1])
    assert sorted(s["scope"] for s in sources) == ["", "manuals"]
    assert "[--corpus manuals]" in run("sources", "list")[1]
    assert run("sources", "delete", str(root / "README"), "--corpus", "manuals")[0] == 0
    assert [s["scope"] for s in json.loads(run("sources", "list", "--json")[1])] == [""]


DOCBOOK = Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.html/x34.html")


@pytest.mark.skipif(not DOCBOOK.is_file(), reason="Debian's shared-mime-info spec (DocBook HTML) is not installed")
def test_real_docbook_page_without_its_navigation_tables() -> None:
    doc = read_text_file(DOCBOOK)
    assert doc.text.startswith("2. Unified system")  # the "Header navigation table" is gone, title and all
    assert "Prev" not in doc.text.split() and "Contributors" not in doc.text[-300:]
    tables = tables_from_html(DOCBOOK.read_text(encoding="utf-8"), name=str(DOCBOOK))
    assert tables and all(t.header[0] != "Shared MIME-info Database" for t in tables)
    assert any(t.header == ["Attribute", "Required?", "Value"] for t in tables)  # real tables stay


MDBOOK_PAGE = b"""<!DOCTYPE HTML><html lang="en"><head><meta charset="UTF-8"><title>Moorings - The Harbour Book</title>
<script src="toc.js"></script></head><body>
<div id="mdbook-help-container"><div id="mdbook-help-popup">
<h2 class="mdbook-help-title">Keyboard shortcuts</h2>
<div><p>Press <kbd>S</kbd> or <kbd>/</kbd> to search in the book</p><p>Press <kbd>Esc</kbd> to hide this help</p></div>
</div></div>
<div id="mdbook-body-container"><nav id="mdbook-sidebar" class="sidebar" aria-label="Table of contents"></nav>
<div id="mdbook-page-wrapper" class="page-wrapper"><div class="page">
<div id="mdbook-menu-bar" class="menu-bar"><h1 class="menu-title">The Harbour Book</h1>
<button id="print-button" title="Print this book">Print</button></div>
<div id="mdbook-content" class="content"><main>
<h1 id="moorings"><a class="header" href="#moorings">Moorings</a></h1>
<p>Visiting boats tie up on the inner face of the north quay, where the water stays calm in a westerly.</p>
<h2 id="fees"><a class="header" href="#fees">Fees</a></h2>
<p>A night costs twelve pounds for boats under eight metres.</p>
<pre><code class="language-toml">[mooring]
nights = 2
</code><button class="copy-button">copy</button></pre>
</main><nav class="nav-wrapper" aria-label="Page navigation"><a rel="prev" href="tides.html">Tides</a></nav>
</div></div></div></div></body></html>"""


def test_a_page_is_its_main_landmark_and_keeps_every_heading() -> None:
    """mdBook pages (the Rust books, many project manuals): each heading is an anchor of class "header", and a
    keyboard-help box sits outside <main>. Before, every heading lost its text and each page began with "Keyboard
    shortcuts"."""
    from universalrag.ingest.text.document import parse_text

    doc = parse_text(MDBOOK_PAGE, format="html", name="moorings.html")
    assert doc.title == "Moorings - The Harbour Book"
    assert doc.text.split("\n\n") == [
        "Moorings",
        "Visiting boats tie up on the inner face of the north quay, where the water stays calm in a westerly.",
        "Fees",
        "A night costs twelve pounds for boats under eight metres.",
        "[mooring]\nnights = 2",  # the code block without its "copy" button
    ]
    assert doc.metadata["headings"] == ["Moorings", "Fees"]


def test_a_small_main_landmark_does_not_hide_the_page() -> None:
    """A <main> holding less than half of the page's words is not its content: nothing is cut for it."""
    from universalrag.ingest.text.document import parse_text

    article = " ".join(["The harbour wall was raised by a metre after the storm of 1953."] * 12)
    page = (
        f"<html><body><main><p>Welcome aboard.</p></main><div class='article'><h1>The wall</h1><p>{article}</p>"
        "</div></body></html>"
    ).encode()
    doc = parse_text(page, format="html", name="wall.html")
    assert "Welcome aboard." in doc.text and "The wall" in doc.text and article in doc.text


def test_a_heading_is_content_whatever_its_class_says() -> None:
    """Class names that mark page chrome ("header", "toolbar") do not make chrome of a heading: Wikipedia's section
    "Toolbar" lost its title, and rustdoc's pages every method's signature (``<h4 class="code-header">``)."""
    from universalrag.ingest.text.document import parse_text

    page = b"""<html><body><h3><span class="mw-headline" id="Toolbar">Toolbar</span></h3><p>Get it.</p>
    <details open><summary><section id="method.dedup" class="method"><span class="rightside">1.0.0 \xc2\xb7
    <a class="src" href="../src/vec.rs.html#10">Source</a></span><h4 class="code-header">pub fn
    <a href="#method.dedup" class="fn">dedup</a>(&amp;mut self)</h4></section></summary>
    <div class="docblock"><p>Removes consecutive repeated elements.</p></div></details></body></html>"""
    assert parse_text(page, format="html", name="t.html").text.split("\n\n") == [
        "Toolbar",
        "Get it.",
        "1.0.0 \u00b7 Source",
        "pub fn dedup(&mut self)",
        "Removes consecutive repeated elements.",
    ]


MDBOOK = (
    Path.home()
    / ".rustup/toolchains/stable-x86_64-unknown-linux-gnu/share/doc/rust/html/cargo/reference"
    / "profiles.html"
)


@pytest.mark.skipif(not MDBOOK.is_file(), reason="the Rust toolchain's Cargo book (mdBook HTML) is not installed")
def test_real_mdbook_page() -> None:
    doc = read_text_file(MDBOOK)
    assert doc.text.startswith("Profiles\n\nProfiles provide a way")
    assert "Keyboard shortcuts" not in doc.text
    assert {"opt-level", "codegen-units", "Default profiles"} <= set(doc.metadata["headings"])


def test_permalink_marks_are_not_part_of_a_heading_or_a_table_title() -> None:
    """Node.js's API pages end every heading with a "#" link to itself, Sphinx's with "¶"; the tables under them
    were titled "dns.lookup(hostname) #"."""
    from universalrag.ingest.text.document import parse_text

    page = b"""<html><body>
    <h1>Tides<a class="headerlink" href="#tides">\xc2\xb6</a></h1>
    <h3>tides.lookup(port)<span><a class="mark" href="#tides_lookup_port" id="tides_lookup_port">#</a></span></h3>
    <table><thead><tr><th>Version</th><th>Changes</th></tr></thead>
    <tbody><tr><td>v2.0.0</td><td>The port may be a number.</td></tr></tbody></table>
    <h3>Berths<a class="headerlink" href="#berths" title="Permalink to this heading">\xc2\xb6</a></h3>
    <table><tr><th>Berth</th><th>Length (m)</th></tr><tr><td>A1</td><td>12</td></tr></table>
    </body></html>"""
    titles = [t.title for t in tables_from_html(page.decode(), name="tides.html")]
    assert titles == ["tides.lookup(port)", "Berths"]
    doc = parse_text(page, format="html", name="tides.html")
    assert doc.title == "Tides"  # no <title>: the first <h1>, without its mark
    assert doc.metadata["headings"] == ["Tides", "tides.lookup(port)", "Berths"]
