"""How a corpus's vectors are stored and indexed: full-precision ``vector`` with its own HNSW index, ``vector`` with
an index on its ``halfvec`` cast (what the library builds by default from 384 dimensions), a ``halfvec`` column, and
the same index over a table split into :data:`PARTITIONS` hash partitions (one index each, all searched), and a
binary-quantised index (``binary_quantize(embedding)::bit(n)``, Hamming distance) whose candidates are ranked again
at full precision — on the same vectors, in the same run. ``--vectors real``: instead of synthetic text-like vectors,
the real slice (:mod:`real_vectors`: every real text this project reaches, embedded once with the bundled encoder
and cached on disk) and real questions as the queries.

    python benchmarks/vector_storage.py [--units 100000] [--queries 200] [--windows 40,100,200,400] [--quick]
    python benchmarks/vector_storage.py --vectors real [--queries 500]

For each way: the table's and the index's size, the index build's seconds (``maintenance_work_mem`` and parallel
workers as :func:`universalrag.store.index_build.build_settings` sizes them for this machine), recall@10 against an
exact top 10 computed in NumPy, and the p50 / p95 of a search at the library's default beam (``hnsw.ef_search``
100); the binary index once per re-ranked window. The figures choose the library's defaults:
:data:`universalrag.store.vectors.HALF_INDEX_MIN_DIMENSION` and :data:`universalrag.store.vectors.BINARY_MIN_ROWS`.
Writes ``<out>/vector_storage.json`` and a PNG.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import machine as bench

K = 10
EF_SEARCH = 100
#: The hash partitions of the ``partitioned`` way, each with its own index (an unfiltered search reads them all).
PARTITIONS = 4


def _ways(dim: int) -> dict[str, dict[str, str]]:
    """Per way: the column's type, the index's expression and operator class, and the ordering of a search."""
    half, bits = f"halfvec({dim})", f"bit({dim})"
    return {
        "vector": {
            "column": f"vector({dim})",
            "index": "embedding vector_cosine_ops",
            "order": "embedding <=> %(q)s::vector",
        },
        "halfvec index": {
            "column": f"vector({dim})",
            "index": f"(embedding::{half}) halfvec_cosine_ops",
            "order": f"embedding::{half} <=> %(q)s::vector::{half}",
        },
        "halfvec column": {
            "column": half,
            "index": "embedding halfvec_cosine_ops",
            "order": f"embedding <=> %(q)s::vector::{half}",
        },
        "partitioned": {  # PARTITIONS hash partitions of the rows, each with its own halfvec index
            "column": f"vector({dim})",
            "index": f"(embedding::{half}) halfvec_cosine_ops",
            "order": f"embedding::{half} <=> %(q)s::vector::{half}",
        },
        "binary": {
            "column": f"vector({dim})",
            "index": f"(binary_quantize(embedding)::{bits}) bit_hamming_ops",
            "order": f"binary_quantize(embedding)::{bits} <~> binary_quantize(%(q)s::vector)",
        },
    }


def _search_sql(table: str, way: dict[str, str], window: int | None) -> str:
    """A top-``K`` search; with ``window``: the ``window`` nearest by the index's ordering, ranked again exactly."""
    if window is None:  # full-precision distance reported, order of the index (the halfvec index's re-rank is a
        # re-sort of the same K rows)
        return f"SELECT id FROM (SELECT id, embedding FROM {table} ORDER BY {way['order']} LIMIT {K}) c"
    return (
        f"SELECT id FROM (SELECT id, embedding FROM {table} ORDER BY {way['order']} LIMIT {window}) c "
        f"ORDER BY embedding::vector <=> %(q)s::vector LIMIT {K}"
    )


def main() -> None:
    ap = bench.parser(__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, help="vectors in the corpus (default 100000; --quick 3000)")
    ap.add_argument("--queries", type=int, help="queries (default 200; --quick 30)")
    ap.add_argument("--dim", type=int, default=384, help="dimensions (default %(default)s: the bundled MiniLM's)")
    ap.add_argument("--windows", default="40,100,200,400", help="re-ranked windows of the binary index")
    ap.add_argument("--ways", default="vector,halfvec index,halfvec column,partitioned,binary", help="ways to compare")
    ap.add_argument(
        "--vectors",
        choices=["text-like", "real"],
        default="text-like",
        help="synthetic text-like vectors, or the real slice: every real text embedded once (real_vectors.py)",
    )
    args = ap.parse_args()
    n_queries = args.queries or (30 if args.quick else 200)
    windows = [int(w) for w in args.windows.split(",")]
    import numpy as np
    from pgvector.psycopg import register_vector
    from psycopg import sql

    from universalrag.store.index_build import build_settings

    bench.log(bench.machine_line())
    rng = np.random.default_rng(20261206)
    if args.vectors == "real":
        from real_vectors import real_vectors

        real = real_vectors(args.out, args.database_url, quick=args.quick)
        vectors = real["units"][: args.units] if args.units else real["units"]
        n, args.dim = len(vectors), vectors.shape[1]
        picked = rng.choice(len(real["queries"]), size=min(n_queries + 3, len(real["queries"])), replace=False)
        queries = [real["queries"][i] for i in picked]
        n_queries = len(queries) - 3
        bench.log(f"the real slice: {n} vectors ({real['counts']}), {n_queries} real questions")
    else:
        n = args.units or (3000 if args.quick else 100_000)
        vectors = bench.text_like_vectors(rng, n, dim=args.dim)
        queries = [bench.near(rng, vectors[rng.integers(n)]) for _ in range(n_queries + 3)]
    truths = [np.argsort(-(vectors @ q))[:K].tolist() for q in queries]
    ways = {name: w for name, w in _ways(args.dim).items() if name in args.ways.split(",")}
    settings = build_settings()
    bench.log(f"{n} vectors of {args.dim} dimensions, {n_queries} queries; index builds with {settings}")
    results: dict[str, Any] = {}
    with bench.scratch_store(args.database_url, "vector_storage") as store:
        with store.engine.connect() as sa_conn:
            raw = sa_conn.connection.driver_connection
            raw.autocommit = True
            raw.execute("CREATE EXTENSION IF NOT EXISTS vector")
            raw.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(store.schema)))
            raw.execute(sql.SQL("SET search_path = {}, public").format(sql.Identifier(store.schema)))
            register_vector(raw)
            version = raw.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
            bench.log(f"pgvector {version}")
            built: dict[str, dict[str, Any]] = {}
            for name, way in ways.items():
                table = "t_" + name.replace(" ", "_")
                raw.execute(
                    f"CREATE TABLE {table} (id integer PRIMARY KEY, embedding {way['column']})"
                    + (" PARTITION BY HASH (id)" if name == "partitioned" else "")
                )
                for part in range(PARTITIONS if name == "partitioned" else 0):
                    raw.execute(
                        f"CREATE TABLE {table}_{part} PARTITION OF {table} "
                        f"FOR VALUES WITH (MODULUS {PARTITIONS}, REMAINDER {part})"
                    )
                raw.execute(f"ALTER TABLE {table} ALTER COLUMN embedding SET STORAGE MAIN")
                with raw.cursor() as cur, cur.copy(f"COPY {table} (id, embedding) FROM STDIN") as copy:
                    for i in range(n):
                        copy.write_row((i, "[" + ",".join(f"{x:.7g}" for x in vectors[i]) + "]"))
                raw.execute(f"VACUUM ANALYZE {table}")
                with raw.transaction():
                    for setting, value in settings.items():
                        raw.execute("SELECT set_config(%s, %s, true)", (setting, str(value)))
                    started = time.perf_counter()
                    raw.execute(
                        f"CREATE INDEX {table}_hnsw ON {table} USING hnsw ({way['index']}) WITH (ef_construction = 128)"
                    )
                    build_s = time.perf_counter() - started
                sizes = raw.execute(  # a partitioned table's and index's size: their partitions'
                    "SELECT coalesce((SELECT sum(pg_table_size(relid)) FROM pg_partition_tree(%(t)s)), "
                    "pg_table_size(%(t)s)), coalesce((SELECT sum(pg_relation_size(relid)) "
                    "FROM pg_partition_tree(%(i)s)), pg_relation_size(%(i)s))",
                    {"t": table, "i": f"{table}_hnsw"},
                ).fetchone()
                built[name] = {
                    "table_mb": round(float(sizes[0]) / 2**20, 1),
                    "index_mb": round(float(sizes[1]) / 2**20, 1),
                    "build_s": round(build_s, 2),
                    "build_load": bench.load(),
                }
                bench.log(f"{name:>24}: built {built[name]}")
            # the searches interleaved (each query in every way in turn): the machine's load falls on all alike
            runs = {
                (name if window is None else f"{name} + re-rank {window}"): (
                    name,
                    _search_sql("t_" + name.replace(" ", "_"), way, window),
                    max(EF_SEARCH, min(window or 0, 1000)),
                )
                for name, way in ways.items()
                for window in (windows if name == "binary" else [None])
            }
            times: dict[str, list[float]] = {label: [] for label in runs}
            recalls: dict[str, list[float]] = {label: [] for label in runs}
            for i, (q, truth) in enumerate(zip(queries, truths, strict=True)):
                for label, (_, stmt, ef) in runs.items():
                    raw.execute(f"SET hnsw.ef_search = {ef}")
                    started = time.perf_counter()
                    found = [r[0] for r in raw.execute(stmt, {"q": q.astype(np.float32)}).fetchall()]
                    if i >= 3:  # warm-up
                        times[label].append((time.perf_counter() - started) * 1000)
                        recalls[label].append(len(set(found) & set(truth)) / K)
            for label, (name, _, _) in runs.items():
                results[label] = {
                    **built[name],
                    "recall_at_10": round(statistics.fmean(recalls[label]), 4),
                    "p50_ms": round(bench.percentile(times[label], 50), 3),
                    "p95_ms": round(bench.percentile(times[label], 95), 3),
                }
                bench.log(f"{label:>24}: {results[label]}")
            results["search_load"] = bench.load()
    fig, ax = bench.figure()
    for label, r in results.items():
        if not isinstance(r, dict):
            continue
        ax.scatter(r["p50_ms"], r["recall_at_10"], s=20 + r["index_mb"])
        ax.annotate(f"{label} ({r['index_mb']} MB)", (r["p50_ms"], r["recall_at_10"]), fontsize=6)
    ax.set_xlabel("p50 search ms")
    ax.set_ylabel("recall@10")
    kind = "real embeddings" if args.vectors == "real" else "synthetic text-like vectors"
    name = "vector_storage" if args.vectors == "text-like" else "vector_storage_real"
    bench.save_png(fig, args.out / f"{name}.png", title=f"Vector storage, {n} units of {args.dim} dimensions ({kind})")
    bench.finish(
        name,
        {
            "units": n,
            "dim": args.dim,
            "queries": n_queries,
            "vectors": args.vectors,
            "pgvector": version,
            "ways": results,
        },
        args.out,
    )


if __name__ == "__main__":
    main()
