"""Routed against unified search as the corpora grow: latency (p50, p95, a cold first query) and recall@10 against
exact search, every path measured in alternation.

    python benchmarks/scaling.py [--quick] [--sizes 10000,100000,1000000] [--queries 100] [--keep] [--explain]
                                 [--apart] [--prewarm]
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

``--keep``: each size is loaded into a schema that stays (``bench_scaling_keep_<vectors>_<size>``, with
``--apart`` one per layout, ``..._routed`` and ``..._unified``; the vectors and ids are drawn again from the size's
seed) and the next run reuses it: 1M units take 15-40 minutes to load and index on a busy 2-core machine and ~8 GB
of disk. Give the embedded server a home of its own (``UNIVERSALRAG_HOME``) to keep them apart from other work.
``--apart``: the routed corpora are loaded, checked and measured alone, their schema dropped (unless kept), then
the unified corpus the same way, and the benchmark's own copy of the vectors waits memory-mapped on disk: the
server's memory holds one layout, as a deployment's would (together, at 5M units, the two layouts and that copy
took 33 GB on a machine of 24, and most searches read their candidate rows from disk). The routed and index paths
still alternate. ``--prewarm``: after the cold first queries, the schema is read into the operating system's cache
(``pg_prewarm``), the state of a server that has answered searches for a while. ``--explain``: per path, the
statements one search sends, their plans (``EXPLAIN (ANALYZE, BUFFERS)``) and the server's share of the search's
time.
``--beam-vs-exact ROWS``: one corpus of ROWS units instead, the exact scan against the index at beams 100 to
1000 (latency and recall@10) and its index check per beam — whether a tuned beam beats an exact scan on a table
the exact scan could serve — for each graph of ``--ef-construction`` (build time too).
``--quick``: 6k and 30k units, 30 queries.
"""

from __future__ import annotations

import itertools
import json
import tempfile
import time
import uuid
from pathlib import Path

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


#: The two layouts of the same units: the six routed corpora, and the unified corpus holding all of them.
LAYOUTS = {"routed": CORPORA, "unified": ["unified"]}


def load_layout(store, layout: str, vectors: dict[str, np.ndarray], ids: dict[str, list[str]]) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """The corpora of ``layout`` (:data:`LAYOUTS`; the unified one holds every corpus's units, same ids, written
    from the same arrays), each with the index the library gives a corpus of its size; the seconds of the load's
    writes and index builds: ``{"write_s", "index_s"}``."""
    if layout == "routed":
        return bench.load_synthetic(store, {name: (ids[name], vectors[name]) for name in CORPORA}, choose_index=True)
    return bench.load_synthetic(store, {"unified": [(ids[name], vectors[name]) for name in CORPORA]}, choose_index=True)


def spill(vectors: dict[str, np.ndarray], folder) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    """``vectors`` written to ``.npy`` files in ``folder`` and read back memory-mapped: the benchmark's own copy
    (7.7 GB at 5M units) waits on disk, where the operating system can drop it, instead of taking the memory the
    server's pages need."""
    out = {}
    for name, v in vectors.items():
        np.save(folder / f"{name}.npy", v)
        out[name] = np.load(folder / f"{name}.npy", mmap_mode="r")
    return out


def exact_top(matrix: np.ndarray, ids: list[str], q: np.ndarray) -> list[str]:
    """The ids of the K vectors of ``matrix`` nearest to ``q`` by cosine (vectors are unit length)."""
    sims = matrix @ q
    top = np.argpartition(-sims, K)[:K]
    return [ids[i] for i in top[np.argsort(-sims[top])]]


def truths(
    vectors: dict[str, np.ndarray], ids: dict[str, list[str]], corpus: str, queries: list[np.ndarray]
) -> list[list[str]]:
    """The exact top K of ``corpus`` (one of :data:`CORPORA`, or ``unified``: merged over them) for each query,
    every corpus's array read once for all of them."""
    if not queries:
        return []
    q = np.stack(queries).astype(np.float32)
    scored: list[list[tuple[float, str]]] = [[] for _ in queries]
    for name in CORPORA if corpus == "unified" else [corpus]:
        sims = np.asarray(vectors[name] @ q.T)  # rows: units, columns: queries
        top = np.argpartition(-sims, K, axis=0)[:K]
        for j in range(len(queries)):
            scored[j].extend((float(sims[i, j]), ids[name][i]) for i in top[:, j])
    return [[i for _, i in sorted(s, reverse=True)[:K]] for s in scored]


def run_checks(store, corpora: list[str]) -> dict:  # type: ignore[no-untyped-def,type-arg]
    """The index check of each of ``corpora`` run to the end (what the default search rule reads, and the beam it
    tunes): the :class:`~universalrag.store.index_check.IndexCheck` per corpus."""
    from universalrag.store.index_check import check_index

    return {name: check_index(store, name) for name in corpora}


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


def cold_queries(store, vectors, ids, rng, paths: list[str]) -> dict:  # type: ignore[no-untyped-def,type-arg]
    """The first query of each of ``paths`` as a user meets it: a new ``Store`` (its own connections, its registry
    read), the corpus of :data:`COLD_CORPUS` searched for the first time in this process. ``{path: (ms,
    recall@10)}``."""
    from universalrag.store import Store

    drawn = {}
    for path in paths:
        corpus = COLD_CORPUS[path]
        source = vectors["s2"] if corpus == "unified" else vectors[corpus]
        q = bench.near(rng, source[rng.integers(len(source))])
        drawn[path] = (corpus, q, truths(vectors, ids, corpus, [q])[0])  # before any search: no page of it read
    out = {}
    for path, (corpus, q, truth) in drawn.items():
        fresh = Store(settings=store.settings)
        try:
            t, hits = bench.timed(fresh.search, corpus, q.tolist(), k=K, **PATHS[path][1])
        finally:
            fresh.close()
        out[path] = (t * 1000, bench.recall([h.id for h in hits], truth))
    return out


def draw_queries(vectors, ids, rng, n_queries: int, paths: list[str]) -> dict:  # type: ignore[no-untyped-def,type-arg]
    """The queries :func:`measure` runs, :data:`WARM_UP` more than ``n_queries`` per path, each with its exact top
    K (numpy, every array read once here: never between the timed searches): ``{path: [(corpus, vector, top)]}``.
    Routed queries go to the corpora in turn, the unified path's to the unified corpus; every path draws its own."""
    steps = WARM_UP + n_queries
    queries: dict[str, list[tuple[str, np.ndarray, list[str]]]] = {}
    for path in paths:
        drawn = []
        for n in range(steps):
            name = CORPORA[n % len(CORPORA)]
            q = bench.near(rng, vectors[name][rng.integers(len(vectors[name]))])
            drawn.append((name if PATHS[path][0] else "unified", q))
        tops: dict[int, list[str]] = {}
        for corpus in sorted({c for c, _ in drawn}):
            at = [n for n, (c, _) in enumerate(drawn) if c == corpus and n >= WARM_UP]
            tops.update(zip(at, truths(vectors, ids, corpus, [drawn[n][1] for n in at]), strict=True))
        queries[path] = [(c, q, tops.get(n, [])) for n, (c, q) in enumerate(drawn)]
    return queries


def measure(store, queries: dict) -> dict:  # type: ignore[no-untyped-def,type-arg]
    """Latencies (p50, p95 ms), this process's CPU time and recall@10 against exact search of each path of
    ``queries`` (:func:`draw_queries`), in alternation: at step ``n`` each path runs its own ``n``-th query (the
    paths draw different queries of the same kind, so none reads pages another's identical query just brought in),
    in an order that goes through every permutation of the paths (each runs first, and right before each other,
    equally often); the first :data:`WARM_UP` steps are not timed. Measured one path after the other instead, with
    the index path running each query right after the default path, the default path paid for the pages the index
    path then found in the buffers: at 1M units it read 11.0 ms against 0.9 ms, though both send the same
    statement."""
    paths = list(queries)
    steps = len(next(iter(queries.values())))
    times: dict[str, list[float]] = {path: [] for path in paths}
    recalls: dict[str, list[float]] = {path: [] for path in paths}
    cpu_ms = dict.fromkeys(paths, 0.0)  # this process's CPU time (the library's own work), summed
    server_ms = dict.fromkeys(paths, 0.0)  # the server's CPU time, summed
    server = bench.server_cpu(store.read_engine)
    per_corpus: dict[str, dict[str, list[float]]] = {name: {"ms": [], "recall": []} for name in CORPORA}
    orders = list(itertools.permutations(paths))  # each path first, and before each other, equally often
    for n in range(steps):
        for path in orders[n % len(orders)]:
            corpus, q, truth = queries[path][n]
            cpu, served = time.process_time(), server()
            t, hits = bench.timed(store.search, corpus, q.tolist(), k=K, **PATHS[path][1])
            if n < WARM_UP:
                continue
            cpu_ms[path] += (time.process_time() - cpu) * 1000
            server_ms[path] += server() - served
            times[path].append(t * 1000)
            recalls[path].append(bench.recall([h.id for h in hits], truth))
            if path == "routed":
                per_corpus[corpus]["ms"].append(t * 1000)
                per_corpus[corpus]["recall"].append(recalls[path][-1])
    out: dict[str, object] = {}
    for path in paths:
        out[f"{path}_ms"] = bench.percentile(times[path], 50)
        out[f"{path}_p95_ms"] = bench.percentile(times[path], 95)
        out[f"recall_{path}"] = float(np.mean(recalls[path]))
        out[f"{path}_cpu_ms"] = cpu_ms[path] / max(len(times[path]), 1)
        out[f"{path}_server_cpu_ms"] = server_ms[path] / max(len(times[path]), 1)
    if "routed" in paths:
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


def explain(store, vectors, rng, paths: list[str], *, searches: int = 20) -> dict:  # type: ignore[no-untyped-def,type-arg]
    """Where one search's time goes on each of ``paths`` (``--explain``): the statements it sends (counted over
    ``searches`` warm searches of corpus ``s0``, or ``unified``), the wall time of a search against the server's
    planning and execution time of its statements (``EXPLAIN (ANALYZE, BUFFERS)`` of the last search's statements,
    run again with their parameters: what remains is the library's own work and the round trips), and the plans'
    buffer reads (``shared hit``: pages found in PostgreSQL's buffers, ``read``: brought in from the OS)."""
    import re

    from sqlalchemy import event

    out = {}
    for path in paths:
        routed, kwargs = PATHS[path]
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
    import matplotlib.ticker

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
    ax2.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    ax2.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax2.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
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


def holds(store, vectors: dict[str, np.ndarray], corpora: list[str]) -> bool:  # type: ignore[no-untyped-def]
    """Whether ``store``'s schema holds each of ``corpora`` with its number of units (a finished load)."""
    try:
        store.init(embedder="bench", dimension=DIM)  # a schema of an older release is upgraded, its rows kept
        counts = store.counts()
    except Exception:  # noqa: BLE001 - no schema yet, or a load cut short: loaded again
        return False
    want = {name: len(v) for name, v in vectors.items()} | {"unified": sum(len(v) for v in vectors.values())}
    return all(counts.get(name) == want[name] for name in corpora)


def run_group(args, size: int, layouts: list[str], vectors, ids, qrng, n_queries: int) -> dict:  # type: ignore[no-untyped-def,type-arg]
    """Load the corpora of ``layouts`` (:data:`LAYOUTS`) into one schema (or reuse a kept one), run their index
    checks, then measure the paths that search them (:func:`cold_queries`, :func:`measure`; ``--prewarm``: the
    schema read into the cache between the two) and what the schema takes on disk and the server in memory."""
    corpora = [name for layout in layouts for name in LAYOUTS[layout]]
    paths = [path for path, (routed, _) in PATHS.items() if ("routed" if routed else "unified") in layouts]
    name = "+".join(layouts)
    schema = kept_schema(args.vectors, size) + ("" if len(layouts) == len(LAYOUTS) else f"_{layouts[0]}")
    kept = bench.kept_store(args.database_url, schema) if args.keep else None
    with kept or bench.scratch_store(args.database_url, "scaling") as store:
        reused = bool(kept) and holds(store, vectors, corpora)
        loads = {}
        if not reused:
            if kept:  # a load cut short: from the start
                _drop(store)
            for layout in layouts:
                loads[layout] = load_layout(store, layout, vectors, ids)
                t = loads[layout]
                bench.log(f"{size} units, {layout}: written in {t['write_s']:.0f} s, indexed in {t['index_s']:.0f} s")
        check_s, checks = bench.timed(run_checks, store, corpora)  # again on a kept schema: this library's check
        bench.log(
            f"{size} units, {name} ({'kept schema reused' if reused else 'loaded'}); index checks "
            f"({check_s:.0f} s; recall of the index against an exact scan, per beam tried -> the tuned ef_search): "
            + "; ".join(
                f"{corpus} " + " ".join(f"{r:.2f}@{ef}" for ef, r in c.recalls) + f" -> {c.ef_search}"
                for corpus, c in checks.items()
            )
        )
        load_before = bench.load()
        cold = cold_queries(store, vectors, ids, qrng, paths)
        queries = draw_queries(vectors, ids, qrng, n_queries, paths)  # the arrays read before the cache is warmed
        prewarm_s = 0.0
        if args.prewarm:
            prewarm_s, pages = bench.timed(bench.prewarm, store)
            bench.log(f"{size} units, {name}: {pages * 8 / 2**20:.2f} GiB read into the cache in {prewarm_s:.0f} s")
        row = measure(store, queries)
        if args.explain:
            row["explain"] = explain(store, vectors, qrng, paths)
            log_explain(row["explain"])
        row["load"] = (load_before, bench.load())
        row["cold"] = cold
        row["prewarm_s"] = prewarm_s
        row["tuned_ef"] = {corpus: c.ef_search for corpus, c in checks.items()}
        row["check_recall"] = {corpus: round(c.recall, 4) for corpus, c in checks.items()}
        row["check_s"] = check_s
        row["load_s"] = sum(sum(t.values()) for t in loads.values())
        row["loads"] = loads
        specs = store.corpora()
        row["index_kinds"] = {corpus: specs[corpus].vector_index for corpus in corpora}
        row["disk_by_layout"] = {name: bench.schema_disk(store)}
        row["server_memory_bytes"] = bench.server_memory(store.engine)
        bench.log(
            f"{size} units, {name}: indexes {row['index_kinds']}; the schema takes "
            f"{row['disk_by_layout'][name] / 2**30:.2f} GiB on disk; the server's resident memory (PSS) "
            f"{row['server_memory_bytes'] / 2**30:.2f} GiB"
        )
    return row


def merge_groups(parts: list[dict]) -> dict:  # type: ignore[type-arg]
    """One size's row from the rows of its groups of layouts (one group, or one per layout with ``--apart``)."""
    row: dict = {}  # type: ignore[type-arg]
    for part in parts:
        for key, value in part.items():
            if isinstance(value, dict) and key in row:
                row[key] = {**row[key], **value}
            else:
                row.setdefault(key, value)
    row["load"] = (min(p["load"][0] for p in parts), max(p["load"][1] for p in parts))
    row["check_s"] = sum(p["check_s"] for p in parts)
    row["load_s"] = sum(p["load_s"] for p in parts)
    row["prewarm_s"] = sum(p["prewarm_s"] for p in parts)
    row["disk_bytes"] = sum(row["disk_by_layout"].values())
    row["server_memory_bytes"] = max(p["server_memory_bytes"] for p in parts)  # the server held one group at a time
    return row


def log_explain(explained: dict) -> None:  # type: ignore[type-arg]
    """Print what :func:`explain` found."""
    same = explained.get("routed", {}).get("statements") == explained.get("routed_index", {}).get("statements")
    if "routed" in explained:
        bench.log(f"the default path and the index path send the same statements: {'yes' if same else 'no'}")
    for path, e in explained.items():
        bench.log(
            f"{path} ({e['corpus']}): {e['statements_per_search']} statement(s) a search, p50 "
            f"{e['wall_p50_ms']:.2f} ms of which the server planned and ran {e['server_ms_last']:.2f} ms"
        )
        for statement, plan in zip(e["statements"], e["plans"], strict=True):
            bench.log("    " + statement.replace("\n", " ")[:400])
            bench.log("    " + plan.replace("\n", "\n    "))


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
        "--apart",
        action="store_true",
        help="load and measure each layout alone (the routed corpora, dropped, then the unified one), the "
        "benchmark's vectors memory-mapped from disk: the server holds one layout as a deployment would",
    )
    ap.add_argument(
        "--prewarm",
        action="store_true",
        help="after the cold first queries, read the schema into the cache (pg_prewarm) before the timed queries",
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
        qrng = np.random.default_rng([1, size])
        with tempfile.TemporaryDirectory(prefix="scaling-vectors-") as spilled:
            if args.apart:
                vectors = spill(vectors, Path(spilled))
            groups = [["routed"], ["unified"]] if args.apart else [["routed", "unified"]]
            parts = [run_group(args, size, layouts, vectors, ids, qrng, n_queries) for layouts in groups]
        row = merge_groups(parts)
        rows.append(row)
        bench.log(
            "per corpus (p50 ms on the default path, its recall@10, tuned ef_search): "
            + "; ".join(
                f"{name} {v['routed_ms']:.1f} ms {v['recall_at_10']:.3f} ef {row['tuned_ef'][name]}"
                for name, v in row["per_corpus"].items()
            )
        )
        bench.log(
            f"{size:>9} units, {n_queries} queries per path, alternated"
            + (" (each layout loaded and measured alone)" if args.apart else "")
            + (" after reading the schema into the cache" if args.prewarm else "")
            + f"; load average {row['load'][0]}-{row['load'][1]}"
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
                f"{row['cold'][path][0]:>11.1f} {row['cold'][path][1]:>11.2f}"
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
            "disk_by_layout": [r["disk_by_layout"] for r in rows],
            "prewarm_s": [round(r["prewarm_s"], 1) for r in rows],
            "apart": args.apart,
            "prewarm": args.prewarm,
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
