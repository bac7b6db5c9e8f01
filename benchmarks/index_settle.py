"""Full-text lookups after an ingest, with the new rows still pending in the GIN indexes and once they are merged.

    python benchmarks/index_settle.py [--quick] [--pages 100] [--questions 60] [--database-url URL] [--out DIR]

PostgreSQL adds a new row's entries to a GIN index's *pending list*, which autovacuum merges after about a thousand
inserts plus a fifth of the table, or an insert merges once it outgrows ``gin_pending_list_limit`` (4 MB). A corpus
of a few hundred documents reaches neither, so every full-text lookup read the whole list, and the planner, counting
those pages, scanned a small table of whole documents row by row. An ingest now merges the lists of the corpora it
wrote (``Store.settle``). Here ``--pages`` pages of ``../shared/data/wikitables`` are ingested into a
scratch schema with that step left out (``Store.settle`` patched to do nothing: the state an ingest left before),
then the same lookups run before and after ``Store.settle``, on the same rows:

- ``corrections``: ``UniversalRAG.corrections`` of the pages' crowd-written questions with one typo each
  (``spelling.misspell``): the words of the question, then a typo's neighbours, looked up in every corpus;
- ``hybrid``: ``UniversalRAG(hybrid=True).retrieve`` of the clean questions (full-text rank beside the vectors).

Prints p50 / p95 wall time of each call before and after, with the CPU model and the load, and how many pending
pages were merged; checks that both states give the same corrections and hits. Writes ``index_settle.json`` and
``index_settle.png`` into ``--out``; ends with one JSON line.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import figure, finish, log, machine_line, parser, percentile, save_png, scratch_store, timed  # noqa: E402
from routing_data import find_wikitables, wikitables_pages, wikitables_questions  # noqa: E402
from spelling import misspell  # noqa: E402


def measure(fn: Any, questions: list[str]) -> tuple[dict[str, float], list[Any]]:
    """p50 / p95 wall time (ms) of ``fn(q)`` over ``questions``, after one call to warm up, and the results."""
    fn(questions[0])
    times, results = [], []
    for q in questions:
        seconds, result = timed(fn, q)
        times.append(seconds * 1000)
        results.append(result)
    return {"p50_ms": round(percentile(times, 50), 2), "p95_ms": round(percentile(times, 95), 2)}, results


def plot(results: dict[str, dict[str, dict[str, float]]], path: Path, *, title: str) -> Path:
    fig, ax = figure(size=(7, 4.2))
    names = list(results)
    for j, state in enumerate(("pending", "settled")):
        values = [results[n][state]["p50_ms"] for n in names]
        bars = ax.bar([i + j * 0.4 for i in range(len(names))], values, 0.4, label=f"{state} (p50)")
        ax.bar_label(bars, labels=[f"{v:.1f}" for v in values], fontsize=7)
    ax.set_xticks([i + 0.2 for i in range(len(names))], names, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("wall time per call, ms (log scale)")
    ax.legend(fontsize=8)
    return save_png(fig, path, title=title)


def main(argv: list[str] | None = None) -> int:
    from universalrag.pipeline import UniversalRAG
    from universalrag.store import Store

    ap = parser(__doc__)
    ap.add_argument("--pages", type=int, help="wikitables pages ingested (default 100; --quick 12)")
    ap.add_argument("--questions", type=int, help="questions asked (default 60; --quick 15)")
    ap.add_argument("--wikitables", type=Path, default=find_wikitables(), help="the shared wikitables folder")
    args = ap.parse_args(argv)
    if args.wikitables is None:
        ap.error("the shared wikitables folder was not found: pass --wikitables")
    pages = wikitables_pages(args.wikitables, limit=args.pages or (12 if args.quick else 100))
    with scratch_store(args.database_url, "settle") as store:
        # the timed questions repeat (pending, then settled): each is embedded every time, as a new one is
        settings = store.settings.with_(query_vectors=0)
        rag = UniversalRAG(settings=settings, store=store, generator=None, visual_encoder=None, log_decisions=False)
        hybrid = UniversalRAG(
            settings=settings,
            store=store,
            embedder=rag.embedder,
            generator=None,
            visual_encoder=None,
            log_decisions=False,
            hybrid=True,
        )
        with mock.patch.object(Store, "settle", lambda self, corpora: 0):  # the ingest as it was: lists left pending
            seconds, report = timed(rag.ingest, pages)
        log(f"ingested {len(pages)} pages in {seconds:.0f} s: {report}")
        questions = [q.query for q in wikitables_questions(args.wikitables, pages=pages)]
        questions = questions[: args.questions or (15 if args.quick else 60)]
        typos = [t[0] for t in map(misspell, questions) if t is not None]
        calls = {
            "corrections": (rag.corrections, typos),
            "hybrid": (lambda q: [h.id for h in hybrid.retrieve(q)], questions),
        }
        results: dict[str, dict[str, Any]] = {name: {} for name in calls}
        answers: dict[str, dict[str, list[Any]]] = {name: {} for name in calls}
        for state in ("pending", "settled"):
            if state == "settled":
                merged = store.settle(store.nonempty())
                log(f"merged {merged} pending pages")
            for name, (fn, asked) in calls.items():
                results[name][state], answers[name][state] = measure(fn, asked)
        log(machine_line())
        log(f"{len(pages)} pages, {len(questions)} questions ({len(typos)} with a typo)")
        for name, figures in results.items():
            before, after = figures["pending"], figures["settled"]
            figures["ratio_p50"] = round(before["p50_ms"] / after["p50_ms"], 2) if after["p50_ms"] else None
            figures["same_answers"] = answers[name]["pending"] == answers[name]["settled"]
            log(
                f"{name:<12} pending p50 {before['p50_ms']:7.1f} ms  p95 {before['p95_ms']:7.1f} ms   settled p50 "
                f"{after['p50_ms']:7.1f} ms  p95 {after['p95_ms']:7.1f} ms   {figures['ratio_p50']}x  same answers: "
                f"{figures['same_answers']}"
            )
        plot(results, args.out / "index_settle.png", title=f"Full-text lookups, {len(pages)} wikitables pages")
        finish(
            "index_settle",
            {
                "pages": len(pages),
                "questions": len(questions),
                "typos": len(typos),
                "pending_pages_merged": merged,
                **results,
            },
            args.out,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
