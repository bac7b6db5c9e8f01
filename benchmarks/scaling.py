"""Routed against unified search as the corpora grow: latency, and HNSW recall@10 against exact search.

    python benchmarks/scaling.py [--quick] [--sizes 10000,100000,1000000] [--queries 100]
    python benchmarks/scaling.py --beam-vs-exact 100000 [--queries 30] [--ef-construction 64,128]

For each total size N, six corpora of N/6 synthetic units each (384-d unit vectors: every corpus has its own
base direction, topics around it, units around the topics) and one ``unified`` corpus holding all N units — the
shared-index baseline of the UniversalRAG paper. Each query is a perturbed copy of a stored unit of one corpus.
``--vectors text-like`` (default; :func:`machine.text_like_vectors`) draws units whose spread over directions and
whose nearest-neighbour contrast were calibrated on real MiniLM vectors of Wikipedia pages; ``--vectors
isotropic`` (:func:`machine.synthetic_vectors`, the only kind before) spreads units in isotropic noise around their
topics, where a query's 10th and 100th nearest units are all but tied — a worst case for HNSW recall.

* routed: ``Store.search`` of that one corpus (what runs after the router picked it; the router's own time is
  measured by ``routing.py`` and not counted here), k = 10, library defaults — a corpus of at most
  ``Settings.exact_scan_rows`` units is scanned exactly, a larger one goes through its HNSW index;
* routed, index: the same with ``exact_scan=False`` (always the HNSW index);
* unified: ``Store.search`` of the unified corpus, k = 10, library defaults.

Before the timed queries, every corpus's index check (``universalrag.store.index_check``) is run to the end, as
the first searches after a load start it in the background: the timings are the steady state, not a search
racing the check for the two cores. Each check also tunes the corpus's HNSW beam (the smallest ``ef_search`` from
the library's default, doubling up to 1000, whose recall reaches 0.95), which every index search of that corpus
then uses at least; the checks' recalls per beam and the tuned beams are printed and in the JSON
(``tuned_ef``, ``check_recall``). Recall@10 is the share of the exact top 10 (numpy over the same vectors) that
the HNSW searches return, in the routed corpora and in the unified one. The routed side runs its queries, then
the unified side the same ones, each after warm-up queries of its own (:func:`measure`: both sides share one
server here, which no deployment does); p50 over the queries. Goal: routed <= unified from 100k units on;
recall >= 0.95.
``--beam-vs-exact ROWS``: one corpus of ROWS units instead, the exact scan against the index at beams 100 to
1000 (latency and recall@10) and its index check per beam — whether a tuned beam beats an exact scan on a table
the exact scan could serve — for each graph of ``--ef-construction`` (build time too).
``--quick``: 6k and 30k units, 30 queries. 1M units: give ``--sizes``; loading them takes about an hour on a
busy 2-core machine and ~8 GB of disk.
"""

from __future__ import annotations

import json

import machine as bench
import numpy as np

DIM = 384
CORPORA = [f"s{i}" for i in range(6)]
K = 10
CHUNK = 5000


#: The kinds of synthetic vectors (``--vectors``).
GENERATORS = {"text-like": bench.text_like_vectors, "isotropic": bench.synthetic_vectors}


def make_vectors(rng: np.random.Generator, per_corpus: int, kind: str = "text-like") -> dict[str, np.ndarray]:
    """Per corpus ``per_corpus`` unit vectors of ``kind`` (:data:`GENERATORS`), around the corpus's own base
    direction."""
    return {name: GENERATORS[kind](rng, per_corpus, dim=DIM) for name in CORPORA}


def load_corpora(store, vectors: dict[str, np.ndarray]) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    """The six corpora and the unified one holding all their units (same ids); returns the ids per corpus."""
    ids = {name: bench.new_ids(len(v)) for name, v in vectors.items()}
    unified = ([i for name in CORPORA for i in ids[name]], np.concatenate([vectors[name] for name in CORPORA]))
    bench.load_synthetic(store, {**{name: (ids[name], vectors[name]) for name in CORPORA}, "unified": unified})
    return ids


def exact_top(matrix: np.ndarray, ids: list[str], q: np.ndarray) -> list[str]:
    """The ids of the K vectors of ``matrix`` nearest to ``q`` by cosine (vectors are unit length)."""
    sims = matrix @ q
    top = np.argpartition(-sims, K)[:K]
    return [ids[i] for i in top[np.argsort(-sims[top])]]


def run_checks(store) -> dict:  # type: ignore[no-untyped-def,type-arg]
    """Every corpus's index check run to the end (what the default search rule reads, and the beam it tunes):
    the :class:`~universalrag.store.index_check.IndexCheck` per corpus."""
    from universalrag.store.index_check import check_index

    return {name: check_index(store, name) for name in [*CORPORA, "unified"]}


#: Queries each side runs before its timed ones (its pages brought into the buffers, as a server serving only
#: that side would hold them).
WARM_UP = 30


def measure(store, vectors, ids, rng, n_queries: int) -> dict:  # type: ignore[no-untyped-def,type-arg]
    """Latencies (p50 ms) and recalls over ``n_queries`` queries: the routed side (each query on its corpus, the
    default path and then the index), then the unified side (the same queries), each after :data:`WARM_UP`
    queries of its own. Not interleaved query by query: both sides live in one server here, and a query of each
    on every step let the unified table, read by every query, push the six smaller ones out of the buffers —
    a contest a deployment of either kind never holds (at 1M units the routed default path then read 10.2 ms
    against 2.2 ms, the same queries 1.0 ms once their pages were in)."""
    all_ids = [i for name in CORPORA for i in ids[name]]
    all_vecs = np.concatenate([vectors[name] for name in CORPORA])
    queries = []
    for n in range(WARM_UP + n_queries):
        name = CORPORA[n % len(CORPORA)]
        queries.append((name, bench.near(rng, vectors[name][rng.integers(len(vectors[name]))]).tolist()))
    routed, routed_index, unified, r_recall, u_recall = [], [], [], [], []
    per_corpus: dict[str, dict[str, list[float]]] = {name: {"ms": [], "recall": []} for name in CORPORA}
    for n, (name, q) in enumerate(queries):
        t_routed, _ = bench.timed(store.search, name, q, k=K)
        t_index, r_hits = bench.timed(store.search, name, q, k=K, exact_scan=False)
        if n < WARM_UP:
            continue
        routed.append(t_routed * 1000)
        routed_index.append(t_index * 1000)
        r_recall.append(bench.recall([h.id for h in r_hits], exact_top(vectors[name], ids[name], np.asarray(q))))
        per_corpus[name]["ms"].append(t_routed * 1000)
        per_corpus[name]["recall"].append(r_recall[-1])
    for n, (_, q) in enumerate(queries):
        t_unified, _ = bench.timed(store.search, "unified", q, k=K)
        u_index = store.search("unified", q, k=K, exact_scan=False)
        if n < WARM_UP:
            continue
        unified.append(t_unified * 1000)
        u_recall.append(bench.recall([h.id for h in u_index], exact_top(all_vecs, all_ids, np.asarray(q))))
    return {
        "routed_ms": bench.percentile(routed, 50),
        "routed_index_ms": bench.percentile(routed_index, 50),
        "unified_ms": bench.percentile(unified, 50),
        "routed_p95_ms": bench.percentile(routed, 95),
        "unified_p95_ms": bench.percentile(unified, 95),
        "recall_routed": float(np.mean(r_recall)),
        "recall_unified": float(np.mean(u_recall)),
        "per_corpus": {
            name: {
                "routed_ms": round(bench.percentile(v["ms"], 50), 2),
                "recall_at_10": round(float(np.mean(v["recall"])), 4),
            }
            for name, v in per_corpus.items()
            if v["ms"]
        },
    }


def rebuild_index(store, corpus: str, ef_construction: int, *, parts: bool = False) -> float:  # type: ignore[no-untyped-def]
    """Build the HNSW index of ``corpus``'s units (``parts``: of its parts table) again with ``m`` = 16 and
    ``ef_construction`` (the library builds them with 16 and 128 since migration 0011; pgvector's default is 64);
    returns the build's seconds."""
    from psycopg import sql

    from universalrag.store.schema import parts_table_name, unit_table_name

    table = parts_table_name(corpus) if parts else unit_table_name(corpus)
    with store.transaction("rebuild the HNSW index") as conn:
        raw = conn.connection.driver_connection
        raw.execute(
            sql.SQL("DROP INDEX IF EXISTS {}.{}").format(sql.Identifier(store.schema), sql.Identifier(f"{table}_hnsw"))
        )
        raw.execute("SET LOCAL maintenance_work_mem = '1GB'")
        seconds, _ = bench.timed(
            raw.execute,
            sql.SQL(
                "CREATE INDEX {} ON {}.{} USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = {})"
            ).format(
                sql.Identifier(f"{table}_hnsw"),
                sql.Identifier(store.schema),
                sql.Identifier(table),
                sql.Literal(int(ef_construction)),
            ),
        )
    return seconds


def beam_vs_exact(
    store,
    rows: int,
    rng,
    n_queries: int,  # type: ignore[no-untyped-def]
    ef_constructions: list[int],
    kind: str = "text-like",
) -> dict:  # type: ignore[type-arg]
    """One corpus of ``rows`` units (a table the exact scan may serve, up to ``Settings.exact_scan_max_rows``): p50
    latency and recall@10 of the exact scan against the index at each beam from 100 to 1000, interleaved —
    whether a tuned index beats an exact scan there — and the index check per beam; with the graph built at each
    of ``ef_constructions`` in turn (its build time too): the other lever when the widest beam is not enough."""
    from universalrag.store.index_check import check_index

    vectors, ids = GENERATORS[kind](rng, rows, dim=DIM), bench.new_ids(rows)
    bench.load_synthetic(store, {"s0": (ids, vectors)})
    ways: dict[str, dict[str, object]] = {"exact": {"exact_scan": True}}
    ways.update({f"ef {ef}": {"exact_scan": False, "ef_search": ef} for ef in (100, 200, 400, 800, 1000)})
    queries = [bench.near(rng, vectors[rng.integers(rows)]) for _ in range(n_queries + 3)]
    truths = [exact_top(vectors, ids, q) for q in queries]
    out = {}
    for ef_construction in ef_constructions:
        build_s = rebuild_index(store, "s0", ef_construction)
        times: dict[str, list[float]] = {way: [] for way in ways}
        recalls: dict[str, list[float]] = {way: [] for way in ways}
        for n, (q, truth) in enumerate(zip(queries, truths, strict=True)):
            for way, kwargs in ways.items():
                t, hits = bench.timed(store.search, "s0", q.tolist(), k=K, **kwargs)
                if n >= 3:  # warm-up
                    times[way].append(t * 1000)
                    recalls[way].append(bench.recall([h.id for h in hits], truth))
        check = check_index(store, "s0", save=False)
        out[f"ef_construction {ef_construction}"] = {
            "build_s": round(build_s, 1),
            "check": [[ef, round(r, 4)] for ef, r in check.recalls],
            **{
                way: {
                    "p50_ms": round(bench.percentile(times[way], 50), 2),
                    "recall_at_10": round(float(np.mean(recalls[way])), 4),
                }
                for way in ways
            },
        }
    return out


def plot(sizes: list[int], rows: list[dict[str, float]], path, kind: str) -> None:  # type: ignore[no-untyped-def]
    fig, (ax, ax2) = bench.figure(2, size=(10, 4))
    for key, label in (
        ("routed_ms", "routed (library default)"),
        ("routed_index_ms", "routed, HNSW index"),
        ("unified_ms", "unified (one shared table)"),
    ):
        ax.plot(sizes, [r[key] for r in rows], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("units in total")
    ax.set_ylabel("p50 search latency, ms (k = 10)")
    ax.legend(fontsize=8)
    for key, label in (("recall_routed", "routed corpus"), ("recall_unified", "unified table")):
        ax2.plot(sizes, [r[key] for r in rows], marker="o", label=label)
    ax2.axhline(0.95, color="grey", linestyle=":", label="goal 0.95")
    ax2.set_xscale("log")
    ax2.set_ylim(0.5, 1.01)
    ax2.set_xlabel("units in total")
    ax2.set_ylabel("HNSW recall@10 vs exact")
    ax2.legend(fontsize=8)
    bench.save_png(fig, path, title=f"Routed vs unified search as corpora grow (synthetic 384-d units, {kind})")


def main() -> None:
    ap = bench.parser(__doc__)
    ap.add_argument("--sizes", help="total units per step, comma-separated (default 10000,100000)")
    ap.add_argument("--queries", type=int, help="timed queries per size (default 100; --quick: 30)")
    ap.add_argument(
        "--beam-vs-exact",
        type=int,
        metavar="ROWS",
        help="instead: one corpus of ROWS units, the exact scan against the index at beams 100-1000",
    )
    ap.add_argument("--ef-construction", default="64", help="with --beam-vs-exact: graphs to build, e.g. 64,128")
    ap.add_argument(
        "--vectors",
        choices=list(GENERATORS),
        default="text-like",
        help="synthetic vectors shaped like real text embeddings, or isotropic clusters (the worst case)",
    )
    args = ap.parse_args()
    if args.beam_vs_exact:
        bench.log(bench.machine_line())
        with bench.scratch_store(args.database_url, "scaling") as store:
            result = beam_vs_exact(
                store,
                args.beam_vs_exact,
                np.random.default_rng(1),
                args.queries or 30,
                [int(x) for x in args.ef_construction.split(",")],
                args.vectors,
            )
        for graph, r in result.items():
            bench.log(
                f"{args.beam_vs_exact} units, {graph}: build {r['build_s']:.0f} s; check "
                + " ".join(f"{rc:.2f}@{ef}" for ef, rc in r["check"])
            )
            for way, w in r.items():
                if isinstance(w, dict):
                    bench.log(f"    {way:>8}: p50 {w['p50_ms']:7.2f} ms, recall@10 {w['recall_at_10']:.3f}")
        bench.log(bench.machine_line())
        print(json.dumps({"rows": args.beam_vs_exact, "vectors": args.vectors, **result}), flush=True)
        return
    sizes = [int(s) for s in (args.sizes or ("6000,30000" if args.quick else "10000,100000")).split(",")]
    n_queries = args.queries or (30 if args.quick else 100)
    bench.log(bench.machine_line())
    bench.log(f"synthetic vectors: {args.vectors}")
    bench.log(
        f"{'units':>9} {'load s':>7} {'routed':>8} {'routed idx':>10} {'unified':>8} "
        f"{'recall routed':>13} {'recall unified':>14}   (p50 ms, k = {K})"
    )
    rng = np.random.default_rng(0)
    rows = []
    for size in sizes:
        with bench.scratch_store(args.database_url, "scaling") as store:
            vectors = make_vectors(rng, size // len(CORPORA), args.vectors)
            load_s, ids = bench.timed(load_corpora, store, vectors)
            check_s, checks = bench.timed(run_checks, store)
            bench.log(
                f"index checks ({check_s:.0f} s; recall of the index's best hit against an exact scan, per "
                "beam tried -> the tuned ef_search): "
                + "; ".join(
                    f"{name} " + " ".join(f"{r:.2f}@{ef}" for ef, r in c.recalls) + f" -> {c.ef_search}"
                    for name, c in checks.items()
                )
            )
            row = measure(store, vectors, ids, rng, n_queries)
            row["tuned_ef"] = {name: c.ef_search for name, c in checks.items()}
            row["check_recall"] = {name: round(c.recall, 4) for name, c in checks.items()}
            row["check_s"] = check_s
            bench.log(
                "per corpus (p50 ms on the default path, recall@10 through the index, tuned ef_search): "
                + "; ".join(
                    f"{name} {v['routed_ms']:.1f} ms {v['recall_at_10']:.3f} ef {row['tuned_ef'][name]}"
                    for name, v in row["per_corpus"].items()
                )
            )
        rows.append(row)
        bench.log(
            f"{size:>9} {load_s:>7.0f} {row['routed_ms']:>8.1f} {row['routed_index_ms']:>10.1f} "
            f"{row['unified_ms']:>8.1f} {row['recall_routed']:>13.3f} {row['recall_unified']:>14.3f}   "
            f"({bench.machine_line().split(', ', 2)[2]})"
        )
    plot(sizes, rows, args.out / "scaling.png", args.vectors)
    goal = all(r["routed_ms"] <= r["unified_ms"] for s, r in zip(sizes, rows, strict=True) if s >= 100_000)
    bench.log(
        f"goal routed <= unified from 100k: {'met' if goal else 'NOT met'} "
        f"(sizes >= 100k measured: {[s for s in sizes if s >= 100_000] or 'none'}); recall goal >= 0.95: "
        f"{'met' if min(min(r['recall_routed'], r['recall_unified']) for r in rows) >= 0.95 else 'NOT met'}"
    )
    bench.finish(
        "scaling",
        {
            "sizes": sizes,
            "routed_ms": [round(r["routed_ms"], 2) for r in rows],
            "unified_ms": [round(r["unified_ms"], 2) for r in rows],
            "routed_index_ms": [round(r["routed_index_ms"], 2) for r in rows],
            "recall_at_10": [round(r["recall_routed"], 4) for r in rows],
            "recall_at_10_unified": [round(r["recall_unified"], 4) for r in rows],
            "tuned_ef": [r["tuned_ef"] for r in rows],
            "check_recall": [r["check_recall"] for r in rows],
            "check_s": [round(r["check_s"], 1) for r in rows],
            "per_corpus": [r["per_corpus"] for r in rows],
            "queries": n_queries,
            "vectors": args.vectors,
        },
        args.out,
    )


if __name__ == "__main__":
    main()
