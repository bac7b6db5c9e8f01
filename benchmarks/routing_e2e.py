"""Judge routing by what it retrieves: realistic questions over real corpora, every strategy in the same run.

    python benchmarks/routing_e2e.py [--quick] [--database-url URL] [--schema NAME] [--out benchmarks/out]

One knowledge base holds everything (a user's corpora are not split by benchmark): the wikitables pages
ingested as a folder, the demo, Python's language-reference topics, captioned photographs and subtitled
videos (see ``routing_data.py``). Questions of the ``report`` split are asked (``--split`` to change); for each
strategy it measures the share of answerable questions whose gold is in the top 5 (wikitables: the page; own
questions: the gold unit), false ``none`` on answerable questions, correct ``none`` on arithmetic and chit-chat,
and route + retrieve latency. Strategies:

- ``routed``        the library default, ``UniversalRAG.retrieve(query, allow_none=True)`` with the shipped router
                    and combiner (also when the schema holds an adapted combiner; ``allow_none`` so that a ``none``
                    conclusion searches nothing and is counted as such);
- ``trained``       the shipped TrainedRouter's decision → ``retrieve(routes=...)``;
- ``all_fused``     every non-empty corpus searched, fused the library's default way (by similarity where the
                    corpora share one embedding space, else by reciprocal rank);
- ``all_rrf``       the same searches fused by reciprocal rank (the earlier default);
- ``oracle``        the gold corpus only (``none`` for unanswerable questions);
- ``descriptions``  similarity to the corpus descriptions (LlamaIndex's EmbeddingSingleSelector idea);
- ``adapted``       with ``--adapt``, when ``UniversalRAG.adapt_router`` exists: routed after adapting on the
                    tune split (not stored in the schema);
- ``routed_baseline`` with ``--baseline-combiner PATH``: routed with that combiner (before/after in one run);
- ``routed_no_graph`` with ``--graph compare``: routed with ``walk_graph=False`` (``routed`` walks the knowledge
                    graph, as the library does by default; ``--graph off`` turns the walk off in ``routed``).

A latency part then fills six corpora with synthetic vectors (100k units; ``--quick``: 6k) and times route +
retrieve. Prints a table, writes ``routing_e2e.png`` and ``routing_e2e.json`` into ``--out`` and ends with one
JSON line on stdout (``--no-latency`` skips the latency part). Ingestion is idempotent, so a second run re-uses the
knowledge base.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import cpu_model  # noqa: E402
from routing_data import BenchQuestion, find_wikitables, prepare_benchmark, tune_examples  # noqa: E402
from routing_latency import LATENCY_CORPORA, VECTOR_KINDS, fill_synthetic, synthetic_schema  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
K = 5
TARGETS = {"vs_oracle": -3.0, "vs_fused": 5.0, "false_none": 0.02, "correct_none": 0.90}
Strategy = Callable[[BenchQuestion], list[Any]]


def machine() -> dict[str, Any]:
    """CPU model, core count and load average (stated beside every timing)."""
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "load": [round(x, 2) for x in os.getloadavg()]}


def make_strategies(
    rag: Any, *, adapted: Any = None, baseline: Any = None, no_graph: Any = None
) -> dict[str, Strategy]:
    """The strategies by name; each maps a question to its top-``K`` hits (``[]`` means "none"). ``no_graph``: a
    facade built with ``walk_graph=False``, for ``routed_no_graph``."""
    from universalrag.fusion import fuse
    from universalrag.retrieve import routing_candidates
    from universalrag.routing import ROUTE_DESCRIPTIONS, ExampleRouter, TrainedRouter
    from universalrag.types import NO_RETRIEVAL

    corpora = rag.store.nonempty()
    trained = TrainedRouter.default()
    descriptions = ExampleRouter.from_descriptions(
        {NO_RETRIEVAL: ROUTE_DESCRIPTIONS[NO_RETRIEVAL], **{c: rag.store.corpus(c).description for c in corpora}},
        embedder=rag.embedder,
    )

    def by(router: Any) -> Strategy:
        def run(q: BenchQuestion) -> list[Any]:
            decision = router.route(q.query, candidates=routing_candidates(rag.store))
            return rag.retrieve(q.query, k=K, routes=decision.routes)

        return run

    out: dict[str, Strategy] = {
        "routed": lambda q: rag.retrieve(q.query, k=K, allow_none=True),
        "trained": by(trained),
        "all_fused": lambda q: rag.retrieve(q.query, k=K, routes=corpora),
        "all_rrf": lambda q: fuse([rag.retrieve(q.query, k=K, routes=[c]) for c in corpora], method="rrf"),
        "oracle": lambda q: rag.retrieve(q.query, k=K, routes=[q.corpus]),
        "descriptions": by(descriptions),
    }
    if adapted is not None:
        out["adapted"] = lambda q: adapted.retrieve(q.query, k=K, allow_none=True)
    if baseline is not None:
        out["routed_baseline"] = lambda q: baseline.retrieve(q.query, k=K, allow_none=True)
    if no_graph is not None:
        out["routed_no_graph"] = lambda q: no_graph.retrieve(q.query, k=K, allow_none=True)
    return out


def ensure_graph(rag: Any, log: Callable[[str], None]) -> dict[str, int]:
    """Build the knowledge graph from the stored units when the schema holds none (ingested before the graph
    existed, or with it turned off), as ingesting them today would; the graph's counts beside the stored sources."""
    stats = rag.graph.stats()
    stored = len(rag.store.sources())
    if stats.mentions == 0 and stored:
        log(f"graph: none for the {stored} stored sources; building it from their units")
        rag.graph.build(vectors=False, align=False)
        stats = rag.graph.stats()
    counts = {"stored_sources": stored, "sources": stats.sources, "entities": stats.entities}
    counts.update(relations=stats.relations, mentions=stats.mentions)
    log(f"graph: {counts}")
    return counts


def _p(values: Sequence[float], q: float) -> float:
    return (
        float(statistics.quantiles(values, n=100)[int(q) - 1]) if len(values) > 1 else float(values[0] if values else 0)
    )


def evaluate(strategy: Strategy, questions: Sequence[BenchQuestion]) -> dict[str, Any]:
    """Top-``K`` recall (overall and per source), false and correct ``none``, latency p50/p95."""
    for q in questions[:3]:
        strategy(q)  # warm caches, connections and models
    rows, times = [], []
    for q in questions:
        start = time.perf_counter()
        hits = list(strategy(q))[:K]
        times.append((time.perf_counter() - start) * 1000)
        unit = any(h.id in q.gold_units for h in hits)
        uri = any(h.uri == q.uri for h in hits)
        rows.append((q, uri if q.judge == "uri" else unit, unit, not hits))
    answerable = [r for r in rows if r[0].answerable]
    unanswerable = [r for r in rows if not r[0].answerable]
    strict = [r for r in answerable if r[0].gold_units]

    def share(items: Sequence[Any], pick: Callable[[Any], bool]) -> float | None:
        return round(sum(map(pick, items)) / len(items), 4) if items else None

    sources = sorted({r[0].source for r in answerable})
    return {
        "hit5": share(answerable, lambda r: r[1]),
        "unit5": share(strict, lambda r: r[2]),
        "per_source": {s: share([r for r in answerable if r[0].source == s], lambda r: r[1]) for s in sources},
        "false_none": share(answerable, lambda r: r[3]),
        "correct_none": share(unanswerable, lambda r: r[3]),
        "p50_ms": round(_p(times, 50), 2),
        "p95_ms": round(_p(times, 95), 2),
        "n_answerable": len(answerable),
        "n_unanswerable": len(unanswerable),
    }


def latency_part(
    settings: Any,
    embedder: Any,
    *,
    schema: str,
    units: int,
    queries: Sequence[str],
    seed: int = 0,
    vectors: str = "text-like",
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Route + retrieve p50 with ``units`` synthetic units over six corpora (``vectors`` of
    ``routing_latency.VECTOR_KINDS``, written through the Store), beside searching all six and fusing, in the same
    run."""
    from universalrag.pipeline import UniversalRAG

    rag = UniversalRAG(settings=settings.with_(schema=schema), embedder=embedder, generator=None, visual_encoder=None)
    fill_synthetic(rag, units, seed=seed, vectors=vectors, log=log)
    corpora = list(LATENCY_CORPORA)
    out: dict[str, Any] = {
        "units": sum(rag.store.counts()[c] for c in corpora),
        "corpora": len(corpora),
        "vectors": vectors,
        "queries": len(queries),
    }
    for name, run in (
        ("routed", lambda q: rag.retrieve(q, k=K)),
        ("all_fused", lambda q: rag.retrieve(q, k=K, routes=corpora)),
    ):
        for q in queries[:3]:
            run(q)
        times = []
        for q in queries:
            t = time.perf_counter()
            run(q)
            times.append((time.perf_counter() - t) * 1000)
        out[f"{name}_p50_ms"], out[f"{name}_p95_ms"] = round(_p(times, 50), 2), round(_p(times, 95), 2)
    rag.close()
    return out


def targets(results: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The targets for ``routed`` (``TARGETS``), each with its value and whether it is met (those comparing with a
    strategy not run are left out). The recall gaps are given
    twice: on ``hit5`` (a Wikipedia question counts when its page is in the top 5) and on ``unit5`` (only when the
    unit that answers is: the question's own table, the passage holding the answer)."""
    if "routed" not in results:
        return {}
    r = results["routed"]
    out: dict[str, dict[str, Any]] = {}
    for metric, suffix in (("hit5", ""), ("unit5", "_unit")):
        for name, key in (("oracle", "vs_oracle"), ("all_fused", "vs_fused")):
            if name not in results:
                continue  # not run (--strategies)
            gap = round(100 * ((r[metric] or 0) - (results[name][metric] or 0)), 1)
            sign = "+" if TARGETS[key] > 0 else ""
            out[f"routed_vs_{name}_points{suffix}"] = {
                "value": gap,
                "target": f">= {sign}{TARGETS[key]}",
                "met": gap >= TARGETS[key],
            }
    out["false_none"] = {
        "value": r["false_none"],
        "target": f"<= {TARGETS['false_none']}",
        "met": (r["false_none"] or 0) <= TARGETS["false_none"],
    }
    out["correct_none"] = {
        "value": r["correct_none"],
        "target": f">= {TARGETS['correct_none']}",
        "met": r["correct_none"] is not None and r["correct_none"] >= TARGETS["correct_none"],
    }
    return out


def _pct(x: float | None) -> str:
    return "     -" if x is None else f"{x:6.1%}"


def print_table(results: dict[str, dict[str, Any]], goals: dict[str, dict[str, Any]], out: Any) -> None:
    """The results as a text table (stderr), targets underneath."""
    sources = sorted({s for r in results.values() for s in r["per_source"]})
    head = f"{'strategy':14} {'hit@5':>6} {'unit@5':>6} " + " ".join(f"{s[:10]:>10}" for s in sources)
    print(head + f" {'false none':>10} {'corr none':>9} {'p50 ms':>7} {'p95 ms':>7}", file=out)
    for name, r in results.items():
        cells = " ".join(f"{_pct(r['per_source'].get(s)):>10}" for s in sources)
        print(
            f"{name:14} {_pct(r['hit5'])} {_pct(r['unit5'])} {cells} {_pct(r['false_none']):>10} "
            f"{_pct(r['correct_none']):>9} {r['p50_ms']:7.1f} {r['p95_ms']:7.1f}",
            file=out,
        )
    for key, goal in goals.items():
        print(
            f"  target {key}: {goal['value']} (want {goal['target']}) -> {'met' if goal['met'] else 'NOT met'}",
            file=out,
        )


def plot(results: dict[str, dict[str, Any]], path: Path, *, title: str) -> bool:
    """Grouped bars: top-5 recall per question set and correct ``none``, one bar per strategy."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    groups = sorted({s for r in results.values() for s in r["per_source"]}) + ["all answerable", "correct none"]
    width = 0.8 / len(results)
    fig, ax = plt.subplots(figsize=(11, 4.8))
    for i, (name, r) in enumerate(results.items()):
        values = [r["per_source"].get(g) for g in groups[:-2]] + [r["hit5"], r["correct_none"]]
        ax.bar([j + i * width for j in range(len(groups))], [v or 0 for v in values], width, label=name)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(groups))], groups, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(f"share (gold in top {K} / correct none)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="few pages, topics, questions and units (about 2 min)")
    ap.add_argument("--database-url", help="PostgreSQL URL (default: UNIVERSALRAG_DATABASE_URL, else embedded)")
    ap.add_argument("--schema", help="schema of the knowledge base (default routing_e2e[_quick])")
    ap.add_argument(
        "--latency-schema", help="schema of the synthetic latency corpora (default routing_latency_<units>_<vectors>)"
    )
    ap.add_argument(
        "--latency-vectors",
        choices=VECTOR_KINDS,
        default="text-like",
        help="synthetic vectors of the latency part: shaped like text embeddings (default) or random "
        "directions (the worst case for HNSW; see routing_latency.py)",
    )
    ap.add_argument("--wikitables", type=Path, default=find_wikitables(), help="the shared wikitables folder")
    ap.add_argument("--pages", type=int, help="wikitables pages to ingest (default: all; --quick: 6)")
    ap.add_argument("--max-questions", type=int, help="cap per question set (default: none; --quick: 30)")
    ap.add_argument("--split", choices=["report", "tune", "all"], default="report")
    ap.add_argument("--latency-units", type=int, help="synthetic units (default 100000; --quick: 6000)")
    ap.add_argument("--latency-queries", type=int, help="timed queries (default 200; --quick: 30)")
    ap.add_argument("--adapt", action="store_true", help="add the 'adapted' strategy (needs adapt_router)")
    ap.add_argument(
        "--baseline-combiner",
        type=Path,
        help="add 'routed_baseline': routed with this combiner "
        "JSON instead of the shipped one (a before/after comparison in one run)",
    )
    ap.add_argument(
        "--graph",
        choices=["on", "off", "compare"],
        default="on",
        help="the knowledge graph's walk in 'routed' (default on, as the library ships; a schema without a graph "
        "gets one built from its stored units first), off (walk_graph=False), or compare: 'routed' with it and "
        "'routed_no_graph' without it, in one run",
    )
    ap.add_argument(
        "--strategies", help="comma-separated strategies to run (default: all; e.g. routed,routed_no_graph)"
    )
    ap.add_argument("--no-latency", action="store_true", help="skip the synthetic latency part (recall only)")
    ap.add_argument(
        "--out",
        type=Path,
        default=REPO / "benchmarks" / "out",
        help="results folder; the own corpora are written to OUT/e2e_<schema>/kb and ingested from "
        "there (copies of them that an earlier run ingested from another results folder are then removed "
        "from the schema)",
    )
    args = ap.parse_args(argv)
    quick = args.quick
    args.schema = args.schema or ("routing_e2e_quick" if quick else "routing_e2e")
    args.pages = args.pages if args.pages is not None else (6 if quick else None)
    args.max_questions = args.max_questions or (30 if quick else None)
    args.latency_units = args.latency_units or (6000 if quick else 100_000)
    args.latency_schema = args.latency_schema or synthetic_schema(args.latency_units, args.latency_vectors)
    args.latency_queries = args.latency_queries or (30 if quick else 200)
    return args


def _cap(questions: list[BenchQuestion], n: int | None) -> list[BenchQuestion]:
    if n is None:
        return questions
    kept: dict[str, int] = {}
    out = []
    for q in questions:
        if kept.get(q.source, 0) < n:
            kept[q.source] = kept.get(q.source, 0) + 1
            out.append(q)
    return out


def run(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """The whole benchmark; returns the summary that :func:`main` prints as its last line."""
    from universalrag.config import Settings
    from universalrag.pipeline import UniversalRAG
    from universalrag.routing.combiner import Combiner

    args = parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    # the strategies ask the same questions: each embeds them every time, as a new question is (timed)
    settings = Settings.from_env().with_(database_url=args.database_url, schema=args.schema, query_vectors=0)
    rag = UniversalRAG(
        settings=settings,
        generator=None,
        visual_encoder=None,
        combiner=Combiner.default(),
        walk_graph=args.graph != "off",
    )
    work = args.out / f"e2e_{args.schema}"
    questions, notes = prepare_benchmark(
        rag, work, quick=args.quick, pages=args.pages, wikitables=args.wikitables, log=log
    )
    asked = _cap([q for q in questions if args.split == "all" or q.split == args.split], args.max_questions)
    counts: dict[str, dict[str, int]] = {}
    for q in asked:
        counts.setdefault(q.source, {}).setdefault(q.style, 0)
        counts[q.source][q.style] += 1
    log(
        f"{len(asked)} questions ({args.split} split): "
        + ", ".join(f"{s} {sum(c.values())}" for s, c in counts.items())
    )
    graph = ensure_graph(rag, log) if args.graph != "off" else None
    no_graph = None
    if args.graph == "compare":
        no_graph = UniversalRAG(
            settings=settings,
            embedder=rag.embedder,
            generator=None,
            visual_encoder=None,
            combiner=Combiner.default(),
            walk_graph=False,
        )
    adapted = None
    if args.adapt:
        if not hasattr(UniversalRAG, "adapt_router"):
            raise SystemExit("--adapt needs UniversalRAG.adapt_router, which this version does not have.")
        adapted = UniversalRAG(settings=settings, embedder=rag.embedder, generator=None, visual_encoder=None)
        report = adapted.adapt_router(tune_examples(questions), save=False)  # the schema keeps what it had
        adapted.use_combiner(report.combiner)
        log(
            f"adapted on the tune split: held-out accuracy {report.before.get('accuracy')} -> "
            f"{report.after.get('accuracy')}"
        )
    baseline = None
    if args.baseline_combiner:
        baseline = UniversalRAG(
            settings=settings,
            embedder=rag.embedder,
            generator=None,
            visual_encoder=None,
            combiner=Combiner.load(args.baseline_combiner),
        )
    results = {}
    strategies = make_strategies(rag, adapted=adapted, baseline=baseline, no_graph=no_graph)
    if args.strategies:
        wanted = [s.strip() for s in args.strategies.split(",") if s.strip()]
        unknown = [s for s in wanted if s not in strategies]
        if unknown:
            raise SystemExit(f"Unknown strategies {unknown}; choose from {sorted(strategies)}.")
        strategies = {name: strategies[name] for name in wanted}
    for name, strategy in strategies.items():
        results[name] = evaluate(strategy, asked)
        log(f"  {name}: hit@5 {results[name]['hit5']}, p50 {results[name]['p50_ms']} ms")
    goals = targets(results)
    print_table(results, goals, sys.stderr)
    latency: dict[str, Any] | None = None
    if not args.no_latency:
        latency = latency_part(
            settings,
            rag.embedder,
            schema=args.latency_schema,
            units=args.latency_units,
            queries=[q.query for q in asked][: args.latency_queries],
            vectors=args.latency_vectors,
            log=log,
        )
        log(
            f"latency, {latency['units']} units ({args.latency_vectors} vectors) over {latency['corpora']} corpora: "
            f"routed p50 {latency['routed_p50_ms']} ms, all fused p50 {latency['all_fused_p50_ms']} ms"
        )
    summary = {
        "benchmark": "routing_e2e",
        "quick": args.quick,
        "split": args.split,
        "graph": {"mode": args.graph, **(graph or {})},
        "k": K,
        "questions": counts,
        "strategies": results,
        "targets": goals,
        "latency": latency,
        "notes": notes,
        "machine": machine(),
        "attribution": "wikitables: pages and questions of WikiTableQuestions (Pasupat & Liang, 2015), CC BY-SA 4.0",
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "routing_e2e.json").write_text(json.dumps(summary, indent=2))
    title = (
        f"Routing judged by retrieval: gold in top {K}, {args.split} split, {len(asked)} questions "
        f"({'quick' if args.quick else 'full'})"
    )
    if plot(results, args.out / "routing_e2e.png", title=title):
        log(f"plot: {args.out / 'routing_e2e.png'}")
    rag.close()
    for other in (baseline, no_graph):
        if other is not None:
            other.close()
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    """Run, print the table (stderr) and one JSON line (stdout)."""
    summary = run(argv)
    compact = {k: v for k, v in summary.items() if k != "notes"}
    print(json.dumps(compact, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
