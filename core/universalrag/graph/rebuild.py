"""Build the graph of sources already stored, from their stored units (``universalrag graph build``).

Per source: its units are read from each of its corpora, extracted outside any transaction (a model-based extractor
may take seconds), and written in a transaction that first locks the source's row; a source deleted or replaced
meanwhile is skipped (its next ingest writes its graph).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

import sqlalchemy as sa

from ..errors import CorpusNotFoundError
from ..store import Store
from ..types import Unit
from .model import Extraction, Extractor
from .records import BuildReport, WriteCounts

__all__ = ["GraphWriter", "rebuild", "stored_units"]

#: Units read from one source at most (a larger source's graph is built from its first ones).
MAX_UNITS = 200_000


class GraphWriter(Protocol):
    """What writes a source's extraction (:meth:`universalrag.graph.store.GraphStore.write`)."""

    def __call__(
        self,
        conn: sa.Connection,
        extraction: Extraction,
        *,
        source_id: str | None,
        units: Sequence[Unit] = (),
        vectors: bool = True,
    ) -> WriteCounts: ...


def stored_units(conn: sa.Connection, store: Store, source_id: str, corpora: Iterable[str]) -> list[Unit]:
    """The units of ``source_id`` in ``corpora`` (those on this server), parents first, without vectors."""
    units: list[Unit] = []
    for name in corpora:
        try:
            spec = store.corpus(name)
        except CorpusNotFoundError:
            continue
        if store.owner(name) is not store:
            continue
        t = store.tables.corpus(spec).units
        query = (
            sa.select(t.c.id, t.c.parent_id, t.c.content, t.c.uri, t.c.start_s, t.c.end_s, t.c.metadata)
            .where(t.c.source_id == source_id)
            .order_by(t.c.created_at, t.c.id)
            .limit(MAX_UNITS - len(units))
        )
        for r in conn.execute(query):
            units.append(
                Unit(
                    id=str(r.id),
                    corpus=name,
                    content=r.content,
                    uri=r.uri,
                    parent_id=None if r.parent_id is None else str(r.parent_id),
                    start_s=r.start_s,
                    end_s=r.end_s,
                    metadata=dict(r.metadata or {}),
                )
            )
        if len(units) >= MAX_UNITS:
            break
    parents = {u.id for u in units if u.parent_id is None}
    units.sort(key=lambda u: u.id not in parents)
    return units


def rebuild(
    store: Store,
    write: GraphWriter,
    extractor: Extractor,
    *,
    uris: Iterable[str] | None = None,
    on_source: Callable[[str, WriteCounts], None] | None = None,
) -> BuildReport:
    """See :meth:`universalrag.graph.store.GraphStore.rebuild`; ``write`` writes one source's extraction."""
    started = time.perf_counter()
    s = store.tables.sources
    query = sa.select(s.c.id, s.c.uri, s.c.content_hash, s.c.corpora).order_by(s.c.uri, s.c.scope)
    if uris is not None:
        query = query.where(s.c.uri.in_(list(uris)))
    with store.transaction("list the sources", read_only=True) as conn:
        sources = list(conn.execute(query))
    totals = [0, 0, 0, 0, 0]
    for src in sources:
        with store.transaction(f"read the units of {src.uri}", read_only=True) as conn:
            units = stored_units(conn, store, str(src.id), src.corpora)
        extraction = extractor.extract(units, source_uri=src.uri)
        with store.transaction(f"write the graph of {src.uri}") as conn:
            current = conn.execute(
                sa.select(s.c.content_hash).where(s.c.id == src.id).with_for_update()
            ).scalar_one_or_none()
            if current != src.content_hash:
                continue  # deleted or replaced meanwhile
            counts = write(conn, extraction, source_id=str(src.id), units=units, vectors=False)
        totals = [
            a + b
            for a, b in zip(totals, (1, len(units), counts.entities, counts.relations, counts.mentions), strict=True)
        ]
        if on_source is not None:
            on_source(src.uri, counts)
    return BuildReport(
        sources=totals[0],
        units=totals[1],
        entities=totals[2],
        relations=totals[3],
        mentions=totals[4],
        seconds=time.perf_counter() - started,
    )
