"""Every Document and node names the file it came from, as the frameworks' own loaders do: LangChain's
``source`` (a chain that cites its sources reads it), LlamaIndex's ``file_path``/``file_name``. Before, only PDF,
Word and PowerPoint units had them; a Markdown page's passages had none and a CSV's rows named the bare file name.
Real files of four kinds, the real bundled MiniLM, a real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from universalrag.evidence import build_evidence
from universalrag.ingest.pipeline import ingest_paths
from universalrag.retrieve import search_corpus
from universalrag.store import Store
from universalrag.types import Hit

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

from langchain_universalrag._convert import document_to_hit, hit_to_document
from llama_index.retrievers.universalrag.base import hit_to_metadata

CORPUS = Path(__file__).parent / "data" / "corpus"


def test_every_hit_names_its_file_as_the_frameworks_loaders_do(store: Store, minilm, tmp_path: Path) -> None:
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "sourdough.md").write_text((CORPUS / "sourdough_baking.md").read_text(encoding="utf-8"), encoding="utf-8")
    (folder / "ferries.csv").write_text(
        "ferry,departs,crossing\nMorning Star,07:10,Sandwick to Holm\nGannet,09:30,Sandwick to Fara\n", encoding="utf-8"
    )
    (folder / "locks.rst").write_text(
        "Locks\n=====\n\nThe Holm lock keeper answers on VHF 16 from dawn to dusk.\n", encoding="utf-8"
    )
    assert ingest_paths(store, minilm, [folder]).ok
    hits: list[Hit] = [
        search_corpus(store, minilm, "paragraph", "how long does sourdough starter take to rise", k=1)[0],
        search_corpus(store, minilm, "document", "sourdough starter", k=1)[0],
        search_corpus(store, minilm, "table", "when does the Gannet leave", k=1)[0],
        search_corpus(store, minilm, "paragraph", "which radio channel does the lock keeper use", k=1)[0],
    ]
    expected = [folder / "sourdough.md", folder / "sourdough.md", folder / "ferries.csv", folder / "locks.rst"]
    # the evidence labels a model cites (and the CLI shows) say which file: the title, then the file's name when
    # the title does not already say it (a CSV's title is its stem)
    labels = [e.label for e in build_evidence(hits, with_media=False)]
    title = hits[0].metadata["title"]
    assert labels == [
        f"[paragraph 1] {title} (sourdough.md)",
        f"[document 2] {title} (sourdough.md)",
        "[table 3] ferries",
        "[paragraph 4] Locks (locks.rst)",
    ]
    for hit, path in zip(hits, expected, strict=True):
        doc = hit_to_document(hit)
        assert doc.metadata["source"] == str(path.resolve()), (hit.corpus, doc.metadata)
        node = hit_to_metadata(hit)
        assert node["file_path"] == str(path.resolve()) and node["file_name"] == path.name
        assert document_to_hit(doc).uri == hit.uri


def test_a_hit_from_an_address_names_the_address() -> None:
    web = Hit(corpus="paragraph", id="u1", score=0.5, content="A page.", uri="https://example.org/guide#locks")
    assert hit_to_document(web).metadata["source"] == "https://example.org/guide#locks"
    assert "file_path" not in hit_to_metadata(web)
    assert "source" not in hit_to_document(Hit(corpus="paragraph", id="u2", score=0.5, content="x")).metadata
