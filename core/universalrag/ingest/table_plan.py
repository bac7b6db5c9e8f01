"""Tables planned for a shared embedding call: the texts a source's tables need embedded, and how their vectors
become table units and row parts. No database access, no embedding.

:func:`~universalrag.ingest.units.table_units` embeds a table's preview, then streams its rows in batches
embedded while the store writes them: right for a large table, but the small tables of many Markdown and HTML
pages would each cost separate small, padded encoder calls. A :class:`TablePlan` lets the pipeline put them in
the one length-sorted call that embeds the pages' paragraphs. The texts are the same as ``table_units`` embeds
(the preview, then ``title: column: value | ...`` for each row), so the stored units and parts are too.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..types import CorpusSpec, PartBatch, Unit

if TYPE_CHECKING:
    from .tables.model import ParsedTable

__all__ = ["TablePlan", "plan_table_units", "table_preview", "table_unit"]


def table_preview(table: ParsedTable, *, rows: int = 20, max_chars: int = 6000) -> str:
    """A table unit's content (and the text its own vector embeds): its title, header and first ``rows`` rows as
    Markdown, noting how many rows follow."""
    from .tables.read import render_markdown

    preview = next(iter(table.batches(rows)), [])
    content = render_markdown(table.title, table.header, preview, max_chars=max_chars)
    more = int(table.metadata.get("row_count", len(preview))) - len(preview)
    if more > 0 and "more rows)" not in content:
        content += f"\n(… {more} more rows)"
    return content


def table_unit(table: ParsedTable, spec: CorpusSpec, *, uri: str, preview: str, vector: np.ndarray) -> Unit:
    """A table's unit in corpus ``spec``: its ``preview`` as content, that preview's ``vector`` as its own, the
    table's metadata with its title and columns."""
    return Unit(
        id=str(uuid.uuid4()),
        corpus=spec.name,
        content=preview,
        uri=uri,
        embedding=vector.tolist(),
        metadata={**table.metadata, "title": table.title, "columns": list(table.header)},
    )


@dataclass(slots=True)
class TablePlan:
    """The texts some tables need embedded (previews first, then every row of each table in order), and how
    their vectors, in the same order, become the table units and one part batch of rows per table."""

    texts: list[str]
    build: Callable[[np.ndarray], tuple[list[Unit], list[PartBatch]]]


def plan_table_units(tables: Sequence[ParsedTable], spec: CorpusSpec, *, uri: str, preview_rows: int = 20) -> TablePlan:
    """Plan one unit per table of ``tables`` in corpus ``spec`` (its preview as content, the preview's vector
    as its own) and its rows as parts, all embedded in one call with other sources' texts.

    Every row is read here and held until the vectors come back: meant for the tables of a page, not for a
    table file of millions of rows (those stream through ``table_units`` or are staged).
    """
    from .tables.read import serialize_row

    previews = [table_preview(t, rows=preview_rows) for t in tables]
    rows = [[serialize_row(t.header, row) for row in t.rows()] for t in tables]
    texts = previews + [f"{t.title}: {text}" for t, texts in zip(tables, rows, strict=True) for text in texts]

    def build(vectors: np.ndarray) -> tuple[list[Unit], list[PartBatch]]:
        if len(vectors) != len(texts):
            raise ValueError(f"{len(texts)} texts were planned but {len(vectors)} vectors came back.")
        units: list[Unit] = []
        parts: list[PartBatch] = []
        offset = len(tables)
        for table, preview, vector, row_texts in zip(tables, previews, vectors[: len(tables)], rows, strict=True):
            unit = table_unit(table, spec, uri=uri, preview=preview, vector=vector)
            units.append(unit)
            if row_texts:
                parts.append(
                    PartBatch(
                        corpus=spec.name,
                        unit_id=unit.id,
                        start=0,
                        texts=row_texts,
                        vectors=vectors[offset : offset + len(row_texts)],
                    )
                )
            offset += len(row_texts)
        return units, parts

    return TablePlan(texts=texts, build=build)
