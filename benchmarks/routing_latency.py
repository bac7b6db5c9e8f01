"""Route + retrieve latency of evidence-aware routing over six corpora (the demo knowledge base), beside the
trained router alone and "search every corpus and fuse", in the same run.

    python benchmarks/routing_latency.py [--quick] [--database-url URL]

Prints p50/p95 in milliseconds per mode, the CPU model and the load average. The 100k-unit target run is
``benchmarks/routing_e2e.py``'s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from machine import cpu_model  # noqa: E402  (benchmarks/ is on sys.path when a script runs)

QUESTIONS = [
    "How many clear nights were there in March 2024?", "What colour are Chelsea's eyes?",
    "what exposure do they use for the moon in the video", "When was the asteroid Carrow discovered?",
    "Summarise the night sky photography video", "how much did the glacier retreat in 2018",
    "What is 15% of 240?", "how long should roasted coffee beans rest", "show me the rocket at dusk",
    "can I renew library books online", "hello there", "Which month had the most meteors?",
]



def _percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return f"p50 {statistics.median(ordered):6.1f} ms  p95 {p95:6.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 10.")
    parser.add_argument("--database-url", default=os.environ.get("UNIVERSALRAG_DATABASE_URL"))
    args = parser.parse_args()

    from universalrag.config import Settings
    from universalrag.demo import DEMO_VIDEO_OPTIONS, build_demo_files
    from universalrag.ingest.pipeline import IngestOptions
    from universalrag.pipeline import UniversalRAG
    from universalrag.routing import TrainedRouter

    settings = Settings(database_url=args.database_url, schema="lat_" + uuid.uuid4().hex[:8])
    rag = UniversalRAG(settings=settings, generator=None, visual_encoder=None, log_decisions=False)
    try:
        folder = Path(tempfile.mkdtemp(prefix="latency-")) / "demo"
        build_demo_files(folder)
        assert rag.ingest([folder], options=IngestOptions(video=DEMO_VIDEO_OPTIONS)).ok
        corpora = rag.store.nonempty()
        router_only = UniversalRAG(settings=settings, store=rag.store, embedder=rag.embedder, generator=None,
                                   visual_encoder=None, router=TrainedRouter.default(), log_decisions=False)
        modes = {
            "evidence routing (route+retrieve)": lambda q: rag.search(q, allow_none=True),
            "trained router alone (route+retrieve)": lambda q: router_only.search(q, allow_none=True),
            "search all corpora + fuse": lambda q: rag.retrieve(q, routes=corpora),
        }
        for fn in modes.values():  # warm up: models loaded, caches filled
            fn(QUESTIONS[0])
        rounds = 3 if args.quick else 10
        timings: dict[str, list[float]] = {name: [] for name in modes}
        for _ in range(rounds):
            for question in QUESTIONS:
                for name, fn in modes.items():
                    started = time.perf_counter()
                    fn(question)
                    timings[name].append((time.perf_counter() - started) * 1000)
        print(f"CPU: {cpu_model()} ({os.cpu_count()} logical), load average {os.getloadavg()[0]:.1f}")
        print(f"{len(corpora)} corpora: {', '.join(corpora)}; {len(QUESTIONS)} questions x {rounds} rounds")
        base = statistics.median(timings["trained router alone (route+retrieve)"])
        for name, values in timings.items():
            print(f"{name:<40} {_percentiles(values)}  ({statistics.median(values) / base:.2f}x router alone)")
        router_only.close()
    finally:
        rag.store.downgrade("base")
        rag.close()


if __name__ == "__main__":
    main()
