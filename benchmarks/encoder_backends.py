"""The bundled MiniLM on the CPU: ONNX Runtime vs NumPy vs torch backends, in one run.

    python benchmarks/encoder_backends.py [--quick] [--threads N]

Measures, for each backend: the time to import and load it in a fresh process (what a cold command pays),
one-query latency (what ``search`` pays per query once loaded) and batch throughput on real passages from
``tests/data/corpus`` (what ``ingest`` pays), plus the trained router's load and per-query time. Prints the
CPU model and the load average beside the figures, and ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from machine import cpu_model  # noqa: E402  (benchmarks/ is on sys.path when a script runs)

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "data" / "corpus"
QUERY = "When did the Apollo 11 crew land on the Moon?"
BACKENDS = ("onnx", "numpy", "torch")

_LOAD = """
import time, sys
started = time.perf_counter()
from universalrag.embed import bundled_minilm
from universalrag.routing import TrainedRouter
bundled_minilm().embed_query(sys.argv[1])
encoder = time.perf_counter()
TrainedRouter.default().route(sys.argv[1])
print(encoder - started, time.perf_counter() - encoder)
"""


def passages(count: int) -> list[str]:
    """``count`` passages of about 120 words from the test corpus (repeated when it has fewer)."""
    words = " ".join(p.read_text(encoding="utf-8") for p in sorted(CORPUS.glob("*.txt"))).split()
    chunks = [" ".join(words[i:i + 120]) for i in range(0, len(words), 120)]
    return [chunks[i % len(chunks)] for i in range(count)]


def cold_load(backend: str, runs: int, env: dict[str, str]) -> tuple[float, float]:
    """Median seconds a fresh process takes to import + load + encode one query, then to load + route one."""
    enc, rout = [], []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", _LOAD, QUERY], env={**env, "UNIVERSALRAG_INFERENCE": backend},
                             capture_output=True, text=True, check=True).stdout.split()
        enc.append(float(out[0]))
        rout.append(float(out[1]))
    return statistics.median(enc), statistics.median(rout)


def in_process(backend: str, texts: list[str], runs: int) -> dict[str, float]:
    """Query latency, batch throughput and router latency with ``backend``, loaded once."""
    os.environ["UNIVERSALRAG_INFERENCE"] = backend
    from universalrag.embed import TransformersEmbedder
    from universalrag.routing import TrainedRouter

    embedder = TransformersEmbedder.bundled_minilm(device="cpu")
    router = TrainedRouter.default()
    embedder.embed_query(QUERY)
    router.route(QUERY)
    assert embedder.backend == backend and router.backend == backend
    query, batch, route = [], [], []
    for _ in range(runs):
        started = time.perf_counter()
        embedder.embed_query(QUERY)
        query.append(time.perf_counter() - started)
        started = time.perf_counter()
        router.route(QUERY)
        route.append(time.perf_counter() - started)
        started = time.perf_counter()
        embedder.embed(texts)
        batch.append(time.perf_counter() - started)
    return {"query_ms": 1000 * statistics.median(query), "route_ms": 1000 * statistics.median(route),
            "passages_per_s": len(texts) / statistics.median(batch)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs and 64 passages.")
    parser.add_argument("--threads", type=int, default=None,
                        help="OMP_NUM_THREADS and UNIVERSALRAG_ONNX_THREADS for every backend (default: as the CLI "
                             "runs queries, 1).")
    args = parser.parse_args()
    runs, count = (3, 64) if args.quick else (5, 256)
    threads = str(args.threads or 1)
    env = {**os.environ, "OMP_NUM_THREADS": threads, "UNIVERSALRAG_ONNX_THREADS": threads}
    cold = {b: cold_load(b, runs, env) for b in BACKENDS}
    warm = {}
    for backend in BACKENDS:  # in a child each, so that one backend's threads do not linger in the other
        code = ("import json,sys; sys.path.insert(0, sys.argv[1]); import encoder_backends as b; "
                f"print(json.dumps(b.in_process({backend!r}, b.passages({count}), {runs})))")
        out = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent)], env=env, capture_output=True,
                             text=True, check=True).stdout
        warm[backend] = json.loads(out.strip().splitlines()[-1])
    print(f"CPU {cpu_model()} x{os.cpu_count()}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{runs} runs; {count} passages of ~120 words; OMP_NUM_THREADS={threads}")
    print(f"{'backend':<8} {'cold encoder':>13} {'cold router':>12} {'query':>9} {'route':>9} {'passages/s':>11}")
    for b in BACKENDS:
        print(f"{b:<8} {cold[b][0]:>12.2f}s {cold[b][1]:>11.2f}s {warm[b]['query_ms']:>7.1f}ms "
              f"{warm[b]['route_ms']:>7.1f}ms {warm[b]['passages_per_s']:>11.1f}")
    print(json.dumps({"benchmark": "encoder_backends", "cpu": cpu_model(), "cores": os.cpu_count(),
                      "load_average": [round(x, 2) for x in os.getloadavg()], "runs": runs, "threads": threads,
                      "cold_s": {b: [round(x, 3) for x in cold[b]] for b in cold},
                      "warm": {b: {k: round(v, 2) for k, v in warm[b].items()} for b in warm}}))


if __name__ == "__main__":
    main()
