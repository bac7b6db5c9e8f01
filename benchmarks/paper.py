"""The paper's central comparison on real data: routed retrieval against one shared index and the other strategies.

    python benchmarks/paper.py [--quick] [--database-url URL] [--schema NAME] [--split report|tune|all] [--out DIR]

One knowledge base holds everything, as a user's would (built by ``routing_data.py``): the wikitables pages —
real 2014 Wikipedia articles ingested as a folder — with the crowd-written WikiTableQuestions about their tables,
plus the questions written for this project over its own corpora (the demo, Python's language reference,
captioned photographs, subtitled videos, and unanswerable arithmetic/chit-chat). Every strategy of
:mod:`universalrag.eval.strategies` answers every question: ``routed`` (the library default), ``unified`` (every
unit of every corpus in ONE shared pgvector table + HNSW index, visual corpora by their captions/transcripts
embedded with the text encoder, as the paper's unified baselines), ``all`` (every corpus searched in its own
space, fused), ``oracle`` (the gold corpus), ``random``, ``none`` and each corpus alone.

Measured per strategy: recall@5 (a gold unit in the top 5: the question's table of the page for wikitables when
it could be located among the parsed tables, else any unit of the page; the unit holding the answer phrase for
the own questions) and MRR, averaged within each question set, then across; routing accuracy (chosen corpora =
gold corpus); latency. Tuning: the shipped combiner was fitted on the ``tune`` split of these question sets
(``routing_data.tune_examples``); the default ``report`` split (pages and questions by CRC-32, disjoint from
tune) is held out. Prints a table (stderr), writes ``paper.json`` and ``paper.png`` into ``--out`` and ends with
one JSON line on stdout. ``--quick``: 6 pages, the language-reference topics asked about, 20 questions per set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import cpu_model
from routing_data import BenchQuestion, find_wikitables, prepare_benchmark

REPO = Path(__file__).resolve().parents[1]
K = 5
NAMED = ("routed", "unified", "all", "oracle", "random", "none")


def machine() -> dict[str, Any]:
    """CPU model, core count and load average (stated beside every timing)."""
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "load": [round(x, 2) for x in os.getloadavg()]}


def to_example(q: BenchQuestion) -> Any:
    """A benchmark question as an evaluation example: its gold corpus as route, its gold units (else its
    source's uri) as evidence, its question set as source."""
    from universalrag.eval import EvalExample, GoldEvidence

    evidence: tuple[GoldEvidence, ...] = ()
    if q.answerable:
        evidence = tuple(GoldEvidence(id=u) for u in q.gold_units) or (GoldEvidence(uri=q.uri),)
    return EvalExample(query=q.query, routes=(q.corpus,), evidence=evidence, source=q.source)


def _cap(questions: list[BenchQuestion], n: int | None) -> list[BenchQuestion]:
    kept: dict[str, int] = {}
    out = []
    for q in questions:
        if n is None or kept.get(q.source, 0) < n:
            kept[q.source] = kept.get(q.source, 0) + 1
            out.append(q)
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="6 pages, 20 questions per set (under 2 minutes)")
    ap.add_argument("--database-url", help="PostgreSQL URL (default: UNIVERSALRAG_DATABASE_URL, else embedded)")
    ap.add_argument("--schema", help="schema of the knowledge base (default paper[_quick])")
    ap.add_argument("--wikitables", type=Path, default=find_wikitables(), help="the shared wikitables folder")
    ap.add_argument("--pages", type=int, help="wikitables pages to ingest (default: all; --quick: 6)")
    ap.add_argument("--max-questions", type=int, help="cap per question set (default: none; --quick: 20)")
    ap.add_argument("--split", choices=["report", "tune", "all"], default="report")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "out")
    args = ap.parse_args(argv)
    args.schema = args.schema or ("paper_quick" if args.quick else "paper")
    args.pages = args.pages if args.pages is not None else (6 if args.quick else None)
    args.max_questions = args.max_questions or (20 if args.quick else None)
    return args


def _cell(value: float | None) -> str:
    return f"{value:10.3f}" if value is not None else f"{'-':>10}"


def print_table(report: dict[str, Any], out: Any) -> None:
    """recall@5, MRR, routing accuracy and p50 per strategy, then recall@5 per question set."""
    sources = list(report["sources"])
    print(
        f"{'strategy':12} {'recall@5':>8} {'MRR':>6} {'routing':>7} {'p50 ms':>7}  "
        + " ".join(f"{s[:10]:>10}" for s in sources),
        file=out,
    )
    for name, s in report["strategies"].items():
        o = s["overall"]
        cells = " ".join(_cell(s["per_source"].get(src, {}).get("recall")) for src in sources)
        routing = f"{o['routing_accuracy']:7.3f}" if "routing_accuracy" in o else "      -"
        print(
            f"{name:12} {o.get('recall', 0):8.3f} {o.get('mrr', 0):6.3f} {routing} "
            f"{s['latency_ms']['total']['p50']:7.1f}  {cells}",
            file=out,
        )


def run(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """The whole benchmark; returns the summary that :func:`main` prints as its last line."""
    from universalrag.config import Settings
    from universalrag.eval import UnifiedIndex, UnifiedStrategy, build_strategy, evaluate, plot_report, strategy_names
    from universalrag.pipeline import UniversalRAG

    args = parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    settings = Settings.from_env().with_(database_url=args.database_url, schema=args.schema, query_vectors=0)
    rag = UniversalRAG(settings=settings, generator=None, visual_encoder=None, log_decisions=False)
    start = time.perf_counter()
    questions, notes = prepare_benchmark(
        rag, args.out / f"paper_{args.schema}", quick=args.quick, pages=args.pages, wikitables=args.wikitables, log=log
    )
    asked = _cap([q for q in questions if args.split == "all" or q.split == args.split], args.max_questions)
    examples = [to_example(q) for q in asked]
    table_level = sum(1 for q in asked if q.source == "wikitables" and q.gold_units)
    log(
        f"{len(asked)} questions ({args.split} split); wikitables gold at table level for {table_level} of "
        f"{sum(1 for q in asked if q.source == 'wikitables')}"
    )
    names = [*NAMED, *(n for n in strategy_names(rag) if n not in NAMED)]
    index = UnifiedIndex(rag.store, rag.embedder)
    strategies = [UnifiedStrategy(rag, index) if n == "unified" else build_strategy(n, rag) for n in names]
    built = time.perf_counter()
    state = index.build()
    log(
        f"unified index: {state.rows} vectors of {len(state.corpora)} corpora "
        f"({'built' if state.built else 'reused'} in {time.perf_counter() - built:.1f} s)"
    )

    def progress(name: str, done: int, total: int) -> None:
        if done == total:
            log(f"  {name}: {total} questions")

    report = evaluate(rag, examples, strategies, k=K, progress=progress).to_dict()
    print_table(report, sys.stderr)
    args.out.mkdir(parents=True, exist_ok=True)
    plot = plot_report(
        report,
        args.out / "paper.png",
        title=(
            f"UniversalRAG strategies, {args.split} split, {len(asked)} questions "
            f"({'quick' if args.quick else 'full'}): recall@{K}, MRR, routing accuracy"
        ),
    )
    log(f"plot: {plot}")
    summary = {
        "benchmark": "paper",
        "quick": args.quick,
        "split": args.split,
        "k": K,
        "questions": report["sources"],
        "tuning": "the shipped combiner was fitted on the tune split; these figures are on the "
        f"{args.split} split" + (" (held out)" if args.split == "report" else ""),
        "strategies": {
            name: {
                "recall_at_5": s["overall"].get("recall"),
                "mrr": s["overall"].get("mrr"),
                "routing_accuracy": s["overall"].get("routing_accuracy"),
                "p50_ms": s["latency_ms"]["total"]["p50"],
                "recall_per_source": {src: v.get("recall") for src, v in s["per_source"].items()},
            }
            for name, s in report["strategies"].items()
        },
        "unified_index": index.describe(),
        "wikitables_table_level": table_level,
        "seconds": round(time.perf_counter() - start, 1),
        "machine": machine(),
        "attribution": "wikitables: pages and questions of WikiTableQuestions (Pasupat & Liang, 2015), CC BY-SA 4.0",
    }
    (args.out / "paper.json").write_text(json.dumps({**summary, "report": report, "notes": notes}, indent=2))
    rag.close()
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    """Run, print the table (stderr) and one JSON line (stdout)."""
    print(json.dumps(run(argv), separators=(",", ":")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
