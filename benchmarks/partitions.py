"""Search latency of one tenant's units: a corpus partitioned by tenant against the same units in one table.

    python benchmarks/partitions.py [--quick] [--units 100000] [--tenants 50] [--queries 40]

Two corpora hold the same N synthetic 384-d units (clustered like text embeddings), unit i with ``{"tenant":
"t<i mod T>"}``: ``flat`` in one table with one HNSW index, ``split`` partitioned by tenant (``Partitioning(by="tenant",
key="tenant")``: T partitions of N/T units, an HNSW index each). Each query lies near a stored unit of a random tenant
and goes through the library's public search, ``Store.search(corpus, vector, k=10, filter={"tenant": t})``, on both
corpora, in alternating order: p50 and p95 latency, and recall@10 against the exact top 10 of that tenant's units
(numpy). The same without a filter: latency and recall against the corpus's exact top 10 (every partition searched).
The plan of a filtered search of ``split`` is printed: one partition is read.
"""

from __future__ import annotations

import machine as bench
import numpy as np
from psycopg.types.json import Jsonb
from sqlalchemy.dialects.postgresql import JSONB

from universalrag.store import queries
from universalrag.types import Partitioning

K = 10
CORPORA = ("flat", "split")


def plan(store, vector: list[float], tenant: str) -> list[str]:  # type: ignore[no-untyped-def]
    """The scan lines of the plan of ``split``'s filtered nearest-units statement."""
    tables = store.tables.corpus(store.corpus("split"))
    stmt = queries.nearest_units(tables, vector, limit=K, filter={"tenant": tenant})
    with store.transaction("explain") as conn:
        compiled = stmt.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
        params = {
            k: Jsonb(v) if k in compiled.binds and isinstance(compiled.binds[k].type, JSONB) else v
            for k, v in compiled.params.items()
        }
        params["query_vector"] = "[" + ",".join(map(str, vector)) + "]"
        lines = conn.exec_driver_sql("EXPLAIN " + str(compiled), params).scalars().all()
    return [line.strip() for line in lines if "Scan" in line]


def measure(store, vectors, ids, tenants, rng, n_queries: int, *, filtered: bool) -> dict[str, dict[str, float]]:  # type: ignore[no-untyped-def]
    """p50/p95 latency (ms) and recall@10 of each corpus's search, filtered on a tenant or not."""
    times: dict[str, list[float]] = {c: [] for c in CORPORA}
    recalls: dict[str, list[float]] = {c: [] for c in CORPORA}
    for i in range(n_queries):
        t = int(rng.integers(tenants))
        members = np.flatnonzero(np.arange(len(vectors)) % tenants == t) if filtered else np.arange(len(vectors))
        q = bench.near(rng, vectors[members[rng.integers(len(members))]])
        truth = [ids[members[j]] for j in np.argsort(-(vectors[members] @ q))[:K]]
        flt = {"tenant": f"t{t}"} if filtered else None
        for corpus in CORPORA if i % 2 else reversed(CORPORA):
            seconds, hits = bench.timed(store.search, corpus, q.tolist(), k=K, filter=flt)
            times[corpus].append(seconds * 1000)
            recalls[corpus].append(bench.recall([h.id for h in hits], truth))
    return {
        c: {
            "p50_ms": bench.percentile(times[c], 50),
            "p95_ms": bench.percentile(times[c], 95),
            "recall": float(np.mean(recalls[c])),
        }
        for c in CORPORA
    }


def main() -> None:
    ap = bench.parser(__doc__)
    ap.add_argument("--units", type=int, help="units in each corpus (default 100000; --quick 6000)")
    ap.add_argument("--tenants", type=int, help="tenants (default 50; --quick 12)")
    ap.add_argument("--queries", type=int, help="queries per measure (default 40; --quick 12)")
    args = ap.parse_args()
    n = args.units or (6000 if args.quick else 100_000)
    tenants = args.tenants or (12 if args.quick else 50)
    n_queries = args.queries or (12 if args.quick else 40)
    bench.log(bench.machine_line())
    rng = np.random.default_rng(5)
    vectors = bench.synthetic_vectors(rng, n)
    with bench.scratch_store(args.database_url, "partitions") as store:
        ids = bench.new_ids(n)
        load_s, _ = bench.timed(
            bench.load_synthetic,
            store,
            {"flat": (ids, vectors), "split": (ids, vectors)},
            metadata=lambda i: {"tenant": f"t{i % tenants}"},
            partition={"split": Partitioning(by="tenant", key="tenant")},
        )
        made = store.partitions("split")
        bench.log(
            f"{n} units x 2 corpora, {tenants} tenants ({len(made)} partitions of split), loaded in {load_s:.0f} s"
        )
        for corpus in CORPORA:  # warm the caches and the statements
            store.search(corpus, vectors[0].tolist(), k=K, filter={"tenant": "t0"})
        filtered = measure(store, vectors, ids, tenants, rng, n_queries, filtered=True)
        unfiltered = measure(store, vectors, ids, tenants, rng, n_queries, filtered=False)
        scans = plan(store, vectors[1].tolist(), "t1")
    for name, result in (("tenant filter", filtered), ("no filter", unfiltered)):
        for corpus in CORPORA:
            r = result[corpus]
            bench.log(
                f"  {name:13} {corpus:5}: p50 {r['p50_ms']:.2f} ms, p95 {r['p95_ms']:.2f} ms, "
                f"recall@10 {r['recall']:.3f}"
            )
    speedup = filtered["flat"]["p50_ms"] / filtered["split"]["p50_ms"]
    bench.log(f"  filtered p50, flat / split: {speedup:.2f}x; plan of split: {'; '.join(scans)}")
    bench.log(bench.machine_line())
    fig, ax = bench.figure(size=(6.4, 4))
    x = np.arange(2)
    for offset, corpus in ((-0.2, "flat"), (0.2, "split")):
        ax.bar(x + offset, [filtered[corpus]["p50_ms"], unfiltered[corpus]["p50_ms"]], 0.4, label=corpus)
    ax.set_xticks(x, ["tenant filter", "no filter"])
    ax.set_ylabel(f"p50 latency of a top-{K} search (ms)")
    ax.legend(fontsize=8)
    bench.save_png(
        fig, args.out / "partitions.png", title=f"Partitioned by tenant vs one table, {n} units, {tenants} tenants"
    )
    bench.finish(
        "partitions",
        {
            "units": n,
            "tenants": tenants,
            "partitions": len(made),
            "queries": n_queries,
            "filtered": {c: {k: round(v, 4) for k, v in r.items()} for c, r in filtered.items()},
            "unfiltered": {c: {k: round(v, 4) for k, v in r.items()} for c, r in unfiltered.items()},
            "filtered_p50_ratio_flat_over_split": round(speedup, 3),
            "split_plan": scans,
        },
        args.out,
    )


if __name__ == "__main__":
    main()
