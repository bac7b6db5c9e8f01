"""Routed against unified search as the corpora grow: latency (p50, p95, a cold first query) and recall@10 against
exact search, every path measured in alternation.

    python benchmarks/scaling.py [--quick] [--sizes 10000,100000,1000000] [--queries 100] [--keep] [--explain]
    python benchmarks/scaling.py --beam-vs-exact 100000 [--queries 30] [--ef-construction 64,128]

For each total size N, six corpora of N/6 synthetic units each (384-d unit vectors: every corpus has its own
base direction, topics around it, units around the topics) and one ``unified`` corpus holding all N units — the
shared-index baseline of the UniversalRAG paper. Each query is a perturbed copy of a stored unit of one corpus.
``--vectors text-like`` (default; :func:`machine.text_like_vectors`) draws units whose spread over directions and
whose nearest-neighbour contrast were calibrated on real MiniLM vectors of Wikipedia pages; ``--vectors
isotropic`` (:func:`machine.synthetic_vectors`, the only kind before) spreads units in isotropic noise around their
topics, where a query's 10th and 100th nearest units are all but tied — a worst case for HNSW recall.

The paths (:data:`PATHS`):

* routed: ``Store.search`` of that one corpus (what runs after the router picked it; the router's own time is
  measured by ``routing.py`` and not counted here), k = 10, library defaults — a corpus of at most
  ``Settings.exact_scan_rows`` units is scanned exactly, a larger one goes through its HNSW index;
* routed_index: the same with ``exact_scan=False`` (always the HNSW index);
* unified: ``Store.search`` of the unified corpus, k = 10, library defaults.

Before the timed queries, every corpus's index check (``universalrag.store.index_check``) is run to the end, as
the first searches after a load start it in the background: the timings are the steady state, not a search
racing the check for the two cores. Each check also tunes the corpus's HNSW beam (the smallest ``ef_search`` from
the library's default, doubling up to 1000, whose recall reaches 0.95), which every index search of that corpus
then uses at least; the checks' recalls per beam and the tuned beams are printed and in the JSON
(``tuned_ef``, ``check_recall``). Then each path's cold first query (:func:`cold_queries`: a new ``Store``, a
corpus not searched yet in the process), then the timed queries, the paths alternated query by query
(:func:`measure`); p50 and p95 over the queries, this process's and the server's CPU time per search
(:func:`machine.server_cpu`: what the load changes least), and recall@10: the share of the exact top 10 (numpy
over the same vectors) that each path's hits hold. Goals: from 100k units on, routed <=
unified and routed <= 2x the index path; recall >= 0.95 at library defaults. The plot (``scaling.png``) shows p50
against size and recall against p50, one point per path and size.

``--keep``: each size is loaded into a schema that stays (``bench_scaling_keep_<vectors>_<size>``; the vectors and
ids are drawn again from the size's seed) and the next run reuses it: 1M units take 15-40 minutes to load and
index on a busy 2-core machine and ~8 GB of disk. Give the embedded server a home of its own
(``UNIVERSALRAG_HOME``) to keep them apart from other work. ``--explain``: per path, the statements one search
sends, their plans (``EXPLAIN (ANALYZE, BUFFERS)``) and the server's share of the search's time.
``--beam-vs-exact ROWS``: one corpus of ROWS units instead, the exact scan against the index at beams 100 to
1000 (latency and recall@10) and its index check per beam — whether a tuned beam beats an exact scan on a table
the exact scan could serve — for each graph of ``--ef-construction`` (build time too).
``--quick``: 6k and 30k units, 30 queries.
"""

from __future__ import annotations

import itertools
import json
import time
import uuid

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


def load_corpora(store, vectors: dict[str, np.ndarray], ids: dict[str, list[str]]) -> dict[str, dict[str, float]]:  # type: ignore[no-untyped-def]
    """The six corpora, then the unified one holding all their units (same ids, written from the same arrays), each
    with the index the library gives a corpus of its size; the seconds of each load's writes and index builds:
    ``{"routed": {"write_s", "index_s"}, "unified": {...}}``."""
    routed = bench.load_synthetic(store, {name: (ids[name], vectors[name]) for name in CORPORA}, choose_index=True)
    unified = bench.load_synthetic(
        store, {"unified": [(ids[name], vectors[name]) for name in CORPORA]}, choose_index=True
    )
    return {"routed": routed, "unified": unified}


def exact_top(matrix: np.ndarray, ids: list[str], q: np.ndarray) -> list[str]:
    """The ids of the K vectors of ``matrix`` nearest to ``q`` by cosine (vectors are unit length)."""
    sims = matrix @ q
    top = np.argpartition(-sims, K)[:K]
    return [ids[i] for i in top[np.argsort(-sims[top])]]


def exact_top_all(vectors: dict[str, np.ndarray], ids: dict[str, list[str]], q: np.ndarray) -> list[str]:
    """The exact top K of the unified corpus (every corpus's units), merged from each corpus's own top K: the
    arrays are never joined into one (at 5M units that copy alone would be 7.7 GB)."""
    scored = []
    for name in CORPORA:
        sims = vectors[name] @ q
        top = np.argpartition(-sims, K)[:K]
        scored.extend((float(sims[i]), ids[name][i]) for i in top)
    return [i for _, i in sorted(scored, reverse=True)[:K]]


def run_checks(store) -> dict:  # type: ignore[no-untyped-def,type-arg]
    """Every corpus's index check run to the end (what the default search rule reads, and the beam it tunes):
    the :class:`~universalrag.store.index_check.IndexCheck` per corpus."""
    from universalrag.store.index_check import check_index

    return {name: check_index(store, name) for name in [*CORPORA, "unified"]}


#: Queries each path runs before its timed ones (its pages brought into the buffers, as a server serving that path
#: would hold them).
WARM_UP = 30

#: The paths measured (:func:`measure`): name -> (searches the routed corpus, ``Store.search`` keyword arguments).
PATHS: dict[str, tuple[bool, dict[str, object]]] = {
    "routed": (True, {}),
    "routed_index": (True, {"exact_scan": False}),
    "unified": (False, {}),
}
#: The corpus each path's cold first query searches: one the other cold queries leave untouched.
COLD_CORPUS = {"routed": "s0", "routed_index": "s1", "unified": "unified"}


def cold_queries(store, vectors, ids, rng) -> dict:  # type: ignore[no-untyped-def,type-arg]
    """The first query of each path as a user meets it: a new ``Store`` (its own connections, its registry read),
    the corpus of :data:`COLD_CORPUS` searched for the first time in this process. ``{path: (ms, recall@10)}``."""
    from universalrag.store import Store

    out = {}
    for path, (_, kwargs) in PATHS.items():
        corpus = COLD_CORPUS[path]
        source = vectors["s2"] if corpus == "unified" else vectors[corpus]
        q = bench.near(rng, source[rng.integers(len(source))])
        fresh = Store(settings=store.settings)
        try:
            t, hits = bench.timed(fresh.search, corpus, q.tolist(), k=K, **kwargs)
        finally:
            fresh.close()
        truth = exact_top_all(vectors, ids, q) if corpus == "unified" else exact_top(vectors[corpus], ids[corpus], q)
        out[path] = (t * 1000, bench.recall([h.id for h in hits], truth))
    return out


def measure(store, vectors, ids, rng, n_queries: int) -> dict:  # type: ignore[no-untyped-def,type-arg]
    """Latencies (p50, p95 ms), this process's CPU time and recall@10 against exact search (numpy) of every path of
    :data:`PATHS`, in alternation: at step ``n`` each path runs its own ``n``-th query (the paths draw different
    queries of the same kind, so none reads pages another's identical query just brought in), in an order that
    goes through every permutation of the paths (each runs first, and right before each other, equally often);
    the first :data:`WARM_UP` steps are not timed. Routed queries go to the corpora in turn, the unified path's to
    the unified corpus. Measured one path after the other instead, with the index path running each query right
    after the default path, the default path paid for the pages the index path then found in the buffers: at 1M
    units it read 11.0 ms against 0.9 ms, though both send the same statement."""
    steps = WARM_UP + n_queries
    queries: dict[str, list[tuple[str, np.ndarray]]] = {path: [] for path in PATHS}
    for path, (routed, _) in PATHS.items():
        for n in range(steps):
            name = CORPORA[n % len(CORPORA)]
            q = bench.near(rng, vectors[name][rng.integers(len(vectors[name]))])
            queries[path].append((name if routed else "unified", q))
    times: dict[str, list[float]] = {path: [] for path in PATHS}
    recalls: dict[str, list[float]] = {path: [] for path in PATHS}
    cpu_ms = dict.fromkeys(PATHS, 0.0)  # this process's CPU time (the library's own work), summed
    server_ms = dict.fromkeys(PATHS, 0.0)  # the server's CPU time, summed
    server = bench.server_cpu(store.read_engine)
    per_corpus: dict[str, dict[str, list[float]]] = {name: {"ms": [], "recall": []} for name in CORPORA}
    orders = list(itertools.permutations(PATHS))  # each path first, and before each other, equally often
    for n in range(steps):
        for path in orders[n % len(orders)]:
            corpus, q = queries[path][n]
            cpu, served = time.process_time(), server()
            t, hits = bench.timed(store.search, corpus, q.tolist(), k=K, **PATHS[path][1])
            if n < WARM_UP:
                continue
            cpu_ms[path] += (time.process_time() - cpu) * 1000
            server_ms[path] += server() - served
            truth = (
                exact_top_all(vectors, ids, q) if corpus == "unified" else exact_top(vectors[corpus], ids[corpus], q)
            )
            times[path].append(t * 1000)
            recalls[path].append(bench.recall([h.id for h in hits], truth))
            if path == "routed":
                per_corpus[corpus]["ms"].append(t * 1000)
                per_corpus[corpus]["recall"].append(recalls[path][-1])
    out: dict[str, object] = {}
    for path in PATHS:
        out[f"{path}_ms"] = bench.percentile(times[path], 50)
        out[f"{path}_p95_ms"] = bench.percentile(times[path], 95)
        out[f"recall_{path}"] = float(np.mean(recalls[path]))
        out[f"{path}_cpu_ms"] = cpu_ms[path] / max(len(times[path]), 1)
        out[f"{path}_server_cpu_ms"] = server_ms[path] / max(len(times[path]), 1)
    out["per_corpus"] = {
        name: {
            "routed_ms": round(bench.percentile(v["ms"], 50), 2),
            "recall_at_10": round(float(np.mean(v["recall"])), 4),
        }
        for name, v in per_corpus.items()
        if v["ms"]
    }
    return out


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


def explain(store, vectors, rng, *, searches: int = 20) -> dict:  # type: ignore[no-untyped-def,type-arg]
    """Where one search's time goes on each path (``--explain``): the statements it sends (counted over
    ``searches`` warm searches of corpus ``s0``, or ``unified``), the wall time of a search against the server's
    planning and execution time of its statements (``EXPLAIN (ANALYZE, BUFFERS)`` of the last search's statements,
    run again with their parameters: what remains is the library's own work and the round trips), and the plans'
    buffer reads (``shared hit``: pages found in PostgreSQL's buffers, ``read``: brought in from the OS)."""
    import re

    from sqlalchemy import event

    out = {}
    for path, (routed, kwargs) in PATHS.items():
        corpus = "s0" if routed else "unified"
        source = vectors["s0"]
        sent: list[tuple[str, object]] = []

        def listen(conn, cursor, statement, parameters, context, executemany, sent=sent):  # type: ignore[no-untyped-def]
            sent.append((statement, parameters))

        walls = []
        event.listen(store.read_engine, "before_cursor_execute", listen)
        try:
            for _ in range(searches):
                q = bench.near(rng, source[rng.integers(len(source))]).tolist()
                sent.clear()
                t, _ = bench.timed(store.search, corpus, q, k=K, **kwargs)
                walls.append(t * 1000)
        finally:
            event.remove(store.read_engine, "before_cursor_execute", listen)
        statements = list(sent)
        plans, server_ms = [], 0.0
        raw = store.read_engine.raw_connection()
        try:
            raw.autocommit = True  # type: ignore[attr-defined]
            cur = raw.cursor()
            for statement, parameters in statements:
                cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement, parameters)
                plan = "\n".join(str(r[0]) for r in cur.fetchall())
                server_ms += sum(float(x) for x in re.findall(r"(?:Planning|Execution) Time: ([0-9.]+) ms", plan))
                plans.append(plan)
        finally:
            raw.close()
        out[path] = {
            "corpus": corpus,
            "statements_per_search": len(statements),
            "wall_p50_ms": round(bench.percentile(walls, 50), 2),
            "server_ms_last": round(server_ms, 2),
            "statements": [st for st, _ in statements],
            "plans": plans,
        }
    return out


#: How each path is labelled in the figure.
LABELS = {
    "routed": "routed (library default)",
    "routed_index": "routed, HNSW index (exact_scan=False)",
    "unified": "unified (one shared table)",
}


def plot(sizes: list[int], rows: list[dict], path, kind: str) -> None:  # type: ignore[no-untyped-def,type-arg]
    """Left: p50 latency of each path against the total size. Right: recall@10 against p50 latency, one point per
    path and size (labelled with the size)."""
    fig, (ax, ax2) = bench.figure(2, size=(11, 4.4))
    for key, label in LABELS.items():
        ax.plot(sizes, [r[f"{key}_ms"] for r in rows], marker="o", label=label)
        ax2.plot([r[f"{key}_ms"] for r in rows], [r[f"recall_{key}"] for r in rows], marker="o", label=label)
        for size, r in zip(sizes, rows, strict=True):
            ax2.annotate(
                f"{size // 1000}k",
                (r[f"{key}_ms"], r[f"recall_{key}"]),
                fontsize=7,
                xytext=(3, 3),
                textcoords="offset points",
            )
    ax.set_xscale("log")
    ax.set_xlabel("units in total")
    ax.set_ylabel("p50 search latency, ms (k = 10)")
    ax.legend(fontsize=8)
    ax2.axhline(0.95, color="grey", linestyle=":", label="goal 0.95")
    ax2.set_xscale("log")
    ax2.set_xlabel("p50 search latency, ms (k = 10)")
    ax2.set_ylabel("recall@10 against exact search")
    ax2.legend(fontsize=8)
    bench.save_png(
        fig, path, title=f"Routed vs unified search as corpora grow, paths alternated (synthetic 384-d units, {kind})"
    )


def make_ids(rng: np.random.Generator, n: int) -> list[str]:
    """``n`` unit ids drawn from ``rng`` (the same for the same seed: a kept schema's ids are drawn again)."""
    raw = rng.bytes(16 * n)
    return [str(uuid.UUID(bytes=raw[16 * i : 16 * i + 16], version=4)) for i in range(n)]


def kept_schema(kind: str, size: int) -> str:
    """The schema ``--keep`` loads ``size`` units of ``kind`` into once and reuses."""
    return f"bench_scaling_keep_{kind.replace('-', '_')}_{size}"


def holds(store, vectors: dict[str, np.ndarray]) -> bool:  # type: ignore[no-untyped-def]
    """Whether ``store``'s schema holds every corpus with its number of units (a finished load)."""
    try:
        store.init(embedder="bench", dimension=DIM)  # a schema of an older release is upgraded, its rows kept
        counts = store.counts()
    except Exception:  # noqa: BLE001 - no schema yet, or a load cut short: loaded again
        return False
    want = {name: len(v) for name, v in vectors.items()} | {"unified": sum(len(v) for v in vectors.values())}
    return all(counts.get(name) == n for name, n in want.items())


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
    ap.add_argument(
        "--keep",
        action="store_true",
        help="load each size into a schema that is kept (bench_scaling_keep_<vectors>_<size>) and reuse it next time",
    )
    ap.add_argument(
        "--explain",
        action="store_true",
        help="also print, per path, the statements of a search, their plans (EXPLAIN ANALYZE) and the server's share",
    )
    args = ap.parse_args()
    if args.beam_vs_exact:
        bench.log(bench.machine_line())
        # full-precision indexes: the rounds rebuild them as vector_cosine_ops (rebuild_index)
        with bench.scratch_store(args.database_url, "scaling", vector_index="vector") as store:
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
    rows = []
    for size in sizes:
        rng = np.random.default_rng([0, size])
        vectors = make_vectors(rng, size // len(CORPORA), args.vectors)
        ids = {name: make_ids(rng, len(v)) for name, v in vectors.items()}
        kept = bench.kept_store(args.database_url, kept_schema(args.vectors, size)) if args.keep else None
        with kept or bench.scratch_store(args.database_url, "scaling") as store:
            reused = bool(kept) and holds(store, vectors)
            if not reused:
                if kept:  # a load cut short: from the start
                    _drop(store)
                load_s, loads = bench.timed(load_corpora, store, vectors, ids)
            else:
                load_s, loads = 0.0, {}
            for side, t in loads.items():
                bench.log(f"{size} units, {side}: written in {t['write_s']:.0f} s, indexed in {t['index_s']:.0f} s")
            check_s, checks = bench.timed(run_checks, store)  # again on a kept schema: this library's check
            bench.log(
                f"{size} units ({'kept schema reused' if reused else f'loaded in {load_s:.0f} s'}); index checks "
                f"({check_s:.0f} s; recall of the index against an exact scan, "
                "per beam tried -> the tuned ef_search): "
                + "; ".join(
                    f"{name} " + " ".join(f"{r:.2f}@{ef}" for ef, r in c.recalls) + f" -> {c.ef_search}"
                    for name, c in checks.items()
                )
            )
            qrng = np.random.default_rng([1, size])
            load_before = bench.load()
            cold = cold_queries(store, vectors, ids, qrng)
            row = measure(store, vectors, ids, qrng, n_queries)
            if args.explain:
                row["explain"] = explain(store, vectors, qrng)
                same = row["explain"]["routed"]["statements"] == row["explain"]["routed_index"]["statements"]
                bench.log(f"the default path and the index path send the same statements: {'yes' if same else 'no'}")
                for path, e in row["explain"].items():
                    bench.log(
                        f"{path} ({e['corpus']}): {e['statements_per_search']} statement(s) a search, p50 "
                        f"{e['wall_p50_ms']:.2f} ms of which the server planned and ran {e['server_ms_last']:.2f} ms"
                    )
                    for statement, plan in zip(e["statements"], e["plans"], strict=True):
                        bench.log("    " + statement.replace("\n", " ")[:400])
                        bench.log("    " + plan.replace("\n", "\n    "))
            row["load"] = (load_before, bench.load())
            row["cold"] = cold
            row["tuned_ef"] = {name: c.ef_search for name, c in checks.items()}
            row["check_recall"] = {name: round(c.recall, 4) for name, c in checks.items()}
            row["check_s"] = check_s
            row["load_s"] = load_s
            row["loads"] = loads
            specs = store.corpora()
            row["index_kinds"] = {name: specs[name].vector_index for name in [*CORPORA, "unified"]}
            row["disk_bytes"] = bench.schema_disk(store)
            row["server_memory_bytes"] = bench.server_memory(store.engine)
            bench.log(
                f"{size} units: indexes {row['index_kinds']}; the schema takes {row['disk_bytes'] / 2**30:.2f} GiB on "
                f"disk; the server's resident memory (PSS) {row['server_memory_bytes'] / 2**30:.2f} GiB"
            )
            bench.log(
                "per corpus (p50 ms on the default path, its recall@10, tuned ef_search): "
                + "; ".join(
                    f"{name} {v['routed_ms']:.1f} ms {v['recall_at_10']:.3f} ef {row['tuned_ef'][name]}"
                    for name, v in row["per_corpus"].items()
                )
            )
        rows.append(row)
        bench.log(
            f"{size:>9} units, {n_queries} queries per path, alternated; load average {row['load'][0]}-{row['load'][1]}"
        )
        bench.log(
            f"    {'path':<14} {'p50 ms':>7} {'p95 ms':>7} {'client CPU ms':>13} {'server CPU ms':>13} "
            f"{'recall@10':>9} "
            f"{'cold 1st ms':>11} {'cold recall':>11}"
        )
        for path in PATHS:
            bench.log(
                f"    {path:<14} {row[f'{path}_ms']:>7.2f} {row[f'{path}_p95_ms']:>7.2f} "
                f"{row[f'{path}_cpu_ms']:>13.2f} {row[f'{path}_server_cpu_ms']:>13.2f} "
                f"{row[f'recall_{path}']:>9.3f} "
                f"{cold[path][0]:>11.1f} {cold[path][1]:>11.2f}"
            )
        bench.log(
            f"    routed / index {row['routed_ms'] / row['routed_index_ms']:.2f}x, "
            f"routed / unified {row['routed_ms'] / row['unified_ms']:.2f}x"
        )
    plot(sizes, rows, args.out / "scaling.png", args.vectors)
    large = [(s, r) for s, r in zip(sizes, rows, strict=True) if s >= 100_000]
    goals = {
        "routed <= unified from 100k": all(r["routed_ms"] <= r["unified_ms"] for _, r in large),
        "routed <= 2x index path from 100k": all(r["routed_ms"] <= 2 * r["routed_index_ms"] for _, r in large),
        "recall@10 >= 0.95 at defaults": all(min(r["recall_routed"], r["recall_unified"]) >= 0.95 for r in rows),
    }
    huge = [r for s, r in zip(sizes, rows, strict=True) if s >= 5_000_000]
    if huge:  # the goals of the largest sizes; the load is the routed corpora's (the unified copy is the baseline)
        goals["routed p50 <= 40 ms from 5M"] = all(r["routed_ms"] <= 40 for r in huge)
        goals["routed load + index build <= 90 min from 5M"] = all(
            r["loads"] and sum(r["loads"]["routed"].values()) <= 90 * 60 for r in huge
        )
        goals["server resident memory <= 8 GB"] = all(r["server_memory_bytes"] <= 8 * 2**30 for r in rows)
    bench.log(
        "goals (sizes >= 100k measured: "
        + f"{[s for s, _ in large] or 'none'}): "
        + "; ".join(f"{goal}: {'met' if ok else 'NOT met'}" for goal, ok in goals.items())
    )
    bench.finish(
        "scaling",
        {
            "sizes": sizes,
            **{
                f"{path}_{stat}": [round(r[f"{path}_{stat}"], 2) for r in rows]
                for path in PATHS
                for stat in ("ms", "p95_ms", "cpu_ms", "server_cpu_ms")
            },
            **{f"recall_{path}": [round(r[f"recall_{path}"], 4) for r in rows] for path in PATHS},
            "recall_at_10": [round(r["recall_routed"], 4) for r in rows],  # the names of earlier releases
            "recall_at_10_unified": [round(r["recall_unified"], 4) for r in rows],
            "cold_ms": [{p: round(c[0], 1) for p, c in r["cold"].items()} for r in rows],
            "cold_recall": [{p: round(c[1], 2) for p, c in r["cold"].items()} for r in rows],
            "load_during": [r["load"] for r in rows],
            "tuned_ef": [r["tuned_ef"] for r in rows],
            "check_recall": [r["check_recall"] for r in rows],
            "check_s": [round(r["check_s"], 1) for r in rows],
            "load_s": [round(r["load_s"], 1) for r in rows],
            "loads": [{side: {k: round(v, 1) for k, v in t.items()} for side, t in r["loads"].items()} for r in rows],
            "index_kinds": [r["index_kinds"] for r in rows],
            "disk_bytes": [r["disk_bytes"] for r in rows],
            "server_memory_bytes": [r["server_memory_bytes"] for r in rows],
            "per_corpus": [r["per_corpus"] for r in rows],
            "queries": n_queries,
            "vectors": args.vectors,
            "goals": goals,
        },
        args.out,
    )


def _drop(store) -> None:  # type: ignore[no-untyped-def]
    """Drop ``store``'s schema with everything in it."""
    import sqlalchemy as sa

    with store.engine.begin() as conn:
        conn.execute(sa.schema.DropSchema(store.schema, cascade=True, if_exists=True))


if __name__ == "__main__":
    main()
