"""Files → units → embeddings → one transaction per source.

Idempotent by content hash: a source whose hash and target corpora are unchanged is skipped before it is
parsed or embedded. A file that fails (bad input, embedding error, database error) is reported with its
reason and leaves no rows; the other files go on.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..embed.base import Embedder, check_embedder
from ..errors import ConfigError, IngestError, UniversalRAGError
from ..store import Store
from ..types import CorpusSpec, Granularity, Modality, SourceRecord, Unit
from .detect import detect_kind, iter_files
from .text import TextDocument, chunk_for_embedding, read_text_file, split_paragraphs

__all__ = ["FileOutcome", "IngestReport", "ingest_paths", "text_units"]

#: Where a text file goes when no corpus is named: the whole document and its paragraphs.
DEFAULT_TEXT_CORPORA: tuple[str, ...] = ("document", "paragraph")


@dataclass(frozen=True, slots=True)
class FileOutcome:
    """What happened to one input: ``added``, ``replaced``, ``unchanged`` or ``failed`` (with ``error``)."""

    path: str
    status: str
    corpora: tuple[str, ...] = ()
    rows: dict[str, int] = field(default_factory=dict)
    error: str | None = None


@dataclass(slots=True)
class IngestReport:
    """Every input's outcome, in order."""

    outcomes: list[FileOutcome] = field(default_factory=list)

    def count(self, status: str) -> int:
        """How many inputs ended with ``status``."""
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def failed(self) -> list[FileOutcome]:
        """The inputs that could not be ingested."""
        return [o for o in self.outcomes if o.status == "failed"]

    @property
    def ok(self) -> bool:
        """True when no input failed."""
        return not self.failed

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready summary."""
        return {
            "added": self.count("added"),
            "replaced": self.count("replaced"),
            "unchanged": self.count("unchanged"),
            "failed": [{"path": o.path, "error": o.error} for o in self.failed],
            "rows": {c: sum(o.rows.get(c, 0) for o in self.outcomes)
                     for c in sorted({c for o in self.outcomes for c in o.rows})},
        }


def _unit_vector(vectors: np.ndarray) -> list[float]:
    mean = vectors.mean(axis=0)
    return (mean / (np.linalg.norm(mean) or 1.0)).tolist()


def text_units(doc: TextDocument, specs: Sequence[CorpusSpec], embedder: Embedder, *, uri: str) -> list[Unit]:
    """The units of one text document for each target corpus, embedded in one batch.

    Document-granularity corpora get the whole text (its chunks as parts when the corpus is multi-vector;
    the unit vector is the normalised mean of the chunk vectors); any other text corpus gets ~100-word
    passages, linked to the document unit when the document corpus is also a target. Each text is embedded
    with the document's title in front, which disambiguates passages such as "It was automated in 1987".
    """
    doc_id = str(uuid.uuid4())
    base_meta = {"title": doc.title, "format": doc.format}
    chunks = chunk_for_embedding(doc.text)
    passages = split_paragraphs(doc.text)
    wants_doc = any(s.granularity is Granularity.DOCUMENT for s in specs)
    wants_passages = any(s.granularity is not Granularity.DOCUMENT for s in specs)
    texts = (chunks if wants_doc else []) + ([p.text for p in passages] if wants_passages else [])
    vectors = embedder.embed([f"{doc.title}\n{t}" for t in texts]) if texts else np.zeros((0, embedder.dimension))
    chunk_vecs, passage_vecs = vectors[: len(chunks) if wants_doc else 0], vectors[len(chunks) if wants_doc else 0:]
    parent = next((s.name for s in specs if s.granularity is Granularity.DOCUMENT), None)
    units: list[Unit] = []
    for spec in specs:
        if spec.granularity is Granularity.DOCUMENT:
            units.append(Unit(
                id=doc_id, corpus=spec.name, content=doc.text, uri=uri, embedding=_unit_vector(chunk_vecs),
                metadata={**base_meta, "words": len(doc.text.split()), "chunks": len(chunks)},
                parts=chunks if spec.multi_vector else (),
                part_embeddings=[v.tolist() for v in chunk_vecs] if spec.multi_vector else (),
            ))
        else:
            units.extend(
                Unit(
                    id=str(uuid.uuid4()), corpus=spec.name, content=p.text, uri=uri, embedding=v.tolist(),
                    parent_id=doc_id if spec.parent == parent and parent is not None else None,
                    metadata={**base_meta, "index": p.index, "start_char": p.start_char, "end_char": p.end_char},
                )
                for p, v in zip(passages, passage_vecs, strict=True)
            )
    return units


def _targets(store: Store, embedder: Embedder, corpus: str | None) -> list[CorpusSpec]:
    names = (corpus,) if corpus else DEFAULT_TEXT_CORPORA
    specs = [store.corpus(n) for n in names]
    for spec in specs:
        if spec.modality is not Modality.TEXT:
            raise ConfigError(
                f"Corpus {spec.name!r} holds {spec.modality} units; text files go to a text corpus "
                "(paragraph, document, or one created with --modality text)."
            )
        check_embedder(spec, embedder)
    return specs


def _ingest_file(store: Store, embedder: Embedder, path: Path, specs: list[CorpusSpec]) -> FileOutcome:
    corpora = tuple(s.name for s in specs)
    kind = detect_kind(path) if path.exists() else "text"
    if kind != "text":
        what = "not a supported file type" if kind is None else f"detected as {kind}, not text"
        raise IngestError(path, f"{what}; this version ingests text files (.txt, .md, .markdown, .html, .htm).")
    doc = read_text_file(path)
    uri = path.resolve().as_uri()
    if store.source_state(uri) == (doc.content_hash, tuple(sorted(corpora))):
        return FileOutcome(path=str(path), status="unchanged", corpora=corpora)
    units = text_units(doc, specs, embedder, uri=uri)
    source = SourceRecord(uri=uri, content_hash=doc.content_hash, modality=Modality.TEXT,
                          corpora=tuple(sorted(corpora)), metadata={"title": doc.title, "format": doc.format,
                                                                    "path": str(path)})
    result = store.write_source(source, units)
    return FileOutcome(path=str(path), status=result.status, corpora=corpora, rows=dict(result.rows))


def ingest_paths(
    store: Store,
    embedder: Embedder,
    paths: Sequence[str | Path],
    *,
    corpus: str | None = None,
    on_file: Callable[[FileOutcome], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> IngestReport:
    """Ingest files and folders (walked recursively) into their corpora; see the module docstring.

    ``corpus`` sends every file to that corpus instead of ``document`` + ``paragraph``. ``on_start`` is told
    how many files were found, ``on_file`` each outcome as it happens (for progress bars).
    """
    specs = _targets(store, embedder, corpus)
    files = list(iter_files([Path(p) for p in paths]))
    if on_start is not None:
        on_start(len(files))
    report = IngestReport()
    for path in files:
        try:
            outcome = _ingest_file(store, embedder, path, specs)
        except UniversalRAGError as e:
            reason = e.reason if isinstance(e, IngestError) else str(e)
            outcome = FileOutcome(path=str(path), status="failed", error=reason)
        report.outcomes.append(outcome)
        if on_file is not None:
            on_file(outcome)
    return report
