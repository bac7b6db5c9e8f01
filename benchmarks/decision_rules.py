"""Replay the combiner's decision rules (``universalrag.routing.combiner.DecisionRules``) on questions they were not
chosen on: each rule off, the shipped values, and values either side, in the same run.

    python benchmarks/decision_rules.py [--pages N] [--split report|tune|all] [--database-url URL] [--out DIR]

The knowledge base is the one of ``routing_e2e.py`` (the own corpora — the demo, Python's language-reference topics,
photographs, videos — and ``--pages`` evenly spaced wikitables pages; ingestion is idempotent, so a second run
re-uses it). For each question of the split, the router's prior and the probes of every corpus are gathered once;
each variant then decides from the same evidence (``Combiner.decide(rules=...)``) and retrieves from the same
probes (``UniversalRAG.retrieval``), so variants differ only by their decisions. Printed per variant: the share of
answerable questions whose gold is in the top 5 (``hit@5``: a Wikipedia question's page; ``unit@5``: the answering
unit), per question set, and how many decisions differ from the shipped rules'. The ``report`` split is held out from
everything the shipped rules were chosen on (their docstrings name the data).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import DEFAULT_OUT, machine_line  # noqa: E402
from routing_data import BenchQuestion, find_wikitables, prepare_benchmark  # noqa: E402

K = 5


def variants() -> dict[str, Any]:
    """The rule sets replayed: the shipped one first."""
    from universalrag.routing.combiner import RULES, DecisionRules

    return {
        "shipped": RULES,
        "sibling_tie 0.02": dataclasses.replace(RULES, sibling_tie=0.02),
        "sibling_tie 0.05": dataclasses.replace(RULES, sibling_tie=0.05),
        "sibling_tie 0.10": dataclasses.replace(RULES, sibling_tie=0.10),
        "no dominance": dataclasses.replace(RULES, dominance_margin=None),
        "dominance 0": dataclasses.replace(RULES, dominance_margin=0.0),
        "dominance 0.06": dataclasses.replace(RULES, dominance_margin=0.06),
        "all off": DecisionRules(sibling_tie=None, dominance_margin=None),
    }


def replay(rag: Any, questions: Sequence[BenchQuestion], rules: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per variant: hit@5, unit@5, per-source hit@5 and the decisions that differ from the first variant's."""
    from universalrag.types import NO_RETRIEVAL, RouteDecision

    combiner = rag.combiner
    searcher, pool = rag.searcher, rag.executor()
    rows: dict[str, list[tuple[BenchQuestion, bool, bool, tuple[str, ...]]]] = {name: [] for name in rules}
    for q in questions:
        plan = rag.plan(q.query, k=K, allow_none=True)
        probed = rag.routing.gather(plan, searcher, pool=pool)
        for name, variant in rules.items():
            decided = combiner.decide(probed.pairs, prior_none=probed.prior_none, allow_none=True, rules=variant)
            routes = tuple(decided.routes)
            hits: list[Any] = []
            if routes != (NO_RETRIEVAL,):
                copy = dataclasses.replace(
                    plan,
                    probes=dict(plan.probes),
                    probe_depths=dict(plan.probe_depths),
                    decision=RouteDecision(routes=routes, scores=decided.scores),
                    _lock=threading.Lock(),
                )
                hits = rag.retrieval.hits(copy, k=K)
            unit = any(h.id in q.gold_units for h in hits)
            page = any(h.uri == q.uri for h in hits)
            rows[name].append((q, page if q.judge == "uri" else unit, unit, routes))
    first = next(iter(rules))
    out: dict[str, dict[str, Any]] = {}
    for name, found in rows.items():
        answerable = [r for r in found if r[0].answerable]
        strict = [r for r in answerable if r[0].gold_units]
        sources = sorted({r[0].source for r in answerable})
        out[name] = {
            "hit5": _share([r[1] for r in answerable]),
            "unit5": _share([r[2] for r in strict]),
            "per_source": {s: _share([r[1] for r in answerable if r[0].source == s]) for s in sources},
            "changed": sum(a[3] != b[3] for a, b in zip(found, rows[first], strict=True)),
            "n": len(answerable),
        }
    return out


def _share(values: Sequence[bool]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def main(argv: Sequence[str] | None = None) -> None:
    """Build or re-use the knowledge base, replay every variant, print the table and a JSON line."""
    import json

    from universalrag.config import Settings
    from universalrag.pipeline import UniversalRAG
    from universalrag.routing.combiner import Combiner

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", help="PostgreSQL URL (default: UNIVERSALRAG_DATABASE_URL, else embedded)")
    ap.add_argument("--schema", default="decision_rules", help="schema of the knowledge base")
    ap.add_argument("--pages", type=int, default=60, help="wikitables pages to ingest (evenly spaced; default 60)")
    ap.add_argument("--wikitables", type=Path, default=find_wikitables(), help="the shared wikitables folder")
    ap.add_argument("--split", choices=["report", "tune", "all"], default="report")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    log(machine_line())
    settings = Settings.from_env().with_(database_url=args.database_url, schema=args.schema)
    rag = UniversalRAG(settings=settings, generator=None, visual_encoder=None, combiner=Combiner.default())
    started = time.perf_counter()
    questions, notes = prepare_benchmark(
        rag, args.out / f"e2e_{args.schema}", pages=args.pages, wikitables=args.wikitables, log=log
    )
    log(f"knowledge base ready in {time.perf_counter() - started:.0f} s")
    asked = [q for q in questions if args.split == "all" or q.split == args.split]
    log(f"{len(asked)} questions ({args.split} split)")
    started = time.perf_counter()
    results = replay(rag, asked, variants())
    log(f"replayed in {time.perf_counter() - started:.0f} s")
    sources = sorted({s for r in results.values() for s in r["per_source"]})
    log(f"{'variant':22} {'hit@5':>6} {'unit@5':>6} " + " ".join(f"{s[:10]:>10}" for s in sources) + "  changed")
    for name, r in results.items():
        cells = " ".join(f"{(r['per_source'].get(s) or 0):10.1%}" for s in sources)
        log(f"{name:22} {(r['hit5'] or 0):6.1%} {(r['unit5'] or 0):6.1%} {cells} {r['changed']:8d}")
    rag.close()
    print(json.dumps({"machine": machine_line(), "split": args.split, "pages": args.pages, "results": results}))


if __name__ == "__main__":
    main()
