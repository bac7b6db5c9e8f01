"""Typos in real questions: what routed retrieval finds with and without the spelling correction, in one run.

    python benchmarks/spelling.py [--schema e2e250] [--out benchmarks/out] [--split report] [--max-questions N]

The knowledge base and questions are ``routing_e2e.py``'s (the 250 wikitables pages ingested as a folder, the
demo, Python's reference topics, photos and videos; pass the same ``--schema`` and ``--out`` to reuse what it
ingested). Every answerable question of the split is also asked with one typo, made the way people mistype: in
one word of five letters or more (chosen at random, seeded by the question), not at its first letter, two
neighbouring letters swapped, a letter left out, a letter doubled, or a letter replaced by its neighbour on a
QWERTY keyboard (one of the four at random). Four runs of ``retrieve(allow_none=True)`` (the ``routed`` strategy):

- clean questions, correction on (the default) and off (``UniversalRAG(spelling=False)``): what the correction
  costs questions that have no typo (a clean question's unknown word that no unit holds may be "corrected");
- questions with a typo, correction off and on: what it recovers.

Prints the share of questions whose gold is in the top 5 (as ``routing_e2e.py`` counts it: the page for
wikitables, the unit for the own sets; ``unit@5`` the gold unit for all), false ``none``, how many typos were
restored to the word the question had, how many clean questions were changed, and the wall time of
``UniversalRAG.plan`` (where the correction runs) per question, with the CPU model and load. Writes
``spelling.png`` and ``spelling.json`` into ``--out``; ends with one JSON line on stdout.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import re
import sys
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import cpu_model, figure, percentile, save_png, timed  # noqa: E402
from routing_data import BenchQuestion, find_wikitables, prepare_benchmark  # noqa: E402
from routing_e2e import K, evaluate  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_NEAR = {c: "".join(row[j] for j in (i - 1, i + 1) if 0 <= j < len(row)) for row in _ROWS for i, c in enumerate(row)}
_LONG_WORD = re.compile(r"(?<![\w.:/@-])[A-Za-z]{5,}(?![\w:/@-])")


def misspell(question: str) -> tuple[str, str, str] | None:
    """``(question with one typo, the word as it was, the word as mistyped)``, or ``None`` when no word has five
    letters. Seeded by the question, so every run makes the same typos."""
    rng = random.Random(zlib.crc32(question.encode("utf-8")))
    words = [m for m in _LONG_WORD.finditer(question) if not m.group().isupper()]
    if not words:
        return None
    match = rng.choice(words)
    word = match.group()
    i = rng.randrange(1, len(word) - 1)
    kind = rng.choice(("swap", "drop", "double", "near"))
    if kind == "swap" and word[i].lower() != word[i + 1].lower():
        typo = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    elif kind == "drop":
        typo = word[:i] + word[i + 1 :]
    elif kind == "double":
        typo = word[:i] + word[i] + word[i:]
    else:
        near = _NEAR.get(word[i].lower()) or "e"
        typo = word[:i] + rng.choice(near) + word[i + 1 :]
    return question[: match.start()] + typo + question[match.end() :], word.lower(), typo.lower()


def _plan_ms(rag: Any, questions: Sequence[BenchQuestion]) -> dict[str, float]:
    times = [timed(rag.plan, q.query)[0] * 1000 for q in questions]
    return {"p50_ms": round(percentile(times, 50), 2), "p95_ms": round(percentile(times, 95), 2)}


def plot(results: dict[str, dict[str, Any]], path: Path, *, title: str) -> Path:
    """Bars: gold in the top 5 (hit@5, unit@5) per run."""
    names = list(results)
    fig, ax = figure(size=(8, 4.4))
    for j, metric in enumerate(("hit5", "unit5")):
        values = [results[n][metric] or 0 for n in names]
        bars = ax.bar([i + j * 0.4 for i in range(len(names))], values, 0.4, label=f"{metric[:-1]}@{K}")
        ax.bar_label(bars, labels=[f"{v:.1%}" for v in values], fontsize=7)
    ax.set_xticks([i + 0.2 for i in range(len(names))], names, fontsize=8)
    ax.set_ylim(0, 1.0)
    ax.set_ylabel(f"share of answerable questions, gold in top {K}")
    ax.legend(fontsize=8)
    return save_png(fig, path, title=title)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", help="PostgreSQL URL (default: UNIVERSALRAG_DATABASE_URL, else embedded)")
    ap.add_argument("--schema", default="routing_e2e", help="the knowledge base's schema (routing_e2e.py's)")
    ap.add_argument("--wikitables", type=Path, default=find_wikitables(), help="the shared wikitables folder")
    ap.add_argument("--split", choices=["report", "tune", "all"], default="report")
    ap.add_argument("--max-questions", type=int, help="ask at most this many questions (the first ones)")
    ap.add_argument(
        "--out",
        type=Path,
        default=REPO / "benchmarks" / "out",
        help="results folder; routing_e2e.py's own corpora are under OUT/e2e_<schema>/kb",
    )
    return ap.parse_args(argv)


def run(argv: Sequence[str] | None = None) -> dict[str, Any]:
    from universalrag.config import Settings
    from universalrag.pipeline import UniversalRAG

    args = parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    # both facades ask the same questions: each embeds them every time, as a new question is (timed)
    settings = Settings.from_env().with_(database_url=args.database_url, schema=args.schema, query_vectors=0)
    rag = UniversalRAG(settings=settings, generator=None, visual_encoder=None, log_decisions=False)
    plain = UniversalRAG(
        settings=settings,
        store=rag.store,
        embedder=rag.embedder,
        generator=None,
        visual_encoder=None,
        log_decisions=False,
        spelling=False,
    )
    questions, _ = prepare_benchmark(
        rag, args.out / f"e2e_{args.schema}", quick=False, pages=None, wikitables=args.wikitables, log=log
    )
    clean = [q for q in questions if q.answerable and (args.split == "all" or q.split == args.split)]
    clean = clean[: args.max_questions] if args.max_questions else clean
    typos: list[tuple[BenchQuestion, BenchQuestion, str, str]] = []
    for q in clean:
        made = misspell(q.query)
        if made is not None:
            typos.append((q, dataclasses.replace(q, query=made[0]), made[1], made[2]))
    clean = [t[0] for t in typos]  # the same questions in both forms (nearly all have a word of five letters)
    typed = [t[1] for t in typos]
    log(f"{len(clean)} answerable questions ({args.split} split) with a word of five letters, each given a typo")
    load_before = os.getloadavg()[0]
    runs = {
        "clean, correction off": (plain, clean),
        "clean, correction on": (rag, clean),
        "typo, correction off": (plain, typed),
        "typo, correction on": (rag, typed),
    }
    results: dict[str, dict[str, Any]] = {}
    for name, (instance, asked) in runs.items():
        results[name] = evaluate(lambda q, r=instance: r.retrieve(q.query, k=K, allow_none=True), asked)
        log(
            f"  {name}: hit@{K} {results[name]['hit5']}, unit@{K} {results[name]['unit5']}, "
            f"false none {results[name]['false_none']}"
        )
    restored = sum(
        any(c.typo == typo and c.word == word for c in rag.plan(t.query).corrections) for _, t, word, typo in typos
    )
    changed = [q.query for q in clean if rag.plan(q.query).corrections]
    timing = {
        "clean": _plan_ms(rag, clean),
        "typo": _plan_ms(rag, typed),
        "clean, correction off": _plan_ms(plain, clean),
    }
    summary = {
        "benchmark": "spelling",
        "split": args.split,
        "k": K,
        "questions": len(clean),
        "with_typo": len(typed),
        "runs": results,
        "typos_restored": restored,
        "clean_changed": len(changed),
        "clean_changed_examples": changed[:10],
        "plan_ms": timing,
        "machine": {
            "cpu": cpu_model(),
            "load_before": round(load_before, 2),
            "load_after": round(os.getloadavg()[0], 2),
        },
    }
    log(
        f"typos restored to the word as it was: {restored} of {len(typos)}; clean questions changed: "
        f"{len(changed)} of {len(clean)}"
    )
    log(
        f"UniversalRAG.plan wall time p50/p95: clean {timing['clean']['p50_ms']}/{timing['clean']['p95_ms']} ms "
        f"(off: {timing['clean, correction off']['p50_ms']}/{timing['clean, correction off']['p95_ms']}), "
        f"with a typo {timing['typo']['p50_ms']}/{timing['typo']['p95_ms']} ms; {summary['machine']['cpu']}, "
        f"load {summary['machine']['load_before']} before, {summary['machine']['load_after']} after"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "spelling.json").write_text(json.dumps(summary, indent=2))
    title = f"Typos: routed retrieval with and without correction, {args.split} split, {len(typed)} questions"
    log(f"plot: {plot(results, args.out / 'spelling.png', title=title)}")
    rag.close()
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    print(json.dumps(run(argv)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
