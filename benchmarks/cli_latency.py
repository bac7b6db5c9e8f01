"""Wall-clock latency of the `universalrag` command, as a user sees it: one subprocess per run.

    python benchmarks/cli_latency.py [--quick] [--runs N] [--exe PATH]

* cold: every run is a fresh process that does its own work in-process (``--no-server`` where the command
  supports it): imports, encoder and router loading, one query.
* warm: the same commands while ``universalrag serve`` runs (started by this script on a Unix socket in a
  temporary ``UNIVERSALRAG_HOME``): the client forwards ``search``/``route``/``ask`` to the loaded server.
  ``--help`` and ``status`` never use the server; their warm figure is the same process again.

The database is ``UNIVERSALRAG_DATABASE_URL`` with a fresh schema (dropped at the end) when set, else the
embedded server in the temporary home. Three small text files from ``tests/data/corpus`` are ingested first.
Prints a table (median and min of each), the CPU model and the load average, and ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from machine import cpu_model  # noqa: E402  (benchmarks/ is on sys.path when a script runs)

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "data" / "corpus"
FILES = ("apollo_11.txt", "honeybee_behaviour.md", "kestrel_point_lighthouse.txt")
QUERY = "When did the Apollo 11 crew land on the Moon?"
COMMANDS: dict[str, list[str]] = {
    "--help": ["--help"],
    "status": ["status"],
    "route": ["route", QUERY],
    "search": ["search", QUERY, "-k", "3"],
}



def timed(cmd: list[str], env: dict[str, str]) -> float:
    """Seconds one subprocess run takes; raises when it fails."""
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return elapsed


def supports(exe: str, command: str, env: dict[str, str]) -> bool:
    """Whether this build of the command has ``command`` (the baseline before `serve` existed has not)."""
    return subprocess.run([exe, command, "--help"], env=env, capture_output=True).returncode == 0


def measure(exe: str, env: dict[str, str], runs: int, *, in_process_flag: bool) -> dict[str, list[float]]:
    """Each command ``runs`` times, round robin (so a load spike hits every command alike)."""
    out: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(runs):
        for name, args in COMMANDS.items():
            extra = ["--no-server"] if in_process_flag and name in ("route", "search") else []
            out[name].append(timed([exe, *args, *extra], env))
    return out


def start_server(exe: str, env: dict[str, str], home: Path, timeout: float = 180.0) -> subprocess.Popen[bytes]:
    """Start `universalrag serve` and wait until its socket answers."""
    proc = subprocess.Popen([exe, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"serve exited with {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
        if (home / "serve.sock").exists():
            return proc
        time.sleep(0.1)
    proc.terminate()
    raise SystemExit("serve did not start in time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="Runs per command and mode (default 5).")
    parser.add_argument("--quick", action="store_true", help="3 runs per command.")
    parser.add_argument("--exe", default=str(Path(sys.executable).with_name("universalrag")),
                        help="The universalrag executable to measure.")
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs

    home = Path(tempfile.mkdtemp(prefix="urag-bench-"))
    schema = "bench_cli_" + uuid.uuid4().hex[:8]
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNIVERSALRAG_")}
    env.update(UNIVERSALRAG_HOME=str(home), UNIVERSALRAG_SCHEMA=schema)
    if os.environ.get("UNIVERSALRAG_DATABASE_URL"):
        env["UNIVERSALRAG_DATABASE_URL"] = os.environ["UNIVERSALRAG_DATABASE_URL"]
    server: subprocess.Popen[bytes] | None = None
    try:
        timed([args.exe, "ingest", *(str(CORPUS / f) for f in FILES)], env)
        has_serve = supports(args.exe, "serve", env)
        cold = measure(args.exe, env, runs, in_process_flag=has_serve)
        warm: dict[str, list[float]] | None = None
        serve_start = None
        if has_serve:
            started = time.perf_counter()
            server = start_server(args.exe, env, home)
            serve_start = time.perf_counter() - started
            timed([args.exe, *COMMANDS["search"]], env)  # the first request of a fresh server
            warm = measure(args.exe, env, runs, in_process_flag=False)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        if os.environ.get("UNIVERSALRAG_DATABASE_URL"):
            import sqlalchemy as sa

            engine = sa.create_engine(os.environ["UNIVERSALRAG_DATABASE_URL"].replace("postgresql://",
                                                                                        "postgresql+psycopg://", 1))
            with engine.begin() as conn:
                conn.execute(sa.schema.DropSchema(schema, cascade=True, if_exists=True))
            engine.dispose()
        shutil.rmtree(home, ignore_errors=True)

    def med(values: list[float] | None) -> float | None:
        return round(statistics.median(values), 3) if values else None

    print(f"CPU {cpu_model()} x{os.cpu_count()}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{runs} runs each; database {'URL' if 'UNIVERSALRAG_DATABASE_URL' in env else 'embedded'}")
    print(f"{'command':<10} {'cold median':>12} {'cold min':>9} {'warm median':>12} {'warm min':>9}")
    for name in COMMANDS:
        w = warm[name] if warm else None
        print(f"{name:<10} {med(cold[name]):>11.3f}s {min(cold[name]):>8.3f}s "
              + (f"{med(w):>11.3f}s {min(w):>8.3f}s" if w else f"{'-':>12} {'-':>9}"))
    if serve_start is not None:
        print(f"serve: ready {serve_start:.2f} s after start")
    print(json.dumps({
        "benchmark": "cli_latency", "cpu": cpu_model(), "cores": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()], "runs": runs,
        "cold_median_s": {n: med(v) for n, v in cold.items()},
        "warm_median_s": {n: med(v) for n, v in warm.items()} if warm else None,
        "serve_ready_s": round(serve_start, 2) if serve_start is not None else None,
    }))


if __name__ == "__main__":
    main()
