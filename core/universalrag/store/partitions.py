"""Partitioned corpora (docs/partitioning.md): each unit's partition key, the partitions a write needs, and the
condition on the partition column that a search filter implies, so that PostgreSQL prunes the other partitions.

A partitioned corpus's tables have a ``partition_key`` column (``text``; ``timestamptz`` by time) that the writers
fill from the unit (:func:`unit_key`), and whose partitions are created on demand by the schema's
``corpus_partition`` function (:func:`ensure_partitions`). A search filter is compiled over the JSONB metadata,
which no partition bound can see; :func:`pruning` adds a plain equality, ``IN`` or range on ``partition_key``
that every unit the filter accepts satisfies, so results are those of the unpartitioned corpus and the planner
reads only the partitions the filter can reach.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY

from ..errors import InvalidInputError
from ..types import CorpusSpec, Partitioning, Unit

__all__ = [
    "COLUMN",
    "MAX_TENANT_CHARS",
    "NO_DATE",
    "TIME_MARGIN",
    "drop_partition",
    "ensure_partitions",
    "key_column",
    "partition_value",
    "partitions",
    "partitioning_refused",
    "pruning",
    "tenant_value",
    "time_value",
    "unit_key",
]

#: The column holding a unit's partition key.
COLUMN = "partition_key"
#: The key of a unit of a time corpus whose date is missing or unreadable: no time partition holds it, so it lands in
#: the default partition.
NO_DATE = datetime(1, 1, 1, tzinfo=UTC)
#: How far a time filter's bounds are widened on the partition column. A filter compares the metadata's ISO strings
#: as text, the column holds their instant in UTC; an ISO string of a date D names an instant within 14 hours (the
#: widest UTC offset) of D's midnight, so two days' margin keeps every unit the filter accepts, and still prunes
#: every month or year but the ones next to the bounds.
TIME_MARGIN = timedelta(days=2)


def key_column(partitioning: Partitioning) -> sa.Column[Any]:
    """The ``partition_key`` column of a corpus partitioned by ``partitioning``."""
    kind: Any = sa.DateTime(timezone=True) if partitioning.by == "time" else sa.Text
    return sa.Column(COLUMN, kind, nullable=False)


#: Longest tenant value with a partition of its own; a longer one lands in the default partition. The key is part
#: of the primary key's B-tree entries, which PostgreSQL caps at about 2,700 bytes: 256 characters take 1,024 at most.
MAX_TENANT_CHARS = 256


def tenant_value(value: Any) -> str:
    """The partition key of a tenant metadata value: strings of up to :data:`MAX_TENANT_CHARS` characters as they
    are, numbers as their shortest text (``7`` and ``7.0`` alike, as JSON compares them); anything else (missing,
    booleans, lists, objects, longer strings) ``""``, the default partition's."""
    if isinstance(value, bool):
        return ""
    if isinstance(value, str):
        return value if len(value) <= MAX_TENANT_CHARS else ""
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return str(int(value)) if value.is_integer() else repr(value)
    return ""


#: The date strings a time corpus reads: ISO 8601's extended form, a date and optionally a time and an offset. Only
#: these: a filter compares the strings as text, which orders them as their dates only when they share this shape
#: (``"20260101"``, also ISO, sorts after ``"2026-03-05"``).
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?(Z|[+-]\d{2}(:?\d{2})?)?")


def time_value(value: Any) -> datetime | None:
    """The instant of an ISO 8601 date or timestamp string (``2026-03-05``, ``2026-03-05T10:00:00+02:00``; UTC when
    it names no offset), else ``None``."""
    if not isinstance(value, str) or not _ISO.fullmatch(value):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:  # 2026-02-30
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def unit_key(partitioning: Partitioning, unit: Unit, source_id: str | None) -> str | datetime:
    """The partition key of ``unit`` (written with source ``source_id``)."""
    if partitioning.by == "source":
        return str(source_id) if source_id else ""
    value = unit.metadata.get(partitioning.key or "")
    if partitioning.by == "tenant":
        return tenant_value(value)
    return time_value(value) or NO_DATE


def partition_value(partitioning: Partitioning, value: Any) -> str:
    """What ``corpus_partition`` and ``drop_corpus_partition`` take for a tenant or a time: the tenant's key, or an
    ISO timestamp inside the period; ``""`` for a value no partition of its own holds."""
    if partitioning.by == "tenant":
        return tenant_value(value)
    instant = value if isinstance(value, datetime) else time_value(value)
    if instant is None or instant == NO_DATE:
        return ""
    return (instant if instant.tzinfo else instant.replace(tzinfo=UTC)).isoformat()


def _period(partitioning: Partitioning, value: str | datetime) -> str:
    """A time key reduced to its period (one call per month, not per timestamp); tenants as they are."""
    if isinstance(value, datetime):
        start = value.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        return partition_value(partitioning, start.replace(month=1) if partitioning.interval == "year" else start)
    return value


def ensure_partitions(conn: sa.Connection, schema: str, spec: CorpusSpec, keys: Iterable[str | datetime]) -> None:
    """Create the partitions that ``keys`` (from :func:`unit_key`) need and lack, on ``conn`` in one statement.

    Run it in a transaction of its own, committed before the write that needs the partitions: creating a partition
    locks the whole corpus table, which a long write must not hold, and which a transaction that already wrote to the
    corpus would wait for on itself. Tenant and time corpora only (a source corpus's hash partitions all exist)."""
    partitioning = spec.partition
    if partitioning is None or partitioning.by == "source":
        return
    values = sorted({_period(partitioning, k) for k in keys} - {""})
    if not values:
        return
    values_array = sa.cast(sa.literal(values, ARRAY(sa.Text)), ARRAY(sa.Text))
    wanted = sa.func.unnest(values_array).table_valued("value").render_derived("wanted")
    made = getattr(sa.func, schema).corpus_partition(spec.name, wanted.c.value)
    conn.execute(sa.select(sa.func.count(made)).select_from(wanted))


def drop_partition(conn: sa.Connection, schema: str, spec: CorpusSpec, value: Any) -> int:
    """Delete the units of one tenant or one period (the period holding ``value``) and drop its partition; returns
    how many units went."""
    partitioning = spec.partition
    if partitioning is None or partitioning.by == "source":
        raise InvalidInputError(
            f"Corpus {spec.name!r} is not partitioned by tenant or time; delete its units by source or by id instead."
        )
    key = partition_value(partitioning, value)
    if not key:
        what = "a tenant value (a string or a number)" if partitioning.by == "tenant" else "an ISO date or timestamp"
        raise InvalidInputError(f"Name the partition of corpus {spec.name!r} to drop by {what}, got {value!r}.")
    fn = getattr(sa.func, schema).drop_corpus_partition
    return int(conn.execute(sa.select(fn(spec.name, key))).scalar_one())


def partitions(conn: sa.Connection, schema: str, table: str) -> dict[str, str]:
    """The partitions of ``schema.table`` by name, with their bounds as the server prints them (``FOR VALUES IN
    ('acme')``, ``DEFAULT``)."""
    rows = conn.execute(
        sa.text(
            "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = to_regclass(format('%I.%I', CAST(:schema AS text), CAST(:table AS text))) "
            "ORDER BY c.relname"
        ),
        {"schema": schema, "table": table},
    )
    return {r.relname: r.bound for r in rows}


# -- pruning ----------------------------------------------------------------------------------------------------------
def _conditions(filter: Mapping[str, Any], key: str) -> Iterator[Any]:
    """The conditions ``filter`` puts on ``key`` that every accepted unit meets: at its top level or inside a
    top-level ``$and`` (never under ``$or`` or ``$not``)."""
    if key in filter:
        yield filter[key]
    parts = filter.get("$and")
    if isinstance(parts, (list, tuple)):
        for part in parts:
            if isinstance(part, Mapping):
                yield from _conditions(part, key)


def _tenants(condition: Any) -> set[str] | None:
    """The tenant keys ``condition`` allows, or ``None`` when it does not pin the key to values."""
    if isinstance(condition, Mapping):
        if "$eq" in condition:
            return _tenants(condition["$eq"])
        values = condition.get("$in")
        if isinstance(values, (list, tuple)) and values:
            keys = [_tenants(v) for v in values]
            return None if any(k is None for k in keys) else set().union(*(k for k in keys if k is not None))
        return None
    key = tenant_value(condition) if isinstance(condition, (str, int, float)) else ""
    return {key} if key else None


def _time_bounds(condition: Any) -> tuple[datetime | None, datetime | None]:
    """The lowest and highest instants ``condition`` allows (``None``: unbounded), widened by :data:`TIME_MARGIN`."""
    ops = condition if isinstance(condition, Mapping) else {"$eq": condition}
    low = high = None
    for op, value in ops.items():
        instant = time_value(value)
        if instant is None:
            continue
        if op in ("$gte", "$gt", "$eq"):
            low = instant - TIME_MARGIN if low is None else max(low, instant - TIME_MARGIN)
        if op in ("$lte", "$lt", "$eq"):
            high = instant + TIME_MARGIN if high is None else min(high, instant + TIME_MARGIN)
    return low, high


def pruning(table: sa.Table, filter: Mapping[str, Any] | None) -> list[sa.ColumnElement[bool]]:
    """Conditions on ``table``'s partition column implied by ``filter`` (none for an unpartitioned table, a source
    corpus, or a filter that does not restrict the partition key): a plain equality, ``IN`` or range the planner
    prunes partitions with."""
    partitioning: Partitioning | None = table.info.get("partition")
    if partitioning is None or partitioning.by == "source" or not isinstance(filter, Mapping):
        return []
    column = table.c[COLUMN]
    out: list[sa.ColumnElement[bool]] = []
    for condition in _conditions(filter, partitioning.key or ""):
        if partitioning.by == "tenant":
            keys = _tenants(condition)
            if keys is not None:
                ordered = sorted(keys)
                out.append(column == ordered[0] if len(ordered) == 1 else column.in_(ordered))
            continue
        low, high = _time_bounds(condition)
        if low is None and high is None:
            continue
        window = sa.and_(*([column >= low] if low is not None else []), *([column < high] if high is not None else []))
        out.append(sa.or_(window, column == NO_DATE))  # units with no readable date are in the default partition
    return out


def partitioning_refused(spec: CorpusSpec, existing: Mapping[str, CorpusSpec]) -> str | None:
    """Why ``spec`` cannot be created next to the ``existing`` corpora as partitioned (a sentence), or ``None``.

    A partitioned table's unique keys hold the partition key, so no other table's foreign key can point at its
    ``id`` alone: a partitioned corpus cannot be a child's parent."""
    parent = existing.get(spec.parent) if spec.parent else None
    if parent is not None and parent.partition is not None:
        return (
            f"Corpus {spec.name!r} cannot have the partitioned corpus {parent.name!r} as its parent; "
            "give it an unpartitioned parent or none."
        )
    return None
