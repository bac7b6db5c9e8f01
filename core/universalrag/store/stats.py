"""Cheap statistics about corpora for routing: approximate unit counts from the planner's statistics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .sizes import table_rows

if TYPE_CHECKING:
    from .store import Store

__all__ = ["corpus_sizes"]


def corpus_sizes(store: Store, corpora: Sequence[str]) -> dict[str, int]:
    """Units per corpus, estimated without a scan (see :mod:`universalrag.store.sizes`: the planner's row density
    times the table's current pages; a table never analysed is counted) — one statement for every corpus."""
    units = {name: store.tables.corpus(store.corpus(name)).units for name in corpora}
    with store.transaction("read corpus sizes") as conn:
        rows = table_rows(conn, units.values())
    return {name: rows.get(table.name, 0) for name, table in units.items()}
