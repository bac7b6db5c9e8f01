"""Text ingestion: extraction per format, bad inputs, passage splitting, embedding windows, detection."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sentencex import segment

from universalrag.errors import ConfigError, IngestError
from universalrag.ingest.detect import detect_kind, iter_files, sniff
from universalrag.ingest.files import hash_file
from universalrag.ingest.text import (
    Passage,
    TextDocument,
    chunk_for_embedding,
    parse_text,
    read_text_file,
    split_paragraphs,
)

DATA = Path(__file__).parent / "data"
CORPUS = DATA / "corpus"
BAD = DATA / "bad"
DEMO = Path(__file__).parents[1] / "core" / "universalrag" / "demo"


def words(text: str) -> list[str]:
    return text.split()


def paragraphs(doc: TextDocument) -> list[str]:
    return doc.text.split("\n\n")


# --------------------------------------------------------------------------- extraction


def test_txt_title_paragraphs_and_hash() -> None:
    path = CORPUS / "kestrel_point_lighthouse.txt"
    doc = read_text_file(path)
    assert doc.format == "txt"
    assert doc.title == "The Kestrel Point Lighthouse"
    assert hash_file(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    paras = paragraphs(doc)
    assert len(paras) == 10
    assert paras[0] == "The Kestrel Point Lighthouse"
    # hard-wrapped lines are joined into one paragraph with single spaces
    assert "\n" not in doc.text.replace("\n\n", "")
    assert all(p == " ".join(p.split()) for p in paras)
    assert doc.metadata["word_count"] == len(words(path.read_text()))
    assert doc.metadata["char_count"] == len(doc.text)


def test_txt_title_falls_back_to_stem_when_first_line_is_a_sentence() -> None:
    data = b"This opening line is a full sentence.\n\nSecond paragraph."
    doc = parse_text(data, format="txt", name="notes/day-one.txt")
    assert doc.title == "day-one"


def test_markdown_noise_removed_and_prose_kept() -> None:
    doc = read_text_file(CORPUS / "sourdough_baking.md")
    assert doc.format == "md"
    assert doc.title == "Baking a Country Sourdough Loaf"
    for noise in ("#", "**", "*starter*", "](", "```", "https://example.org"):
        assert noise not in doc.text
    assert "a starter — a paste of flour and water" in doc.text
    assert "100 percent hydration" in doc.text
    assert "see our notes on lactic acid bacteria from last season's class." in doc.text
    # headings stay as their own short paragraphs, without hashes
    assert "Keeping the starter" in paragraphs(doc)
    assert doc.metadata["headings"][:2] == ["Baking a Country Sourdough Loaf", "Keeping the starter"]
    # a fenced code block is kept as text, one paragraph with its line breaks
    code = next(p for p in paragraphs(doc) if p.startswith("strong white flour"))
    assert code.splitlines()[1] == "wholemeal flour       50 g"


def test_markdown_front_matter_title_and_images() -> None:
    doc = read_text_file(CORPUS / "st_aldric_organ.md")
    assert doc.title == "Restoring the St Aldric Organ"
    assert "title:" not in doc.text and "---" not in doc.text
    md = b"Intro text with _emphasis_ and snake_case_name.\n\n![A tram at dusk](tram.jpg)\n\n* item\n"
    doc = parse_text(md, format="markdown", name="x/notes.md")
    assert doc.title == "notes"
    assert doc.text == "Intro text with emphasis and snake_case_name.\n\nitem"
    assert doc.metadata["images"] == [{"src": "tram.jpg", "alt": "A tram at dusk"}]


def test_markdown_front_matter_description_leads_the_page() -> None:
    """Static-site pages (npm's docs, Docusaurus, Hugo) say what the page is in their front matter: npm's
    "npm-explain" page is "Explain installed packages", words its body never uses. YAML is parsed (quoted titles,
    colons); a block that is not YAML is still not text."""
    md = (
        b'---\ntitle: "npm-explain: why"\nsection: 1\ndescription: Explain installed\n  packages\n'
        b"tags: [cli, deps]\n---\n\n### Synopsis\n\n`npm explain <package-spec>`\n"
    )
    doc = parse_text(md, format="markdown", name="npm-explain.md")
    assert doc.title == "npm-explain: why"
    assert doc.text == "Explain installed packages\n\nSynopsis\n\nnpm explain <package-spec>"
    broken = parse_text(b"---\ntitle: [unclosed\n---\nBody text.\n", format="markdown", name="b.md")
    assert (broken.title, broken.text) == ("b", "Body text.")


def test_html_visible_text_only() -> None:
    doc = read_text_file(CORPUS / "brennmoor_tramways.html")
    assert doc.format == "html"
    assert doc.title == "Brennmoor Tramways: A Short History"
    for hidden in ("analyticsQueue", "font-family", "Enable JavaScript", "querySelectorAll", "route-badge"):
        assert hidden not in doc.text
    paras = paragraphs(doc)
    assert "The Brennmoor Tram Network" in paras
    assert any(
        p.startswith("The first line opened in 1897") and p.endswith("from twenty-five minutes to nine.") for p in paras
    )
    # table cells stay apart, one row per paragraph
    assert "1 Westgate St Columba Hospital 7 min" in paras
    assert doc.metadata["headings"][0] == "The Brennmoor Tram Network"
    assert doc.metadata["images"] == [
        {
            "src": "images/tram-depot-1965.jpg",
            "alt": "Green and cream tram leaving the Quarry Lane depot in 1965",
        }
    ]
    report = read_text_file(CORPUS / "halvorsen_annual_report_2023.html")
    assert "@type" not in report.text and "cookie" not in report.text
    assert [i["alt"] for i in report.metadata["images"]][1].startswith("Cutaway drawing of the HX-40")


def test_html_blocks_entities_and_title_fallbacks() -> None:
    html = (
        b"<html><body><h1>Main &amp; Only</h1><div>one<br>two</div><p>a&nbsp;b <i>c</i>d</p>"
        b"<!-- hidden comment --><template><p>tpl</p></template><svg><title>icon</title></svg>"
        b"</body></html>"
    )
    doc = parse_text(html, format="html", name="site/page.html")
    assert doc.title == "Main & Only"
    assert doc.text == "Main & Only\n\none\ntwo\n\na b cd"  # a <br> ends a line, not the paragraph
    doc = parse_text(b"<p>Just a paragraph.</p>", format="htm", name="site/plain.htm")
    assert doc.title == "plain"
    assert doc.text == "Just a paragraph."


def test_html_pre_keeps_lines() -> None:
    doc = parse_text(b"<p>Run:</p><pre>make build\n\n  make test</pre>", format="html", name="r.html")
    assert paragraphs(doc) == ["Run:", "make build\n  make test"]


@pytest.mark.parametrize(
    "data, encoding",
    [
        ("\ufeffCafé crème.\r\nSecond line.".encode("utf-8"), "utf-8"),
        ("\ufeffCafé crème.\r\nSecond line.".encode("utf-16-le"), "utf-16-le"),
        ("\ufeffCafé crème.\r\nSecond line.".encode("utf-16-be"), "utf-16-be"),
    ],
)
def test_bom_encodings_and_newlines(data: bytes, encoding: str) -> None:
    doc = parse_text(data, format="txt", name="cafe.txt")
    assert doc.text == "Café crème. Second line."
    assert doc.metadata["encoding"] == encoding


def test_html_from_utf16_with_bom() -> None:
    data = "<title>Ünïcode</title><p>Grüße</p>".encode("utf-16")  # includes a BOM
    doc = parse_text(data, format="html", name="u.html")
    assert (doc.title, doc.text) == ("Ünïcode", "Grüße")


# --------------------------------------------------------------------------- bad input


def raises_for(path: str | Path, *fragments: str) -> IngestError:
    with pytest.raises(IngestError) as info:
        read_text_file(path)
    message = str(info.value)
    assert str(path) in message
    assert info.value.path == str(path)
    for fragment in fragments:
        assert fragment in message, message
    return info.value


def test_missing_path(tmp_path: Path) -> None:
    raises_for(tmp_path / "nope.txt", "no such file")


def test_directory(tmp_path: Path) -> None:
    (tmp_path / "folder.md").mkdir()
    raises_for(tmp_path / "folder.md", "is a folder")


def test_empty_file() -> None:
    raises_for(BAD / "empty.txt", "empty (0 bytes)")


def test_whitespace_only_file() -> None:
    raises_for(BAD / "blank.md", "only whitespace")


def test_png_renamed_txt() -> None:
    raises_for(BAD / "picture.txt", "PNG image", "not text", "real extension")


def test_legacy_encodings_are_detected() -> None:
    doc = read_text_file(BAD / "latin1.txt")  # Latin-1 bytes, no declaration: charset-normalizer decides
    assert "Le café était fermé à Noël, déjà vu." in doc.text and "Señor Müller" in doc.text
    assert doc.metadata["encoding"] in ("cp1252", "iso8859-1")


def test_a_file_mixing_encodings_is_refused_with_advice(tmp_path: Path) -> None:
    path = tmp_path / "mixed.txt"
    path.write_bytes(b"\xef\xbb\xbf" + "café".encode("latin-1"))  # a UTF-8 BOM, then Latin-1
    error = raises_for(path, "UTF-8 byte-order mark", "re-save it as UTF-8")
    assert error.reason


def test_unsupported_file_named_explicitly(tmp_path: Path) -> None:
    path = tmp_path / "figure.svg"
    path.write_text('<svg xmlns="http://www.w3.org/2000/svg"><circle r="4"/></svg>')
    raises_for(path, "SVG drawing", "not ingested", "Supported:", "Markdown", "CSV")
    pdf = tmp_path / "report.pdf"  # text named .pdf: the document reader will say what is wrong
    pdf.write_text("pretend")
    raises_for(pdf, "is a document file, not a text document")
    binary = tmp_path / "weights.npy"
    binary.write_bytes(b"\x93NUMPY\x01\x00v\x00" + bytes(200))
    raises_for(binary, "NumPy array file", "Supported:")


def test_nul_bytes_are_binary(tmp_path: Path) -> None:
    path = tmp_path / "dump.txt"
    path.write_bytes(b"header\x00\x01\x02" + os.urandom(64))
    raises_for(path, "binary", "NUL")


def test_control_characters_are_binary(tmp_path: Path) -> None:
    path = tmp_path / "ctrl.txt"
    path.write_bytes(bytes(range(1, 9)) * 20 + b"some text")
    raises_for(path, "binary", "control characters")


def test_pdf_renamed_txt(tmp_path: Path) -> None:
    path = tmp_path / "paper.txt"
    path.write_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj")
    raises_for(path, "PDF document")


def test_broken_utf16(tmp_path: Path) -> None:
    path = tmp_path / "odd.txt"
    path.write_bytes(b"\xff\xfeA\x00B")  # BOM then an odd number of bytes
    raises_for(path, "UTF-16-LE", "byte offset")


def test_html_without_visible_text(tmp_path: Path) -> None:
    path = tmp_path / "app.html"
    path.write_text("<html><head><title>App</title></head><body><script>run()</script></body></html>")
    raises_for(path, "no readable text")


def test_parse_text_unknown_format() -> None:
    with pytest.raises(IngestError, match="unknown text format 'pdf'"):
        parse_text(b"x", format="pdf", name="x.pdf")


def test_bad_png_fixture_is_a_valid_png() -> None:
    data = (BAD / "picture.txt").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        chunks[kind] = body
        pos += 12 + length
    assert struct.unpack(">II", chunks[b"IHDR"][:8]) == (2, 2)
    assert len(zlib.decompress(chunks[b"IDAT"])) == 2 * (1 + 2 * 3)
    assert b"IEND" in chunks


# --------------------------------------------------------------------------- splitting


def sentence(n: int, i: int = 0) -> str:
    body = " ".join(f"w{i}x{k}" for k in range(n - 1))
    return f"Start{i} {body}.".replace(" .", ".") if n > 1 else f"Start{i}."


def paragraph(sentence_lengths: list[int], offset: int = 0) -> str:
    return " ".join(sentence(n, offset + j) for j, n in enumerate(sentence_lengths))


def check_invariants(text: str, passages: list[Passage], *, min_words: int, max_words: int) -> None:
    assert [w for p in passages for w in p.text.split()] == text.split()
    assert [p.index for p in passages] == list(range(len(passages)))
    for p in passages:
        assert text[p.start_char : p.end_char] == p.text
        assert p.text == p.text.strip() and p.text
        assert p.word_count <= max_words
    for a, b in itertools.pairwise(passages):
        assert a.end_char <= b.start_char
    sizes = [p.word_count for p in passages]
    for i, size in enumerate(sizes):
        if size < min_words:  # a small passage exists only when neither neighbour could take it
            if i > 0:
                assert sizes[i - 1] + size > max_words
            if i + 1 < len(sizes):
                assert size + sizes[i + 1] > max_words


def sentence_edges(text: str) -> tuple[set[int], set[int]]:
    """Starts and ends of sentences, found independently with sentencex per paragraph."""
    starts, ends, pos = set(), set(), 0
    for para in text.split("\n\n"):
        offset = text.index(para, pos)
        for s in segment("en", para):
            found = text.index(s, offset)
            if s.strip():
                starts.add(found + len(s) - len(s.lstrip()))
                ends.add(found + len(s.rstrip()))
            offset = found + len(s)
        pos = offset
    return starts, ends


def test_short_paragraphs_merge_up_to_target() -> None:
    text = "\n\n".join(paragraph([10, 10], 10 * i) for i in range(5))  # five paragraphs of 20 words
    passages = split_paragraphs(text)
    assert [p.word_count for p in passages] == [100]
    assert passages[0].text == text  # paragraph breaks are kept inside the passage


def test_good_paragraphs_stay_whole() -> None:
    paras = [paragraph([20, 20, 20, 20], 10 * i) for i in range(3)]  # 80 words each
    passages = split_paragraphs("\n\n".join(paras))
    assert [p.text for p in passages] == paras


def test_long_paragraph_splits_at_sentences() -> None:
    text = paragraph([20] * 20)  # 400 words, one paragraph
    passages = split_paragraphs(text)
    assert [p.word_count for p in passages] == [100, 100, 100, 100]
    assert all(p.text.startswith("Start") and p.text.endswith(".") for p in passages)
    check_invariants(text, passages, min_words=30, max_words=150)


def test_abbreviations_are_not_sentence_breaks() -> None:
    sentences = [
        f"Dr. Rowe measured sample {i} at 3.5 degrees, e.g. with the probe near plot {i} today." for i in range(30)
    ]
    text = " ".join(sentences)
    passages = split_paragraphs(text)
    assert len(passages) > 1
    assert all(p.text.startswith("Dr. Rowe") for p in passages)


def test_one_huge_sentence_is_hard_split() -> None:
    text = " ".join(f"word{i}" for i in range(400)) + "."
    passages = split_paragraphs(text)
    assert [p.word_count for p in passages] == [100, 100, 100, 100]
    check_invariants(text, passages, min_words=30, max_words=150)


def test_tiny_tail_joins_previous() -> None:
    text = paragraph([25, 25, 25, 25]) + "\n\n" + paragraph([10], 50)
    passages = split_paragraphs(text)
    assert [p.word_count for p in passages] == [110]


def test_heading_joins_its_section() -> None:
    text = "Keeping the starter\n\n" + paragraph([30, 30, 30, 30])
    passages = split_paragraphs(text)
    assert [p.word_count for p in passages] == [123]
    assert passages[0].text.startswith("Keeping the starter\n\nStart0")


def test_empty_text_and_bad_sizes() -> None:
    assert split_paragraphs("") == [] and split_paragraphs(" \n\n \n") == []
    with pytest.raises(ConfigError):
        split_paragraphs("x", min_words=50, target_words=40)


def test_corpus_passages_respect_sentences() -> None:
    for path in sorted(CORPUS.iterdir()):
        doc = read_text_file(path)
        passages = split_paragraphs(doc.text)
        check_invariants(doc.text, passages, min_words=30, max_words=150)
        starts, ends = sentence_edges(doc.text)
        assert all(p.start_char in starts and p.end_char in ends for p in passages), path.name
        in_range = sum(30 <= p.word_count <= 150 for p in passages)
        assert in_range >= len(passages) - 1, [p.word_count for p in passages]


paragraph_plans = st.lists(st.lists(st.integers(1, 45), min_size=1, max_size=12), min_size=1, max_size=10)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=paragraph_plans, sizes=st.sampled_from([(30, 100, 150), (10, 40, 60), (1, 5, 5), (50, 50, 200)]))
def test_split_invariants_on_generated_documents(plan: list[list[int]], sizes: tuple[int, int, int]) -> None:
    min_words, target, max_words = sizes
    paras, counter = [], 0
    for lengths in plan:
        paras.append(paragraph(lengths, counter))
        counter += len(lengths)
    text = "\n\n".join(paras)
    passages = split_paragraphs(text, target_words=target, max_words=max_words, min_words=min_words)
    check_invariants(text, passages, min_words=min_words, max_words=max_words)
    if max(n for lengths in plan for n in lengths) <= max_words:  # no hard split: starts are sentence starts
        starts, ends = sentence_edges(text)
        assert all(p.start_char in starts and p.end_char in ends for p in passages)


TRICKY_TOKENS = ["Dr.", "e.g.", "x.y", "end.Next", "?", "!!", "\n\n", "\n", " ", "word", '"Hi."', "Ça.", "。", "…"]


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=400)
    | st.lists(st.sampled_from(TRICKY_TOKENS), max_size=120).map(" ".join)
)
def test_split_never_loses_text(text: str) -> None:
    passages = split_paragraphs(text, target_words=8, max_words=12, min_words=3)
    check_invariants(text, passages, min_words=3, max_words=12)


# --------------------------------------------------------------------------- chunking


def test_short_text_is_one_chunk() -> None:
    assert chunk_for_embedding("  A short note about trams.  ") == ["A short note about trams."]
    assert chunk_for_embedding("") == []
    with pytest.raises(ConfigError):
        chunk_for_embedding("x", max_words=30, overlap_words=30)


def test_long_document_windows_overlap_and_cover() -> None:
    text = "\n\n".join(read_text_file(p).text for p in sorted(CORPUS.iterdir()))
    chunks = chunk_for_embedding(text, max_words=180, overlap_words=30)
    assert len(chunks) >= len(text.split()) // 180
    assert all(len(c.split()) <= 180 for c in chunks)
    starts, ends = sentence_edges(text)
    positions, pos = [], 0
    for chunk in chunks:
        start = text.index(chunk, pos)
        positions.append((start, start + len(chunk)))
        assert start in starts and start + len(chunk) in ends
        pos = start + 1
    assert positions[0][0] == 0 and positions[-1][1] == len(text)
    overlapping = 0
    for (s1, e1), (s2, _) in itertools.pairwise(positions):
        assert s1 < s2 <= e1 + 2  # no gap (at most the blank line between paragraphs)
        shared = len(text[s2:e1].split())
        assert shared <= 30
        overlapping += shared > 0
    assert overlapping >= len(chunks) // 2


@settings(max_examples=150, deadline=None)
@given(plan=paragraph_plans, max_words=st.integers(5, 80), overlap=st.integers(0, 40))
def test_chunk_invariants_on_generated_documents(plan: list[list[int]], max_words: int, overlap: int) -> None:
    overlap = min(overlap, max_words - 1)
    text = "\n\n".join(paragraph(lengths, 100 * i) for i, lengths in enumerate(plan))
    chunks = chunk_for_embedding(text, max_words=max_words, overlap_words=overlap)
    assert all(0 < len(c.split()) <= max_words for c in chunks)
    assert text.startswith(chunks[0]) and text.endswith(chunks[-1])
    assert {w for c in chunks for w in c.split()} == set(text.split())  # words are unique: nothing skipped
    for a, b in itertools.pairwise(chunks):
        assert text.index(a) < text.index(b) <= text.index(a) + len(a) + 2


def test_chunking_hard_splits_a_giant_sentence() -> None:
    text = " ".join(f"token{i}" for i in range(500))
    chunks = chunk_for_embedding(text, max_words=180, overlap_words=30)
    assert all(len(c.split()) <= 180 for c in chunks)
    assert {w for c in chunks for w in c.split()} == set(text.split())


# --------------------------------------------------------------------------- detection

PNG = (BAD / "picture.txt").read_bytes()
SIGNATURES = {
    "png": PNG,
    "jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00",
    "gif": b"GIF89a\x02\x00\x02\x00",
    "webp": b"RIFF\x24\x00\x00\x00WEBPVP8 ",
    "bmp": b"BM" + struct.pack("<IHHII", 70, 0, 0, 54, 40) + b"\x00" * 16,
    "tiff": b"II*\x00\x08\x00\x00\x00",
    "mp4": b"\x00\x00\x00\x20ftypisom\x00\x00\x02\x00",
    "mov": b"\x00\x00\x00\x14ftypqt  \x00\x00\x00\x00",
    "mkv": b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01",
    "avi": b"RIFF\x00\x10\x00\x00AVI LIST",
}


@pytest.mark.parametrize(
    "name, content, kind",
    [
        ("a.txt", b"plain words", "text"),
        ("a.md", b"# Title", "text"),
        ("a.markdown", b"text", "text"),
        ("a.html", b"<p>x</p>", "text"),
        ("a.HTM", b"<p>x</p>", "text"),
        ("bmw.txt", b"BMW cars are built in Bavaria and sold worldwide.", "text"),
        ("tags.md", b"ID3 tags describe the artist and title of an MP3 file.", "text"),
        ("song.txt", b"ID3\x04\x00\x00\x00\x00\x00\x00", None),
        ("a.csv", b"a,b\n1,2\n", "table"),
        ("a.tsv", b"a\tb\n", "table"),
        ("records.json", b'\xef\xbb\xbf  \n[{"a": 1}]', "table"),
        ("config.json", b'{"a": 1}', "text"),
        ("book.xlsx", b"PK\x03\x04\x14\x00\x06\x00", "table"),
        ("archive.zip", b"PK\x03\x04\x14\x00", None),
        ("a.png", SIGNATURES["png"], "image"),
        ("a.jpg", SIGNATURES["jpeg"], "image"),
        ("a.gif", SIGNATURES["gif"], "image"),
        ("a.webp", SIGNATURES["webp"], "image"),
        ("a.bmp", SIGNATURES["bmp"], "image"),
        ("a.tiff", SIGNATURES["tiff"], "image"),
        ("a.mp4", SIGNATURES["mp4"], "video"),
        ("a.mov", SIGNATURES["mov"], "video"),
        ("a.mkv", SIGNATURES["mkv"], "video"),
        ("a.webm", SIGNATURES["mkv"], "video"),
        ("a.avi", SIGNATURES["avi"], "video"),
        ("photo.jpg", SIGNATURES["png"], "image"),  # misnamed image is still an image
        ("clip.txt", SIGNATURES["mp4"], "video"),
        ("song.mp4", b"\x00\x00\x00\x20ftypM4A \x00\x00\x00\x00", None),
        ("sound.avi", b"RIFF\x00\x10\x00\x00WAVEfmt ", None),
        ("paper.txt", b"%PDF-1.7\n", "document"),  # content first: a PDF named .txt is a PDF
        ("paper.pdf", b"%PDF-1.7\n", "document"),
        ("noext", SIGNATURES["png"], "image"),
        ("Makefile", b"all:\n\tmake", "text"),
        ("empty.md", b"", "text"),
    ],
)
def test_detect_kind(tmp_path: Path, name: str, content: bytes, kind: str | None) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    assert detect_kind(path) == kind


def test_detect_kind_renamed_png_fixture_and_folders(tmp_path: Path) -> None:
    assert detect_kind(BAD / "picture.txt") == "image"
    assert detect_kind(BAD / "latin1.txt") == "text"
    assert detect_kind(tmp_path) is None
    assert detect_kind(tmp_path / "missing.md") == "text"  # the reader reports it missing
    assert sniff(b"hello") is None and sniff(PNG) == ("image", "PNG image")


def test_iter_files_walks_sorted_and_confined(tmp_path: Path) -> None:
    root, outside = tmp_path / "docs", tmp_path / "outside"
    tree = ["b.txt", "a.md", ".hidden.txt", ".git/config", "sub/c.html", "sub/.cache/d.txt", "sub/deep/e.txt"]
    for rel in tree:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    outside.mkdir()
    (outside / "secret.txt").write_text("do not read")
    (root / "z_out.txt").symlink_to(outside / "secret.txt")
    (root / "z_outdir").symlink_to(outside, target_is_directory=True)
    (root / "y_in.txt").symlink_to(root / "a.md")
    (root / "y_loop").symlink_to(root, target_is_directory=True)
    (root / "y_self").symlink_to(root / "y_self")  # a link to itself
    os.mkfifo(root / "pipe.txt")
    found = [p.relative_to(root).as_posix() for p in iter_files([root])]
    # y_in.txt is an alias of a.md, already yielded; pipe.txt is a FIFO (reading it would block)
    assert found == ["a.md", "b.txt", "sub/c.html", "sub/deep/e.txt"]
    assert [p.name for p in iter_files([root], recursive=False)] == ["a.md", "b.txt"]
    # a link to a file inside the folder is followed; a link leaving it is not
    (root / "sub" / "in.txt").symlink_to(root / "sub" / "deep" / "e.txt")
    (root / "sub" / "up.txt").symlink_to(root / "b.txt")
    assert [p.name for p in iter_files([root / "sub"], recursive=False)] == ["c.html", "in.txt"]


def test_iter_files_yields_missing_and_explicit_paths(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    (tmp_path / ".explicit.md").write_text("x")
    missing = tmp_path / "missing.txt"
    got = list(iter_files([missing, tmp_path / ".explicit.md", tmp_path, tmp_path / "a.txt"]))
    assert got == [missing, tmp_path / ".explicit.md", tmp_path / "a.txt"]  # a.txt once


# --------------------------------------------------------------------------- corpus and demo data


def load_questions(path: Path) -> list[dict[str, str]]:
    questions = json.loads(path.read_text(encoding="utf-8"))
    assert all(set(q) == {"question", "file", "answer_phrase"} for q in questions)
    return questions


def assert_questions_answerable(folder: Path, questions: list[dict[str, str]]) -> None:
    docs = {p.name: read_text_file(p) for p in folder.iterdir()}
    for q in questions:
        holders = [
            (name, i)
            for name, doc in docs.items()
            for i, para in enumerate(paragraphs(doc))
            if q["answer_phrase"] in para
        ]
        assert len(holders) == 1 and holders[0][0] == q["file"], q
        assert q["answer_phrase"].lower() not in q["question"].lower()
    assert {q["file"] for q in questions} == set(docs)


def test_corpus_files_and_questions() -> None:
    files = sorted(CORPUS.iterdir())
    assert 6 <= len(files) <= 8
    assert {p.suffix for p in files} == {".txt", ".md", ".html"}
    for path in files:
        assert detect_kind(path) == "text"
        assert 300 <= read_text_file(path).metadata["word_count"] <= 1500, path.name
    questions = load_questions(DATA / "corpus_questions.json")
    assert len(questions) >= 12
    assert_questions_answerable(CORPUS, questions)
