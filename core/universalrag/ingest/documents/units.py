"""A parsed document → linked units: the whole document, its passages, its tables and its figures.

Every unit carries its provenance in ``metadata`` so that an answer can cite "report.pdf, p. 12, Table 3":
``source`` (the file as given), ``page`` (1-based; ``slide`` too for decks; ``page_label`` when the PDF
prints another number, such as "iv"), ``heading_path``, ``bbox``
(``[x0, top, x1, bottom]`` in points from the page's top-left corner, where the format has geometry),
``document_id`` (the document unit's id, also the ``parent_id`` of passages) and, for tables and figures,
``label`` ("Table 3", "Figure 2") and ``caption``.

- **document**: the whole text (headings, paragraphs, table rows, captions, notes); its embedding windows
  as parts in a multi-vector corpus, as for text files. Tables of contents and indexes are left out of every
  text corpus, as HTML navigation is; ``navigation_removed`` counts their blocks.
- **paragraph**: ~100-word passages that never cross a heading, built from the paragraphs under each heading in
  reading order; for a deck, one unit per slide (title, body, tables, notes).
- **table**: one unit per table (rows embedded as parts, each with its header), titled by caption or heading.
- **image**: one unit per figure; the text channel is its caption, the sentences that cite it and its alt text,
  the visual channel (when a visual encoder is configured) the picture itself. The picture is saved as a JPEG
  in ``figure_dir`` and the unit's ``uri`` points at it, so evidence and visual encoders read it like any image.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...media import import_pil
from ...types import CorpusSpec, PartBatch, Unit
from ..tables.model import ParsedTable
from ..text.passages import chunk_for_embedding, split_paragraphs
from ..units import normalised_mean, table_units
from .model import Block, BlockKind
from .reader import ParsedDocument

if TYPE_CHECKING:
    from ...embed.base import Embedder
    from ...embed.visual import VisualEncoder

__all__ = ["DocumentTargets", "document_units", "passages"]


@dataclass(frozen=True, slots=True)
class DocumentTargets:
    """The corpora a document's units go to (None: that kind of unit is not made)."""

    document: CorpusSpec | None = None
    paragraph: CorpusSpec | None = None
    table: CorpusSpec | None = None
    image: CorpusSpec | None = None


@dataclass(frozen=True, slots=True)
class _Passage:
    text: str
    heading_path: tuple[str, ...]
    pages: tuple[int, ...]
    bbox: tuple[float, float, float, float] | None


def _new_id() -> str:
    return str(uuid.uuid4())


def _where(block_pages: Sequence[int | None]) -> tuple[int, ...]:
    return tuple(sorted({p for p in block_pages if p is not None}))


def _union(blocks: Sequence[Block]) -> tuple[float, float, float, float] | None:
    boxes = [b.bbox for b in blocks if b.bbox is not None]
    if not boxes or len(boxes) != len(blocks) or len(_where([b.page for b in blocks])) != 1:
        return None
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def _slide_text(blocks: Sequence[Block]) -> str:
    lines = []
    for block in blocks:
        if block.kind is BlockKind.NOTES:
            lines.append(f"Notes: {block.text}")
        elif block.kind is BlockKind.FIGURE:
            if block.text:
                lines.append(block.text)
        else:
            lines.append(block.text)
    return "\n".join(lines)


def passages(doc: ParsedDocument) -> list[_Passage]:
    """The document's passages: one per slide for decks; else ~100 words at a time within each heading's text."""
    if doc.info.format == "pptx":
        return [
            _Passage(_slide_text(p.blocks), p.blocks[0].heading_path if p.blocks else (), (p.number,), None)
            for p in doc.pages
            if p.blocks
        ]
    out: list[_Passage] = []
    section: list[Block] = []

    def flush() -> None:
        if not section:
            return
        starts, pieces, pos = [], [], 0
        for block in section:
            starts.append(pos)
            pieces.append(block.text)
            pos += len(block.text) + 2
        text = "\n\n".join(pieces)
        for passage in split_paragraphs(text):
            covered = [
                b
                for b, s in zip(section, starts, strict=True)
                if s < passage.end_char and s + len(b.text) > passage.start_char
            ]
            out.append(
                _Passage(passage.text, section[0].heading_path, _where([b.page for b in covered]), _union(covered))
            )
        section.clear()

    for block in doc.blocks():
        if block.kind not in (BlockKind.PARAGRAPH, BlockKind.NOTES):
            continue
        if section and block.heading_path != section[0].heading_path:
            flush()
        section.append(block)
    flush()
    return out


def _provenance(
    doc: ParsedDocument,
    *,
    source: str,
    document_id: str | None,
    pages: Sequence[int],
    heading_path: Sequence[str],
    bbox: Sequence[float] | None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "source": source,
        "document_format": doc.info.format,
        "document_title": doc.title,
        "heading_path": list(heading_path),
    }
    if pages:
        meta["page"] = pages[0]
        label = next((p.label for p in doc.pages if p.number == pages[0]), "")
        if label:
            meta["page_label"] = label
        if len(pages) > 1:
            meta["page_end"] = pages[-1]
        if doc.info.format == "pptx":
            meta["slide"] = pages[0]
    if bbox is not None:
        meta["bbox"] = [round(v, 1) for v in bbox]
    if document_id is not None:
        meta["document_id"] = document_id
    return meta


def _heading(path: Sequence[str]) -> str:
    return " > ".join(path)


def _headed(p: _Passage) -> str:
    """A passage's text as stored and shown: under its section's heading when the text does not hold it. A section's
    text is cut into passages of about 100 words, and the heading, a block of its own, led none of them: a function
    reference's "Returns: ASN1_SUCCESS if DER encoding OK …" did not say which function it described, to a reader
    or to the search for the function's name the user typed (the embedded text has always had the headings)."""
    heading = p.heading_path[-1].strip() if p.heading_path else ""
    return f"{heading}\n\n{p.text}" if heading and heading not in p.text else p.text


def _tables(doc: ParsedDocument, *, source: str, document_id: str | None) -> list[ParsedTable]:
    tables = []
    for index, block in enumerate(b for b in doc.blocks() if b.kind is BlockKind.TABLE and b.table is not None):
        data = block.table
        assert data is not None  # the blocks above are tables with their data
        width = len(data.rows[0])
        names, seen = [], set()
        for i, name in enumerate(data.header or ("",) * width, 1):
            name = name or f"column_{i}"
            while name in seen:
                name = f"{name}_{i}"
            seen.add(name)
            names.append(name)
        body = [list(r) for r in (data.body if data.header_rows else data.rows)]
        meta = {
            **_provenance(
                doc,
                source=source,
                document_id=document_id,
                pages=_where([block.page]),
                heading_path=block.heading_path,
                bbox=block.bbox,
            ),
            "format": doc.info.format,
            "index_in_file": index,
            "row_count": len(body),
            "column_count": width,
            "caption": data.caption,
            "label": f"Table {data.label}" if data.label else "",
            "cited_by": list(data.cited_by),
            "header_synthesized": not data.header_rows,
        }
        tables.append(ParsedTable(data.title, names, meta, row_source=partial(iter, body)))
    return tables


def _figure_text(doc: ParsedDocument, block: Block) -> str:
    figure = block.figure
    assert figure is not None
    lines = [figure.caption] if figure.caption else []
    lines += [s for s in figure.cited_by if s not in lines]
    if figure.alt_text and figure.alt_text not in lines:
        lines.append(figure.alt_text)
    if not lines:
        where = f"page {block.page}" if block.page is not None else "the document"
        lines.append(
            f"Picture on {where} of {doc.title}"
            + (f", section {_heading(block.heading_path)}" if block.heading_path else "")
        )
    return "\n".join(lines)


def _save_figure(data: bytes, folder: Path, name: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)
    return path.resolve().as_uri()


def document_units(
    doc: ParsedDocument,
    targets: DocumentTargets,
    embedder: Embedder,
    *,
    uri: str,
    source: str,
    figure_dir: Path | None = None,
    visual: VisualEncoder | None = None,
    batch_rows: int = 1024,
) -> tuple[list[Unit], Iterator[PartBatch]]:
    """The units of one parsed document (parents first) and the stream of its tables' row parts.

    Text is embedded in one batch with the document title (and heading path) in front; see the module
    docstring for what each corpus receives.
    """
    doc_id = _new_id() if targets.document is not None else None
    text = doc.text
    chunks = chunk_for_embedding(text) if targets.document is not None else []
    found = passages(doc) if targets.paragraph is not None else []
    figures = [b for b in doc.blocks() if b.kind is BlockKind.FIGURE] if targets.image is not None else []
    texts = [f"{doc.title}\n{c}" for c in chunks]
    texts += [
        f"{doc.title} — {_heading(p.heading_path)}\n{p.text}" if p.heading_path else f"{doc.title}\n{p.text}"
        for p in found
    ]
    texts += [f"{doc.title}\n{_figure_text(doc, b)}" for b in figures]
    vectors = embedder.embed(texts) if texts else np.zeros((0, embedder.dimension), dtype=np.float32)
    chunk_vecs = vectors[: len(chunks)]
    passage_vecs = vectors[len(chunks) : len(chunks) + len(found)]
    figure_vecs = vectors[len(chunks) + len(found) :]
    units: list[Unit] = []
    base = {"source": source, "format": doc.info.format, "title": doc.title}
    if targets.document is not None and doc_id is not None:
        spec = targets.document
        units.append(
            Unit(
                id=doc_id,
                corpus=spec.name,
                content=text,
                uri=uri,
                embedding=normalised_mean(chunk_vecs),
                metadata={
                    **base,
                    "pages": len(doc.pages),
                    "page_kind": doc.pages[0].kind if doc.pages else "page",
                    "words": len(text.split()),
                    "chunks": len(chunks),
                    "warnings": list(doc.warnings),
                    "navigation_removed": doc.navigation,
                },
                parts=chunks if spec.multi_vector else (),
                part_embeddings=[v.tolist() for v in chunk_vecs] if spec.multi_vector else (),
            )
        )
    if targets.paragraph is not None:
        spec = targets.paragraph
        linked = doc_id if targets.document is not None and spec.parent == targets.document.name else None
        for index, (p, vec) in enumerate(zip(found, passage_vecs, strict=True)):
            meta = {
                **_provenance(
                    doc, source=source, document_id=doc_id, pages=p.pages, heading_path=p.heading_path, bbox=p.bbox
                ),
                "title": doc.title,
                "format": doc.info.format,
                "index": index,
            }
            units.append(
                Unit(
                    id=_new_id(),
                    corpus=spec.name,
                    content=_headed(p),
                    uri=uri,
                    embedding=vec.tolist(),
                    parent_id=linked,
                    metadata=meta,
                )
            )
    if targets.image is not None:
        units.extend(
            _figure_units(
                doc,
                figures,
                figure_vecs,
                targets.image,
                uri=uri,
                source=source,
                document_id=doc_id,
                figure_dir=figure_dir,
                visual=visual,
            )
        )
    parts: Iterator[PartBatch] = iter(())
    if targets.table is not None:
        tables = _tables(doc, source=source, document_id=doc_id)
        if tables:
            table_list, parts = table_units(tables, targets.table, embedder, uri=uri, batch_rows=batch_rows)
            units.extend(table_list)
    return units, parts


def _figure_units(
    doc: ParsedDocument,
    figures: Sequence[Block],
    vectors: np.ndarray,
    spec: CorpusSpec,
    *,
    uri: str,
    source: str,
    document_id: str | None,
    figure_dir: Path | None,
    visual: VisualEncoder | None,
) -> list[Unit]:
    imaging = import_pil("figures of documents")
    visual_vecs: list[Any] = [None] * len(figures)
    if visual is not None and spec.visual_dimension and figures:
        images = [imaging.open(io.BytesIO(b.figure.image)).convert("RGB") for b in figures if b.figure is not None]
        visual_vecs = [v.tolist() for v in visual.embed_images(images)]
    units = []
    for index, (block, vec, visual_vec) in enumerate(zip(figures, vectors, visual_vecs, strict=True)):
        figure = block.figure
        assert figure is not None
        page = block.page or 0
        unit_uri = (
            uri if figure_dir is None else _save_figure(figure.image, figure_dir, f"p{page:04d}-f{index + 1:03d}.jpg")
        )
        content = _figure_text(doc, block)
        label = f"Figure {figure.label}" if figure.label else ""
        meta = {
            **_provenance(
                doc,
                source=source,
                document_id=document_id,
                pages=_where([block.page]),
                heading_path=block.heading_path,
                bbox=block.bbox,
            ),
            "title": (figure.caption or label or content)[:120],
            "label": label,
            "caption": figure.caption,
            "cited_by": list(figure.cited_by),
            "alt_text": figure.alt_text,
            "origin": figure.origin,
            "width": figure.width,
            "height": figure.height,
            "format": "jpeg",
            "mime_type": figure.mime_type,
            "description_source": "caption"
            if figure.caption
            else ("citing" if figure.cited_by else "alt" if figure.alt_text else "context"),
        }
        units.append(
            Unit(
                id=_new_id(),
                corpus=spec.name,
                content=content,
                uri=unit_uri,
                embedding=vec.tolist(),
                metadata=meta,
                visual_embedding=visual_vec,
            )
        )
    return units
