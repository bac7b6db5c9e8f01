"""The bundled MiniLM on the CPU: ONNX Runtime vs NumPy vs torch backends, in one run.

    python benchmarks/encoder_backends.py [--quick] [--threads N]
    python benchmarks/encoder_backends.py --bulk [--texts FILE] [--rounds 3]

Measures, for each backend: the time to import and load it in a fresh process (what a cold command pays),
one-query latency (what ``search`` pays per query once loaded) and batch throughput on real passages from
``tests/data/corpus`` (what ``ingest`` pays), plus the trained router's load and per-query time. Prints the
CPU model and the load average beside the figures, and ends with one JSON line.

``--bulk`` compares bulk embedding only, in one process, the contenders interleaved round by round, on the texts
``benchmarks/ingest.py`` embeds (``--texts``, default ``benchmarks/out/ingest_texts.json`` written by it; the
~120-word passages when it is missing): the default (ONNX Runtime's bulk session, a thread per core, batches of
``BULK_BATCH``, longest first), ONNX Runtime with batches of 64 and in input order, and torch (threads = cores,
``UNIVERSALRAG_INFERENCE=torch``) with batches of 64 (its default) and of ``BULK_BATCH``. Wall and CPU seconds
(medians); CPU time is the steadier figure on a shared machine. Also the padded tokens each batching costs.
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
    chunks = [" ".join(words[i : i + 120]) for i in range(0, len(words), 120)]
    return [chunks[i % len(chunks)] for i in range(count)]


def cold_load(backend: str, runs: int, env: dict[str, str]) -> tuple[float, float]:
    """Median seconds a fresh process takes to import + load + encode one query, then to load + route one."""
    enc, rout = [], []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", _LOAD, QUERY],
            env={**env, "UNIVERSALRAG_INFERENCE": backend},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
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
    embedder.embed(texts)  # builds what bulk calls use (ONNX Runtime's bulk session): no timed run pays it
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
    return {
        "query_ms": 1000 * statistics.median(query),
        "route_ms": 1000 * statistics.median(route),
        "passages_per_s": len(texts) / statistics.median(batch),
    }


def _padded(lengths: list[int], order: list[int], size: int) -> int:
    """Tokens a forward pass computes when ``order`` is cut into batches of ``size``, each padded to its longest."""
    return sum(
        max(lengths[i] for i in order[s : s + size]) * len(order[s : s + size]) for s in range(0, len(order), size)
    )


def bulk(texts: list[str], rounds: int) -> dict[str, dict[str, float]]:
    """Bulk embedding of ``texts`` by each contender, interleaved; median wall and CPU seconds, worst cosine
    against torch."""
    import numpy as np

    from universalrag.embed import TransformersEmbedder
    from universalrag.embed.numpy_bert import tokenize_batch
    from universalrag.embed.onnx_bert import OnnxBert, bulk_threads
    from universalrag.embed.transformers_encoder import BULK_BATCH

    os.environ.pop("UNIVERSALRAG_INFERENCE", None)
    default = TransformersEmbedder.bundled_minilm(device="cpu")
    assert default.bulk_backend == "onnx", "--bulk needs onnxruntime"
    session = OnnxBert.load(default.path, threads=bulk_threads())
    by_length = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)

    def onnx(size: int, order: list[int]) -> np.ndarray:
        out = np.empty((len(texts), default.dimension), dtype=np.float32)
        for s in range(0, len(order), size):
            idx = order[s : s + size]
            ids, mask = tokenize_batch(session.tokenizer, [texts[i] for i in idx], max_length=256)
            pooled = session.mean_pooled(ids, mask)
            out[idx] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return out

    def torch(embedder: TransformersEmbedder) -> np.ndarray:
        os.environ["UNIVERSALRAG_INFERENCE"] = "torch"
        try:
            return embedder.embed(texts)
        finally:
            del os.environ["UNIVERSALRAG_INFERENCE"]

    torch64 = TransformersEmbedder.bundled_minilm(device="cpu", batch_size=64)
    torch_small = TransformersEmbedder.bundled_minilm(device="cpu", batch_size=BULK_BATCH)
    contenders = {
        f"onnx, batches of {BULK_BATCH}, longest first (default)": lambda: default.embed(texts),
        "onnx, batches of 64, longest first": lambda: onnx(64, by_length),
        f"onnx, batches of {BULK_BATCH}, input order": lambda: onnx(BULK_BATCH, list(range(len(texts)))),
        "torch, batches of 64, longest first (before)": lambda: torch(torch64),
        f"torch, batches of {BULK_BATCH}, longest first": lambda: torch(torch_small),
    }
    reference = torch(torch64)  # also loads torch: no contender pays a load
    default.embed(texts[:64])
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in contenders}
    worst: dict[str, float] = {}
    for r in range(rounds):
        for name, run in contenders.items():
            load = os.getloadavg()[0]
            wall, cpu = time.perf_counter(), time.process_time()
            vectors = run()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            times[name].append((wall, cpu))
            worst[name] = min(worst.get(name, 1.0), float((vectors * reference).sum(axis=1).min()))
            print(f"round {r}  {name:<44} wall {wall:6.2f} s  cpu {cpu:6.2f} s  load {load:.1f}", flush=True)
    return {
        name: {
            "wall_s": statistics.median(w for w, _ in t),
            "cpu_s": statistics.median(c for _, c in t),
            "texts_per_s": len(texts) / statistics.median(w for w, _ in t),
            "worst_cosine_vs_torch": worst[name],
        }
        for name, t in times.items()
    }


def bulk_main(args: argparse.Namespace) -> None:
    """``--bulk``: the table and JSON line of :func:`bulk`, with the padding each batching costs."""
    from universalrag.embed.numpy_bert import NumpyBert, tokenize_batch
    from universalrag.embed.onnx_bert import bulk_threads
    from universalrag.embed.transformers_encoder import BULK_BATCH

    source = args.texts if args.texts.is_file() else None
    texts = json.loads(source.read_text(encoding="utf-8")) if source else passages(256)
    from universalrag.embed import bundled_minilm

    tok = NumpyBert.load_tokenizer(bundled_minilm().path)
    lengths = [int(n) for n in tokenize_batch(tok, texts, max_length=256)[1].sum(axis=1)]
    by_length = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
    padding = {
        f"{size}, {label}": _padded(lengths, order, size)
        for size in (BULK_BATCH, 64)
        for label, order in (("longest first", by_length), ("input order", list(range(len(texts)))))
    }
    results = bulk(texts, args.rounds)
    print(
        f"CPU {cpu_model()} x{os.cpu_count()}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"{len(texts)} texts from {source or 'the test corpus (120-word passages)'}; {sum(lengths)} tokens; "
        f"{args.rounds} rounds, interleaved; threads {bulk_threads()} (ONNX) / torch's default"
    )
    print(f"padded tokens by batch size and order: {padding}")
    print(f"{'contender':<46} {'wall s':>8} {'cpu s':>7} {'texts/s':>8} {'cosine':>8}")
    for name, r in results.items():
        print(
            f"{name:<46} {r['wall_s']:>8.2f} {r['cpu_s']:>7.2f} {r['texts_per_s']:>8.1f} "
            f"{r['worst_cosine_vs_torch']:>8.5f}"
        )
    print(
        json.dumps(
            {
                "benchmark": "encoder_backends_bulk",
                "cpu": cpu_model(),
                "cores": os.cpu_count(),
                "load_average": [round(x, 2) for x in os.getloadavg()],
                "texts": len(texts),
                "tokens": sum(lengths),
                "padded_tokens": padding,
                "contenders": {
                    k: {m: round(v, 5 if m.startswith("worst") else 2) for m, v in r.items()}
                    for k, r in results.items()
                },
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs and 64 passages.")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="OMP_NUM_THREADS and UNIVERSALRAG_ONNX_THREADS for every backend (default: as the CLI runs queries, 1).",
    )
    parser.add_argument("--bulk", action="store_true", help="only the bulk-embedding comparison (see above)")
    parser.add_argument(
        "--texts",
        type=Path,
        default=REPO / "benchmarks" / "out" / "ingest_texts.json",
        help="JSON list of texts for --bulk (default: %(default)s, written by ingest.py)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds for --bulk")
    args = parser.parse_args()
    if args.bulk:
        bulk_main(args)
        return
    runs, count = (3, 64) if args.quick else (5, 256)
    threads = str(args.threads or 1)
    env = {**os.environ, "OMP_NUM_THREADS": threads, "UNIVERSALRAG_ONNX_THREADS": threads}
    cold = {b: cold_load(b, runs, env) for b in BACKENDS}
    warm = {}
    for backend in BACKENDS:  # in a child each, so that one backend's threads do not linger in the other
        code = (
            "import json,sys; sys.path.insert(0, sys.argv[1]); import encoder_backends as b; "
            f"print(json.dumps(b.in_process({backend!r}, b.passages({count}), {runs})))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code, str(Path(__file__).parent)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        warm[backend] = json.loads(out.strip().splitlines()[-1])
    print(
        f"CPU {cpu_model()} x{os.cpu_count()}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"{runs} runs; {count} passages of ~120 words; OMP_NUM_THREADS={threads}"
    )
    print(f"{'backend':<8} {'cold encoder':>13} {'cold router':>12} {'query':>9} {'route':>9} {'passages/s':>11}")
    for b in BACKENDS:
        print(
            f"{b:<8} {cold[b][0]:>12.2f}s {cold[b][1]:>11.2f}s {warm[b]['query_ms']:>7.1f}ms "
            f"{warm[b]['route_ms']:>7.1f}ms {warm[b]['passages_per_s']:>11.1f}"
        )
    print(
        json.dumps(
            {
                "benchmark": "encoder_backends",
                "cpu": cpu_model(),
                "cores": os.cpu_count(),
                "load_average": [round(x, 2) for x in os.getloadavg()],
                "runs": runs,
                "threads": threads,
                "cold_s": {b: [round(x, 3) for x in cold[b]] for b in cold},
                "warm": {b: {k: round(v, 2) for k, v in warm[b].items()} for b in warm},
            }
        )
    )


if __name__ == "__main__":
    main()
