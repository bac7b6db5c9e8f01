"""Sources and units: the part of :class:`~universalrag.store.Store` that writes, lists and deletes them.

:class:`Sources` is a mixin of ``Store`` (as :class:`~universalrag.store.placement.Placement` is): every write of
a source is one transaction (or, for a large source, committed batches made visible in one final transaction,
:mod:`.staging`), and a source or unit of a corpus on another server goes to the store of that server.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self, TypeVar

import sqlalchemy as sa

from ..errors import CorpusNotFoundError, InvalidInputError, StoreError
from ..types import CorpusSpec, PartBatch, SourceRecord, Unit
from . import partitions, queries, staging, writer
from .graph_tables import graph_tables

if TYPE_CHECKING:
    from .schema import Tables

__all__ = ["SourceHook", "Sources", "WriteResult"]

_T = TypeVar("_T")
_log = logging.getLogger(__name__)

#: Called by :meth:`Sources.write_source` inside the transaction that writes a source, once its units are written:
#: ``hook(connection, source, source_id, units)``. What it writes commits or rolls back with the units (the knowledge
#: graph's rows of the source are written so, :mod:`universalrag.graph.store`).
SourceHook = Callable[[sa.Connection, SourceRecord, str, Sequence[Unit]], None]


@dataclass(frozen=True, slots=True)
class WriteResult:
    """The outcome of writing one source: ``added``, ``replaced`` or ``unchanged``, with rows per corpus."""

    status: str
    source_id: str
    rows: Mapping[str, int] = field(default_factory=dict)


class Sources:
    """Mixin of ``Store``: sources and the units made from them."""

    schema: str
    tables: Tables

    if TYPE_CHECKING:

        def _read(self, action: str, fn: Callable[[sa.Connection], _T], *, read_only: bool = False) -> _T: ...
        def transaction(
            self, action: str = ..., *, read_only: bool = False
        ) -> AbstractContextManager[sa.Connection]: ...
        def corpus(self, name: str) -> CorpusSpec: ...
        def corpora(self, *, refresh: bool = False) -> dict[str, CorpusSpec]: ...
        def owner(self, name: str) -> Self: ...
        def _one_owner(self, corpora: Iterable[str], what: str) -> Self: ...
        def _scope_owner(self, scope: str) -> Self: ...
        def _used_members(self) -> list[Self]: ...

    def source_state(self, uri: str, *, scope: str = "") -> tuple[str, tuple[str, ...]] | None:
        """``(content_hash, corpora)`` of the stored source ``uri`` in ``scope``, or ``None`` (a scope naming a
        remote corpus is looked up on that corpus's server, where its sources live)."""
        owner = self._scope_owner(scope)
        if owner is not self:
            return owner.source_state(uri, scope=scope)
        s = self.tables.sources
        row = self._read(
            "read a source",
            lambda conn: conn.execute(
                sa.select(s.c.content_hash, s.c.corpora).where(s.c.uri == uri, s.c.scope == scope)
            ).first(),
        )
        return None if row is None else (row.content_hash, tuple(row.corpora))

    def sources(self) -> list[dict[str, Any]]:
        """Every stored source (uri, scope, hash, modality, corpora, metadata, ingested_at), here and on the
        servers of remote corpora."""
        s = self.tables.sources
        with self.transaction() as conn:
            rows = [dict(r) for r in conn.execute(sa.select(s).order_by(s.c.uri, s.c.scope)).mappings()]
        for member in self._used_members():
            rows.extend(member.sources())
        return sorted(rows, key=lambda r: (r["uri"], r["scope"]))

    def corpus_sources(self, corpus: str, *, limit: int = 8) -> tuple[int, list[str]]:
        """How many stored sources hold units of ``corpus``, and the URIs of up to ``limit`` of them, the latest
        ingested first (read where the corpus lives; rows written by SQL sync have no source and are not counted)."""
        owner = self.owner(corpus)
        if owner is not self:
            return owner.corpus_sources(corpus, limit=limit)
        s = self.tables.sources
        holds = sa.literal(corpus) == sa.any_(s.c.corpora)

        def read(conn: sa.Connection) -> tuple[int, list[str]]:
            count = int(conn.execute(sa.select(sa.func.count()).select_from(s).where(holds)).scalar_one())
            uris = (
                conn.execute(
                    sa.select(s.c.uri).where(holds).order_by(s.c.ingested_at.desc().nulls_last(), s.c.uri).limit(limit)
                )
                .scalars()
                .all()
            )
            return count, list(uris)

        return self._read("read a corpus's sources", read, read_only=True)

    def delete_source(self, uri: str, *, scope: str | None = None) -> bool:
        """Delete the source ``uri`` (in every scope, or only in ``scope``) and every unit made from it, with
        any batches of it a crashed run left staged; ``False`` when it was not stored."""
        if scope is not None and self._scope_owner(scope) is not self:
            return self._scope_owner(scope).delete_source(uri, scope=scope)
        remote = [m.delete_source(uri, scope=scope) for m in self._used_members()] if scope is None else []
        s, st = self.tables.sources, staging.StageTables(self.schema).stages
        where = [s.c.uri == uri] + ([s.c.scope == scope] if scope is not None else [])
        with self.transaction() as conn:
            conn.execute(sa.delete(st).where(st.c.uri == uri, *([st.c.scope == scope] if scope is not None else [])))
            return conn.execute(sa.delete(s).where(*where)).rowcount > 0 or any(remote)

    def write_source(
        self,
        source: SourceRecord,
        units: Sequence[Unit],
        *,
        parts: Iterable[PartBatch] = (),
        hook: SourceHook | None = None,
    ) -> WriteResult:
        """Write one source and its units in one transaction.

        A source is identified by its uri and scope (:class:`SourceRecord`): writing one never touches the
        units of the same file in another scope. Unchanged (same hash, same corpora) → nothing written. Changed → the
        old units are deleted and the new ones written, atomically. Any failure leaves the database as it was. ``parts``
        streams the parts of multi-vector units (a large table's rows) in batches, consumed inside the transaction, so
        memory stays bounded by one batch. The source is written on the server of its corpora (they must share one).
        ``hook`` (:data:`SourceHook`) writes what goes with the units in the same transaction; it is not called
        for an unchanged source.
        """
        owner = self._one_owner([*source.corpora, *(u.corpus for u in units)], f"The source {source.uri}")
        if owner is not self:
            return owner.write_source(source, units, parts=parts, hook=hook)
        specs = {u.corpus: self.corpus(u.corpus) for u in units}
        by_corpus = writer.check_units(units, specs)
        self.prepare_partitions(by_corpus)
        s = self.tables.sources
        with self.transaction(f"write source {source.uri}") as conn:
            conn.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtextextended(source.uri, 0))))
            old = conn.execute(
                sa.select(s.c.id, s.c.content_hash, s.c.corpora).where(s.c.uri == source.uri, s.c.scope == source.scope)
            ).first()
            if (
                old is not None
                and old.content_hash == source.content_hash
                and sorted(old.corpora) == sorted(source.corpora)
            ):
                return WriteResult(status="unchanged", source_id=str(old.id))
            if old is not None:
                conn.execute(sa.delete(s).where(s.c.id == old.id))
            source_id = source.id or str(uuid.uuid4())
            conn.execute(
                sa.insert(s).values(
                    id=source_id,
                    uri=source.uri,
                    scope=source.scope,
                    content_hash=source.content_hash,
                    modality=str(source.modality),
                    corpora=list(source.corpora),
                    metadata=dict(source.metadata),
                )
            )
            raw = conn.connection.driver_connection
            rows: dict[str, int] = {}
            for name in writer.parents_first(list(by_corpus), self.corpora()):
                tables = self.tables.corpus(self.corpus(name))
                rows[name] = writer.copy_units(raw, self.schema, tables, by_corpus[name], source_id=source_id)
                if tables.parts is not None:
                    writer.copy_parts(raw, self.schema, tables, by_corpus[name], source_id=source_id)
            self._write_part_batches(raw, parts, rows)
            if hook is not None:
                hook(conn, source, source_id, units)
        return WriteResult(status="replaced" if old is not None else "added", source_id=source_id, rows=rows)

    def write_staged(
        self, source: SourceRecord, produce: staging.BatchProducer, *, on_batch: Callable[[int], None] | None = None
    ) -> WriteResult:
        """Write a large source in batches that are each committed, then make it visible in one transaction.

        ``produce(source_id, done)`` yields the source's :class:`~universalrag.store.staging.StagedBatch` es
        after the first ``done``; ``source.corpora`` names every corpus they write to. Batches go to staging
        tables no search reads; the last step moves them into the corpora and records the source (replacing an
        older version) atomically, so a source is never half-visible. A run killed part-way leaves its committed
        batches staged, and the next run with the same content continues after them. Two processes staging the
        same source take turns (a session advisory lock); the second then finds it unchanged.
        ``on_batch(n)`` is told after each committed batch.
        """
        owner = self._one_owner(list(source.corpora), f"The source {source.uri}")
        if owner is not self:
            return owner.write_staged(source, produce, on_batch=on_batch)
        for name in source.corpora:
            if self.corpus(name).partition is not None:
                raise InvalidInputError(
                    f"{source.uri} is large enough to be written in staged batches, which the partitioned corpus "
                    f"{name!r} does not take; ingest it into an unpartitioned corpus, or split it into smaller files."
                )
        status, source_id, rows = staging.write_staged(self, source, produce, on_batch=on_batch)
        return WriteResult(status=status, source_id=source_id, rows=rows)

    def table_rows(
        self, unit_id: str, *, where: Mapping[str, str] | None = None, limit: int = 100, corpus: str | None = None
    ) -> list[dict[str, Any]]:
        """Rows of a large table kept whole beside its embedded sample (``metadata["rows_kept"]`` on the table
        unit): ``{"row": n, "cells": {column: text}}`` in file order, only those whose cells equal ``where``.

        The rows live on the server of the table's corpus: ``corpus`` (a hit's ``corpus``) reads them there;
        without it, this database is read first and, when it holds no matching row, the servers of remote
        corpora in turn (a unit id is unique, so its rows are on one server)."""
        if not isinstance(limit, int) or limit < 1:
            raise InvalidInputError(f"limit must be a whole number of at least 1, got {limit!r}.")
        if where is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in where.items()):
            raise InvalidInputError("where maps column names to cell texts, both strings.")
        try:
            unit = str(uuid.UUID(str(unit_id)))
        except ValueError:
            raise InvalidInputError(f"{unit_id!r} is not a unit id (a UUID such as a table hit's id).") from None
        if corpus is not None:
            return self.owner(corpus)._local_table_rows(unit, dict(where or {}), limit)
        rows = self._local_table_rows(unit, dict(where or {}), limit)
        for member in self._used_members() if not rows else ():
            if rows := member._local_table_rows(unit, dict(where or {}), limit):
                break
        return rows

    def _local_table_rows(self, unit: str, where: dict[str, str], limit: int) -> list[dict[str, Any]]:
        query = staging.rows_query(staging.StageTables(self.schema), unit, where, limit)
        return self._read(
            "read table rows", lambda conn: [{"row": r.ord, "cells": dict(r.cells)} for r in conn.execute(query)]
        )

    def _write_part_batches(self, raw: Any, parts: Iterable[PartBatch], rows: dict[str, int]) -> None:
        for batch in parts:
            spec = self.corpus(batch.corpus)
            writer.check_part_batch(batch, spec)
            n = writer.copy_part_batch(raw, self.schema, self.tables.corpus(spec), batch)
            rows[f"{spec.name}.parts"] = rows.get(f"{spec.name}.parts", 0) + n

    def add_units(self, units: Sequence[Unit]) -> int:
        """Write units that belong to no ingested source (e.g. texts added through a LangChain VectorStore), in
        one transaction; a unit whose id exists is replaced. Returns the number of units written."""
        owner = self._one_owner((u.corpus for u in units), "These units")
        if owner is not self:
            return owner.add_units(units)
        specs = {u.corpus: self.corpus(u.corpus) for u in units}
        by_corpus = writer.check_units(units, specs)
        self.prepare_partitions(by_corpus)
        with self.transaction("add units") as conn:
            raw = conn.connection.driver_connection
            for name in writer.parents_first(list(by_corpus), self.corpora()):
                tables = self.tables.corpus(specs[name])
                ids = [u.id for u in by_corpus[name]]
                conn.execute(sa.delete(tables.units).where(tables.units.c.id.in_(ids)))
                writer.copy_units(raw, self.schema, tables, by_corpus[name], source_id=None)
                if tables.parts is not None:
                    writer.copy_parts(raw, self.schema, tables, by_corpus[name])
        self.settle(by_corpus)
        return len(units)

    def settle(self, corpora: Iterable[str]) -> int:
        """Merge the pending entries of the corpora's GIN indexes (and those of the rows kept whole of large tables)
        into the indexes (:func:`~.queries.clean_gin_pending`), each corpus on its server: what an ingest does when it
        has written, so that full-text lookups (hybrid search, exact terms, spelling) read the index alone. Best
        effort: a role that may not maintain the tables, or a server that fails, leaves the lists to autovacuum
        (logged). Returns how many pending pages were merged."""
        groups: dict[Any, list[str]] = {}
        kept_rows = staging.StageTables(self.schema).table_rows.name  # built once, not once a corpus
        merged = 0
        try:
            for name in dict.fromkeys(corpora):
                try:
                    tables = self.tables.corpus(self.corpus(name))
                except CorpusNotFoundError:  # a corpus dropped meanwhile: nothing to settle
                    continue
                names = [t.name for t in (tables.units, tables.parts) if t is not None]
                groups.setdefault(self.owner(name), [kept_rows]).extend(names)
            for owner, names in groups.items():
                with owner.transaction("merge the pending entries of the full-text indexes") as conn:
                    merged += int(
                        conn.execute(
                            queries.clean_gin_pending(), {"schema": owner.schema, "tables": names}
                        ).scalar_one()
                    )
        except StoreError as e:  # what was written stays written; only the lookups' speed is at stake
            _log.info("Full-text indexes left to autovacuum: %s", e)
        return merged

    def prepare_partitions(self, by_corpus: Mapping[str, Iterable[Unit]]) -> None:
        """Create the partitions that units about to be written need in partitioned corpora (tenant or time), in a
        transaction of its own (:func:`~.partitions.ensure_partitions`): call it before the transaction that writes
        them. Units of other corpora are not looked at."""
        for name, units in by_corpus.items():
            spec = self.corpus(name)
            if spec.partition is not None and spec.partition.by != "source":
                with self.transaction(f"create the partitions of corpus {name!r}") as conn:
                    keys = (partitions.unit_key(spec.partition, u, None) for u in units)
                    partitions.ensure_partitions(conn, self.schema, spec, keys)

    def delete_partition(self, corpus: str, value: Any) -> int:
        """Delete every unit of one tenant (``value`` its key) or one period (``value`` a date in it) of a corpus
        partitioned by tenant or time, and drop that partition; returns how many units went (with their parts and
        the knowledge graph's mentions of them). Sources keep their records; ingest them again to bring units back."""
        if self.owner(corpus) is not self:
            return int(self.owner(corpus).delete_partition(corpus, value))
        spec = self.corpus(corpus)
        units = self.tables.corpus(spec).units
        mentions = graph_tables(self.schema).mentions
        with self.transaction(f"delete a partition of {corpus!r}") as conn:
            deleted = partitions.drop_partition(conn, self.schema, spec, value)
            if deleted:  # the graph's mentions of units that are gone
                kept = sa.select(units.c.id).where(units.c.id == mentions.c.unit_id)
                conn.execute(sa.delete(mentions).where(mentions.c.corpus == corpus, ~sa.exists(kept)))
            return deleted

    def partitions(self, corpus: str) -> dict[str, str]:
        """The partitions of ``corpus``'s unit table by name, each with its bound as PostgreSQL prints it (``FOR
        VALUES IN ('acme')``, ``DEFAULT``); empty for an unpartitioned corpus."""
        if self.owner(corpus) is not self:
            return dict(self.owner(corpus).partitions(corpus))
        table = self.tables.corpus(self.corpus(corpus)).units.name
        return self._read("list partitions", lambda conn: partitions.partitions(conn, self.schema, table))

    def delete_units(self, corpus: str, ids: Sequence[str]) -> int:
        """Delete units of ``corpus`` by id (their parts and children go with them, and the knowledge graph's mentions
        of them); returns how many."""
        if self.owner(corpus) is not self:
            return self.owner(corpus).delete_units(corpus, ids)
        tables = self.tables.corpus(self.corpus(corpus))
        mentions = graph_tables(self.schema).mentions
        with self.transaction(f"delete units of {corpus!r}") as conn:
            conn.execute(sa.delete(mentions).where(mentions.c.corpus == corpus, mentions.c.unit_id.in_(list(ids))))
            return int(conn.execute(sa.delete(tables.units).where(tables.units.c.id.in_(list(ids)))).rowcount)
