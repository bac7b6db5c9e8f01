"""Very large sources: streamed, embedded and committed in resumable batches (``Store.write_staged``).

Policy, in numbers an :class:`~universalrag.ingest.pipeline.IngestOptions` can change:

- A plain-text file larger than ``large_text_bytes`` (8 MiB) is read in blocks of about 1 MiB cut at paragraph
  breaks, so memory holds one block and one batch of vectors, never the file. Every passage of the whole file
  goes to the paragraph corpus (batches of ``text_batch_passages``); the document unit holds the file's first
  ``head_chars`` characters (chunks of that head are its parts and give its vector) and says so in its
  metadata (``truncated``, ``bytes``), since one row cannot hold or full-text-index 200 MB.
- A table with more than ``stage_rows`` rows (all tables of the file together) is committed in batches of
  ``table_batch_rows`` rows. At most ``max_embedded_rows`` rows per table are embedded as its parts: an evenly
  spaced sample (every row when the table is smaller), so a million-row CSV costs a bounded embedding time.
  The table unit records ``row_count`` and ``embedded_rows``. A sampled table keeps every row whole in
  ``table_rows`` (``rows_kept`` in the unit's metadata), read with ``Store.table_rows(unit_id, where=…)``.

Unit ids come from the stage id and the unit's position, so a resumed run rebuilds exactly the batches it had
not committed, without embedding the committed ones again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..embed.base import Embedder
from ..embed.vectors import normalised_mean
from ..store.staging import BatchProducer, StagedBatch, unit_id
from ..types import CorpusSpec, Granularity, Modality, PartBatch, SourceRecord, Unit
from .files import GZIP_ERRORS, decode_error, file_encoding, gzip_error, open_text
from .text.passages import Passage, chunk_for_embedding, split_paragraphs
from .text.plain import extract_txt

if TYPE_CHECKING:
    import numpy as np

    from .tables.model import ParsedTable

__all__ = ["StagedSource", "sampled_rows", "staged_table", "staged_text", "text_blocks"]

_BLOCK_CHARS = 1 << 20


@dataclass(frozen=True, slots=True)
class StagedSource:
    """A source to write with ``Store.write_staged``: its record and the producer of its batches."""

    source: SourceRecord
    produce: BatchProducer
    batches: int  # how many batches a full run commits (for progress)
    what: str  # what a batch holds, for progress messages ("passages", "rows")


def text_blocks(path: Path, *, block_chars: int = _BLOCK_CHARS) -> Generator[str, None, None]:
    """The decoded text of ``path`` in blocks of about ``block_chars`` characters, each cut after a blank line
    when there is one (else after a line break, else at a space), so paragraphs rarely straddle two blocks."""
    encoding = file_encoding(path)
    try:
        with open_text(path, encoding) as fh:
            pending = ""
            while True:
                data = fh.read(block_chars)
                pending += data
                if not data:
                    if pending.strip():
                        yield pending
                    return
                if len(pending) < block_chars:
                    continue
                cut = max(pending.rfind("\n\n"), 0) or max(pending.rfind("\n"), 0) or max(pending.rfind(" "), 0)
                cut = cut or len(pending)
                yield pending[:cut]
                pending = pending[cut:]
    except UnicodeDecodeError as e:
        raise decode_error(path, encoding, "somewhere in the file") from e
    except GZIP_ERRORS as e:
        raise gzip_error(path, e) from e


def _passages(path: Path) -> Iterator[Passage]:
    """The passages of the whole file, with indexes and offsets counted across blocks (offsets into
    the clean text the blocks make when joined by a blank line)."""
    index = offset = 0
    for block in text_blocks(path):
        _, clean, _ = extract_txt(block.lstrip("\ufeff"))
        if not clean:
            continue
        for p in split_paragraphs(clean):
            yield Passage(index=index, text=p.text, start_char=offset + p.start_char, end_char=offset + p.end_char)
            index += 1
        offset += len(clean) + 2


def staged_text(
    path: Path,
    specs: Sequence[CorpusSpec],
    embedder: Embedder,
    *,
    uri: str,
    content_hash: str,
    batch_passages: int = 512,
    head_chars: int = 100_000,
) -> StagedSource:
    """A very large plain-text file as a staged source (see the module docstring)."""
    doc_spec = next((s for s in specs if s.granularity is Granularity.DOCUMENT), None)
    passage_specs = [s for s in specs if s.granularity is not Granularity.DOCUMENT]
    with contextlib.closing(text_blocks(path, block_chars=min(_BLOCK_CHARS, head_chars * 2))) as blocks:
        first = next(blocks, "")
    head_title, head, _ = extract_txt(first.lstrip("\ufeff"))
    title = head_title or Path(path.name.removesuffix(".gz")).stem
    head = head[:head_chars].rsplit("\n\n", 1)[0] if len(head) > head_chars else head
    size = path.stat().st_size
    meta = {"title": title, "format": "txt"}

    def produce(source_id: str, done: int) -> Iterator[StagedBatch]:
        doc_id = unit_id(source_id, "document")
        if done < 1:
            units: list[Unit] = []
            parts: list[PartBatch] = []
            if doc_spec is not None:
                chunks = chunk_for_embedding(head) or [title]
                vectors = embedder.embed([f"{title}\n{c}" for c in chunks])
                units.append(
                    Unit(
                        id=doc_id,
                        corpus=doc_spec.name,
                        uri=uri,
                        content=head,
                        embedding=normalised_mean(vectors).tolist(),
                        metadata={**meta, "truncated": True, "bytes": size, "chunks": len(chunks)},
                    )
                )
                parts = (
                    [PartBatch(corpus=doc_spec.name, unit_id=doc_id, start=0, texts=chunks, vectors=vectors)]
                    if doc_spec.multi_vector
                    else []
                )
            yield StagedBatch(units=units, parts=parts)
        number, batch = 1, []
        for passage in _passages(path):
            batch.append(passage)
            if len(batch) == batch_passages:
                number += 1
                if number > done:
                    yield _passage_batch(batch, passage_specs, embedder, title, uri, source_id, doc_spec, meta)
                batch = []
        if batch and number + 1 > done:
            yield _passage_batch(batch, passage_specs, embedder, title, uri, source_id, doc_spec, meta)

    corpora = tuple(sorted(s.name for s in specs))
    estimate = 1 + max(1, size // (batch_passages * 650))  # ~650 bytes per 100-word passage
    source = SourceRecord(
        uri=uri,
        content_hash=content_hash,
        modality=Modality.TEXT,
        corpora=corpora,
        metadata={"title": title, "format": "txt", "path": path.name, "bytes": size, "staged": True},
    )
    return StagedSource(source=source, produce=produce, batches=estimate, what="passage batches")


def _passage_batch(
    passages: list[Passage],
    specs: Sequence[CorpusSpec],
    embedder: Embedder,
    title: str,
    uri: str,
    source_id: str,
    doc_spec: CorpusSpec | None,
    meta: dict[str, str],
) -> StagedBatch:
    vectors: np.ndarray | list[Any] = embedder.embed([f"{title}\n{p.text}" for p in passages]) if specs else []
    units = [
        Unit(
            id=unit_id(source_id, f"{spec.name}:{p.index}"),
            corpus=spec.name,
            content=p.text,
            uri=uri,
            embedding=v.tolist(),
            parent_id=unit_id(source_id, "document") if doc_spec is not None and spec.parent == doc_spec.name else None,
            metadata={**meta, "index": p.index, "start_char": p.start_char, "end_char": p.end_char},
        )
        for spec in specs
        for p, v in zip(passages, vectors, strict=True)
    ]
    return StagedBatch(units=units)


def sampled_rows(count: int, limit: int) -> Callable[[int], bool]:
    """Whether row ``i`` of ``count`` is among ``limit`` evenly spaced rows (every row when ``count <= limit``)."""
    if count <= limit:
        return lambda i: True
    return lambda i: (i + 1) * limit // count > i * limit // count


def staged_table(
    tables: Sequence[ParsedTable],
    spec: CorpusSpec,
    embedder: Embedder,
    *,
    uri: str,
    content_hash: str,
    metadata: dict[str, object],
    batch_rows: int = 1024,
    max_embedded_rows: int = 100_000,
) -> StagedSource:
    """Large tables as a staged source: batch 1 holds the table units, then every ``batch_rows`` embedded rows
    make one batch (see the module docstring for the sample)."""
    from .tables.read import render_markdown, serialize_row

    counts = [int(t.metadata.get("row_count", 0)) for t in tables]
    embedded = [min(c, max_embedded_rows) for c in counts]

    def produce(source_id: str, done: int) -> Iterator[StagedBatch]:
        ids = [unit_id(source_id, f"table:{i}") for i in range(len(tables))]
        if done < 1:
            contents = []
            for table, count in zip(tables, counts, strict=True):
                preview = next(iter(table.batches(20)), [])
                content = render_markdown(table.title, table.header, preview, max_chars=6000)
                if count > len(preview) and "more rows)" not in content:
                    content += f"\n(… {count - len(preview)} more rows)"
                contents.append(content)
            vectors = embedder.embed(contents)
            yield StagedBatch(
                units=[
                    Unit(
                        id=i,
                        corpus=spec.name,
                        content=c,
                        uri=uri,
                        embedding=v.tolist(),
                        metadata={
                            **t.metadata,
                            "title": t.title,
                            "columns": list(t.header),
                            "embedded_rows": kept,
                            "rows_kept": kept < count,
                        },
                    )
                    for t, i, c, v, kept in zip(tables, ids, contents, vectors, embedded, strict=True)
                ]
            )
        number = 1
        for table, tid, count, kept in zip(tables, ids, counts, embedded, strict=True):
            keep = sampled_rows(count, max_embedded_rows)
            whole = kept < count  # a sampled table keeps every row in table_rows
            rows: list[list[str]] = []
            raw: list[tuple[str, int, dict[str, str]]] = []
            start = 0

            def batch(
                rows: list[list[str]],
                raw: list[tuple[str, int, dict[str, str]]],
                start: int,
                table: ParsedTable = table,
                tid: str = tid,
            ) -> StagedBatch:
                if not rows:
                    return StagedBatch(rows=raw)
                texts = [serialize_row(table.header, row) for row in rows]
                vectors = embedder.embed([f"{table.title}: {t}" for t in texts])
                return StagedBatch(
                    parts=[PartBatch(corpus=spec.name, unit_id=tid, start=start, texts=texts, vectors=vectors)],
                    rows=raw,
                )

            for i, row in enumerate(table.rows()):
                if whole and number + 1 > done:
                    raw.append((tid, i, dict(zip(table.header, row, strict=False))))
                if not keep(i):
                    continue
                rows.append(row)
                if len(rows) == batch_rows:
                    number += 1
                    if number > done:
                        yield batch(rows, raw, start)
                    start += len(rows)
                    rows, raw = [], []
            if rows or raw:
                number += 1
                if number > done:
                    yield batch(rows, raw, start)

    total = 1 + sum(-(-k // batch_rows) for k in embedded)
    source = SourceRecord(
        uri=uri,
        content_hash=content_hash,
        modality=Modality.TABLE,
        corpora=(spec.name,),
        metadata={**metadata, "staged": True},
    )
    return StagedSource(source=source, produce=produce, batches=total, what="row batches")
