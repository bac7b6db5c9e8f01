"""Documents end to end: real PDF, Word and PowerPoint files, the real bundled MiniLM, a real PostgreSQL.

Checks what each file yields in each corpus, the provenance on hits (page, heading path, box, parent document),
retrieval of a figure, a table and a paragraph of the same report, one transaction per document (a bad file
stores nothing) and idempotent re-ingest.
"""

from __future__ import annotations

import io
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

pytest.importorskip("pypdfium2")
pytest.importorskip("reportlab")

from PIL import Image  # noqa: E402
from support.documents import (  # noqa: E402
    FIGURE_CAPTION,
    PRICE_LIST,
    TABLE_CAPTION,
    write_deck_pptx,
    write_encrypted_pdf,
    write_price_list_pdf,
    write_report_docx,
    write_report_pdf,
    write_scanned_pdf,
)

from universalrag.ingest.detect import detect_kind  # noqa: E402
from universalrag.ingest.documents import DocumentOptions  # noqa: E402
from universalrag.ingest.pipeline import IngestOptions, ingest_paths  # noqa: E402
from universalrag.retrieve import search_corpus  # noqa: E402
from universalrag.store import Store  # noqa: E402


@pytest.fixture
def report(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    return write_report_pdf(folder / "report.pdf")


def test_documents_are_detected_by_content(tmp_path: Path) -> None:
    pdf = write_report_pdf(tmp_path / "report.pdf")
    renamed = tmp_path / "report.txt"
    renamed.write_bytes(pdf.read_bytes())
    assert detect_kind(pdf) == "document" and detect_kind(renamed) == "document"
    assert detect_kind(write_report_docx(tmp_path / "r.docx")) == "document"
    assert detect_kind(write_deck_pptx(tmp_path / "d.pptx")) == "document"


def test_a_pdf_fills_document_paragraph_table_and_image_with_provenance(store: Store, minilm, report: Path) -> None:  # type: ignore[no-untyped-def]
    result = ingest_paths(store, minilm, [report])
    assert result.ok, result.failed
    [outcome] = result.outcomes
    assert outcome.kind == "document" and outcome.status == "added"
    assert set(outcome.corpora) == {"document", "paragraph", "table", "image"}
    counts = store.counts()
    assert counts["document"] == 1 and counts["table"] == 1 and counts["image"] == 1 and counts["paragraph"] >= 2

    [doc] = search_corpus(store, minilm, "document", "Kestrel Point Lighthouse report", k=1)
    assert doc.metadata["title"] == "Kestrel Point Lighthouse" and doc.metadata["pages"] == 4
    assert "Table 1" in doc.content and FIGURE_CAPTION in doc.content

    [table] = search_corpus(store, minilm, "table", "Which fuel did the lamp burn in the 1920s?", k=1)
    meta = table.metadata
    assert meta["page"] == 1 and meta["label"] == "Table 1" and meta["caption"] == TABLE_CAPTION
    assert meta["heading_path"] == ["2 Keepers"] and meta["document_id"] == doc.id
    assert meta["source"] == str(report) and len(meta["bbox"]) == 4
    assert meta["columns"] == ["Decade", "Keepers", "Lamp fuel"]
    assert any("Kerosene" in text for _, text, _ in table.matched_parts)

    [figure] = search_corpus(store, minilm, "image", "cup of coffee the keeper drank in the morning", k=1)
    fmeta = figure.metadata
    assert fmeta["page"] == 2 and fmeta["label"] == "Figure 1" and fmeta["document_id"] == doc.id
    assert fmeta["heading_path"] == ["3 The lamp room"] and fmeta["source"] == str(report)
    assert figure.content.startswith(FIGURE_CAPTION) and "Figure 1 shows" in figure.content
    picture = Path(unquote(urlparse(figure.uri).path))
    assert picture.is_file() and Image.open(picture).size == (fmeta["width"], fmeta["height"])

    passage = search_corpus(store, minilm, "paragraph", "When was the light automated?", k=1)[0]
    assert passage.parent_id == doc.id and passage.metadata["page"] == 4
    assert passage.metadata["heading_path"] == ["5 Automation"] and "1987" in passage.content
    # shown and indexed under its heading (a block of its own in the PDF): which section it is, for a reader and for
    # a search of the name the heading gives (a function reference's "Returns: ..." named no function)
    assert passage.content.startswith("5 Automation\n\n")
    [named] = search_corpus(store, minilm, "paragraph", '"5 Automation"', k=1)
    assert named.id == passage.id and named.channel_scores.get("exact")


def test_evidence_labels_cite_file_page_and_table(store: Store, minilm, report: Path) -> None:  # type: ignore[no-untyped-def]
    """What the generator sees, and so what its citations read: "report.pdf, p. 1, Table 1"."""
    from universalrag.evidence import build_evidence

    assert ingest_paths(store, minilm, [report]).ok
    [table] = search_corpus(store, minilm, "table", "Which fuel did the lamp burn in the 1920s?", k=1)
    [figure] = search_corpus(store, minilm, "image", "cup of coffee the keeper drank in the morning", k=1)
    passage = search_corpus(store, minilm, "paragraph", "When was the light automated?", k=1)[0]
    labels = [e.label for e in build_evidence([table, figure, passage])]
    assert labels[0].endswith("report.pdf, p. 1, Table 1"), labels
    assert labels[1].endswith("report.pdf, p. 2, Figure 1"), labels
    assert labels[2].endswith("report.pdf, p. 4"), labels


def test_figure_table_and_paragraph_questions_find_their_units_in_the_top_3(
    store: Store,
    minilm,  # type: ignore[no-untyped-def]
    report: Path,
) -> None:
    assert ingest_paths(store, minilm, [report]).ok
    cases = [
        ("image", "Show me the photograph of the keeper's coffee cup", lambda h: h.metadata.get("label") == "Figure 1"),
        ("table", "How many keepers were there in the 1890s?", lambda h: h.metadata.get("label") == "Table 1"),
        ("paragraph", "How many spiral steps lead up to the lamp room?", lambda h: "spiral steps" in h.content),
    ]
    for corpus, question, is_right in cases:
        hits = search_corpus(store, minilm, corpus, question, k=3)
        assert any(is_right(h) for h in hits[:3]), (corpus, question, [h.content[:60] for h in hits])


def test_reingest_is_idempotent_and_a_bad_pdf_stores_nothing(store: Store, minilm, report: Path) -> None:  # type: ignore[no-untyped-def]
    write_encrypted_pdf(report.parent / "locked.pdf")
    first = ingest_paths(store, minilm, [report.parent])
    assert first.count("added") == 1
    [failure] = first.failed
    assert failure.path.endswith("locked.pdf") and "password-protected" in failure.error
    counts = store.counts()
    second = ingest_paths(store, minilm, [report.parent])
    assert second.count("unchanged") == 1 and store.counts() == counts
    assert [s["uri"].rsplit("/", 1)[-1] for s in store.sources()] == ["report.pdf"]
    write_report_pdf(report, extra_pages=2)  # the file changes: its units are replaced, not added
    third = ingest_paths(store, minilm, [report])
    assert third.count("replaced") == 1
    after = store.counts()
    assert after["document"] == 1 and after["table"] == 1 and after["image"] == 1


def test_word_and_powerpoint_files(store: Store, minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "office"
    folder.mkdir()
    write_report_docx(folder / "report.docx")
    write_deck_pptx(folder / "deck.pptx")
    result = ingest_paths(store, minilm, [folder])
    assert result.ok, result.failed
    counts = store.counts()
    assert counts["document"] == 2 and counts["table"] == 3 and counts["image"] == 2
    slide = search_corpus(store, minilm, "paragraph", "What does the fog bell need?", k=1)[0]
    assert slide.metadata["slide"] == 1 and slide.metadata["page"] == 1 and "Notes: Remind the board" in slide.content
    assert slide.metadata["heading_path"] == ["Budget overview"]
    formula = search_corpus(store, minilm, "paragraph", "energy relation of the lens", k=1)[0]
    assert "$E=mc^{2}$" in formula.content and formula.metadata["heading_path"] == ["The lamp room", "Optics"]
    figures = search_corpus(store, minilm, "image", "cup of coffee", k=2)
    assert {h.metadata["document_format"] for h in figures} == {"docx", "pptx"}
    for hit in figures:
        data = Path(unquote(urlparse(hit.uri).path)).read_bytes()
        assert Image.open(io.BytesIO(data)).format == "JPEG"


def test_a_scanned_page_without_ocr_is_stored_as_a_picture_with_its_warning(
    store: Store,
    minilm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    scan = write_scanned_pdf(tmp_path / "scan.pdf")
    result = ingest_paths(store, minilm, [scan], options=IngestOptions(documents=DocumentOptions(ocr=False)))
    assert result.ok, result.failed
    [page] = search_corpus(store, minilm, "image", "scanned page", k=1)
    assert page.metadata["origin"] == "scanned" and page.metadata["page"] == 1
    [source] = store.sources()
    assert any("no text layer" in w for w in source["metadata"]["warnings"])


def test_corpus_option_sends_only_text_units(store: Store, minilm, report: Path) -> None:  # type: ignore[no-untyped-def]
    result = ingest_paths(store, minilm, [report], corpus="paragraph")
    assert result.ok, result.failed
    counts = store.counts()
    assert counts["paragraph"] >= 2 and counts["document"] == counts["table"] == counts["image"] == 0


def test_after_routing_each_question_finds_its_unit_in_the_top_3(store: Store, minilm, report: Path) -> None:  # type: ignore[no-untyped-def]
    from universalrag.pipeline import UniversalRAG

    assert ingest_paths(store, minilm, [report]).ok
    rag = UniversalRAG(store=store, embedder=minilm, generator=None, visual_encoder=None, k=3)
    cases = [
        (
            "What does the photograph of the keeper's morning coffee cup look like?",
            lambda h: h.corpus == "image" and h.metadata.get("label") == "Figure 1",
        ),
        (
            "Compare the number of keepers in the 1890s and the 1980s.",
            lambda h: h.corpus == "table" and h.metadata.get("label") == "Table 1",
        ),
        (
            "In which year was the light at Kestrel Point automated?",
            lambda h: h.corpus in ("paragraph", "document") and "automated in 1987" in h.content,
        ),
    ]
    for question, is_right in cases:
        decision = rag.route(question)
        hits = rag.retrieve(question, decision=decision, k=3)
        assert any(is_right(h) for h in hits[:3]), (
            question,
            decision.routes,
            [(h.corpus, h.content[:50]) for h in hits],
        )


def test_figures_get_a_visual_channel_with_a_tiny_random_clip(
    settings,
    minilm,
    report: Path,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """The visual plumbing only: the CLIP model is tiny and randomly initialised (no weights can be installed)."""
    from support.tiny_clip import build_tiny_clip

    from universalrag.embed.visual import CLIPVisualEncoder

    encoder = CLIPVisualEncoder(build_tiny_clip(tmp_path / "tiny-clip"), name="tiny-random-clip")
    store = Store(settings=settings)
    store.init(embedder=minilm.name, dimension=minilm.dimension)
    try:
        result = ingest_paths(store, minilm, [report], options=IngestOptions(visual_encoder=encoder))
        assert result.ok, result.failed
        spec = store.corpus("image")
        assert (spec.visual_encoder, spec.visual_dimension) == ("tiny-random-clip", encoder.dimension)
        [hit] = search_corpus(store, minilm, "image", "coffee cup", k=1, visual_encoder=encoder)
        assert set(hit.channel_scores) == {"text", "visual"} and hit.metadata["label"] == "Figure 1"
    finally:
        store.close()


def test_adapters_name_page_and_source_as_their_own_pdf_loaders_do(store: Store, minilm, report: Path) -> None:  # type: ignore[no-untyped-def]
    """LangChain's PDF loaders: ``source`` and a 0-based ``page`` (+ ``page_label``); LlamaIndex's readers:
    ``file_name``/``file_path`` and ``page_label``. The store's 1-based page survives a round trip."""
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    from langchain_universalrag._convert import document_to_hit, hit_to_document
    from llama_index.retrievers.universalrag.base import hit_to_metadata

    assert ingest_paths(store, minilm, [report]).ok
    [table] = search_corpus(store, minilm, "table", "Which fuel did the lamp burn in the 1920s?", k=1)
    assert table.metadata["page"] == 1
    doc = hit_to_document(table)
    assert doc.metadata["source"] == str(report) and doc.metadata["page"] == 0 and doc.metadata["page_label"] == "1"
    assert document_to_hit(doc).metadata["page"] == 1
    meta = hit_to_metadata(table)
    assert meta["file_name"] == "report.pdf" and meta["file_path"] == str(report) and meta["page_label"] == "1"


def test_a_price_list_set_without_rules_is_a_table_whose_rows_answer(store: Store, minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Found by ingesting a supplier's price list whose table draws no line: before, no table was found and the
    page's reading order put every stock figure after all part numbers, so no passage held a row."""
    from universalrag.exact_terms import exact_terms

    pdf = write_price_list_pdf(tmp_path / "pricelist.pdf")
    assert ingest_paths(store, minilm, [pdf]).ok
    [table] = store.search("table", minilm.embed_query("price list"), k=1)
    assert table.metadata["row_count"] == len(PRICE_LIST) and table.metadata["page"] == 1
    assert table.metadata["columns"] == ["Part number", "Description", "Unit price (EUR)", "Stock"]
    passages = " ".join(h.content for h in store.search("paragraph", minilm.embed_query("stock"), k=10))
    assert "ship free" in passages and PRICE_LIST[12][0] not in passages  # terms in passages, rows in the table
    for number, description, _price, stock in (PRICE_LIST[13], PRICE_LIST[24], PRICE_LIST[3]):
        query = f"how many {number} are in stock?"
        [hit] = store.search("table", minilm.embed_query(query), k=1, exact_terms=exact_terms(query))
        row = hit.matched_parts[0][1]
        assert f"Part number: {number} |" in row and f"Stock: {stock}" in row and description in row, row


def test_pdfs_ingested_before_tables_without_rules_were_found_are_replaced_once(
    store: Store,
    minilm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    import sqlalchemy as sa

    from universalrag.ingest.files import hash_file

    pdf = write_price_list_pdf(tmp_path / "pricelist.pdf").resolve()
    assert ingest_paths(store, minilm, [pdf]).ok
    assert store.source_state(pdf.as_uri())[0] not in (None, hash_file(pdf))  # the identity covers PDF_RULES
    with store.transaction() as conn:  # as the earlier rule stored it: identified by its file hash alone
        conn.execute(
            sa.update(store.tables.sources)
            .where(store.tables.sources.c.uri == pdf.as_uri())
            .values(content_hash=hash_file(pdf))
        )
    assert [o.status for o in ingest_paths(store, minilm, [pdf]).outcomes] == ["replaced"]
    assert [o.status for o in ingest_paths(store, minilm, [pdf]).outcomes] == ["unchanged"]
