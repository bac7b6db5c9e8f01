"""The SQL sync worker against the raw encoder, measured in the same run.

    python benchmarks/sync.py [--quick] [--rows 20000] [--database-url URL]

1. Backlog: N rows inserted into an application table, then ``attach_table`` (its enqueue time is printed);
   one worker drains the queue (claim, read rows, embed, COPY, settle). Baseline: the bundled MiniLM embeds the
   same texts in one call, before and after the worker run (the mean evens out a machine whose load drifts).
   Ratio = worker rows/s ÷ encoder rows/s (goal ≥ 0.9).
2. Lag: a worker idle-waits on LISTEN; single-row INSERTs, one at a time; lag = INSERT commit → the unit is
   visible to another connection (polled every 5 ms). p50 and p95 (goal p50 ≤ 2 s).
3. Scaling: the same backlog drained by one worker, then by two (threads, one connection each) on a fresh
   corpus. On a 2-core machine two workers share the cores the encoder already uses, so expect ≈ 1×.
Ends with one JSON line. The database is ``--database-url`` (or UNIVERSALRAG_DATABASE_URL), else a temporary
embedded server; everything lives in a fresh schema dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
from machine import cpu_model  # noqa: E402  (benchmarks/ is on sys.path when a script runs)
from psycopg import sql

_SUBJECTS = [
    "printer",
    "VPN",
    "laptop",
    "badge",
    "coffee machine",
    "parking gate",
    "mailbox",
    "phone",
    "monitor",
    "keyboard",
    "invoice",
    "payroll",
    "projector",
    "Wi-Fi",
    "calendar",
]
_PROBLEMS = [
    "stops working after lunch",
    "shows an error about an expired certificate",
    "is very slow since Monday",
    "cannot be reached from the second floor",
    "rejects my password",
    "makes a grinding noise",
    "lost all its settings",
    "asks for an update every hour",
    "prints blank pages",
]


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        f"Ticket {i}: the {rng.choice(_SUBJECTS)} in room {rng.randint(1, 400)} {rng.choice(_PROBLEMS)}; "
        f"reported by {rng.choice(['Ana', 'Bo', 'Chen', 'Dee', 'Eli'])}."
        for i in range(n)
    ]


class _Bench:
    def __init__(self, url: str, schema: str) -> None:
        from universalrag.config import Settings
        from universalrag.embed import bundled_minilm
        from universalrag.store import Store

        self.url, self.schema = url, schema
        self.app = f"{schema}_app"
        self.store = Store(url, settings=Settings(database_url=url, schema=schema))
        self.encoder = bundled_minilm()
        self.conn = psycopg.connect(self.store.url, autocommit=True)

    def setup(self) -> None:
        self.store.init(embedder=self.encoder.name, dimension=self.encoder.dimension)
        self.conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(self.app)))
        self.encoder.embed(["warm up"])

    def teardown(self) -> None:
        self.store.close()
        for name in (self.app, self.schema):
            self.conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))
        self.conn.close()

    def table(self, name: str, texts: list[str]) -> float:
        """Create and fill a table, attach it; returns the seconds attach_table took."""
        table = sql.Identifier(self.app, name)
        self.conn.execute(sql.SQL("CREATE TABLE {} (id bigint PRIMARY KEY, body text NOT NULL)").format(table))
        with self.conn.cursor().copy(sql.SQL("COPY {} (id, body) FROM STDIN").format(table)) as copy:
            for i, text in enumerate(texts):
                copy.write_row((i, text))
        started = time.perf_counter()
        self.conn.execute(
            sql.SQL("SELECT {}.attach_table(%s::regclass, corpus => %s, content => 'body')").format(
                sql.Identifier(self.schema)
            ),
            (f"{self.app}.{name}", name),
        )
        return time.perf_counter() - started

    def drain(self, workers: int, batch: int) -> float:
        from universalrag.sync import Worker, WorkerOptions

        pool = [
            Worker(self.store, embedder=self.encoder, options=WorkerOptions(batch_size=batch)) for _ in range(workers)
        ]
        started = time.perf_counter()
        threads = [threading.Thread(target=w.drain) for w in pool]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - started
        for w in pool:
            w.close()
        return elapsed

    def lag(self, samples: int) -> list[float]:
        from universalrag.sync import Worker, WorkerOptions

        self.table("live", [])
        stop = threading.Event()
        worker = Worker(self.store, embedder=self.encoder, options=WorkerOptions(poll_interval_s=30.0))
        thread = threading.Thread(target=worker.run, kwargs={"stop": stop})
        thread.start()
        probe = psycopg.connect(self.store.url, autocommit=True)
        units = sql.SQL("SELECT count(*) FROM {}.corpus_live").format(sql.Identifier(self.schema))
        lags = []
        try:
            time.sleep(1.0)
            for i in range(samples):
                self.conn.execute(
                    sql.SQL("INSERT INTO {} VALUES (%s, %s)").format(sql.Identifier(self.app, "live")),
                    (i, _texts(1, 1000 + i)[0]),
                )
                started = time.perf_counter()
                while (probe.execute(units).fetchone() or (0,))[0] <= i and time.perf_counter() - started < 60:
                    time.sleep(0.005)
                lags.append(time.perf_counter() - started)
                time.sleep(0.3)  # back to idle-waiting
        finally:
            stop.set()
            thread.join()
            worker.close()
            probe.close()
        return lags


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="Small sizes (about two minutes on a busy 2-core box).")
    parser.add_argument("--rows", type=int, default=20000, help="Backlog rows (the target backlog is 100000).")
    parser.add_argument("--scaling-rows", type=int, default=2000, help="Rows drained by one, then two workers.")
    parser.add_argument("--lag-samples", type=int, default=30)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--database-url", default=os.environ.get("UNIVERSALRAG_DATABASE_URL"))
    args = parser.parse_args()
    if args.quick:
        args.rows, args.scaling_rows, args.lag_samples = 400, 160, 8
    home = None
    url = args.database_url
    if not url:
        from universalrag.store.embedded import embedded_url

        home = Path(tempfile.mkdtemp(prefix="universalrag-bench-"))
        url = embedded_url(home)
    bench = _Bench(url, "bench_sync_" + uuid.uuid4().hex[:8])
    results: dict[str, Any] = {"cpu": cpu_model(), "cores": os.cpu_count(), "load_before": os.getloadavg()[0]}
    try:
        bench.setup()
        texts = _texts(args.rows, 0)
        raw_before = _time(lambda: bench.encoder.embed(texts))
        results["enqueue_s"] = bench.table("backlog", texts)
        worker_s = bench.drain(1, args.batch)
        assert bench.store.counts()["backlog"] == args.rows, "the worker did not write every row"
        raw_after = _time(lambda: bench.encoder.embed(texts))
        raw = (raw_before + raw_after) / 2
        results.update(
            rows=args.rows, worker_rows_s=args.rows / worker_s, encoder_rows_s=args.rows / raw, ratio=raw / worker_s
        )
        print(
            f"backlog of {args.rows} rows: attach_table queued them in {results['enqueue_s']:.2f} s; worker "
            f"{results['worker_rows_s']:.1f} rows/s, raw encoder {results['encoder_rows_s']:.1f} rows/s "
            f"(before {args.rows / raw_before:.1f}, after {args.rows / raw_after:.1f}): ratio {results['ratio']:.2f}"
        )
        lags = bench.lag(args.lag_samples)
        results.update(lag_p50_s=statistics.median(lags), lag_p95_s=sorted(lags)[max(0, int(len(lags) * 0.95) - 1)])
        print(
            f"INSERT -> searchable with an idle worker: p50 {results['lag_p50_s']:.3f} s, "
            f"p95 {results['lag_p95_s']:.3f} s over {len(lags)} inserts"
        )
        scaling = _texts(args.scaling_rows, 7)
        bench.table("one", scaling)
        one = bench.drain(1, args.batch)
        bench.table("two", scaling)
        two = bench.drain(2, args.batch)
        counts = bench.store.counts()
        assert counts["one"] == counts["two"] == args.scaling_rows, "a worker did not write every row"
        results.update(one_worker_s=one, two_workers_s=two, two_vs_one=one / two)
        print(
            f"{args.scaling_rows} rows: one worker {one:.1f} s, two workers {two:.1f} s -> {one / two:.2f}x "
            f"({os.cpu_count()} cores; the encoder already uses them all)"
        )
    finally:
        bench.teardown()
        if home is not None:
            from universalrag.store.embedded import stop_embedded

            stop_embedded(home)
    results["load_after"] = os.getloadavg()[0]
    print(
        f"CPU: {results['cpu']}, {results['cores']} cores, load {results['load_before']:.1f} -> "
        f"{results['load_after']:.1f}"
    )
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in results.items()}))


def _time(fn: Any) -> float:
    """Seconds ``fn`` takes in a thread of its own, as the workers run (under heavy load torch computes
    noticeably slower in the main thread of this machine than in another thread, so both sides use threads)."""
    started = time.perf_counter()
    thread = threading.Thread(target=fn)
    thread.start()
    thread.join()
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
