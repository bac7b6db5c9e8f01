"""SQL for the routing log and the stored (adapted) combiners (tables made by migration 0005)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, UUID, insert

from .store import Store

__all__ = [
    "RoutingLogTables",
    "combiner_record",
    "combiner_stamp",
    "delete_combiner",
    "feedback_rows",
    "has_routing_tables",
    "load_combiner",
    "save_combiner",
    "set_feedback",
    "write_decisions",
]


class RoutingLogTables:
    """The two tables of one schema."""

    def __init__(self, schema: str) -> None:
        md = sa.MetaData(schema=schema)
        self.log = sa.Table(
            "routing_log",
            md,
            sa.Column("id", UUID(as_uuid=False), primary_key=True),
            sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now()),
            sa.Column("query_hash", sa.Text, nullable=False),
            sa.Column("query_text", sa.Text),
            sa.Column("candidates", ARRAY(sa.Text)),
            sa.Column("scores", JSONB),
            sa.Column("prior", JSONB),
            sa.Column("evidence", JSONB),
            sa.Column("routes", ARRAY(sa.Text)),
            sa.Column("latency_ms", sa.Float),
            sa.Column("router", sa.Text),
            sa.Column("router_version", sa.Text),
            sa.Column("feedback_routes", ARRAY(sa.Text)),
            sa.Column("feedback_at", sa.DateTime(timezone=True)),
        )
        self.combiners = sa.Table(
            "router_combiners",
            md,
            sa.Column("name", sa.Text, primary_key=True),
            sa.Column("version", sa.Text, nullable=False),
            sa.Column("weights", JSONB, nullable=False),
            sa.Column("report", JSONB),
            sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now()),
        )


_TABLES: dict[str, RoutingLogTables] = {}


def _tables(store: Store) -> RoutingLogTables:
    if store.schema not in _TABLES:
        _TABLES[store.schema] = RoutingLogTables(store.schema)
    return _TABLES[store.schema]


def has_routing_tables(store: Store) -> bool:
    """Whether the schema has the routing log (migration 0005 applied)."""
    with store.transaction("look for the routing log") as conn:
        return sa.inspect(conn).has_table("routing_log", schema=store.schema)


def write_decisions(store: Store, rows: Sequence[Mapping[str, Any]]) -> int:
    """Insert logged decisions in one statement (a row whose id exists is left alone); returns how many."""
    if not rows:
        return 0
    log = _tables(store).log
    with store.transaction("write the routing log") as conn:
        conn.execute(insert(log).on_conflict_do_nothing(index_elements=["id"]), [dict(r) for r in rows])
    return len(rows)


def set_feedback(
    store: Store, routes: Sequence[str], *, decision_id: str | None = None, query_hash: str | None = None
) -> str | None:
    """Record the right ``routes`` on a logged decision, by its id or (the latest) by query hash; returns the
    decision's id, or ``None`` when no such decision was logged."""
    log = _tables(store).log
    if decision_id is not None:
        target = sa.select(log.c.id).where(log.c.id == decision_id)
    else:
        target = sa.select(log.c.id).where(log.c.query_hash == query_hash).order_by(log.c.created_at.desc()).limit(1)
    with store.transaction("record routing feedback") as conn:
        found = conn.execute(target).scalar_one_or_none()
        if found is None:
            return None
        conn.execute(
            sa.update(log).where(log.c.id == found).values(feedback_routes=list(routes), feedback_at=sa.func.now())
        )
    return str(found)


def feedback_rows(store: Store, *, limit: int = 10_000) -> list[dict[str, Any]]:
    """The logged decisions that received feedback, newest first (evidence, prior, routes, feedback)."""
    log = _tables(store).log
    stmt = (
        sa.select(
            log.c.id,
            log.c.evidence,
            log.c.prior,
            log.c.routes,
            log.c.feedback_routes,
            log.c.query_text,
            log.c.created_at,
        )
        .where(log.c.feedback_at.is_not(None))
        .order_by(log.c.feedback_at.desc())
        .limit(int(limit))
    )
    with store.transaction("read routing feedback") as conn:
        return [dict(r) for r in conn.execute(stmt).mappings()]


def save_combiner(
    store: Store, name: str, weights: Mapping[str, Any], *, version: str, report: Mapping[str, Any] | None = None
) -> None:
    """Store (or replace) the combiner ``name``."""
    table = _tables(store).combiners
    values = {"name": name, "version": version, "weights": dict(weights), "report": dict(report or {})}
    stmt = insert(table).values(**values)
    stmt = stmt.on_conflict_do_update(
        index_elements=["name"],
        set_={
            "version": stmt.excluded.version,
            "weights": stmt.excluded.weights,
            "report": stmt.excluded.report,
            "created_at": sa.func.now(),
        },
    )
    with store.transaction("store the adapted combiner") as conn:
        conn.execute(stmt)


def load_combiner(store: Store, name: str = "default") -> dict[str, Any] | None:
    """The stored combiner ``name`` (its weights JSON), or ``None`` (none stored, or no table yet)."""
    if not has_routing_tables(store):
        return None
    table = _tables(store).combiners
    with store.transaction("read the adapted combiner") as conn:
        row = conn.execute(sa.select(table.c.weights).where(table.c.name == name)).scalar_one_or_none()
    return dict(row) if row is not None else None


def combiner_stamp(
    store: Store, name: str = "default", *, known_table: bool = False
) -> tuple[tuple[str, str] | None, bool]:
    """What identifies the stored combiner ``name`` — ``(version, stored at)``, ``None`` when none is stored — and
    whether the schema has the table. Cheap on purpose (a server asks before every request): one primary-key
    lookup once the table is ``known_table``, else the catalog first (a schema not yet initialised has none)."""
    if not known_table and not has_routing_tables(store):
        return None, False
    table = _tables(store).combiners
    with store.transaction("read the adapted combiner's stamp") as conn:
        row = conn.execute(
            sa.select(table.c.version, sa.cast(table.c.created_at, sa.Text)).where(table.c.name == name)
        ).first()
    return (None if row is None else (str(row[0]), str(row[1]))), True


def combiner_record(store: Store, name: str = "default") -> dict[str, Any] | None:
    """The stored combiner ``name`` without its weights — ``name``, ``version``, ``created_at`` and the adaptation
    ``report`` —, or ``None`` (none stored, or no table yet)."""
    if not has_routing_tables(store):
        return None
    table = _tables(store).combiners
    stmt = sa.select(table.c.name, table.c.version, table.c.created_at, table.c.report).where(table.c.name == name)
    with store.transaction("read the adapted combiner's record") as conn:
        row = conn.execute(stmt).mappings().first()
    return dict(row) if row is not None else None


def delete_combiner(store: Store, name: str = "default") -> str | None:
    """Remove the stored combiner ``name``; returns its version, ``None`` when none was stored."""
    if not has_routing_tables(store):
        return None
    table = _tables(store).combiners
    with store.transaction("remove the adapted combiner") as conn:
        version = conn.execute(sa.delete(table).where(table.c.name == name).returning(table.c.version)).scalar()
    return None if version is None else str(version)
