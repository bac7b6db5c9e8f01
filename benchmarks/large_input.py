"""Very large inputs: wall time and peak memory of ingesting a huge text file and a million-row CSV.

    python benchmarks/large_input.py [--quick] [--embedder minilm|hash] [--no-baseline] [--case all|text|csv]

Each case runs in a child process of its own, so its peak resident memory (ru_maxrss, which includes the
encoder and the interpreter) is its alone. Cases:

1. text: a plain-text file of 200 MB (``--quick``: 16 MB) streamed by ``universalrag.ingest.large`` (blocks of
   ~1 MiB, batches of 512 passages, each committed).
2. text, whole-file baseline (unless ``--no-baseline``): the same file with streaming turned off
   (``large_text_bytes`` above its size), i.e. the path every text file took before; the memory ratio
   streamed / whole is printed.
3. csv: a 1,000,000-row CSV (``--quick``: 200,000 rows) staged in batches of 1,024 rows, with the default
   policy of at most 100,000 embedded rows per table (``--quick``: 20,000).

``--embedder hash`` replaces MiniLM by a deterministic word-hashing embedder (64 dimensions): it measures the
pipeline itself (reading, splitting, COPY, the final move) without the encoder's cost, which dominates with
MiniLM on a CPU. The database is UNIVERSALRAG_DATABASE_URL if set, else the embedded server under a temporary
home; a schema of its own is dropped at the end. Prints the CPU model and the load average beside the figures.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

WORDS = [
    "harbour",
    "lantern",
    "granite",
    "meadow",
    "orchard",
    "falcon",
    "copper",
    "willow",
    "summit",
    "canal",
    "quarry",
    "beacon",
    "glacier",
    "tundra",
    "prairie",
    "lagoon",
    "estuary",
    "ridge",
    "valley",
    "basin",
    "delta",
    "fjord",
    "plateau",
    "canyon",
    "marsh",
    "grove",
]


class WordHashEmbedder:
    """Each word hashed to a signed coordinate of a 64-dimensional vector (no model, no torch)."""

    name, dimension = "bench-hash-64", 64

    def embed(self, texts):  # type: ignore[no-untyped-def]
        import numpy as np

        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.split():
                d = hashlib.md5(word.encode(), usedforsecurity=False).digest()
                out[i, d[0] % 64] += (d[1] & 1) * 2 - 1
        out[:, 0] += 1e-3
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_query(self, text):  # type: ignore[no-untyped-def]
        return self.embed([text])[0]


def write_text(path: Path, megabytes: int) -> None:
    rng = random.Random(1)
    target = megabytes * 1_000_000
    with path.open("w", encoding="utf-8") as fh:
        written, n = 0, 0
        while written < target:
            para = f"Entry {n}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 120))) + ".\n\n"
            fh.write(para)
            written += len(para)
            n += 1


def write_csv(path: Path, rows: int) -> None:
    rng = random.Random(2)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["station", "region", "reading", "note"])
        for i in range(rows):
            w.writerow([f"st-{i:07d}", rng.choice(WORDS), f"{rng.uniform(0, 100):.2f}", rng.choice(WORDS)])


def child(args: argparse.Namespace) -> None:
    """One ingestion, in this process; prints a JSON line with its figures."""
    from universalrag.config import Settings
    from universalrag.ingest import IngestOptions, ingest_paths
    from universalrag.store import Store

    cfg = json.loads(args.child)
    embedder = WordHashEmbedder() if cfg["embedder"] == "hash" else None
    if embedder is None:
        from universalrag.embed import bundled_minilm

        embedder = bundled_minilm()
    settings = Settings(database_url=cfg["url"], home=Path(cfg["home"]), schema=cfg["schema"])
    progress: list[int] = []
    with Store(settings=settings) as store:
        store.init(embedder=embedder.name, dimension=embedder.dimension)
        options = IngestOptions(**cfg["options"])
        started = time.perf_counter()
        report = ingest_paths(
            store, embedder, [cfg["path"]], options=options, on_progress=lambda p: progress.append(p.done)
        )
        elapsed = time.perf_counter() - started
        store.downgrade("base")
    outcome = report.outcomes[0]
    print(
        json.dumps(
            {
                "seconds": elapsed,
                "status": outcome.status,
                "error": outcome.error,
                "rows": outcome.rows,
                "batches": len(progress),
            }
        )
    )


def run_case(name: str, cfg: dict[str, object]) -> dict[str, object]:
    proc = subprocess.Popen([sys.executable, __file__, "--child", json.dumps(cfg)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)  # reaped here, with the child's own resource usage
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{name}: the child process failed ({proc.returncode})")
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_mb"] = usage.ru_maxrss / 1024
    print(
        f"{name:<26} {result['seconds']:>8.1f} s  peak {result['peak_mb']:>7.0f} MB  {result['status']:<7} "
        f"batches={result['batches']} rows={result['rows']} {result['error'] or ''}",
        flush=True,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--embedder", choices=("minilm", "hash"), default="minilm")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument(
        "--case", choices=("all", "text", "csv"), default="all", help="run only the text cases or only the CSV case"
    )
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    sys.path.insert(0, str(Path(__file__).parent))
    from machine import cpu_model

    text_mb, csv_rows, embedded = (16, 200_000, 20_000) if args.quick else (200, 1_000_000, 100_000)
    print(
        f"CPU: {cpu_model()}, {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at start; "
        f"embedder {args.embedder}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        base = {
            "url": os.environ.get("UNIVERSALRAG_DATABASE_URL"),
            "home": str(folder / "home"),
            "embedder": args.embedder,
        }
        text, table = folder / "big.txt", folder / "big.csv"
        if args.case in ("all", "text"):
            write_text(text, text_mb)
            run_text(args, base, text, text_mb)
        if args.case in ("all", "csv"):
            write_csv(table, csv_rows)
            run_case(
                f"csv {csv_rows:,} rows",
                {
                    **base,
                    "path": str(table),
                    "options": {"max_embedded_rows": embedded},
                    "schema": "bench_" + uuid.uuid4().hex[:8],
                },
            )
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


def run_text(args: argparse.Namespace, base: dict[str, object], text: Path, text_mb: int) -> None:
    """The streamed text case and, unless ``--no-baseline``, the whole-file baseline."""
    streamed = run_case(
        f"text {text_mb} MB streamed",
        {**base, "path": str(text), "options": {}, "schema": "bench_" + uuid.uuid4().hex[:8]},
    )
    if not args.no_baseline:
        whole = run_case(
            f"text {text_mb} MB whole-file",
            {
                **base,
                "path": str(text),
                "options": {"large_text_bytes": 1 << 40},
                "schema": "bench_" + uuid.uuid4().hex[:8],
            },
        )
        print(
            f"peak memory streamed / whole-file: {streamed['peak_mb'] / whole['peak_mb']:.2f}; "
            f"time: {streamed['seconds'] / whole['seconds']:.2f}"
        )


if __name__ == "__main__":
    main()
