"""Cheap statistics about corpora for routing: approximate unit counts from the planner's statistics."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from ..errors import StoreError
from .store import Store

__all__ = ["corpus_sizes"]

_EXACT_BELOW = 50_000
_PG_CLASS = sa.table("pg_class", sa.column("oid"), sa.column("reltuples"), schema="pg_catalog")


def corpus_sizes(store: Store, corpora: Sequence[str]) -> dict[str, int]:
    """Units per corpus: ``pg_class.reltuples`` (kept by ANALYZE/autovacuum, no scan), or an exact count for a
    table never analysed or estimated below 50,000 rows (where counting is cheap). Each corpus is counted on its
    server; the corpora of a member server that cannot be reached count as 0 (not routed to; logged)."""
    out: dict[str, int] = {}
    groups: dict[Store, list[str]] = {}
    for name in corpora:  # a corpus on another server is counted there (docs/scaling.md)
        groups.setdefault(store.owner(name), []).append(name)
    for owner, names in groups.items():
        try:
            out.update(_sizes(owner, names))
        except StoreError as e:  # a member server that is down: its corpora count as empty (logged)
            store.skip_unreachable(owner, names, e)
            out.update(dict.fromkeys(names, 0))
    return {name: out[name] for name in corpora}


def _sizes(store: Store, corpora: Sequence[str]) -> dict[str, int]:
    specs = {name: store.corpus(name) for name in corpora}
    out: dict[str, int] = {}
    with store.transaction("read corpus sizes", read_only=True) as conn:
        for name, spec in specs.items():
            table = store.tables.corpus(spec).units
            regclass = sa.func.to_regclass(sa.func.format(
                sa.cast(sa.literal("%I.%I"), sa.Text), sa.cast(sa.literal(store.schema), sa.Text),
                sa.cast(sa.literal(table.name), sa.Text)))
            estimate = conn.execute(
                sa.select(_PG_CLASS.c.reltuples).where(_PG_CLASS.c.oid == regclass)
            ).scalar_one_or_none()
            if estimate is None or float(estimate) < _EXACT_BELOW:
                estimate = conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
            out[name] = int(estimate)
    return out
