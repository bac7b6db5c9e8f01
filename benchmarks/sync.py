"""The SQL sync worker against the raw encoder, measured in the same run.

    python benchmarks/sync.py [--quick] [--rows 20000] [--workers 1] [--encoder-rows N] [--scaling-rows 2000]
                              [--steady-s 120] [--lag-samples 30] [--batch 128] [--database-url URL] [--out DIR]
    python benchmarks/sync.py --attach 1000000 [--drain-s 300]

1. Backlog: N rows inserted into an application table, then ``attach_table`` (its enqueue time is printed);
   ``--workers`` workers (threads, one connection each; default one) drain the queue (claim, read rows, embed,
   COPY, settle). Every 5 s a sampler records the backlog,
   the lag (age of the oldest queued row), the backfill's progress as ``sync_status`` reports it (rows done,
   rate, time left) and the process's RSS (it hosts the worker and the encoder); ``<out>/sync.png`` plots them.
   Baseline: the bundled MiniLM embeds the same texts (``--encoder-rows`` of them: the first ones before the
   worker run, the last ones after; the mean evens out a machine whose load drifts). Ratio = worker rows/s ÷
   encoder rows/s (goal ≥ 0.9). CPU seconds per row are printed for both sides (the worker's include its database
   backend, which inserts into the HNSW index).
2. Lag under a steady insert load: a worker runs (LISTEN/NOTIFY); a writer inserts single rows at half the
   worker's backlog rate for ``--steady-s`` seconds; lag = INSERT commit → the unit is visible to another
   connection (polled every 10 ms). p50 and p95 (goal p50 ≤ 1 s). Then the same with an idle worker, one insert at
   a time (``--lag-samples``).
3. Scaling: a backlog of ``--scaling-rows`` drained by one worker, then by two (threads, one connection each),
   each on a fresh corpus. On a 2-core machine two workers share the cores the encoder already uses.
4. ``--attach ROWS`` instead of 1-3: a table of ROWS rows (the target: 1,000,000) filled and attached, then one
   worker draining it for ``--drain-s`` seconds while the sampler reads the backfill's progress, and
   ``universalrag status`` run once near the end, as a user would watch it: the seconds ``attach_table`` takes to
   queue every row, the rate, the time left the status states, how long reading the status takes with that
   backlog, and the RSS (``<out>/sync_attach.json``, plotted in ``sync_attach.png``).
Ends with one JSON line (also written to ``<out>/sync.json``, the samples to ``<out>/sync_samples.jsonl``). The
database is ``--database-url`` (or UNIVERSALRAG_DATABASE_URL), else a temporary embedded server; everything lives
in a fresh schema dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from machine import DEFAULT_OUT, cpu_model, figure, percentile, save_png  # noqa: E402  (benchmarks/ on sys.path)
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
        self.encoder.embed(["warm up"] * 80)

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

    def drain(self, workers: int, batch: int) -> tuple[float, float]:
        """Drain the queue with ``workers`` workers (threads); returns (seconds, CPU seconds of this process and
        of the workers' database backends)."""
        from universalrag.sync import Worker, WorkerOptions

        pool = [
            Worker(self.store, embedder=self.encoder, options=WorkerOptions(batch_size=batch)) for _ in range(workers)
        ]
        backends = [w.conn.info.backend_pid for w in pool]
        cpu_before = _cpu_self() + sum(_cpu_pid(pid) for pid in backends)
        started = time.perf_counter()
        threads = [threading.Thread(target=w.drain) for w in pool]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - started
        cpu = _cpu_self() + sum(_cpu_pid(pid) for pid in backends) - cpu_before
        for w in pool:
            w.close()
        return elapsed, cpu

    def idle_lag(self, samples: int) -> list[float]:
        """INSERT → searchable with an idle worker, one insert at a time."""
        self.table("idle", [])
        table = sql.Identifier(self.app, "idle")
        lags = []
        with _Running(self) as seen:
            time.sleep(1.0)
            for i in range(samples):
                self.conn.execute(sql.SQL("INSERT INTO {} VALUES (%s, %s)").format(table), (i, _texts(1, 1000 + i)[0]))
                inserted = time.perf_counter()
                lags.append(seen.wait_for(i, inserted, "idle"))
                time.sleep(0.3)  # back to idle-waiting
        return lags

    def steady_lag(self, rate: float, seconds: float) -> list[float]:
        """INSERT → searchable for rows inserted one per statement at ``rate`` rows/s for ``seconds``."""
        self.table("steady", [])
        table = sql.Identifier(self.app, "steady")
        texts = _texts(int(rate * seconds) + 1, 99)
        inserted: dict[int, float] = {}
        with _Running(self) as seen:
            time.sleep(1.0)
            started = time.perf_counter()
            for i, text in enumerate(texts):
                delay = started + i / rate - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                self.conn.execute(sql.SQL("INSERT INTO {} VALUES (%s, %s)").format(table), (i, text))
                inserted[i] = time.perf_counter()
            return [seen.wait_for(i, at, "steady") for i, at in inserted.items()]


class _Running:
    """A worker running (``Worker.run``) in a thread, and a poller that notes when each row's unit appears."""

    def __init__(self, bench: _Bench) -> None:
        from universalrag.sync import Worker, WorkerOptions

        self.bench = bench
        self.stop = threading.Event()
        self.worker = Worker(bench.store, embedder=bench.encoder, options=WorkerOptions(poll_interval_s=30.0))
        self.thread = threading.Thread(target=self.worker.run, kwargs={"stop": self.stop})
        self.seen: dict[tuple[str, int], float] = {}
        self.poller = threading.Thread(target=self._poll)

    def __enter__(self) -> _Running:
        self.thread.start()
        self.poller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        self.poller.join()
        self.worker.close()

    def _poll(self) -> None:
        probe = psycopg.connect(self.bench.store.url, autocommit=True)
        units = {  # the rows from the lowest key not seen yet on (the worker writes in queue order, mostly)
            name: sql.SQL(
                "SELECT k FROM (SELECT (metadata->'source_key'->>'id')::bigint AS k FROM {}.{}) u WHERE k >= %s"
            ).format(sql.Identifier(self.bench.schema), sql.Identifier(f"corpus_{name}"))
            for name in ("idle", "steady")
        }
        floor = dict.fromkeys(units, 0)
        try:
            while not self.stop.is_set():
                for name, statement in units.items():
                    try:
                        rows = probe.execute(statement, (floor[name],)).fetchall()
                    except psycopg.errors.UndefinedTable:
                        continue
                    now = time.perf_counter()
                    for (key,) in rows:
                        self.seen.setdefault((name, key), now)
                    while (name, floor[name]) in self.seen:
                        floor[name] += 1
                time.sleep(0.01)
        finally:
            probe.close()

    def wait_for(self, key: int, inserted: float, corpus: str) -> float:
        deadline = time.monotonic() + 120
        while (corpus, key) not in self.seen and time.monotonic() < deadline:
            time.sleep(0.005)
        return self.seen.get((corpus, key), float("inf")) - inserted


class _Sampler:
    """Every ``every`` seconds while a drain runs: backlog, lag, backfill progress (``sync_status``) and RSS."""

    def __init__(self, bench: _Bench, corpus: str, log: Path, every: float = 5.0) -> None:
        self.bench, self.corpus, self.every, self.log = bench, corpus, every, log
        self.samples: list[dict[str, Any]] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run)
        self.started = time.perf_counter()

    def __enter__(self) -> _Sampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()

    def _run(self) -> None:
        import psutil

        from universalrag.sync import sync_status

        process = psutil.Process()
        while True:
            asked = time.perf_counter()
            [status] = [s for s in sync_status(self.bench.store) if s.corpus == self.corpus]
            sample: dict[str, Any] = {
                "t": round(asked - self.started, 2),
                "backlog": status.backlog,
                "lag_s": round(status.lag_s, 2),
                "rss_mb": round(process.memory_info().rss / 2**20, 1),
                "status_s": round(time.perf_counter() - asked, 3),
                "load": os.getloadavg()[0],
            }
            if status.backfill is not None:
                sample.update(
                    done=status.backfill.done, rate=round(status.backfill.rate, 2), eta_s=status.backfill.eta_s
                )
            self.samples.append(sample)
            with self.log.open("a") as f:  # as it goes: a run stopped early keeps what it measured
                f.write(json.dumps(sample) + "\n")
            if self.done.wait(self.every):
                return


def _cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _cpu_pid(pid: int) -> float:
    """CPU seconds of process ``pid`` (a local database backend), 0 when it cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _plot(samples: list[dict[str, Any]], rows: int, path: Path, *, workers: int = 1) -> None:
    fig, axes = figure(3, size=(12.0, 3.8))
    t = [s["t"] / 60 for s in samples]
    axes[0].plot(t, [rows - s["backlog"] for s in samples], label="rows embedded")
    drained_by = "one worker" if workers == 1 else f"{workers} workers"
    axes[0].set(xlabel="minutes", ylabel="rows", title=f"backlog of {rows:,} rows, {drained_by}")
    axes[1].plot(t, [s["lag_s"] / 60 for s in samples], color="tab:red")
    axes[1].set(xlabel="minutes", ylabel="minutes", title="lag (oldest queued row)")
    axes[2].plot(t, [s["rss_mb"] for s in samples], color="tab:green")
    axes[2].set(xlabel="minutes", ylabel="MB", title="RSS of the worker process", ylim=(0, None))
    save_png(fig, path, title="benchmarks/sync.py: draining an attached table")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="Small sizes (about two minutes on a busy 2-core box).")
    parser.add_argument("--rows", type=int, default=20000, help="Backlog rows (the target backlog is 100000).")
    parser.add_argument("--workers", type=int, default=1, help="Workers (threads) draining the backlog.")
    parser.add_argument("--encoder-rows", type=int, help="Texts the raw encoder embeds, half before and half after.")
    parser.add_argument("--scaling-rows", type=int, default=2000, help="Rows drained by one, then two workers.")
    parser.add_argument("--steady-s", type=float, default=120.0, help="Seconds of steady inserts.")
    parser.add_argument("--steady-fraction", type=float, default=0.5, help="Insert rate / the backlog rate.")
    parser.add_argument("--lag-samples", type=int, default=30)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--database-url", default=os.environ.get("UNIVERSALRAG_DATABASE_URL"))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--attach", type=int, metavar="ROWS", help="Instead: attach a table of ROWS rows and drain it for --drain-s."
    )
    parser.add_argument("--drain-s", type=float, default=300.0, help="With --attach: seconds the worker drains.")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.scaling_rows, args.lag_samples, args.steady_s = 400, 160, 8, 15.0
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
        if args.attach:
            results.update(_attach(bench, args.attach, args.drain_s, args.batch, args.out))
        else:
            _backlog(bench, args, results)
    finally:
        bench.teardown()
        if home is not None:
            from universalrag.store.embedded import stop_embedded

            stop_embedded(home)
    results["load_after"] = os.getloadavg()[0]
    _report(results, args.out / ("sync_attach.json" if args.attach else "sync.json"))


def _backlog(bench: _Bench, args: argparse.Namespace, results: dict[str, Any]) -> None:
    """Parts 1 to 3 of the module's text: the backlog against the raw encoder, the lag, one worker against two;
    their figures go into ``results``."""
    encoder_rows = min(args.encoder_rows or args.rows, args.rows)
    texts = _texts(args.rows, 0)
    half = max(encoder_rows // 2, 1)
    raw_before, cpu_before = _time(lambda: bench.encoder.embed(texts[:half]))
    print(f"raw encoder, first {half} texts: {half / raw_before:.1f} rows/s (load {os.getloadavg()[0]:.1f})")
    results["enqueue_s"] = bench.table("backlog", texts)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sync_samples.jsonl").unlink(missing_ok=True)
    with _Sampler(bench, "backlog", args.out / "sync_samples.jsonl") as sampler:
        worker_s, worker_cpu = bench.drain(args.workers, args.batch)
    samples = sampler.samples
    assert bench.store.counts()["backlog"] == args.rows, "the worker did not write every row"
    raw_after, cpu_after = _time(lambda: bench.encoder.embed(texts[-half:]))
    print(f"raw encoder, last {half} texts: {half / raw_after:.1f} rows/s (load {os.getloadavg()[0]:.1f})")
    encoder_rows_s = 2 * half / (raw_before + raw_after)
    results.update(
        rows=args.rows,
        workers=args.workers,
        worker_rows_s=args.rows / worker_s,
        encoder_rows_s=encoder_rows_s,
        ratio=args.rows / worker_s / encoder_rows_s,
        worker_cpu_ms_row=1000 * worker_cpu / args.rows,
        encoder_cpu_ms_row=1000 * (cpu_before + cpu_after) / (2 * half),
        rss_mb_max=max(s["rss_mb"] for s in samples),
        rss_mb_first=samples[0]["rss_mb"],
        lag_max_s=max(s["lag_s"] for s in samples),
        status_s_max=max(s["status_s"] for s in samples),
        load_backlog=round(statistics.mean(s["load"] for s in samples), 1),
    )
    print(
        f"backlog of {args.rows} rows: attach_table queued them in {results['enqueue_s']:.2f} s; "
        f"{args.workers} worker{'s' if args.workers > 1 else ''} "
        f"{results['worker_rows_s']:.1f} rows/s, raw encoder {encoder_rows_s:.1f} rows/s (before "
        f"{half / raw_before:.1f}, after {half / raw_after:.1f}): ratio {results['ratio']:.2f}; CPU "
        f"{results['worker_cpu_ms_row']:.1f} ms a row (worker + its backend) vs {results['encoder_cpu_ms_row']:.1f}"
    )
    print(
        f"RSS {results['rss_mb_first']:.0f} -> max {results['rss_mb_max']:.0f} MB; lag up to "
        f"{results['lag_max_s']:.0f} s; sync_status took up to {results['status_s_max']:.2f} s; mean load "
        f"{results['load_backlog']}"
    )
    _plot(samples, args.rows, args.out / "sync.png", workers=args.workers)
    rate = args.steady_fraction * results["worker_rows_s"]
    steady = bench.steady_lag(rate, args.steady_s)
    results.update(
        steady_rate=rate,
        steady_rows=len(steady),
        steady_p50_s=percentile(steady, 50),
        steady_p95_s=percentile(steady, 95),
        steady_max_s=max(steady),
    )
    print(
        f"INSERT -> searchable under {rate:.1f} inserts/s for {args.steady_s:.0f} s ({len(steady)} rows): p50 "
        f"{results['steady_p50_s']:.3f} s, p95 {results['steady_p95_s']:.3f} s, max {results['steady_max_s']:.3f} s"
    )
    lags = bench.idle_lag(args.lag_samples)
    results.update(lag_p50_s=percentile(lags, 50), lag_p95_s=percentile(lags, 95))
    print(
        f"INSERT -> searchable with an idle worker: p50 {results['lag_p50_s']:.3f} s, "
        f"p95 {results['lag_p95_s']:.3f} s over {len(lags)} inserts"
    )
    scaling = _texts(args.scaling_rows, 7)
    bench.table("one", scaling)
    one, _ = bench.drain(1, args.batch)
    bench.table("two", scaling)
    two, _ = bench.drain(2, args.batch)
    counts = bench.store.counts()
    assert counts["one"] == counts["two"] == args.scaling_rows, "a worker did not write every row"
    results.update(
        scaling_rows=args.scaling_rows,
        one_worker_rows_s=args.scaling_rows / one,
        two_workers_rows_s=args.scaling_rows / two,
        two_vs_one=one / two,
    )
    print(
        f"{args.scaling_rows} rows: one worker {args.scaling_rows / one:.1f} rows/s, two workers "
        f"{args.scaling_rows / two:.1f} rows/s -> {one / two:.2f}x ({os.cpu_count()} cores)"
    )


def _report(results: dict[str, Any], path: Path) -> None:
    print(
        f"CPU: {results['cpu']}, {results['cores']} cores, load {results['load_before']:.1f} -> "
        f"{results['load_after']:.1f}"
    )
    summary = {k: round(v, 4) if isinstance(v, float) else v for k, v in results.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary))


def _attach(bench: _Bench, rows: int, drain_s: float, batch: int, out: Path) -> dict[str, Any]:
    """A large existing table attached (``--attach``): the seconds ``attach_table`` takes to queue its rows, then one
    worker draining it for ``drain_s`` seconds while the sampler reads ``sync_status`` (rows done, rate, time left)
    every 5 s, and ``universalrag status`` run once near the end, as a user would watch it."""
    import subprocess
    import sys

    from universalrag.sync import Worker, WorkerOptions

    texts = _texts(rows, 0)
    started = time.perf_counter()
    enqueue_s = bench.table("attached", texts)
    print(
        f"a table of {rows} rows filled and attached in {time.perf_counter() - started:.1f} s "
        f"(attach_table: {enqueue_s:.1f} s)"
    )
    del texts
    out.mkdir(parents=True, exist_ok=True)
    (out / "sync_attach_samples.jsonl").unlink(missing_ok=True)
    worker = Worker(bench.store, embedder=bench.encoder, options=WorkerOptions(batch_size=batch))
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, kwargs={"stop": stop})
    with _Sampler(bench, "attached", out / "sync_attach_samples.jsonl") as sampler:
        thread.start()
        time.sleep(max(drain_s - 10.0, 0.0))
        env = {**os.environ, "UNIVERSALRAG_DATABASE_URL": str(bench.store.url), "UNIVERSALRAG_SCHEMA": bench.schema}
        shown = subprocess.run(
            [sys.executable, "-m", "universalrag.cli", "status"], env=env, capture_output=True, text=True, timeout=120
        ).stdout
        time.sleep(min(drain_s, 10.0))
        stop.set()
        thread.join()
    worker.close()
    _plot(sampler.samples, rows, out / "sync_attach.png")
    done = bench.store.counts()["attached"]
    status_lines = [line.strip() for line in shown.splitlines() if "sync attached" in line or "backfill" in line]
    print("universalrag status, near the end of the drain:\n    " + "\n    ".join(status_lines))
    last: dict[str, Any] = next((s for s in reversed(sampler.samples) if "done" in s), {})
    status_s_max = max(s["status_s"] for s in sampler.samples)
    rss_mb_max = max(s["rss_mb"] for s in sampler.samples)
    print(
        f"{done} of {rows} rows written in {drain_s:.0f} s ({done / drain_s:.1f} rows/s); sync_status: rate "
        f"{last.get('rate')} rows/s, time left {last.get('eta_s')} s; reading it took up to {status_s_max:.2f} s; "
        f"RSS up to {rss_mb_max:.0f} MB"
    )
    return {
        "attach_rows": rows,
        "enqueue_s": enqueue_s,
        "drain_s": drain_s,
        "drained_rows": done,
        "drained_rows_s": done / drain_s,
        "status_rate": last.get("rate"),
        "status_eta_s": last.get("eta_s"),
        "status_s_max": status_s_max,
        "rss_mb_max": rss_mb_max,
        "status_lines": status_lines,
    }


def _time(fn: Callable[[], Any]) -> tuple[float, float]:
    """(seconds, CPU seconds of the process) that ``fn`` takes in a thread of its own, as the workers run (under
    heavy load torch computed noticeably slower in the main thread of this machine than in another thread, so both
    sides use threads)."""
    cpu = _cpu_self()
    started = time.perf_counter()
    thread = threading.Thread(target=fn)
    thread.start()
    thread.join()
    return time.perf_counter() - started, _cpu_self() - cpu


if __name__ == "__main__":
    main()
