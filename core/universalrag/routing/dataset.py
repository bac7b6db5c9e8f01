"""Labelled routing queries: reading JSON lines, the bundled queries, and a deterministic split by source.

One line per query: ``{"query": str, "routes": [str, ...], "source": str?}``; ``routes`` lists the
corpora that answer the query, the primary one first.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from ..types import CORPUS_NAME_PATTERN, NO_RETRIEVAL

__all__ = [
    "BUNDLED_DIR",
    "LabelledQuery",
    "bundled_heldout",
    "bundled_queries",
    "labels_of",
    "read_jsonl",
    "split_by_source",
    "wikitables_split",
]

#: Where the queries written for this project live (inside the package).
BUNDLED_DIR = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True, slots=True)
class LabelledQuery:
    """A query with its gold routes (primary first) and the benchmark or file it comes from."""

    query: str
    routes: tuple[str, ...]
    source: str = "unknown"

    @property
    def primary(self) -> str:
        """The first gold route."""
        return self.routes[0]


def _parse(line: str, where: str, default_source: str) -> LabelledQuery:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{where}: not valid JSON ({e.msg}).") from None
    if not isinstance(obj, dict):
        raise ConfigError(f"{where}: expected a JSON object with 'query' and 'routes'.")
    query, routes = obj.get("query"), obj.get("routes")
    if not isinstance(query, str) or not query.strip():
        raise ConfigError(f"{where}: 'query' must be a non-empty string.")
    if isinstance(routes, str):
        routes = [routes]
    if not isinstance(routes, list) or not routes or not all(isinstance(r, str) for r in routes):
        raise ConfigError(f"{where}: 'routes' must be a non-empty list of route names.")
    for r in routes:
        if r != NO_RETRIEVAL and not CORPUS_NAME_PATTERN.fullmatch(r):
            raise ConfigError(f"{where}: {r!r} is not a valid route name.")
    source = obj.get("source") or default_source
    return LabelledQuery(query.strip(), tuple(dict.fromkeys(routes)), str(source))


def read_jsonl(path: str | Path, *, default_source: str | None = None) -> list[LabelledQuery]:
    """Read labelled queries from a JSON-lines file; blank lines are skipped.

    Rows without a ``source`` get ``default_source`` (default: the file's stem). Raises
    :class:`ConfigError` naming the line of the first malformed row.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"Cannot read routing data {str(p)!r}: {e.strerror or e}.") from e
    src = default_source or p.stem
    rows = [_parse(line, f"{p}:{n}", src) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not rows:
        raise ConfigError(f"{str(p)!r} holds no labelled queries.")
    return rows


def bundled_queries() -> list[LabelledQuery]:
    """The queries written for this project in varied user styles (training; source ``own:<style>``)."""
    return read_jsonl(BUNDLED_DIR / "queries.jsonl")


def bundled_heldout() -> list[LabelledQuery]:
    """Queries in styles the default router was not trained on (evaluation only)."""
    return read_jsonl(BUNDLED_DIR / "heldout.jsonl")


def _rank(seed: int, query: str) -> str:
    return hashlib.sha256(f"{seed}\x00{query}".encode()).hexdigest()


def split_by_source(
    rows: Sequence[LabelledQuery], *, val_fraction: float, seed: int = 0
) -> tuple[list[LabelledQuery], list[LabelledQuery]]:
    """Split into ``(train, validation)``, holding out ``val_fraction`` of every source.

    The split depends only on the rows' texts and the seed (not on file order), so training and
    evaluation commands given the same file and seed agree on the held-out rows. Queries that occur
    more than once stay on one side.
    """
    if not 0.0 <= val_fraction < 1.0:
        raise ConfigError(f"The validation fraction must be in [0, 1), got {val_fraction}.")
    by_source: dict[str, list[LabelledQuery]] = defaultdict(list)
    for row in rows:
        by_source[row.source].append(row)
    val_queries: set[str] = set()
    for group in by_source.values():
        texts = sorted({r.query for r in group}, key=lambda q: _rank(seed, q))
        val_queries.update(texts[: round(len(texts) * val_fraction)])
    train = [r for r in rows if r.query not in val_queries]
    val = [r for r in rows if r.query in val_queries]
    return train, val


def labels_of(rows: Iterable[LabelledQuery], *, base: Sequence[str] = ()) -> tuple[str, ...]:
    """The label set: ``base`` first (in order), then every other route seen in ``rows`` in order of appearance."""
    out = dict.fromkeys(base)
    for row in rows:
        out.update(dict.fromkeys(row.routes))
    return tuple(out)


def wikitables_split(page: str) -> str:
    """The fixed split of the WikiTableQuestions pages in ``../shared/data/wikitables``: ``"tune"`` or
    ``"report"`` by the CRC-32 of the page's file name (half each) — the split of ``benchmarks/routing_data.py``.
    The shipped combiner was trained only on questions of ``tune`` pages; report figures on ``report`` pages."""
    return "tune" if zlib.crc32(page.encode("utf-8")) % 100 < 50 else "report"
