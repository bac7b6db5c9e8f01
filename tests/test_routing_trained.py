"""The trained router: the shipped artefact (real model, offline), candidates, and training on a small subset."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from pathlib import Path

import pytest
from support.shared_data import ROUTING_TRAIN, present, skip_unless

from universalrag.errors import ConfigError
from universalrag.routing import (
    DEFAULT_ARTEFACT,
    ROUTES,
    ExampleRouter,
    TrainConfig,
    TrainedRouter,
    bundled_heldout,
    bundled_queries,
    evaluate,
    read_jsonl,
    split_by_source,
    train_router,
)
from universalrag.routing.trained_router import SHARD_BYTES, weight_files

REPO = Path(__file__).resolve().parents[1]

OBVIOUS = {
    "none": "What is 45 divided by 9?",
    "paragraph": "Who wrote the novel Moby-Dick?",
    "document": "Which university was founded first, Harvard or Yale, and who were their founders?",
    "table": "Which country won the most medals at the 2008 Summer Olympics?",
    "image": "What does a red-eyed tree frog look like?",
    "clip": "In the cooking video, what does the chef do right after cracking the eggs?",
    "video": "How do I install a new kitchen faucet, step by step?",
}


@pytest.fixture(scope="module")
def default_router() -> TrainedRouter:
    return TrainedRouter.default().load()


def test_default_artefact_is_small_fp16_and_only_trained_tensors() -> None:
    from safetensors import safe_open

    files = {p.name: p.stat().st_size for p in DEFAULT_ARTEFACT.iterdir() if p.name != "__pycache__"}
    assert set(files) == {"config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}
    assert sum(files.values()) <= 25 * 1024 * 1024 and max(files.values()) <= SHARD_BYTES  # each under 20 MB
    config = json.loads((DEFAULT_ARTEFACT / "config.json").read_text())
    assert config["labels"] == list(ROUTES) and config["threshold"] == 0.8
    keys = []
    for file in weight_files(DEFAULT_ARTEFACT):
        with safe_open(str(file), "pt") as f:
            keys += list(f.keys())
            assert all(
                f.get_tensor(k).dtype.is_floating_point and f.get_tensor(k).element_size() == 2 for k in f.keys()
            )  # noqa: SIM118 - a safe_open handle is not iterable
    assert len(keys) == len(set(keys)) == 98
    assert any(k.startswith("head.") for k in keys)
    assert not any("embeddings" in k for k in keys)  # the embedding table stays the wheel's


@pytest.mark.parametrize("route", list(OBVIOUS))
def test_default_routes_obvious_queries(default_router: TrainedRouter, route: str) -> None:
    decision = default_router.route(OBVIOUS[route])
    assert decision.primary == route, decision
    assert decision.router == "trained" and set(decision.scores) == set(ROUTES)
    assert all(0.0 <= p <= 1.0 for p in decision.scores.values())


def test_candidates_restrict_the_default_router(default_router: TrainedRouter) -> None:
    q = OBVIOUS["image"]
    d = default_router.route(q, candidates=["paragraph", "table"])
    assert set(d.routes) <= {"paragraph", "table", "none"} and set(d.scores) == {"paragraph", "table", "none"}
    bound = TrainedRouter.default(candidates=["video"])
    assert bound.route(OBVIOUS["none"]).routes == ("none",)
    assert bound.route(OBVIOUS["video"]).routes == ("video",)
    assert bound.route(q, candidates=["image"]).routes == ("image",)  # per call overrides


def test_batch_and_async_agree_with_single(default_router: TrainedRouter) -> None:
    queries = list(OBVIOUS.values())
    single = [default_router.route(q).routes for q in queries]
    assert [d.routes for d in default_router.route_many(queries)] == single
    assert [d.routes for d in asyncio.run(default_router.aroute_many(queries))] == single
    assert asyncio.run(default_router.aroute(queries[0])).routes == single[0]


def test_default_router_on_own_heldout_styles(default_router: TrainedRouter) -> None:
    report = evaluate(default_router, bundled_heldout(), batched=True)
    assert report["accuracy"] >= 0.8, report["per_route"]


def test_missing_artefact_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="router train"):
        TrainedRouter(tmp_path / "nowhere").route("q")


def test_bundled_queries_are_labelled_and_disjoint() -> None:
    own, held = bundled_queries(), bundled_heldout()
    assert {r.primary for r in own} == set(ROUTES) == {r.primary for r in held}
    assert not {r.query.lower() for r in own} & {r.query.lower() for r in held}
    if present(ROUTING_TRAIN):
        shared = {r.query.lower() for r in read_jsonl(ROUTING_TRAIN)}
        assert not shared & {r.query.lower() for r in own + held}


@skip_unless(ROUTING_TRAIN)
def test_training_on_a_small_subset_learns(tmp_path: Path) -> None:
    rows = read_jsonl(ROUTING_TRAIN)
    train, val = split_by_source(rows, val_fraction=0.1, seed=0)
    assert not {r.query for r in train} & {r.query for r in val}
    per_source: dict[str, list] = defaultdict(list)
    for r in train:
        if len(per_source[r.source]) < 24:
            per_source[r.source].append(r)
    small = [r for group in per_source.values() for r in group]
    held: dict[str, list] = defaultdict(list)
    for r in val:
        if len(held[r.source]) < 8:
            held[r.source].append(r)
    held_rows = [r for group in held.values() for r in group]
    cfg = TrainConfig(epochs=2, trainable_layers=2, lr=2e-4, head_lr=5e-3, batch_size=16, seed=0)
    result = train_router(small, config=cfg)
    out = result.save(tmp_path / "router")
    report = evaluate(TrainedRouter(out), held_rows, batched=True)
    assert report["macro_accuracy"] >= 0.5, report  # chance is about 1/7
    # the artefact holds only the trained layers and the head
    from safetensors import safe_open

    with safe_open(str(out / "model.safetensors"), "pt") as f:
        names = list(f.keys())
    layers = {k.split(".")[3] for k in names if k.startswith("encoder.encoder.layer.")}
    assert layers == {"4", "5"}


def test_user_defined_corpus_by_example_and_by_retraining(tmp_path: Path) -> None:
    examples = {
        "recipes": [
            "How long should I knead bread dough?",
            "What can I cook with leftover rice?",
            "How much sugar goes into a lemon tart?",
            "How do I make a vinaigrette?",
            "What spices go into a chicken curry recipe?",
            "How many eggs do I need for pancakes?",
        ]
    }
    r = ExampleRouter.with_builtin(
        examples, descriptions={"recipes": "Cooking recipes: ingredients, quantities and cooking times."}
    )
    assert "recipes" in r.routes
    assert r.route("How much butter goes into shortbread?").primary == "recipes"
    assert r.route("What does a snow leopard look like?").primary == "image"
    assert r.route("What is 12 times 12?", candidates=["recipes"]).primary in {"none", "recipes"}
    desc = ExampleRouter.from_descriptions()
    assert desc.route("Show me a picture of a koala").primary == "image"
    # retraining: a new route in the data becomes a label (frozen encoder: quick)
    from universalrag.routing.dataset import LabelledQuery

    rows = [LabelledQuery(q, ("recipes",), "own_recipes") for q in examples["recipes"] * 3] + bundled_queries()
    result = train_router(rows, config=TrainConfig.for_mode("frozen", epochs=15))
    assert result.labels[: len(ROUTES)] == ROUTES and result.labels[-1] == "recipes"
    trained = TrainedRouter(result.save(tmp_path / "r"))
    assert trained.route("What can I cook with leftover chicken?").primary == "recipes"


def test_training_is_reproducible_with_a_seed() -> None:
    rows = bundled_queries()[::5]
    cfg = TrainConfig(epochs=1, trainable_layers=1, batch_size=16, seed=7)
    a, b = train_router(rows, config=cfg), train_router(rows, config=cfg)
    sa, sb = a.net.state_dict(), b.net.state_dict()
    assert all((sa[k] == sb[k]).all() for k in sa)
    assert a.losses == b.losses


def test_weights_are_written_in_shards_and_read_back_whole(tmp_path: Path) -> None:
    """An artefact above a shard's size is written as model-0000i-of-0000N.safetensors (the shipped one was one
    21 MB file); the router reads the shards as one file, and a missing shard is a ConfigError naming the fix."""
    import shutil

    from safetensors.numpy import load_file

    from universalrag.routing.trained_router import write_weights

    tensors = {}
    for file in weight_files(DEFAULT_ARTEFACT):
        tensors.update(load_file(str(file)))
    out = tmp_path / "router"
    shutil.copytree(DEFAULT_ARTEFACT, out)
    queries = ["how many moons does saturn have", "what is 17 times 3", "show me the lighthouse photo"]
    shipped = [TrainedRouter(DEFAULT_ARTEFACT).route(q).scores for q in queries]

    written = write_weights(out, tensors, shard_bytes=4 * 1024 * 1024)  # replaces the two shards copied
    assert [p.name for p in written] == [p.name for p in weight_files(out)] and len(written) >= 5
    assert all(p.stat().st_size <= 4 * 1024 * 1024 + 16 * 1024 for p in written)  # + the JSON header
    assert [TrainedRouter(out).route(q).scores for q in queries] == shipped

    assert write_weights(out, tensors, shard_bytes=64 * 1024 * 1024) == weight_files(out) == [out / "model.safetensors"]
    assert [TrainedRouter(out).route(q).scores for q in queries] == shipped

    write_weights(out, tensors, shard_bytes=4 * 1024 * 1024)[1].unlink()
    with pytest.raises(ConfigError, match="incomplete set of weight files"):
        TrainedRouter(out).route("anything")
