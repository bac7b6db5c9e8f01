"""Text files are embedded in chunks on a worker thread while earlier files are written: real files, the real
bundled encoder (with one text made to fail), a real PostgreSQL."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA
from universalrag.errors import EmbeddingError
from universalrag.ingest.pipeline import ingest_paths
from universalrag.retrieve import search_corpus
from universalrag.store import Store

POISON = "Zyxwvut marks the paragraph the encoder refuses."


class Refusing:
    """The bundled encoder, refusing any call that holds :data:`POISON`, recording each call's size and thread."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.name, self.dimension = inner, inner.name, inner.dimension
        self.calls: list[tuple[int, str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append((len(texts), threading.current_thread().name))
        if any(POISON in t for t in texts):
            raise EmbeddingError("the encoder refused this batch")
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


@pytest.fixture
def many_files(tmp_path: Path) -> list[Path]:
    """Three copies of the test corpus's text and Markdown files (~40 passages each), one poisoned at the end."""
    folder = tmp_path / "many"
    folder.mkdir()
    sources = sorted(p for p in (DATA / "corpus").iterdir() if p.suffix in (".txt", ".md"))
    for i in range(3):
        for src in sources:
            shutil.copy(src, folder / f"{i}_{src.name}")
    last = max(folder.iterdir())
    last.write_text(last.read_text(encoding="utf-8") + f"\n\n{POISON}\n", encoding="utf-8")
    return sorted(folder.iterdir())


def test_text_files_are_embedded_in_chunks_and_fail_per_chunk(store: Store, minilm, many_files: list[Path]) -> None:
    encoder = Refusing(minilm)
    report = ingest_paths(store, encoder, many_files)
    assert [Path(o.path).name for o in report.outcomes] == [p.name for p in many_files]  # file order kept
    assert len(encoder.calls) >= 3  # several chunks, not one call
    assert all(n >= 64 for n, _ in encoder.calls[:-1])  # each a bulk call for the encoder
    assert {thread for _, thread in encoder.calls} == {"universalrag-embed_0"}  # embedded off the main thread
    failed = [Path(o.path).name for o in report.failed]
    added = [Path(o.path).name for o in report.outcomes if o.status == "added"]
    assert many_files[-1].name in failed and "refused" in report.failed[0].error
    assert added and set(added) | set(failed) == {p.name for p in many_files}
    assert added == [p.name for p in many_files[:len(added)]]  # only the last chunk's files failed
    assert store.counts()["document"] == len(added)
    uris = [str(s["uri"]) for s in store.sources()]
    assert len(uris) == len(added) and not any(uri.endswith(name) for uri in uris for name in failed)
    # the vectors written are the files' own: a question finds its paragraph in an ingested copy
    hits = search_corpus(store, minilm, "paragraph", "How many stairs must you climb to reach the top of the "
                         "Kestrel Point tower?", k=3)
    assert any("142 stone steps" in h.content for h in hits)
