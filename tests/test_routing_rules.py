"""Decision rules (pure functions), candidates, the vote, ensemble rules and the routing package's API."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from universalrag import routing
from universalrag.errors import RoutingError
from universalrag.routing import (
    EXCLUSIVE_PAIRS,
    ROUTES,
    EnsembleRouter,
    Router,
    ScoringRouter,
    apply_exclusions,
    decide,
    resolve_candidates,
    vote,
)
from universalrag.types import RouteDecision

probs = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
score_maps = st.dictionaries(st.sampled_from(ROUTES), probs, min_size=1)


class StaticRouter(ScoringRouter):
    """A real (if simple) scoring router: the same scores for every query."""

    def __init__(self, scores: Mapping[str, float], *, name: str = "static", **kwargs: object) -> None:
        super().__init__(name=name, **kwargs)  # type: ignore[arg-type]
        self._scores = dict(scores)
        self.calls = 0

    @property
    def routes(self) -> tuple[str, ...]:
        return tuple(self._scores)

    def score_many(self, queries: Sequence[str]) -> list[dict[str, float]]:
        self.calls += len(queries)
        return [dict(self._scores) for _ in queries]


class FailingRouter(StaticRouter):
    def score_many(self, queries: Sequence[str]) -> list[dict[str, float]]:
        raise RoutingError("down")


def test_public_api_is_pinned() -> None:
    assert sorted(routing.__all__) == sorted(
        [
            "Router",
            "BaseRouter",
            "CompositeRouter",
            "Combiner",
            "CombinedDecision",
            "TrainingQuery",
            "train_combiner",
            "combiner_accuracy",
            "wikitables_split",
            "ScoringRouter",
            "TrainedRouter",
            "LLMRouter",
            "EnsembleRouter",
            "ExampleRouter",
            "ROUTES",
            "ROUTE_DESCRIPTIONS",
            "EXCLUSIVE_PAIRS",
            "DEFAULT_THRESHOLD",
            "DEFAULT_ARTEFACT",
            "decide",
            "apply_exclusions",
            "resolve_candidates",
            "vote",
            "build_prompt",
            "parse_routes",
            "LabelledQuery",
            "read_jsonl",
            "bundled_queries",
            "bundled_heldout",
            "split_by_source",
            "TrainConfig",
            "TrainResult",
            "train_router",
            "evaluate",
            "score_decisions",
            "EVAL_KEYS",
        ]
    )
    assert ROUTES == ("none", "paragraph", "document", "table", "image", "clip", "video")


def test_threshold_multi_label_and_single_best() -> None:
    assert decide({"table": 0.95, "paragraph": 0.85, "image": 0.3}) == ("table", "paragraph")
    assert decide({"table": 0.6, "paragraph": 0.5}) == ("table",)  # nothing passes: the single best
    assert decide({"table": 0.95, "paragraph": 0.85}, threshold=0.9) == ("table",)
    assert decide({"table": 0.95, "paragraph": 0.85}, multi=False) == ("table",)


def test_exclusive_pairs_keep_the_higher_and_none_is_dropped() -> None:
    assert decide({"paragraph": 0.9, "document": 0.95}) == ("document",)
    assert decide({"clip": 0.97, "video": 0.9, "image": 0.85}) == ("clip", "image")
    assert decide({"none": 0.99, "table": 0.9}) == ("table",)
    assert decide({"none": 0.99, "table": 0.2}) == ("none",)
    assert apply_exclusions(["video", "clip", "none", "video"]) == ("video",)


def test_candidates_restrict_and_always_allow_none() -> None:
    scores = {"none": 0.1, "image": 0.99, "table": 0.4}
    assert decide(scores, candidates=["table"]) == ("table",)
    assert decide({"image": 0.99, "none": 0.2}, candidates=["table"]) == ("none",)
    assert resolve_candidates(["table"]) == frozenset({"table", "none"})
    assert resolve_candidates(None) is None
    with pytest.raises(RoutingError, match="collection"):
        resolve_candidates("table")
    with pytest.raises(RoutingError, match="No candidate"):
        decide({"image": 0.9}, candidates=["table"])


@settings(max_examples=300, deadline=None)
@given(score_maps, st.floats(min_value=0.05, max_value=1.0), st.sets(st.sampled_from(ROUTES[1:])))
def test_rules_hold_for_any_scores(scores: dict[str, float], threshold: float, cands: set[str]) -> None:
    allowed = (cands | {"none"}) if cands else None
    pool = {r: p for r, p in scores.items() if allowed is None or r in allowed}
    if not pool:
        return
    routes = decide(scores, threshold=threshold, candidates=allowed)
    best = max(pool.values())
    assert routes and len(set(routes)) == len(routes)
    assert all(r in pool for r in routes)
    if routes == ("none",):
        assert pool["none"] == best
    else:  # the primary is the best route other than 'none' ('none' is dropped beside others)
        assert pool[routes[0]] == max(p for r, p in pool.items() if r != "none")
        if pool.get("none", -1.0) > pool[routes[0]]:
            assert all(pool[r] >= threshold for r in routes)
    for a, b in EXCLUSIVE_PAIRS:
        assert not {a, b} <= set(routes)
    if len(routes) > 1:
        assert "none" not in routes
        assert all(pool[r] >= threshold for r in routes)
        assert [pool[r] for r in routes] == sorted((pool[r] for r in routes), reverse=True)
    # every route over the threshold is chosen unless excluded by a higher partner or is 'none'
    for r, p in pool.items():
        if p >= threshold and r not in routes and r != "none":
            partners = {x for pair in EXCLUSIVE_PAIRS if r in pair for x in pair} - {r}
            kept = partners & set(routes)
            assert kept and all(pool[k] >= p for k in kept)


def test_scoring_router_protocol_and_candidates_per_call_override_constructor() -> None:
    r = StaticRouter({"none": 0.1, "image": 0.9, "table": 0.5}, candidates=["table"])
    assert isinstance(r, Router)
    assert r.route("q").routes == ("table",)
    assert r.route("q", candidates=["image", "table"]).routes == ("image",)
    assert set(r.route("q").scores) == {"none", "table"}  # scores shown only for candidates
    many = r.route_many(["a", "b"], candidates=["image"])
    assert [d.routes for d in many] == [("image",), ("image",)]
    assert asyncio.run(r.aroute("q")).routes == ("table",)
    assert [d.routes for d in asyncio.run(r.aroute_many(["a", "b"]))] == [("table",), ("table",)]
    with pytest.raises(RoutingError):
        r.route("   ")
    with pytest.raises(RoutingError):
        r.route_many("one string")


def test_vote_majority_extra_routes_and_reproducible_ties() -> None:
    def d(*routes: str) -> RouteDecision:
        return RouteDecision(routes=routes, scores={}, router="x")

    routes, scores = vote([d("table", "paragraph"), d("table"), d("image", "paragraph")])
    assert routes == ("table", "paragraph")
    assert scores["table"] == pytest.approx(2 / 3)
    tie = [d("table"), d("image"), d("clip")]
    first = vote(tie, key="q1")[0]
    assert all(vote(tie, key="q1")[0] == first for _ in range(5))
    assert {vote(tie, key=f"q{i}")[0][0] for i in range(40)} == {"table", "image", "clip"}
    assert vote([d("clip"), d("video"), d("video", "clip")])[0] == ("video",)  # exclusion applies


def test_confidence_ensemble_uses_primary_when_sure_else_secondary() -> None:
    sure = StaticRouter({"none": 0.01, "table": 0.97}, name="trained")
    unsure = StaticRouter({"none": 0.3, "table": 0.6}, name="trained")
    other = StaticRouter({"none": 0.0, "image": 1.0}, name="llm")
    ens = EnsembleRouter.confident(sure, other, tau=0.9)
    assert ens.route("q").routes == ("table",) and ens.route("q").router == "ensemble[trained]"
    assert other.calls == 0  # the secondary is not asked when the primary is sure
    ens2 = EnsembleRouter.confident(unsure, other, tau=0.9)
    assert ens2.route("q").routes == ("image",) and ens2.route("q").router == "ensemble[llm]"
    assert [x.routes for x in ens2.route_many(["a", "b"])] == [("image",), ("image",)]
    assert asyncio.run(ens2.aroute("q")).routes == ("image",)
    # the secondary failing keeps the primary's decision
    ens3 = EnsembleRouter.confident(unsure, FailingRouter({"image": 1.0}), tau=0.9)
    assert ens3.route("q").routes == ("table",)
    assert ens3.route_many(["a"])[0].routes == ("table",)


def test_vote_ensemble_needs_three_and_votes() -> None:
    a = StaticRouter({"table": 0.9, "none": 0.0}, name="a")
    b = StaticRouter({"table": 0.7, "none": 0.0}, name="b")
    c = StaticRouter({"image": 0.9, "none": 0.0}, name="c")
    with pytest.raises(RoutingError, match="at least 3"):
        EnsembleRouter.majority([a, b])
    with pytest.raises(RoutingError, match="Unknown ensemble strategy"):
        EnsembleRouter([a, b, c], strategy="nope")
    ens = EnsembleRouter.majority([a, b, c])
    decision = ens.route("q")
    assert decision.routes == ("table",) and decision.router == "ensemble[vote]"
    assert decision.scores["table"] == pytest.approx(2 / 3)
    assert [x.routes for x in ens.route_many(["a", "b"])] == [("table",), ("table",)]
    assert asyncio.run(ens.aroute_many(["a"]))[0].routes == ("table",)


def test_split_by_source_is_stratified_deterministic_and_order_independent() -> None:
    from universalrag.routing import LabelledQuery, split_by_source

    rows = [LabelledQuery(f"q{s}{i}", ("table",), f"src{s}") for s in range(3) for i in range(20 + 10 * s)]
    train, val = split_by_source(rows, val_fraction=0.1, seed=0)
    assert len(val) == 2 + 3 + 4 and len(train) + len(val) == len(rows)
    again = split_by_source(list(reversed(rows)), val_fraction=0.1, seed=0)[1]
    assert {r.query for r in again} == {r.query for r in val}
    assert {r.query for r in split_by_source(rows, val_fraction=0.1, seed=1)[1]} != {r.query for r in val}
