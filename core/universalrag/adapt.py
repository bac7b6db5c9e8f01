"""Adapting the combiner to a database's content: labelled examples and logged feedback → new weights.

:func:`labelled_evidence` routes each labelled query through the same probe path as a live query (the prior,
one probe per corpus, the same features), so the combiner learns from exactly what it will see.
:func:`adapt_router` adds the logged feedback, holds out a part, trains (pulling the weights towards the current
combiner's, so that a few examples adjust rather than replace it), reports accuracy before and after on the
held-out part, and stores the adapted combiner in the database, where ``UniversalRAG()`` finds it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from .errors import RoutingError
from .routing.combiner import Combiner, TrainingQuery, combiner_accuracy, train_combiner
from .types import NO_RETRIEVAL

if TYPE_CHECKING:
    from .plan import QueryPlan
    from .retrieve import EvidenceRouting, Searcher
    from .store import Store


class RoutingHost(Protocol):
    """What adaptation needs from a pipeline (a :class:`~universalrag.pipeline.UniversalRAG` is one)."""

    @property
    def store(self) -> Store: ...

    @property
    def searcher(self) -> Searcher: ...

    @property
    def routing(self) -> EvidenceRouting: ...

    @property
    def combiner(self) -> Combiner | None: ...

    def executor(self) -> Executor: ...

    def plan(self, query: str) -> QueryPlan: ...


__all__ = [
    "AdaptReport",
    "Example",
    "RoutingHost",
    "adapt_router",
    "as_example",
    "feedback_queries",
    "labelled_evidence",
]


@dataclass(frozen=True)
class Example:
    """A labelled query: the corpus that answers it (or ``"none"``) and, when known, the unit it was written from
    (``unit_id``: the label is then kept only when that corpus's probe finds the unit)."""

    query: str
    corpus: str
    source: str = ""
    unit_id: str | None = None


#: What :func:`adapt_router` accepts per example: an :class:`Example`, a ``(query, corpus)`` pair, or any object
#: with ``query`` and ``corpus`` attributes (such as the synthesised queries of ``routing.synth``).
ExampleLike: TypeAlias = Example | tuple[str, str] | Any


def as_example(item: ExampleLike) -> Example:
    """Normalise one example; raises :class:`RoutingError` for anything else."""
    if isinstance(item, Example):
        return item
    if isinstance(item, tuple) and len(item) == 2 and all(isinstance(v, str) for v in item):
        return Example(item[0], item[1])
    query, corpus = getattr(item, "query", None), getattr(item, "corpus", None)
    if isinstance(query, str) and isinstance(corpus, str):
        unit = getattr(item, "unit_id", None)
        return Example(
            query,
            corpus,
            str(getattr(item, "style", "") or getattr(item, "source", "") or ""),
            unit if isinstance(unit, str) else None,
        )
    raise RoutingError(f"An example must be (query, corpus) or have .query and .corpus, got {item!r}.")


@dataclass(frozen=True)
class AdaptReport:
    """What adaptation did: accuracy on the held-out part before and after, sizes, and whether it was stored."""

    before: dict[str, float]
    after: dict[str, float]
    train: int
    heldout: int
    feedback: int
    saved: bool
    combiner: Combiner = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return {
            "before": self.before,
            "after": self.after,
            "train": self.train,
            "heldout": self.heldout,
            "feedback": self.feedback,
            "saved": self.saved,
            "version": self.combiner.version,
        }


def labelled_evidence(
    rag: RoutingHost, examples: Iterable[ExampleLike], *, progress: Callable[[int, int], None] | None = None
) -> list[TrainingQuery]:
    """Each example routed through the live probe path: its features per corpus, its prior and its gold corpus.
    Examples whose corpus is not a candidate of this database are skipped, and so are examples written from a unit
    (``unit_id``, as synthesised queries are) whose corpus's probe does not find that unit: the label is what
    retrieval can deliver, not what the template intended."""
    items = [as_example(e) for e in examples]
    searcher, routing, pool = rag.searcher, rag.routing, rag.executor()
    out: list[TrainingQuery] = []
    for i, ex in enumerate(items, 1):
        plan = rag.plan(ex.query)
        probed = routing.gather(plan, searcher, pool=pool)
        gold = frozenset() if ex.corpus == NO_RETRIEVAL else frozenset({ex.corpus})
        found = ex.unit_id is None or any(h.id == ex.unit_id for h in plan.probed(ex.corpus, plan.probe_k) or ())
        if (not gold or gold & set(probed.pairs)) and found:
            out.append(TrainingQuery(probed.pairs, probed.prior_none, gold, ex.source))
        if progress is not None:
            progress(i, len(items))
    return out


def feedback_queries(rag: RoutingHost) -> list[TrainingQuery]:
    """The logged decisions that received feedback, as training queries (their logged evidence and prior)."""
    from .store.routing_log import feedback_rows, has_routing_tables

    if not has_routing_tables(rag.store):
        return []
    out = []
    for row in feedback_rows(rag.store):
        pairs = {c: dict(f) for c, f in (row.get("evidence") or {}).items()}
        if not pairs:
            continue
        gold = frozenset(r for r in row["feedback_routes"] if r != NO_RETRIEVAL)
        out.append(TrainingQuery(pairs, float((row.get("prior") or {}).get(NO_RETRIEVAL, 0.0)), gold, "feedback"))
    return out


def _bundled_none(limit: int = 60) -> list[Example]:
    from .routing.dataset import bundled_queries

    rows = [r for r in bundled_queries() if r.primary == NO_RETRIEVAL]
    return [Example(r.query, NO_RETRIEVAL, "bundled_none") for r in rows[:limit]]


def _split(
    queries: Sequence[TrainingQuery], holdout: float, seed: int
) -> tuple[list[TrainingQuery], list[TrainingQuery]]:
    order = list(range(len(queries)))
    random.Random(seed).shuffle(order)
    cut = int(round(len(order) * holdout))
    held = [queries[i] for i in order[:cut] if queries[i].source != "feedback"]
    train = [queries[i] for i in order[cut:]] + [queries[i] for i in order[:cut] if queries[i].source == "feedback"]
    return train, held


def adapt_router(
    rag: RoutingHost,
    examples: Iterable[ExampleLike],
    *,
    use_feedback: bool = True,
    holdout: float = 0.25,
    seed: int = 0,
    l2: float = 1.0,
    save: bool = True,
    force: bool = False,
    name: str = "default",
    progress: Callable[[int, int], None] | None = None,
) -> AdaptReport:
    """Train the combiner on ``examples`` (``(query, corpus or "none")``) plus the logged feedback.

    ``holdout`` of the examples (never the feedback, which always trains) measures accuracy before (the current
    combiner) and after. The adapted combiner is stored in the database under ``name`` when ``save`` and it is
    not worse on the held-out part (``force=True`` stores it anyway). Questions that need no retrieval are taken
    from the project's own bundled ones when the examples hold none.
    """
    items = [as_example(e) for e in examples]
    if not any(e.corpus == NO_RETRIEVAL for e in items):
        items += _bundled_none()
    queries = labelled_evidence(rag, items, progress=progress)
    feedback = feedback_queries(rag) if use_feedback else []
    train, held = _split([*queries, *feedback], holdout, seed)
    base = rag.combiner or Combiner.default()
    adapted = train_combiner(
        train,
        base=base,
        l2=l2,
        info={"adapted_from": base.version, "examples": len(items), "feedback": len(feedback), "seed": seed},
    )
    before = combiner_accuracy(base, held) if held else {}
    after = combiner_accuracy(adapted, held) if held else {}
    saved = save and (force or not held or after["accuracy"] >= before["accuracy"])
    report = AdaptReport(before, after, len(train), len(held), len(feedback), saved, adapted)
    if saved:
        from .store.routing_log import save_combiner

        save_combiner(rag.store, name, adapted.to_dict(), version=adapted.version, report=report.to_dict())
    return report
