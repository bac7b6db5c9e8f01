"""The query plan: one request object; each text embedded once per model, probe hits reused when deep enough."""

from __future__ import annotations

import threading

import pytest

from universalrag.errors import InvalidInputError, RoutingError
from universalrag.plan import QueryPlan
from universalrag.types import Hit, RouteDecision


def test_the_query_is_embedded_once_per_embedder_even_from_many_threads(minilm) -> None:  # type: ignore[no-untyped-def]
    calls: list[str] = []

    class Counting:
        name, dimension = minilm.name, minilm.dimension

        def embed_query(self, text: str):  # type: ignore[no-untyped-def]
            calls.append(text)
            return minilm.embed_query(text)

    plan = QueryPlan("How many moons does Saturn have?")
    counting = Counting()
    threads = [threading.Thread(target=plan.embedding, args=(counting,)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["How many moons does Saturn have?"]
    assert plan.embedding(counting).shape == (384,)


def test_probe_hits_are_reused_only_when_deep_enough() -> None:
    hits = [Hit(corpus="table", id=str(i), score=1 - i / 10, content="") for i in range(5)]
    plan = QueryPlan("q", k=3, probe_k=5)
    assert plan.probed("table", 3) is None
    plan.add_probe("table", hits)
    assert [h.id for h in plan.probed("table", 3)] == ["0", "1", "2"]
    assert plan.probed("table", 8) is None  # asked for more than the probe fetched
    plan.add_probe("image", hits[:2])  # the corpus held only two: that is everything there is
    assert len(plan.probed("image", 8)) == 2


def test_chosen_corpora_and_validation() -> None:
    plan = QueryPlan("q")
    assert plan.chosen == ()
    plan.decision = RouteDecision(routes=("table", "none", "table", "paragraph"))
    assert plan.chosen == ("table", "paragraph")
    assert QueryPlan("q", routes=["none"]).chosen == ()
    with pytest.raises(RoutingError):
        QueryPlan("  ")
    for bad in (0, -1, 2.5, True):
        with pytest.raises(InvalidInputError, match="k must be an integer of at least 1"):
            QueryPlan("q", k=bad)  # type: ignore[arg-type]
    with pytest.raises(RoutingError):
        QueryPlan("q", routes="table")  # type: ignore[arg-type]
    assert QueryPlan("q", k=8).probe_k == 8
