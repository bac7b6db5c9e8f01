"""Cheap statistics about corpora for routing: approximate unit counts from the planner's statistics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import StoreError
from .row_estimates import table_rows

if TYPE_CHECKING:
    from .store import Store

__all__ = ["corpus_sizes"]


def corpus_sizes(store: Store, corpora: Sequence[str]) -> dict[str, int]:
    """Units per corpus, estimated without a scan (see :mod:`universalrag.store.row_estimates`: the planner's row
    density times the table's current pages; a table never analysed is counted) — one statement per server. Each corpus
    is read on its server; the corpora of a member server that cannot be reached count as 0 (not routed to;
    logged)."""
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
    units = {name: store.tables.corpus(store.corpus(name)).units for name in corpora}
    with store.transaction("read corpus sizes", read_only=True) as conn:
        rows = table_rows(conn, units.values())
    return {name: rows.get(table.name, 0) for name, table in units.items()}
