"""Parsed inputs → units with their embeddings, for each modality. No database access.

Every builder returns a :class:`Prepared` source: the source record, its units (parents first) and, for large
multi-vector units, a lazy stream of part batches that is embedded while the store consumes it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..embed.base import Embedder
from ..embed.vectors import normalised_mean
from ..types import CorpusSpec, Granularity, Modality, PartBatch, SourceRecord, Unit
from .table_plan import table_preview, table_unit
from .text.document import TextDocument
from .text.passages import chunk_for_embedding, split_paragraphs

if TYPE_CHECKING:
    from ..embed.visual import VisualEncoder
    from .images.read import ImageInfo
    from .tables.model import ParsedTable
    from .video.planning import VideoPlan

__all__ = ["Prepared", "TextPlan", "image_units", "plan_text_units", "source_record", "table_units", "video_units"]


@dataclass(slots=True)
class Prepared:
    """One source ready to be written."""

    source: SourceRecord
    units: list[Unit]
    parts: Iterable[PartBatch] = ()


def _new_id() -> str:
    return str(uuid.uuid4())


@dataclass(slots=True)
class TextPlan:
    """The texts a document needs embedded, and how to turn their vectors into units.

    Splitting the work this way lets the pipeline embed the texts of many files in one batch.
    """

    texts: list[str]
    build: Callable[[np.ndarray], list[Unit]]


def plan_text_units(
    doc: TextDocument, specs: Sequence[CorpusSpec], *, uri: str, passage_text: str | None = None
) -> TextPlan:
    """Plan the units of one text document for each target text corpus, to be embedded in one batch.

    Document-granularity corpora get the whole text (its chunks as parts when the corpus is multi-vector;
    the unit vector is the normalised mean of the chunk vectors); any other text corpus gets ~100-word
    passages, linked to the document unit when the document corpus is also a target, cut from
    ``passage_text`` when given (a page's prose without the tables that are ingested as tables), else from the
    whole text. Each text is embedded with the document's title in front, which disambiguates passages such as
    "It was automated in 1987".
    """
    doc_id = _new_id()
    base_meta = {"title": doc.title, "format": doc.format}
    links = {"links": doc.metadata["links"]} if doc.metadata.get("links") else {}  # a page's links, on its document
    wants_doc = any(s.granularity is Granularity.DOCUMENT for s in specs)
    wants_passages = any(s.granularity is not Granularity.DOCUMENT for s in specs)
    chunks = chunk_for_embedding(doc.text) if wants_doc else []
    passages = split_paragraphs(passage_text or doc.text) if wants_passages else []
    parent = next((s.name for s in specs if s.granularity is Granularity.DOCUMENT), None)

    def build(vectors: np.ndarray) -> list[Unit]:
        chunk_vecs, passage_vecs = vectors[: len(chunks)], vectors[len(chunks) :]
        units: list[Unit] = []
        for spec in specs:
            if spec.granularity is Granularity.DOCUMENT:
                units.append(
                    Unit(
                        id=doc_id,
                        corpus=spec.name,
                        content=doc.text,
                        uri=uri,
                        embedding=normalised_mean(chunk_vecs).tolist(),
                        metadata={**base_meta, "words": len(doc.text.split()), "chunks": len(chunks), **links},
                        parts=chunks if spec.multi_vector else (),
                        part_embeddings=[v.tolist() for v in chunk_vecs] if spec.multi_vector else (),
                    )
                )
            else:
                units.extend(
                    Unit(
                        id=_new_id(),
                        corpus=spec.name,
                        content=p.text,
                        uri=uri,
                        embedding=v.tolist(),
                        parent_id=doc_id if parent is not None and spec.parent == parent else None,
                        metadata={**base_meta, "index": p.index, "start_char": p.start_char, "end_char": p.end_char},
                    )
                    for p, v in zip(passages, passage_vecs, strict=True)
                )
        return units

    texts = [f"{doc.title}\n{t}" for t in [*chunks, *(p.text for p in passages)]]
    return TextPlan(texts=texts, build=build)


def table_units(
    tables: Sequence[ParsedTable],
    spec: CorpusSpec,
    embedder: Embedder,
    *,
    uri: str,
    batch_rows: int = 1024,
    preview_rows: int = 20,
) -> tuple[list[Unit], Iterator[PartBatch]]:
    """One unit per table (its title, header and first rows as Markdown) and a lazy stream of row parts.

    Each row is embedded as ``title: column: value | column: value`` — serialised with its header, as the
    UniversalRAG paper does — so a table is found when one of its rows matches, and the hit names the rows.
    The unit's own vector is the embedding of its title, header and first rows. Rows are streamed: a
    100k-row table is read, embedded and written one batch at a time.
    """
    from .tables.read import serialize_row

    contents = [table_preview(table, rows=preview_rows) for table in tables]
    vectors: np.ndarray | list[Any] = embedder.embed(contents) if contents else []
    units = [
        table_unit(table, spec, uri=uri, preview=content, vector=vector)
        for table, content, vector in zip(tables, contents, vectors, strict=True)
    ]

    def stream() -> Iterator[PartBatch]:
        for table, unit in zip(tables, units, strict=True):
            start = 0
            for rows in table.batches(batch_rows):
                texts = [serialize_row(table.header, row) for row in rows]
                vectors = embedder.embed([f"{table.title}: {t}" for t in texts])
                yield PartBatch(corpus=spec.name, unit_id=unit.id, start=start, texts=texts, vectors=vectors)
                start += len(rows)

    return units, stream()


def image_units(
    info: ImageInfo, spec: CorpusSpec, embedder: Embedder, *, uri: str, visual: VisualEncoder | None = None
) -> list[Unit]:
    """The image as one unit: its description is the text channel, the encoder's view the visual one."""
    visual_vec = None
    if visual is not None:
        from ..media import load_rgb

        visual_vec = visual.embed_images([load_rgb(info.path, max_side=512)])[0].tolist()
    metadata = {
        **info.metadata,
        "format": info.format,
        "width": info.width,
        "height": info.height,
        "description_source": info.description_source,
        "title": info.description[:120],
    }
    return [
        Unit(
            id=_new_id(),
            corpus=spec.name,
            content=info.description,
            uri=uri,
            embedding=embedder.embed([info.description])[0].tolist(),
            metadata=metadata,
            visual_embedding=visual_vec,
        )
    ]


def _frames_vector(path: Path, times: Sequence[float], visual: VisualEncoder) -> list[float] | None:
    from ..media import iter_frames

    images = [image for _, image in iter_frames(path, times)]
    return normalised_mean(visual.embed_images(images)).tolist() if images else None


def video_units(
    plan: VideoPlan,
    *,
    video: CorpusSpec | None,
    clip: CorpusSpec | None,
    embedder: Embedder,
    uri: str,
    visual: VisualEncoder | None = None,
) -> list[Unit]:
    """The whole video (title + transcript; transcript chunks as parts in a multi-vector corpus) and one unit
    per clip (its transcript slice and time range, linked to the video), each with pooled frame embeddings
    when a visual encoder is given."""
    probe = plan.probe
    base = {"title": plan.title, "duration_s": probe.duration_s, "transcript_source": plan.transcript_source}
    units: list[Unit] = []
    video_id = None
    if video is not None:
        video_id = _new_id()
        full = plan.transcript_text.strip()
        chunks = chunk_for_embedding(full) if full else []
        vectors = embedder.embed([f"{plan.title}\n{c}" for c in chunks] or [plan.title])
        units.append(
            Unit(
                id=video_id,
                corpus=video.name,
                content=f"{plan.title}\n{full}".strip(),
                uri=uri,
                start_s=0.0,
                end_s=probe.duration_s,
                embedding=normalised_mean(vectors).tolist(),
                metadata={
                    **base,
                    **probe.metadata,
                    "fps": probe.fps,
                    "width": probe.width,
                    "height": probe.height,
                    "frame_times": list(plan.video_frame_times),
                    "clips": len(plan.clips),
                },
                parts=chunks if video.multi_vector else (),
                part_embeddings=[v.tolist() for v in vectors[: len(chunks)]] if video.multi_vector else (),
                visual_embedding=_frames_vector(probe.path, plan.video_frame_times, visual) if visual else None,
            )
        )
    if clip is None or not plan.clips:
        return units
    vectors = embedder.embed([f"{plan.title}\n{c.transcript}".strip() for c in plan.clips])
    for c, vec in zip(plan.clips, vectors, strict=True):
        units.append(
            Unit(
                id=_new_id(),
                corpus=clip.name,
                uri=uri,
                start_s=c.start_s,
                end_s=c.end_s,
                embedding=vec.tolist(),
                content=c.transcript or f"{plan.title} ({c.start_s:.1f}s–{c.end_s:.1f}s)",
                parent_id=video_id if video is not None and clip.parent == video.name else None,
                metadata={**base, "index": c.index, "frame_times": list(c.frame_times)},
                visual_embedding=_frames_vector(probe.path, c.frame_times, visual) if visual else None,
            )
        )
    return units


def source_record(
    uri: str, content_hash: str, modality: Modality, units: Sequence[Unit], *, metadata: dict[str, Any] | None = None
) -> SourceRecord:
    """The source row for ``units`` (its corpora are the ones the units go to)."""
    corpora = tuple(sorted({u.corpus for u in units}))
    return SourceRecord(uri=uri, content_hash=content_hash, modality=modality, corpora=corpora, metadata=metadata or {})
