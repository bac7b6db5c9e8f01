"""What a LangChain/LangGraph user met with manuals as Debian ships them (a gzipped manual of ~80,000 characters
beside short notes), pinned on a real database with the real encoder: graph state holding whole manuals whose
first one took the whole evidence budget, and vector-store Documents of ingested files that named no file."""

from __future__ import annotations

import gzip
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from langchain_universalrag import UniversalRAGVectorStore, create_corpus_tools
from langchain_universalrag.graph import build_graph
from universalrag.errors import CorpusNotFoundError
from universalrag.pipeline import UniversalRAG

_TOPICS = ("block sorting", "damaged files", "memory use", "the library interface", "error codes", "recovery")


def _manual(name: str, sections: int) -> str:
    """A long manual: ``sections`` sections of distinct sentences (thousands of words in all)."""
    out = [f"The {name} manual"]
    for s in range(sections):
        topic = _TOPICS[s % len(_TOPICS)]
        out.append(f"\nSection {s + 1}: {topic} in {name}\n")
        out.append(
            " ".join(
                f"In {name}, paragraph {s}.{i} explains {topic} with detail number {i * 7 + s}; the "
                f"caller checks the return value and retries when the stream reports an error."
                for i in range(25)
            )
        )
    return "\n".join(out)


class RecordingModel(GenericFakeChatModel):
    """A scripted chat model that records the messages it was sent."""

    seen: ClassVar[list[Any]] = []

    def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


@pytest.fixture(scope="module")
def manuals(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[UniversalRAG, Path]]:
    """Two gzipped manuals of ~9,000 words each and a short note, ingested as a folder."""
    from support.s5_agents import folder_rag

    folder = tmp_path_factory.mktemp("doc")
    for name in ("bzip2", "zlib"):
        (folder / f"{name}.txt.gz").write_bytes(gzip.compress(_manual(name, 24).encode()))
    (folder / "NOTES").write_text(
        "Recovery notes\n\nTo recover data from a damaged file, run the recovery tool "
        "on it and decompress the blocks it writes one by one.\n"
    )
    with folder_rag(database_url, folder) as rag:
        yield rag, folder


def _words(text: str) -> int:
    return len(text.split())


def test_graph_documents_are_cut_like_the_retrievers_and_every_document_reaches_the_model(
    manuals: tuple[UniversalRAG, Path],
) -> None:
    """Before: ``build_graph``'s retrieval nodes kept whole units (``max_unit_tokens=None``), so the state held
    whole manuals (472,677 characters for nettle's changelog) and the first one filled the generation budget: the
    model got it and an empty text for every other document (bzip2's recovery passage among them)."""
    rag, _ = manuals
    RecordingModel.seen.clear()
    llm = RecordingModel(messages=iter([AIMessage("See [E1] and [E2].")]))
    state = build_graph(rag, llm, corpora=["document"], k=2).invoke(
        {"question": "how do I recover data from a damaged file"}
    )
    documents = state["documents"]
    assert len(documents) == 2
    assert all(_words(d.page_content) < 1000 for d in documents), [_words(d.page_content) for d in documents]
    assert any(d.metadata["truncated"] for d in documents)
    blocks = [b for b in RecordingModel.seen[-1][-1].content if b.get("type") == "text"]
    evidence = [b["text"] for b in blocks if b["text"].startswith("[E")]
    assert len(evidence) == 2
    assert all(_words(text) > 15 for text in evidence), [_words(text) for text in evidence]  # not a bare label

    whole = build_graph(rag, corpora=["document"], k=3, max_unit_tokens=None).invoke(
        {"question": "how do I recover data from a damaged file"}
    )
    assert max(_words(d.page_content) for d in whole["documents"]) > 5000  # None keeps whole units, as documented


def test_vector_store_documents_of_ingested_files_name_their_file(manuals: tuple[UniversalRAG, Path]) -> None:
    """Before: ``UniversalRAGVectorStore(rag=rag, corpus="paragraph")`` returned passages of ingested files with
    ``{"title", "format", "index", ...}`` only: no ``source``, so an agent could not say which file answered, while
    the retriever's Documents of the same units had it."""
    rag, folder = manuals
    store = UniversalRAGVectorStore(rag=rag, corpus="paragraph")
    found = store.similarity_search("how do I recover data from a damaged file", k=3)
    assert found and all(Path(d.metadata["source"]).parent == folder for d in found), [d.metadata for d in found]
    assert any(d.metadata["source"] == str(folder / "NOTES") for d in found)

    texts = UniversalRAGVectorStore(rag=rag, corpus="notes_lc")
    texts.ensure_corpus(description="notes")
    texts.add_texts(["The cryostat was serviced on Monday."], metadatas=[{"page": 3}], ids=["n1"])
    assert texts.similarity_search("cryostat", k=1)[0].metadata == {"page": 3}  # added documents: kept exactly


def test_vector_store_mmr_says_what_to_use_instead(manuals: tuple[UniversalRAG, Path]) -> None:
    """Before: ``as_retriever(search_type="mmr")`` raised a bare ``NotImplementedError()`` with no message."""
    rag, _ = manuals
    retriever = UniversalRAGVectorStore(rag=rag, corpus="paragraph").as_retriever(search_type="mmr")
    with pytest.raises(NotImplementedError, match="similarity"):
        retriever.invoke("damaged file")


def test_tools_for_a_corpus_that_does_not_exist_only_raise(
    manuals: tuple[UniversalRAG, Path], caplog: pytest.LogCaptureFixture
) -> None:
    """Before: ``create_corpus_tools(rag, ["manuals"])`` first logged that corpus ``manuals`` "holds no rows yet;
    their tools find nothing until they are ingested", then raised ``CorpusNotFoundError``: two contradicting
    messages for one typo."""
    rag, _ = manuals
    with caplog.at_level(logging.WARNING), pytest.raises(CorpusNotFoundError, match="manuals"):
        create_corpus_tools(rag, ["paragraph", "manuals"])
    assert not caplog.records, [r.getMessage() for r in caplog.records]
