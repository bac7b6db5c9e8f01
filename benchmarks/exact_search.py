"""Exact scan vs HNSW index for a multi-vector corpus: latency and recall by the size of its parts table.

Informs ``Settings.exact_scan_rows`` (the size up to which a search scans a table exactly) and shows what the
index check (``universalrag.store.index_check``) measures on such data (on tables of near-identical
numeric rows, the HNSW graph search missed an exact match). For each size N, writes N parts of
384 dimensions (tables of rows that differ a little around a few directions, plus one rare "text" table),
then times ``Store.search(k=5)`` with ``exact_scan=True`` and ``exact_scan=False`` (median of ``--repeat`` runs, random
queries near the rows) and counts how often the index's top unit is the exact scan's.

Run: ``python benchmarks/exact_search.py [--quick] [--sizes 5000,20000,50000]`` with
``UNIVERSALRAG_DATABASE_URL`` set (or the embedded server). Prints the CPU, the load, and per size the two
latencies, their ratio, the index's top-1 agreement with the exact scan, the index check's recall and the path
the default rule then takes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid

import numpy as np
import sqlalchemy as sa
from machine import cpu_model  # noqa: E402  (benchmarks/ is on sys.path when a script runs)

from universalrag.config import Settings
from universalrag.store import Store
from universalrag.store.index_check import check_index
from universalrag.store.scan_rule import scan_exactly
from universalrag.types import Modality, PartBatch, SourceRecord, Unit

DIM = 384


def _unit_vectors(rng: np.random.Generator, center: np.ndarray, n: int, spread: float) -> np.ndarray:
    v = center[None, :] + spread * rng.normal(size=(n, DIM))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def fill(store: Store, n: int, rng: np.random.Generator) -> np.ndarray:
    """Write ``n`` parts in 10 numeric-like tables and one small text-like table; returns the rare table's rows."""
    centers = rng.normal(size=(3, DIM))
    units, batches = [], []
    per = max(1, (n - 20) // 10)
    for t in range(10):
        uid = str(uuid.uuid4())
        rows = _unit_vectors(rng, centers[t % 3], per, 0.02)  # near-identical rows
        units.append(Unit(id=uid, corpus="table", content=f"numeric table {t}", embedding=rows.mean(0).tolist()))
        for start in range(0, per, 5000):
            chunk = rows[start : start + 5000]
            batches.append(
                PartBatch(
                    corpus="table",
                    unit_id=uid,
                    start=start,
                    texts=[f"row {start + i}" for i in range(len(chunk))],
                    vectors=chunk,
                )
            )
    rare = _unit_vectors(rng, rng.normal(size=DIM), 20, 0.5)
    rare_id = str(uuid.uuid4())
    units.append(Unit(id=rare_id, corpus="table", content="text table", embedding=rare.mean(0).tolist()))
    batches.append(
        PartBatch(corpus="table", unit_id=rare_id, start=0, texts=[f"release {i}" for i in range(20)], vectors=rare)
    )
    store.write_source(
        SourceRecord(uri=f"bench://{n}", content_hash="h", modality=Modality.TABLE, corpora=("table",)),
        units,
        parts=batches,
    )
    with store.engine.begin() as conn:
        conn.execute(sa.text(f"ANALYZE {store.schema}.corpus_table_parts"))
    return rare


def measure(store: Store, rare: np.ndarray, rng: np.random.Generator, repeat: int) -> tuple[float, float, float]:
    exact_ms, index_ms, agree = [], [], 0
    for i in range(repeat):
        q = rare[i % len(rare)] + 0.3 * rng.normal(size=DIM)
        q = (q / np.linalg.norm(q)).tolist()
        t = time.perf_counter()
        exact = store.search("table", q, k=5, exact_scan=True)
        exact_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        index = store.search("table", q, k=5, exact_scan=False)
        index_ms.append((time.perf_counter() - t) * 1000)
        agree += bool(exact and index and exact[0].id == index[0].id)
    return statistics.median(exact_ms), statistics.median(index_ms), agree / repeat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,5000,10000,20000,50000", help="parts-table sizes to try")
    parser.add_argument("--repeat", type=int, default=9, help="queries per size")
    parser.add_argument("--quick", action="store_true", help="sizes 2000,10000,20000 and 5 queries")
    args = parser.parse_args()
    sizes = [2000, 10000, 20000] if args.quick else [int(s) for s in args.sizes.split(",")]
    repeat = 5 if args.quick else args.repeat
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print(
        f"{'parts':>7} {'exact ms':>9} {'index ms':>9} {'ratio':>6} {'index top-1 = exact':>20} "
        f"{'check recall':>13} {'rule':>6}"
    )
    rng = np.random.default_rng(0)
    for n in sizes:
        schema = f"bench_exact_{uuid.uuid4().hex[:8]}"
        store = Store(settings=Settings.from_env().with_(schema=schema))
        try:
            store.init(embedder="bench", dimension=DIM)
            rare = fill(store, n, rng)
            exact, index, agree = measure(store, rare, rng, repeat)
            check = check_index(store, "table", queries=12)
            rule = scan_exactly(
                check.rows,
                store.corpus("table").metadata,
                exact_scan_rows=store.settings.exact_scan_rows,
                exact_scan_max_rows=store.settings.exact_scan_max_rows,
            )
            print(
                f"{n:>7} {exact:>9.1f} {index:>9.1f} {exact / index:>6.1f} {agree:>19.0%} {check.recall:>13.0%} "
                f"{'exact' if rule else 'index':>6}"
            )
        finally:
            with store.engine.begin() as conn:
                conn.execute(sa.schema.DropSchema(schema, cascade=True, if_exists=True))
            store.close()


if __name__ == "__main__":
    main()
