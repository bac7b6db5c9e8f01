"""Wall-clock latency of the `universalrag` command, as a user sees it: one subprocess per run.

    python benchmarks/cli_latency.py [--quick] [--runs N] [--exe PATH]

* cold: every run is a fresh process that does its own work in-process (``--no-server`` where the command
  supports it): imports, encoder and router loading, one query. Query encoding and routing run on the
  NumPy backend (the default on a CPU).
* cold torch: the same with ``UNIVERSALRAG_INFERENCE=torch`` — the torch + transformers path that every cold
  command took before the NumPy backend: the baseline, measured in the same run, round robin with the rest.
* warm: the same commands while ``universalrag serve`` runs (started by this script on a Unix socket in a
  temporary ``UNIVERSALRAG_HOME``): the client forwards ``search``/``route``/``ask`` to the loaded server.
  ``--help`` and ``status`` never use the server; their warm figure is the same process again.

The database is ``UNIVERSALRAG_DATABASE_URL`` with a fresh schema (dropped at the end) when set, else the
embedded server in the temporary home. Three small text files from ``tests/data/corpus`` are ingested first.
Prints a table (median and min of the wall time, and the median CPU time — user + system of the process,
less sensitive to other load than the wall time), the CPU model and the load average, and ends with one
JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (user + system) of one subprocess run; raises when it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def supports(exe: str, command: str, env: dict[str, str]) -> bool:
    """Whether this build of the command has ``command`` (the baseline before `serve` existed has not)."""
    return subprocess.run([exe, command, "--help"], env=env, capture_output=True).returncode == 0


#: Modes measured round robin: name → (extra environment, whether route/search run in-process).
MODES: dict[str, tuple[dict[str, str], bool]] = {
    "cold": ({}, True),
    "cold torch": ({"UNIVERSALRAG_INFERENCE": "torch"}, True),
}


def measure(
    exe: str,
    env: dict[str, str],
    runs: int,
    modes: dict[str, tuple[dict[str, str], bool]],
) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """Each command in each mode ``runs`` times, round robin (so a load spike hits every command alike)."""
    out: dict[str, dict[str, list[tuple[float, float]]]] = {m: {n: [] for n in COMMANDS} for m in modes}
    for _ in range(runs):
        for name, args in COMMANDS.items():
            for mode, (extra_env, in_process) in modes.items():
                if mode != "cold" and name in ("--help", "status"):
                    continue  # they load no model and never use the server: one figure is enough
                extra = ["--no-server"] if in_process and name in ("route", "search") else []
                out[mode][name].append(timed([exe, *args, *extra], {**env, **extra_env}))
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
    parser.add_argument(
        "--exe",
        default=str(Path(sys.executable).with_name("universalrag")),
        help="The universalrag executable to measure.",
    )
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs

    home = Path(tempfile.mkdtemp(prefix="urag-bench-"))
    schema = "bench_cli_" + uuid.uuid4().hex[:8]
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNIVERSALRAG_")}
    # every run a new question for the server too: its vectors of recent queries would skip the embedding
    env.update(UNIVERSALRAG_HOME=str(home), UNIVERSALRAG_SCHEMA=schema, UNIVERSALRAG_QUERY_VECTORS="0")
    if os.environ.get("UNIVERSALRAG_DATABASE_URL"):
        env["UNIVERSALRAG_DATABASE_URL"] = os.environ["UNIVERSALRAG_DATABASE_URL"]
    server: subprocess.Popen[bytes] | None = None
    try:
        timed([args.exe, "ingest", *(str(CORPUS / f) for f in FILES)], env)
        has_serve = supports(args.exe, "serve", env)
        modes = {m: (e, has_serve and flag) for m, (e, flag) in MODES.items()}
        results = measure(args.exe, env, runs, modes)
        serve_start = None
        if has_serve:
            started = time.perf_counter()
            server = start_server(args.exe, env, home)
            serve_start = time.perf_counter() - started
            timed([args.exe, *COMMANDS["search"]], env)  # the first request of a fresh server
            results.update(measure(args.exe, env, runs, {"warm": ({}, False)}))
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        if os.environ.get("UNIVERSALRAG_DATABASE_URL"):
            import sqlalchemy as sa

            engine = sa.create_engine(
                os.environ["UNIVERSALRAG_DATABASE_URL"].replace("postgresql://", "postgresql+psycopg://", 1)
            )
            with engine.begin() as conn:
                conn.execute(sa.schema.DropSchema(schema, cascade=True, if_exists=True))
            engine.dispose()
        shutil.rmtree(home, ignore_errors=True)

    def med(values: list[tuple[float, float]], part: int = 0) -> float | None:
        return round(statistics.median(v[part] for v in values), 3) if values else None

    print(
        f"CPU {cpu_model()} x{os.cpu_count()}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"{runs} runs each; database {'URL' if 'UNIVERSALRAG_DATABASE_URL' in env else 'embedded'}"
    )
    print(f"{'command':<10} {'mode':<11} {'wall median':>12} {'wall min':>9} {'CPU median':>11}")
    for name in COMMANDS:
        for mode, values in results.items():
            if values[name]:
                print(
                    f"{name:<10} {mode:<11} {med(values[name]):>11.3f}s {min(v[0] for v in values[name]):>8.3f}s "
                    f"{med(values[name], 1):>10.3f}s"
                )
    for name in ("route", "search"):
        new, old_ = results["cold"][name], results["cold torch"][name]
        if new and old_:
            print(
                f"{name}: cold NumPy path {med(new):.2f} s vs torch path {med(old_):.2f} s "
                f"({med(old_) / med(new):.1f}x faster; CPU {med(old_, 1) / med(new, 1):.1f}x less)"
            )
    if serve_start is not None:
        print(f"serve: ready {serve_start:.2f} s after start")
    print(
        json.dumps(
            {
                "benchmark": "cli_latency",
                "cpu": cpu_model(),
                "cores": os.cpu_count(),
                "load_average": [round(x, 2) for x in os.getloadavg()],
                "runs": runs,
                **{
                    f"{mode.replace(' ', '_')}_median_s": {n: med(v) for n, v in values.items() if v}
                    for mode, values in results.items()
                },
                **{
                    f"{mode.replace(' ', '_')}_cpu_median_s": {n: med(v, 1) for n, v in values.items() if v}
                    for mode, values in results.items()
                },
                "serve_ready_s": round(serve_start, 2) if serve_start is not None else None,
            }
        )
    )


if __name__ == "__main__":
    main()
