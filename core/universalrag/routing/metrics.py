"""Evaluation of a router on labelled queries: accuracy per route and per source, confusion, latency.

A query counts as correct when the primary predicted route is among its gold routes; ``exact_set``
is the share of queries whose predicted route set equals the gold set; ``macro_accuracy`` averages the
per-source accuracies.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Sequence
from typing import Any

from ..types import RouteDecision
from .base import Router
from .dataset import LabelledQuery

__all__ = ["EVAL_KEYS", "evaluate", "percentile", "score_decisions"]

#: The keys of the evaluation report, in order (``universalrag router eval --json`` prints exactly these).
EVAL_KEYS = ("n", "accuracy", "macro_accuracy", "exact_set", "per_route", "per_source", "confusion", "latency_ms")


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def score_decisions(rows: Sequence[LabelledQuery], decisions: Sequence[RouteDecision]) -> dict[str, Any]:
    """The evaluation report (see :data:`EVAL_KEYS`) for decisions aligned with ``rows``."""
    if len(rows) != len(decisions):
        raise ValueError(f"{len(rows)} rows but {len(decisions)} decisions.")
    hits: dict[str, list[bool]] = defaultdict(list)
    per_source: dict[str, list[bool]] = defaultdict(list)
    confusion: dict[str, Counter[str]] = defaultdict(Counter)
    correct, exact = [], []
    for row, decision in zip(rows, decisions, strict=True):
        ok = decision.primary in row.routes
        correct.append(ok)
        exact.append(set(decision.routes) == set(row.routes))
        hits[row.primary].append(ok)
        per_source[row.source].append(ok)
        confusion[row.primary][decision.primary] += 1
    n = len(rows)

    def mean(xs: Sequence[bool]) -> float:
        return round(sum(xs) / len(xs), 4) if xs else 0.0

    sources = {s: mean(v) for s, v in sorted(per_source.items())}
    latencies = [d.latency_ms for d in decisions]
    return {
        "n": n,
        "accuracy": mean(correct),
        "macro_accuracy": round(sum(sources.values()) / len(sources), 4) if sources else 0.0,
        "exact_set": mean(exact),
        "per_route": {r: mean(v) for r, v in sorted(hits.items())},
        "per_source": sources,
        "confusion": {g: dict(sorted(c.items())) for g, c in sorted(confusion.items())},
        "latency_ms": {"p50": round(percentile(latencies, 50), 3), "p95": round(percentile(latencies, 95), 3)},
    }


def evaluate(
    router: Router,
    rows: Sequence[LabelledQuery],
    *,
    candidates: Collection[str] | None = None,
    batched: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Route every row and score the decisions.

    By default each query is routed on its own, so the latency percentiles are per single query (what a
    user waits); ``batched=True`` uses ``route_many`` (faster, latency amortised over the batch).
    ``progress(done, total)`` is called as queries are routed.
    """
    queries = [r.query for r in rows]
    prepare = getattr(router, "prepare", None)
    if callable(prepare):  # load models first: latencies are per query, not per process start
        prepare()
    if batched:
        decisions = router.route_many(queries, candidates=candidates)
        if progress:
            progress(len(rows), len(rows))
    else:
        decisions = []
        for i, q in enumerate(queries, 1):
            start = time.perf_counter()
            d = router.route(q, candidates=candidates)
            wall = (time.perf_counter() - start) * 1000.0
            decisions.append(RouteDecision(d.routes, d.scores, d.router, wall))
            if progress:
                progress(i, len(rows))
    return score_decisions(rows, decisions)
