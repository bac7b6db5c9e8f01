"""Routing benchmark: accuracy and latency of each router beside two baselines, measured in one run.

    python benchmarks/routing.py [--data ../shared/data/routing/train.jsonl] [--compare-training]
                                 [--llm-model M --llm-url URL] [--out benchmarks/out]

The validation split is the one the shipped router was trained without (10 % of every source, seed 0).
Routers: the shipped trained router; a frozen-MiniLM + logistic-regression baseline (needs scikit-learn)
and description similarity (LlamaIndex's EmbeddingSingleSelector idea), both fitted on the same training
rows as the shipped model; example similarity over the project's own queries; a majority vote of the
three trained/fitted ones; the LLM router and the confidence ensemble when an endpoint is given.
``--compare-training`` also trains frozen-encoder and fine-tuned routers on the spot (several minutes).
Prints a table and writes ``routing.png`` (per-source accuracy) when matplotlib is installed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from universalrag.routing import (
    ROUTES,
    EnsembleRouter,
    ExampleRouter,
    LLMRouter,
    ScoringRouter,
    TrainConfig,
    TrainedRouter,
    bundled_heldout,
    bundled_queries,
    evaluate,
    read_jsonl,
    split_by_source,
    train_router,
)

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "routing" / "train.jsonl"


class LogRegRouter(ScoringRouter):
    """Baseline: mean-pooled frozen MiniLM embeddings + multinomial logistic regression on the primary route."""

    def __init__(self, rows: Sequence[Any], *, embedder: Any) -> None:
        super().__init__(name="logreg", multi=False)
        from sklearn.linear_model import LogisticRegression

        self._embedder = embedder
        x = embedder.embed([r.query for r in rows])
        self._model = LogisticRegression(max_iter=2000, C=4.0).fit(x, [r.primary for r in rows])

    @property
    def routes(self) -> tuple[str, ...]:
        return tuple(self._model.classes_)

    def score_many(self, queries: Sequence[str]) -> list[dict[str, float]]:
        probs = self._model.predict_proba(self._embedder.embed(list(queries)))
        return [{r: float(p) for r, p in zip(self._model.classes_, row, strict=True)} for row in probs]


def _summary(name: str, val: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    return {
        "router": name,
        "accuracy": val["accuracy"],
        "macro": val["macro_accuracy"],
        "exact_set": val["exact_set"],
        "p50_ms": val["latency_ms"]["p50"],
        "p95_ms": val["latency_ms"]["p95"],
        "own_heldout": own["accuracy"],
        "per_source": val["per_source"],
        "own_per_route": own["per_route"],
    }


def _measure(name: str, router: Any, val: Sequence[Any], held: Sequence[Any], *, latency_n: int) -> dict[str, Any]:
    acc = evaluate(router, val, batched=True)
    lat = evaluate(router, val[:latency_n])["latency_ms"]  # single queries, one at a time
    acc["latency_ms"] = lat
    own = evaluate(router, held, batched=True)
    print(f"  {name}: macro {acc['macro_accuracy']:.1%}, p50 {lat['p50']:.1f} ms", file=sys.stderr)
    return _summary(name, acc, own)


def _plot(results: list[dict[str, Any]], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    sources = sorted({s for r in results for s in r["per_source"]})
    width = 0.8 / len(results)
    fig, ax = plt.subplots(figsize=(max(8, len(sources) * 1.3) + 4, 4.5))
    for i, r in enumerate(results):
        xs = [j + i * width for j in range(len(sources))]
        ax.bar(xs, [r["per_source"].get(s, 0) for s in sources], width, label=f"{r['router']} ({r['macro']:.1%})")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(sources))], sources, rotation=30, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy (primary route among gold)")
    ax.set_title("Routing accuracy per source on the held-out split (legend: macro accuracy)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--val-split", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--latency-n", type=int, default=200, help="queries timed one at a time per router")
    ap.add_argument("--compare-training", action="store_true", help="also train frozen and fine-tuned routers")
    ap.add_argument("--llm-model")
    ap.add_argument("--llm-url")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "out")
    args = ap.parse_args(argv)
    if not args.data.is_file():
        print(f"routing data not found at {args.data}; pass --data", file=sys.stderr)
        return 2
    import torch

    from universalrag.embed import bundled_minilm

    rows = read_jsonl(args.data)
    train, val = split_by_source(rows, val_fraction=args.val_split, seed=args.seed)
    train += bundled_queries()
    held = bundled_heldout()
    print(
        f"{len(train)} training rows (shared split + own queries), {len(val)} validation rows, "
        f"{len(held)} own held-out queries; torch threads {torch.get_num_threads()}",
        file=sys.stderr,
    )
    embedder = bundled_minilm()
    trained = TrainedRouter.default().load()
    routers: list[tuple[str, Any]] = [("trained (shipped)", trained)]
    try:
        logreg: Any = LogRegRouter(train, embedder=embedder)
        routers.append(("baseline: MiniLM + logreg", logreg))
    except ImportError:
        logreg = None
        print("scikit-learn is not installed: the logistic-regression baseline is skipped", file=sys.stderr)
    descriptions = ExampleRouter.from_descriptions(embedder=embedder, multi=False)
    examples = ExampleRouter.with_builtin(embedder=embedder)
    routers += [("baseline: description similarity", descriptions), ("examples (own queries, kNN)", examples)]
    if logreg is not None:
        routers.append(("vote: trained + logreg + examples", EnsembleRouter.majority([trained, logreg, examples])))
    if args.llm_model:
        llm = LLMRouter(args.llm_model, base_url=args.llm_url)
        routers += [("llm", llm), ("ensemble: trained ≥ 0.9 else llm", EnsembleRouter.confident(trained, llm))]
    if args.compare_training:
        for label, cfg in [
            ("frozen MiniLM + MLP head", TrainConfig.for_mode("frozen")),
            ("fine-tune top 3 layers", TrainConfig.for_mode("finetune", trainable_layers=3)),
            ("fine-tune all 6 layers", TrainConfig.for_mode("finetune")),
        ]:
            start = time.perf_counter()
            result = train_router(train, config=cfg)
            out = result.save(args.out / "compare" / cfg.mode / str(cfg.trainable_layers))
            size = (out / "model.safetensors").stat().st_size / 1e6
            routers.append((f"{label} ({size:.1f} MB, {time.perf_counter() - start:.0f} s)", TrainedRouter(out)))
    results = [_measure(name, r, val, held, latency_n=args.latency_n) for name, r in routers]

    print(f"\n{'router':48} {'acc':>6} {'macro':>6} {'exact':>6} {'p50 ms':>7} {'p95 ms':>7} {'own':>6}")
    for r in results:
        print(
            f"{r['router']:48} {r['accuracy']:6.1%} {r['macro']:6.1%} {r['exact_set']:6.1%} "
            f"{r['p50_ms']:7.2f} {r['p95_ms']:7.2f} {r['own_heldout']:6.1%}"
        )
    sources = sorted(results[0]["per_source"])
    print("\nper source: " + ", ".join(sources))
    for r in results:
        print(f"{r['router']:48} " + " ".join(f"{r['per_source'][s]:6.1%}" for s in sources))
    print("\nown held-out, per route: " + ", ".join(ROUTES))
    for r in results:
        print(f"{r['router']:48} " + " ".join(f"{r['own_per_route'].get(x, 0):6.1%}" for x in ROUTES))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "routing.json").write_text(json.dumps(results, indent=2))
    if _plot(results, args.out / "routing.png"):
        print(f"\nplot: {args.out / 'routing.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
