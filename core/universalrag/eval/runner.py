"""Run strategies over evaluation questions and score them: :func:`evaluate` → :class:`EvalReport`.

For each strategy and question: a fresh query plan, the strategy's retrieval (timed per stage), and — when a
generator is given — the answer written from the evidence (timed too). Then per question: recall@k and
reciprocal rank of the gold evidence, routing accuracy against the gold routes, and the answer metrics
(exact match, token F1, ROUGE-L, or multiple-choice accuracy). A metric is reported only where the data gives
its gold: evidence-only runs (no generator) report the retrieval metrics. Averages are taken within each
source, then across sources (see :func:`~.metrics.average_by_source`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, InvalidInputError
from ..evidence import build_evidence
from .data import EvalExample, EvidenceCheck, check_evidence
from .metrics import (
    average_by_source,
    choice_of,
    exact_match,
    first_gold_rank,
    percentile,
    rouge_l,
    routes_match,
    token_f1,
)
from .strategies import Retrieval, Strategy

if TYPE_CHECKING:
    from ..generate.base import Generator
    from ..pipeline import UniversalRAG
    from ..store import Store

__all__ = ["EvalReport", "QuestionResult", "StrategyReport", "evaluate", "match_evidence", "score"]

#: Metric names, in the order tables show them.
RETRIEVAL_METRICS = ("recall", "mrr", "routing_accuracy")
ANSWER_METRICS = ("exact_match", "f1", "rouge_l", "choice_accuracy")


@dataclass(frozen=True, slots=True)
class QuestionResult:
    """One question under one strategy: its routes, the ids of its hits, the gold rank, the answer, the metric
    values (``None`` where the data gives no gold) and the timings in milliseconds."""

    example: EvalExample
    routes: tuple[str, ...] | None
    hit_ids: tuple[str, ...]
    gold_rank: int | None
    answer: str | None
    metrics: dict[str, float | None]
    timings: dict[str, float]


@dataclass
class StrategyReport:
    """A strategy's results: ``overall`` (mean of the source means), ``per_source``, latency per stage."""

    name: str
    results: list[QuestionResult] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Averages and latency as plain data."""
        averaged = average_by_source((r.example.source, r.metrics) for r in self.results)
        stages = sorted({s for r in self.results for s in r.timings})
        latency = {
            s: {
                "mean": round(sum(v) / len(v), 2),
                "p50": round(percentile(v, 50), 2),
                "p95": round(percentile(v, 95), 2),
            }
            for s in stages
            if (v := [r.timings[s] for r in self.results if s in r.timings])
        }
        rnd = {k: round(v, 4) for k, v in averaged["overall"].items()}
        per_source = {s: {k: round(v, 4) for k, v in ms.items()} for s, ms in averaged["per_source"].items()}
        return {"overall": rnd, "per_source": per_source, "n": averaged["n"], "latency_ms": latency}


@dataclass
class EvalReport:
    """Every strategy's report, ``k``, and whether answers were generated (``generator`` names the model)."""

    k: int
    strategies: dict[str, StrategyReport]
    generator: str | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data: ``{"k", "generator", "questions", "metrics", "strategies": {name:
        {"overall", "per_source", "n", "latency_ms"}}, "notes"}``."""
        summaries = {name: report.summary() for name, report in self.strategies.items()}
        metrics = [
            m for m in (*RETRIEVAL_METRICS, *ANSWER_METRICS) if any(m in s["overall"] for s in summaries.values())
        ]
        first: dict[str, Any] = next(iter(summaries.values()), {"n": {}})
        return {
            "k": self.k,
            "generator": self.generator,
            "questions": sum(first["n"].values()),
            "sources": first["n"],
            "metrics": metrics,
            "strategies": summaries,
            "notes": self.notes,
        }


def score(example: EvalExample, retrieval: Retrieval, answer: str | None, *, k: int) -> dict[str, float | None]:
    """The metric values of one question (``None`` where the example has no gold for it)."""
    rank = first_gold_rank(retrieval.hits[:k], example.evidence) if example.evidence else None
    values: dict[str, float | None] = {
        "recall": (1.0 if rank is not None else 0.0) if example.evidence else None,
        "mrr": (1.0 / rank if rank is not None else 0.0) if example.evidence else None,
        "routing_accuracy": (
            float(routes_match(retrieval.routes, example.routes))
            if example.routes is not None and retrieval.routes is not None
            else None
        ),
    }
    if answer is not None and example.answers:
        values.update(
            exact_match=exact_match(answer, example.answers),
            f1=token_f1(answer, example.answers),
            rouge_l=rouge_l(answer, example.answers),
        )
    if answer is not None and example.choice is not None:
        values["choice_accuracy"] = float(choice_of(answer, example.choices) == example.choice)
    return values


def evaluate(
    rag: UniversalRAG,
    examples: Sequence[EvalExample],
    strategies: Sequence[Strategy],
    *,
    k: int = 5,
    generator: Generator | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> EvalReport:
    """Run every strategy on every example (``k`` hits each) and score them; with ``generator``, also write and
    score the answers. ``progress(strategy, done, total)`` is called after each question."""
    if not examples:
        raise InvalidInputError("There are no questions to evaluate.")
    if k < 1:
        raise InvalidInputError(f"k must be at least 1, got {k}.")
    names = [s.name for s in strategies]
    if len(set(names)) != len(names):
        raise ConfigError(f"Each strategy may be given once; got {names}.")
    if any(s.name == "oracle" for s in strategies) and any(e.routes is None for e in examples):
        missing = next(e for e in examples if e.routes is None)
        raise ConfigError(
            f"The oracle strategy needs gold 'routes' on every question; line {missing.line} has "
            "none. Add them or leave out the oracle strategy."
        )
    reports: dict[str, StrategyReport] = {}
    for strategy in strategies:
        report = reports[strategy.name] = StrategyReport(strategy.name)
        for done, example in enumerate(examples, 1):
            report.results.append(_one(rag, strategy, example, k=k, generator=generator))
            if progress is not None:
                progress(strategy.name, done, len(examples))
    return EvalReport(k=k, strategies=reports, generator=getattr(generator, "name", None) if generator else None)


def _one(
    rag: UniversalRAG, strategy: Strategy, example: EvalExample, *, k: int, generator: Generator | None
) -> QuestionResult:
    plan = rag.plan(example.query, k=k)
    start = time.perf_counter()
    retrieval = strategy.retrieve(plan, gold_routes=example.routes)
    timings = dict(retrieval.timings)
    answer = None
    if generator is not None and (example.answers or example.choice is not None):
        mark = time.perf_counter()
        evidence = build_evidence(retrieval.hits, budget=rag.budget)
        answer = generator.generate(example.prompt, evidence).text
        timings["generate"] = (time.perf_counter() - mark) * 1000
    timings["total"] = (time.perf_counter() - start) * 1000
    metrics = score(example, retrieval, answer, k=k)
    rank = first_gold_rank(retrieval.hits[:k], example.evidence) if example.evidence else None
    return QuestionResult(
        example=example,
        routes=retrieval.routes,
        hit_ids=tuple(h.id for h in retrieval.hits),
        gold_rank=rank,
        answer=answer,
        metrics=metrics,
        timings=timings,
    )


def match_evidence(store: Store, examples: Sequence[EvalExample]) -> EvidenceCheck:
    """:func:`~.data.check_evidence` against what ``store`` holds: the uris of its sources and, for evidence
    given by unit id, which of those ids exist (one query per corpus, only when some evidence is an id)."""
    sources = {str(row["uri"]) for row in store.sources()}
    ids = sorted({e.id for ex in examples for e in ex.evidence if e.id is not None})
    units: set[str] = set()
    for corpus in store.corpora() if ids else ():
        units.update(hit.id for hit in store.get_units(corpus, ids))
    return check_evidence(examples, sources, units)
