"""The rule that decides, per searched table, between an exact scan and the HNSW index.

- A table of at most ``exact_scan_rows`` rows (``Settings.exact_scan_rows``) is scanned exactly: there an exact scan
  costs about what an index search costs, and it is always right.
- A larger table goes through its HNSW index (iterative scan, a beam of at least ``ef_search`` and at least the
  beam the corpus's index check tuned: :func:`tuned_ef`), unless the corpus's stored index check
  (:mod:`universalrag.store.index_check`, measured on the corpus's own data at about this size) found the index
  unreliable even at the widest beam it tried — e.g. the parts table of numeric CSVs, thousands of near-identical
  row vectors — and the table holds at most ``exact_scan_max_rows`` rows (``Settings.exact_scan_max_rows``),
  beyond which an exact scan is too slow to be the default (that table then uses the index at the widest beam).

A check that reaches :data:`MIN_RECALL` at a widened beam makes the index the choice even for a table the exact
scan could afford (up to ``exact_scan_max_rows``): on 100k synthetic rows an index search at ef_search 1000 took 53 ms
(recall@10 0.97) against 183 ms for the exact scan (``docs/benchmarks.md``, scaling section).

Row counts are estimates read from the planner's statistics (:mod:`universalrag.store.row_estimates`), never counted per
query.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "CHECK_KEY",
    "EF_KEY",
    "MAX_EF_SEARCH",
    "MIN_RECALL",
    "stored_check",
    "needs_check",
    "scan_exactly",
    "tuned_ef",
]

#: The key of a corpus's stored index check in its registry metadata.
CHECK_KEY = "index_check"
#: Below this recall (share of check queries whose exact best hit the index found), the index is unreliable.
MIN_RECALL = 0.95
#: The key, inside a stored check, of the beam (``hnsw.ef_search``) its recall was measured at — the smallest that
#: reached :data:`MIN_RECALL`, or the widest tried. Checks stored before it existed lack it (measured at the
#: store's ``ef_search``).
EF_KEY = "ef_search"
#: pgvector's largest ``hnsw.ef_search``.
MAX_EF_SEARCH = 1000


def stored_check(metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The stored index check in a corpus's registry ``metadata`` (``{"rows", "recall", ...}``), or ``None``."""
    check = metadata.get(CHECK_KEY)
    return check if isinstance(check, Mapping) and "rows" in check and "recall" in check else None


def tuned_ef(metadata: Mapping[str, Any]) -> int:
    """The beam the stored check of a corpus with registry ``metadata`` asks index searches to use at least (0:
    none stored). Used whatever size the check was measured at: a graph grows harder to search, not easier, so
    a beam tuned on fewer rows is a floor until the next check (run once the size has doubled) raises it."""
    check = stored_check(metadata)
    value = check.get(EF_KEY) if check is not None else None
    return min(int(value), MAX_EF_SEARCH) if isinstance(value, int) and value > 0 else 0


def needs_check(metadata: Mapping[str, Any], rows: int) -> bool:
    """Whether the stored check is missing or was measured at less than half or more than twice ``rows`` rows."""
    check = stored_check(metadata)
    if check is None:
        return True
    measured = max(int(check["rows"]), 1)
    return not measured / 2 <= rows <= measured * 2


def scan_exactly(
    rows: int, metadata: Mapping[str, Any], *, exact_scan_rows: int, exact_scan_max_rows: int, checked: bool = True
) -> bool:
    """Whether a table of ``rows`` rows of a corpus with registry ``metadata`` is scanned exactly (see the module
    docstring); ``checked=False`` for a table the index check does not cover (a visual column)."""
    if rows <= exact_scan_rows:
        return True
    if not checked or rows > exact_scan_max_rows:
        return False
    check = stored_check(metadata)
    return check is not None and not needs_check(metadata, rows) and float(check["recall"]) < MIN_RECALL
