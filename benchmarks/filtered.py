"""Top-10 recall under a 1 %-selective metadata filter, with and without pgvector's iterative index scan.

    python benchmarks/filtered.py [--quick] [--units 100000] [--queries 50]

One corpus of N synthetic 384-d units (clustered like text embeddings; above ``Settings.exact_scan_rows``, so
searches go through the HNSW index), each with ``{"bucket": i % 100}`` in its metadata. A query near a stored
unit asks for the 10 nearest units of one bucket (1 % of the corpus), in two filter forms:

* range ``{"bucket": {"$gte": b, "$lt": b + 1}}``: no other index serves it, the HNSW index must;
* equality ``{"bucket": b}``: a JSONB containment the GIN index on ``metadata`` can serve.

Per form: ``iterative`` = the library's public search (``Store.search(corpus, vector, k=10, filter=...)``: HNSW with
``hnsw.iterative_scan = relaxed_order`` on pgvector 0.8+); ``plain`` = the same SQL statement (the library's
``nearest_units`` builder) with the iterative scan off and the same ``ef_search`` (100), which is what a
pgvector store without iterative scan returns. Truth: exact top 10 by numpy over the bucket's vectors.
The plans the server chose are printed (a GIN bitmap scan + sort is exact). Beside them, the same search without a
filter (truth: exact top 10 of the corpus). Goal: recall >= 0.95.
"""

from __future__ import annotations

import machine as bench
import numpy as np
import sqlalchemy as sa

from universalrag.store.queries import nearest_units, set_local

DIM, K, BUCKETS, CORPUS = 384, 10, 100, "filtered"
FORMS = {"range": lambda b: {"bucket": {"$gte": b, "$lt": b + 1}}, "equality": lambda b: {"bucket": b}}


def load(store, vectors: np.ndarray) -> list[str]:  # type: ignore[no-untyped-def]
    ids = bench.new_ids(len(vectors))
    bench.load_synthetic(store, {CORPUS: (ids, vectors)}, metadata=lambda i: {"bucket": i % BUCKETS})
    return ids


def _explain(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
    return "EXPLAIN " + statement, parameters


def plain(store, vector: list[float], flt: dict, *, explain: bool = False) -> list[str]:  # type: ignore[no-untyped-def]
    """The library's nearest-units statement with the iterative scan off (ids, or the plan with ``explain``)."""
    tables = store.tables.corpus(store.corpus(CORPUS))
    stmt = nearest_units(tables, vector, limit=K, filter=flt)
    with store.transaction("plain filtered search") as conn:
        conn.execute(set_local("hnsw.ef_search", store.settings.ef_search))
        conn.execute(set_local("hnsw.iterative_scan", "off"))
        if explain:
            sa.event.listen(conn, "before_cursor_execute", _explain, retval=True)
            try:
                plan = [row[0] for row in conn.execute(stmt).cursor.fetchall()]
            finally:
                sa.event.remove(conn, "before_cursor_execute", _explain)
            return [line.strip() for line in plan if "Scan" in line]
        return [str(r.unit_id) for r in conn.execute(stmt)]


def index_only(store):  # type: ignore[no-untyped-def]
    """A store on the same schema whose connections tell the planner to avoid sequential and bitmap scans
    (libpq ``options=-c enable_seqscan=off -c enable_bitmapscan=off``), so filtered searches go through HNSW."""
    from sqlalchemy.engine import make_url

    from universalrag.store import Store

    url = make_url(store.resolve_url()).update_query_dict({"options": "-c enable_seqscan=off -c enable_bitmapscan=off"})
    return Store(url.render_as_string(hide_password=False), schema=store.schema, settings=store.settings)


def run_forms(store, vectors, ids, rng, n_queries: int) -> dict[str, dict[str, float]]:  # type: ignore[no-untyped-def]
    """Recall and p50 latency of the library's search and of the plain statement, per filter form."""
    buckets = np.arange(len(vectors)) % BUCKETS
    results = {}
    for form, make in FORMS.items():
        it_recall, pl_recall, it_ms, pl_ms = [], [], [], []
        for _ in range(n_queries):
            b = int(rng.integers(BUCKETS))
            members = np.flatnonzero(buckets == b)
            q = bench.near(rng, vectors[members[rng.integers(len(members))]])
            truth = [ids[members[i]] for i in np.argsort(-(vectors[members] @ q))[:K]]
            t_it, hits = bench.timed(store.search, CORPUS, q.tolist(), k=K, filter=make(b))
            t_pl, found = bench.timed(plain, store, q.tolist(), make(b))
            it_recall.append(bench.recall([h.id for h in hits], truth))
            pl_recall.append(bench.recall(found, truth))
            it_ms.append(t_it * 1000)
            pl_ms.append(t_pl * 1000)
        plan = plain(store, vectors[0].tolist(), make(0), explain=True)
        results[form] = {
            "recall_iterative": float(np.mean(it_recall)),
            "recall_plain": float(np.mean(pl_recall)),
            "p50_ms_iterative": bench.percentile(it_ms, 50),
            "p50_ms_plain": bench.percentile(pl_ms, 50),
        }
        r = results[form]
        bench.log(
            f"  {form:9} filter: recall@10 library {r['recall_iterative']:.3f} "
            f"(p50 {r['p50_ms_iterative']:.1f} ms), plain {r['recall_plain']:.3f} "
            f"(p50 {r['p50_ms_plain']:.1f} ms); plan: {plan[0] if plan else '?'}"
        )
    return results


def run_unfiltered(store, vectors, ids, rng, n_queries: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Recall and p50 latency of the same library search without a filter (truth: exact top 10 of the corpus)."""
    recalls, times = [], []
    for _ in range(n_queries):
        q = bench.near(rng, vectors[rng.integers(len(vectors))])
        truth = [ids[i] for i in np.argsort(-(vectors @ q))[:K]]
        t, hits = bench.timed(store.search, CORPUS, q.tolist(), k=K)
        recalls.append(bench.recall([h.id for h in hits], truth))
        times.append(t * 1000)
    r = {"recall": float(np.mean(recalls)), "p50_ms": bench.percentile(times, 50)}
    bench.log(f"  no filter:        recall@10 library {r['recall']:.3f} (p50 {r['p50_ms']:.1f} ms)")
    return r


def main() -> None:
    args, vectors, n_queries, rng = bench.synthetic_setup(__doc__, units=(100_000, 30_000), queries=(50, 20), seed=1)
    n = len(vectors)
    with bench.scratch_store(args.database_url, "filtered") as store:
        load_s, ids = bench.timed(load, store, vectors)
        bench.log(
            f"{n} units ({n // BUCKETS} per bucket) loaded in {load_s:.0f} s; exact_scan_rows = "
            f"{store.settings.exact_scan_rows}, ef_search = {store.settings.ef_search}"
        )
        bench.log("planner's choice (library defaults):")
        unfiltered = run_unfiltered(store, vectors, ids, rng, n_queries)
        planner = run_forms(store, vectors, ids, rng, n_queries)
        bench.log("HNSW index forced (sequential and bitmap scans off):")
        with index_only(store) as forced:
            index = run_forms(forced, vectors, ids, rng, n_queries)
    bench.log(bench.machine_line())
    fig, ax = bench.figure(size=(7.5, 4))
    labels = [f"{f}\n{mode}" for mode in ("planner", "HNSW forced") for f in FORMS]
    values = [*planner.values(), *index.values()]
    x = np.arange(len(values))
    ax.bar(x - 0.2, [r["recall_iterative"] for r in values], 0.4, label="library (iterative scan)")
    ax.bar(x + 0.2, [r["recall_plain"] for r in values], 0.4, label="plain statement, no iterative scan")
    ax.axhline(0.95, color="grey", linestyle=":", label="goal 0.95")
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel("recall@10 vs exact, 1 % filter")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8)
    bench.save_png(fig, args.out / "filtered.png", title=f"Filtered search, {n} synthetic units, k = {K}")
    main_form = index["range"]
    bench.finish(
        "filtered",
        {
            "recall_iterative": round(main_form["recall_iterative"], 4),
            "recall_plain": round(main_form["recall_plain"], 4),
            "hnsw_forced": {f: {k: round(v, 4) for k, v in r.items()} for f, r in index.items()},
            "planner": {f: {k: round(v, 4) for k, v in r.items()} for f, r in planner.items()},
            "unfiltered": {k: round(v, 4) for k, v in unfiltered.items()},
            "units": n,
            "queries": n_queries,
        },
        args.out,
    )


if __name__ == "__main__":
    main()
