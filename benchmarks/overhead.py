"""What the library's search call costs on top of the SQL it runs.

    python benchmarks/overhead.py [--quick] [--units 50000] [--queries 300]

One corpus of N synthetic 384-d units, searched through its HNSW index. Per query vector, k = 10:

* ``library``: ``Store.search(corpus, vector, k=10, exact_scan=False)``, the public call, with the query vector as the
  encoders return it (a float32 numpy array, ``Embedder.embed_query``; the encoder's time is the same for any
  caller and is left out). ``exact_scan=False`` keeps it on the index: left to the scan rule, the corpus's index check
  (which measures the index's recall on these clustered vectors at 0.79–0.96 from run to run) sends some runs to
  an exact scan of every row, where the SQL is 25× dearer and the ratio says nothing about the call's overhead.
  It skips the rule (a cached table-size lookup and the stored check read: a few µs of the call);
* ``raw SQL``: the very statements that call sent to the server, with the very parameters (the query vector as
  a numpy array, which pgvector's psycopg adapter sends in binary), captured with SQLAlchemy's
  ``before_cursor_execute`` event in an untimed call for the same vector (while the listener is registered the
  library sends its statements through SQLAlchemy so that it sees them; the timed calls, without listeners, send
  the same text and parameters straight to psycopg), replayed on a plain psycopg connection with pgvector's
  types registered, in the transaction mode the library used (autocommit: no BEGIN/COMMIT; otherwise one
  transaction), every row fetched;
* ``one statement``: what a hand-written pgvector query does (pgvector-python's README: ``register_vector``, a
  numpy query vector) — ``SET LOCAL hnsw.ef_search`` and one SELECT of the same columns
  ``ORDER BY embedding <=> q LIMIT 10`` in a transaction;
* ``library, list``: the library call with the vector as a Python list (``vector.tolist()``), which it converts
  and checks (informational: the other sides are handed the array).

The four alternate per query, in an order rotated from one query to the next (load drift hits all alike, and no
side always runs first after the untimed capture); p50 of each. ``ratio_vs_raw_sql`` = library p50 /
raw SQL p50 (goal <= 1.2); ``ratio_vs_one_statement`` the same against the hand-written query. On a loaded machine
the wall-clock ratio moves with the server's share of the CPU, so the client's own CPU time per call
(``time.process_time``, this process only: the server's work is not in it) is reported beside it —
``library_cpu_ms``, ``raw_sql_cpu_ms`` and their difference, the library's own work per call.
"""

from __future__ import annotations

import contextlib
import threading
import time

import machine as bench
import numpy as np
import psycopg
import sqlalchemy as sa
from pgvector.psycopg import register_vector
from psycopg import sql

from universalrag.store.schema import unit_table_name

DIM, K, CORPUS = 384, 10, "overhead"


def load(store, vectors: np.ndarray) -> None:  # type: ignore[no-untyped-def]
    bench.load_synthetic(store, {CORPUS: (bench.new_ids(len(vectors)), vectors)}, metadata=lambda i: {"n": i})


def capture(store, vector: np.ndarray) -> tuple[list[tuple[str, object]], bool]:  # type: ignore[no-untyped-def]
    """The statements (with driver-ready parameters) one ``Store.search`` sends, in order, and whether it sent
    them in autocommit mode."""
    sent: list[tuple[str, object]] = []
    modes: set[bool] = set()
    caller = threading.get_ident()  # not the statements of the library's background index check

    def record(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if threading.get_ident() == caller:
            sent.append((statement, parameters))
            modes.add(bool(cursor.connection.autocommit))

    engines = {id(e): e for e in (store.engine, store.read_engine)}.values()  # reads may use the read URL
    store.corpora(refresh=True)  # the registry read now, not by the search (it is re-read every REGISTRY_TTL_S)
    for engine in engines:
        sa.event.listen(engine, "before_cursor_execute", record)
    try:
        store.search(CORPUS, vector, k=K, exact_scan=False)
    finally:
        for engine in engines:
            sa.event.remove(engine, "before_cursor_execute", record)
    assert len(modes) == 1, modes
    return [(s, p) for s, p in sent if not s.lstrip().upper().startswith(("BEGIN", "COMMIT", "ROLLBACK"))], modes.pop()


def replay(conn: psycopg.Connection, statements: list[tuple[str, object]], autocommit: bool) -> int:
    """Run ``statements`` as the library did (autocommit, or in one transaction), fetching every row; returns the
    rows of the last one."""
    rows = 0
    conn.autocommit = autocommit
    with contextlib.nullcontext() if autocommit else conn.transaction():
        for statement, params in statements:
            rows = len(conn.execute(statement, params).fetchall())  # type: ignore[arg-type]
    return rows


def one_statement(schema: str) -> sql.Composed:
    """A hand-written nearest-units query returning the columns a hit needs."""
    return sql.SQL(
        "SELECT id, source_id, parent_id, content, uri, start_s, end_s, metadata, 1 - (embedding <=> %s::vector) "
        "FROM {}.{} ORDER BY embedding <=> %s::vector LIMIT {}"
    ).format(sql.Identifier(schema), sql.Identifier(unit_table_name(CORPUS)), sql.Literal(K))


def run_one(conn: psycopg.Connection, query: sql.Composed, ef_search: int, vector: np.ndarray) -> int:
    conn.autocommit = False
    with conn.transaction():
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef_search),))
        return len(conn.execute(query, (vector, vector)).fetchall())


def cpu_timed(fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
    """``(wall seconds, this process's CPU seconds, result)`` of one call."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - wall, time.process_time() - cpu, result


def main() -> None:
    args, vectors, n_queries, rng = bench.synthetic_setup(__doc__, units=(50_000, 25_000), queries=(300, 100), seed=2)
    n = len(vectors)
    lib_ms, raw_ms, one_ms, list_ms, lib_cpu, raw_cpu = [], [], [], [], [], []
    with bench.scratch_store(args.database_url, "overhead") as store:
        load_s, _ = bench.timed(load, store, vectors)
        bench.log(f"{n} units loaded in {load_s:.0f} s")
        ef = store.settings.ef_search
        with psycopg.connect(store.resolve_url()) as conn:
            register_vector(conn)
            conn.commit()
            hand = one_statement(store.schema)
            statements, autocommit = [], False
            for i in range(n_queries + 10):
                q_array = bench.near(rng, vectors[rng.integers(n)]).astype(np.float32)
                statements, autocommit = capture(store, q_array)
                as_list = q_array.tolist()
                calls = {
                    "library": (store.search, (CORPUS, q_array), {"k": K, "exact_scan": False}),
                    "raw": (replay, (conn, statements, autocommit), {}),
                    "one": (run_one, (conn, hand, ef, q_array), {}),
                    "list": (store.search, (CORPUS, as_list), {"k": K, "exact_scan": False}),
                }
                order = list(calls)
                order = order[i % 4 :] + order[: i % 4]  # each side in each position as often: no side always runs
                # right after the untimed capture (measured: a search just after it is slower, whichever side it is)
                got = {name: cpu_timed(calls[name][0], *calls[name][1], **calls[name][2]) for name in order}
                hits, rows, rows_one, list_hits = (got[name][2] for name in ("library", "raw", "one", "list"))
                # the library's statement asks for a few rows more than k (repeated texts are returned once)
                assert len(hits) == len(list_hits) == rows_one == K <= rows, (len(hits), rows, rows_one)
                if i >= 10:  # warm-up: caches, prepared statements
                    for name, wall in (("library", lib_ms), ("raw", raw_ms), ("one", one_ms), ("list", list_ms)):
                        wall.append(got[name][0] * 1000)
                    lib_cpu.append(got["library"][1] * 1000)
                    raw_cpu.append(got["raw"][1] * 1000)
        bench.log(
            f"statements per search call: {len(statements)} ({'autocommit' if autocommit else 'in a transaction'})"
        )
        for statement, _ in statements:
            bench.log("   " + " ".join(statement.split())[:150])
    lib, raw, one, listed = (bench.percentile(v, 50) for v in (lib_ms, raw_ms, one_ms, list_ms))
    cpu_lib, cpu_raw = float(np.mean(lib_cpu)), float(np.mean(raw_cpu))
    bench.log(
        f"library search p50 {lib:.2f} ms (p95 {bench.percentile(lib_ms, 95):.2f}); its raw SQL p50 {raw:.2f} ms "
        f"(p95 {bench.percentile(raw_ms, 95):.2f}); one hand-written statement p50 {one:.2f} ms; library with a "
        f"list p50 {listed:.2f} ms"
    )
    bench.log(
        f"client CPU per call (mean): library {cpu_lib:.3f} ms, raw SQL {cpu_raw:.3f} ms — the library's own "
        f"work {cpu_lib - cpu_raw:.3f} ms"
    )
    bench.log(f"ratio library / raw SQL: {lib / raw:.2f} (goal <= 1.2); library / one statement: {lib / one:.2f}")
    bench.log(bench.machine_line())
    fig, ax = bench.figure(size=(6.4, 4))
    ax.boxplot([lib_ms, raw_ms, one_ms, list_ms], showfliers=False)
    ax.set_xticks(
        [1, 2, 3, 4], ["Store.search", "its SQL, replayed", "one hand-written\nstatement", "Store.search,\nlist vector"]
    )
    ax.set_ylabel(f"ms per search (k = {K}, {n} units, HNSW)")
    bench.save_png(fig, args.out / "overhead.png", title="Search call overhead over the SQL it runs")
    bench.finish(
        "overhead",
        {
            "ratio_vs_raw_sql": round(lib / raw, 3),
            "ratio_vs_one_statement": round(lib / one, 3),
            "library_p50_ms": round(lib, 3),
            "raw_sql_p50_ms": round(raw, 3),
            "one_statement_p50_ms": round(one, 3),
            "library_list_p50_ms": round(listed, 3),
            "library_cpu_ms": round(cpu_lib, 4),
            "raw_sql_cpu_ms": round(cpu_raw, 4),
            "statements": len(statements),
            "autocommit": autocommit,
            "units": n,
            "queries": n_queries,
        },
        args.out,
    )


if __name__ == "__main__":
    main()
