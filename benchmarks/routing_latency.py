"""Route + retrieve latency of evidence-aware routing, beside the trained router alone and "search every corpus and
fuse", in the same run — over the demo knowledge base, or over ``--units`` synthetic units in six corpora.

    python benchmarks/routing_latency.py [--quick] [--database-url URL]
    python benchmarks/routing_latency.py --units 100000 [--vectors text-like|random] [--schema S] [--check]
        [--profile] [--old-rule] [--graph]

With ``--units`` the six corpora are filled as ``routing_e2e.py``'s latency part fills them (its
``LATENCY_CORPORA`` shares, two parts per multi-vector unit) in ``--schema`` (kept, and topped up, between runs;
default ``routing_latency_<units>_<vectors>``). ``--vectors text-like`` (default) draws each corpus's units with
:func:`machine.text_like_vectors`, calibrated on real MiniLM vectors of the 250 Wikipedia pages, and a unit's parts
near it (rows of one table, chunks of one file resemble each other); ``--vectors random`` draws independent random
directions, the fill of every figure before 2026-11-27 and the worst case for an HNSW graph: at the same beam a
search of 40,000 of them took 4.2 ms against 2.1 for text-like vectors (real questions as queries, Intel Xeon),
since no neighbour stands out. ``--old-rule`` adds a fourth mode, evidence routing with the exact-scan threshold of
before the index check (``exact_scan_rows`` 20,000: every corpus of this layout but ``paragraph`` scanned
exactly), so the effect of that rule is measured in the same run; not by default, since its exact scans of up to
30 MB a query, interleaved with the other modes, evict what they keep in the CPU's caches (evidence routing measured
30.4-31.5 ms at p50 beside it, 26.0-26.8 ms without it, same schema and load). ``--check`` runs the index check
(``universalrag.store.index_check``) of each corpus first; ``--profile`` prints where one routed query's time goes
(query embedding, router prior, each corpus's search alone, all probes together on one connection). With
``--graph`` it also prints both modes' p50 over the questions whose routing chose the graph's hits and over the others.

Every mode but the last corrects typos (``universalrag.spelling``); the last is evidence routing without the
correction, so its cost is measured in the same run: 2 of the 12 questions have a word the encoder does not know
("Carrow", "Summarise"), which synthetic units never spell, so each costs the full lookup of its neighbours.

Prints p50/p95 in milliseconds per mode and its ratio to the trained router alone, the CPU time a query costs
(this process's threads plus its database backends, read from ``/proc``: nearly independent of the load; on 2
cores the wall time at rest cannot be below half of it), the CPU model and the load average (before and after:
on a shared machine every wall-clock figure depends on it).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import ServerCPU, cpu_model, text_like_vectors, unit_rows
from machine import prewarm as prewarm_schema

QUESTIONS = [
    "How many clear nights were there in March 2024?",
    "What colour are Chelsea's eyes?",
    "what exposure do they use for the moon in the video",
    "When was the asteroid Carrow discovered?",
    "Summarise the night sky photography video",
    "how much did the glacier retreat in 2018",
    "What is 15% of 240?",
    "how long should roasted coffee beans rest",
    "show me the rocket at dusk",
    "can I renew library books online",
    "hello there",
    "Which month had the most meteors?",
]
#: The corpora of the synthetic layout and their shares of the units (as ``routing_e2e.py``'s latency part).
LATENCY_CORPORA = {"paragraph": 0.40, "document": 0.10, "table": 0.15, "image": 0.15, "clip": 0.15, "video": 0.05}
#: The exact-scan threshold before the index check existed.
OLD_EXACT_ROWS = 20_000
#: The kinds of synthetic vectors ``--vectors`` chooses from (see the module docstring).
VECTOR_KINDS = ("text-like", "random")


def synthetic_schema(units: int, vectors: str) -> str:
    """The default schema of ``units`` synthetic units of the kind ``vectors``."""
    return f"routing_latency_{units}_{vectors.replace('-', '')}"


def _percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def _unit_vectors(rng: Any, n: int, dim: int, kind: str) -> Any:
    """``n`` unit vectors of the ``kind`` of :data:`VECTOR_KINDS`."""
    if kind == "text-like":
        return text_like_vectors(rng, n, dim=dim)
    if kind == "random":
        return unit_rows(rng.standard_normal((n, dim)))
    raise ValueError(f"vectors must be one of {VECTOR_KINDS}, got {kind!r}")


def near_rows(rng: Any, rows: Any, spread: float = 0.5) -> Any:
    """A vector near each of ``rows`` (unit length; cosine about 0.9 at the default spread), each its own offset."""
    return unit_rows(rows + spread * unit_rows(rng.normal(size=rows.shape)))


def fill_synthetic(
    rag: Any, units: int, *, seed: int = 0, vectors: str = "text-like", log: Callable[[str], None] = print
) -> None:
    """Top up the six corpora of :data:`LATENCY_CORPORA` to ``units`` units in all (``vectors`` of
    :data:`VECTOR_KINDS`; two parts per unit of a multi-vector corpus, near it unless the vectors are random)."""
    import numpy as np

    from universalrag.types import Unit

    rag.init()
    counts = rag.store.counts()
    dim = rag.embedder.dimension
    started = time.perf_counter()
    for number, (corpus, share) in enumerate(LATENCY_CORPORA.items()):
        want = int(units * share) - counts.get(corpus, 0)
        multi = rag.store.corpus(corpus).multi_vector
        # each corpus its own draw (its own topics), different from the units it already holds
        rng = np.random.default_rng([seed, number, counts.get(corpus, 0)])
        while want > 0:
            n = min(want, 2000)
            vecs = _unit_vectors(rng, n, dim, vectors)
            parts = None
            if multi:
                parts = (
                    _unit_vectors(rng, 2 * n, dim, vectors)
                    if vectors == "random"
                    else near_rows(rng, np.repeat(vecs, 2, axis=0))
                ).reshape(n, 2, dim)
            batch = [
                Unit(
                    id=str(uuid.uuid4()),
                    corpus=corpus,
                    content=f"synthetic {corpus} unit",
                    embedding=v,
                    parts=("part one", "part two") if parts is not None else (),
                    part_embeddings=parts[i].tolist() if parts is not None else (),
                )
                for i, v in enumerate(vecs.tolist())
            ]
            rag.store.add_units(batch)
            want -= n
    if time.perf_counter() - started > 1:
        log(f"filled the synthetic corpora in {time.perf_counter() - started:.0f} s")


def _time(fn: Callable[[str], Any], questions: list[str], rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        for q in questions:
            started = time.perf_counter()
            fn(q)
            out.append((time.perf_counter() - started) * 1000)
    return out


def profile(rag: Any, questions: list[str], rounds: int) -> None:
    """Where one routed query's time goes, each step timed alone (medians)."""
    searcher = rag.searcher
    corpora = rag.routing.candidates(searcher, rag.plan(questions[0]))
    steps: dict[str, Callable[[str], Any]] = {
        "query embedding": rag.embedder.embed_query,
        "router prior (forward pass)": rag.router.route,
    }
    vectors = {q: rag.embedder.embed_query(q) for q in questions}  # each question its own vector (and pages)
    for corpus in corpora:
        steps[f"search {corpus} alone (k=5)"] = lambda q, c=corpus: rag.store.search(c, vectors[q].tolist(), k=5)

    def probes(q: str) -> None:
        plan = rag.plan(q)
        plan.embeddings[rag.embedder.name] = vectors[q]
        searcher.probe(plan, corpora)  # one connection, the statements of all corpora sent together per step

    steps[f"{len(corpora)} probes together (search_many)"] = probes
    steps["route + retrieve"] = lambda q: rag.retrieve(q)
    print("where the time goes (median ms, each step alone):")
    for name, fn in steps.items():
        print(f"  {name:<34} {statistics.median(_time(fn, questions, rounds)):7.1f}")


def graph_split(rag: Any, timings: dict[str, list[float]], with_graph: str, without_graph: str) -> None:
    """p50 of the modes ``with_graph`` and ``without_graph`` over the questions whose routing chose the graph's hits
    and over the others (what a question the graph does not answer pays for its walk)."""
    chosen = []
    for question in QUESTIONS:
        plan = rag.plan(question, allow_none=True)
        rag.route(plan)
        chosen.append(bool(plan.graph_hits))
    print(f"the graph's hits were chosen for {sum(chosen)} of {len(QUESTIONS)} questions")
    for label, wanted in (("graph chosen", True), ("graph not chosen", False)):
        if wanted not in chosen:
            continue
        figures = []
        for shown, name in (("with the graph", with_graph), ("walk_graph=False", without_graph)):
            values = [t for i, t in enumerate(timings[name]) if chosen[i % len(QUESTIONS)] == wanted]
            figures.append(f"{shown} p50 {statistics.median(values):6.1f} ms")
        print(f"  {label + ':':<18} " + ", ".join(figures))


def prewarm(store: Any) -> None:
    """Read every table and index of ``store``'s schema into the server's buffers (``pg_prewarm``)."""
    import sqlalchemy as sa

    blocks = prewarm_schema(store, mode="buffer")
    with store.engine.connect() as conn:
        buffers = conn.execute(sa.text("SELECT current_setting('shared_buffers')")).scalar_one()
    print(f"prewarmed {blocks * 8 // 1024} MB of {store.schema} (shared_buffers {buffers})")


def int8_variant(settings: Any, rag: Any) -> Any:
    """A pipeline like ``rag`` (its store, its combiner) whose query embedding and router run on 8-bit weights."""
    from universalrag.embed import TransformersEmbedder
    from universalrag.embed.onnx_bert import ONNX_WEIGHTS_ENV
    from universalrag.pipeline import UniversalRAG
    from universalrag.routing import TrainedRouter

    with mock.patch.dict(os.environ, {ONNX_WEIGHTS_ENV: "int8"}):  # read when a session is built
        embedder, router = TransformersEmbedder.bundled_minilm(), TrainedRouter.default()
        embedder.embed_query("warm up")
        router.route("warm up")
    return UniversalRAG(
        settings=settings,
        embedder=embedder,
        router=router,
        combiner=rag.combiner,
        generator=None,
        visual_encoder=None,
        log_decisions=False,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 10.")
    parser.add_argument("--database-url", default=os.environ.get("UNIVERSALRAG_DATABASE_URL"))
    parser.add_argument("--units", type=int, help="synthetic units over six corpora instead of the demo")
    parser.add_argument(
        "--schema",
        help="schema of the synthetic corpora (default "
        "routing_latency_<units>_<vectors>; it must hold vectors of that kind)",
    )
    parser.add_argument(
        "--vectors",
        choices=VECTOR_KINDS,
        default="text-like",
        help="synthetic vectors shaped like real text embeddings (default), or random directions "
        "(the worst case for HNSW, the fill of the figures before 2026-11-27)",
    )
    parser.add_argument("--check", action="store_true", help="run each corpus's index check first")
    parser.add_argument(
        "--graph",
        action="store_true",
        help="with --units: fill a synthetic knowledge graph over the units (graph_latency.py) and add evidence "
        "routing with walk_graph=False, so the graph's cost is measured in the same run",
    )
    parser.add_argument("--profile", action="store_true", help="print where one routed query's time goes")
    parser.add_argument(
        "--prewarm",
        action="store_true",
        help="read the schema's tables and indexes into the server's buffers first (pg_prewarm, "
        "created if missing), as a server in use holds them",
    )
    parser.add_argument(
        "--old-rule",
        action="store_true",
        help="add evidence routing with the exact-scan threshold of before the index check",
    )
    parser.add_argument(
        "--int8",
        action="store_true",
        help="add evidence routing with the query embedding and the router on 8-bit weights "
        "(UNIVERSALRAG_ONNX_WEIGHTS=int8)",
    )
    args = parser.parse_args()

    from universalrag.config import Settings
    from universalrag.pipeline import UniversalRAG
    from universalrag.routing import TrainedRouter

    synthetic = args.units is not None
    schema = args.schema or (synthetic_schema(args.units, args.vectors) if synthetic else "lat_" + uuid.uuid4().hex[:8])
    # the timed questions repeat (rounds, modes): each is embedded every time, as a new question is
    settings = Settings.from_env().with_(database_url=args.database_url, schema=schema, query_vectors=0)
    rag = UniversalRAG(settings=settings, generator=None, visual_encoder=None, log_decisions=False)
    backends = ServerCPU()
    backends.watch(rag.store.engine)
    rag.embedder.embed_query("warm up")  # load both models before threads use them
    rag.router.route("warm up")
    others: list[UniversalRAG] = []
    try:
        if synthetic:
            fill_synthetic(rag, args.units, vectors=args.vectors)
            corpora = list(LATENCY_CORPORA)
            if args.graph:
                from graph_latency import fill_graph

                fill_graph(rag.store, corpora)
        else:
            from universalrag.demo import DEMO_VIDEO_OPTIONS, build_demo_files
            from universalrag.ingest.pipeline import IngestOptions

            folder = Path(tempfile.mkdtemp(prefix="latency-")) / "demo"
            build_demo_files(folder)
            assert rag.ingest([folder], options=IngestOptions(video=DEMO_VIDEO_OPTIONS)).ok
            corpora = rag.store.nonempty()
        if args.prewarm:
            prewarm(rag.store)
        if args.check:
            from universalrag.store.index_check import check_index

            for corpus in corpora:
                c = check_index(rag.store, corpus)
                print(f"index check {corpus}: {c.rows} rows searched, recall {c.recall:.2f} over {c.queries} queries")

        def variant(**kwargs: Any) -> UniversalRAG:
            other = UniversalRAG(
                settings=settings,
                store=rag.store,
                embedder=rag.embedder,
                generator=None,
                visual_encoder=None,
                log_decisions=False,
                **kwargs,
            )
            others.append(other)
            return other

        router_only = variant(router=TrainedRouter.default())
        router_only.router.route("warm up")
        unspelled = variant(spelling=False)
        modes: dict[str, Callable[[str], Any]] = {
            "evidence routing (route+retrieve)": lambda q: rag.search(q, allow_none=True),
            "trained router alone (route+retrieve)": lambda q: router_only.search(q, allow_none=True),
            "search all corpora + fuse": lambda q: rag.retrieve(q, routes=corpora),
            "evidence routing, spelling=False": lambda q: unspelled.search(q, allow_none=True),
        }
        if synthetic and args.graph:
            without_graph = variant(walk_graph=False)
            modes["evidence routing, walk_graph=False"] = lambda q: without_graph.search(q, allow_none=True)
        if synthetic and args.old_rule:
            old = UniversalRAG(
                settings=settings.with_(exact_scan_rows=OLD_EXACT_ROWS),
                embedder=rag.embedder,
                router=rag.router,
                combiner=rag.combiner,
                generator=None,
                visual_encoder=None,
                log_decisions=False,
            )
            others.append(old)
            backends.watch(old.store.engine)
            modes[f"evidence routing, exact <= {OLD_EXACT_ROWS} rows"] = lambda q: old.search(q, allow_none=True)
        if args.int8:
            quantized = int8_variant(settings, rag)
            others.append(quantized)
            backends.watch(quantized.store.engine)
            modes["evidence routing, int8 query weights"] = lambda q: quantized.search(q, allow_none=True)
        for fn in modes.values():  # warm up: caches filled
            fn(QUESTIONS[0])
        rounds = 3 if args.quick else 10
        load_before = os.getloadavg()[0]
        timings = {name: [] for name in modes}  # type: dict[str, list[float]]
        first = {name: [] for name in modes}  # type: dict[str, list[float]]  # the times it asked a question first
        cpu = {name: 0.0 for name in modes}
        names = list(modes)
        for r in range(rounds):  # modes interleaved: they see the same load
            for n, question in enumerate(QUESTIONS):
                # the first mode to ask a question reads its index pages into the server's buffers: the mode that
                # goes first changes with every question, so that no mode pays that more often than another
                start = (r * len(QUESTIONS) + n) % len(names)
                for name in names[start:] + names[:start]:
                    fn = modes[name]
                    cpu_before = time.process_time() * 1000 + backends.ms()
                    started = time.perf_counter()
                    fn(question)
                    timings[name].append((time.perf_counter() - started) * 1000)
                    if name == names[start]:
                        first[name].append(timings[name][-1])
                    cpu[name] += time.process_time() * 1000 + backends.ms() - cpu_before
        print(
            f"CPU: {cpu_model()} ({os.cpu_count()} logical), load average {load_before:.1f} before, "
            f"{os.getloadavg()[0]:.1f} after"
        )
        units = sum(rag.store.counts()[c] for c in corpora)
        shape = f"{args.vectors} vectors" if synthetic else "the demo"
        print(
            f"{len(corpora)} corpora, {units} units ({shape}): {', '.join(corpora)}; {len(QUESTIONS)} questions x "
            f"{rounds} rounds"
        )
        base = statistics.median(timings["trained router alone (route+retrieve)"])
        for name, values in timings.items():
            p50, p95 = _percentiles(values)
            print(
                f"{name:<40} p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  ({p50 / base:.2f}x router alone)  "
                f"CPU {cpu[name] / len(values):5.1f} ms/query  "
                f"asked first: p50 {_percentiles(first[name])[0]:5.1f} ms ({len(first[name])}x)"
            )
        if synthetic and args.graph:
            graph_split(rag, timings, "evidence routing (route+retrieve)", "evidence routing, walk_graph=False")
        if args.profile:
            profile(rag, QUESTIONS, rounds)
    finally:
        for other in others:
            other.close()
        if not synthetic:
            rag.store.downgrade("base")
        rag.close()


if __name__ == "__main__":
    main()
