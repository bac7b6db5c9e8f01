"""Real questions through HNSW graphs built with different candidate lists (``ef_construction``): how often the
answering table is in the top 5, the search's time and the build's, beside an exact scan in the same run.

    python benchmarks/hnsw_build.py [--schema hnsw_build] [--pages N] [--builds 3] [--ef-construction 64,128]

The wikitables pages (``../shared/data/wikitables``; ``--pages``: that many evenly spaced ones) are ingested as a
folder into ``--schema`` (kept between runs: ingested once). Every crowd-written question about one of their tables
is searched in the table corpus (k = 5) through the HNSW index of the table rows, rebuilt before each round with
each list in turn — pgvector draws a graph's levels at random, so two builds with the same list differ; the rounds
show by how much — and once by an exact scan. Questions are embedded once. The index is left built with the
library's list (:data:`EF_CONSTRUCTION`, migration 0011). Prints one line per build and a summary; writes
``<out>/hnsw_build.json`` and a PNG.
"""

from __future__ import annotations

import importlib
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import machine as bench
from routing_data import resolve_gold, wikitables_pages, wikitables_questions
from scaling import rebuild_index

WIKITABLES = Path(__file__).resolve().parents[2] / "shared" / "data" / "wikitables"
#: The list the corpus functions build with (migration 0011).
EF_CONSTRUCTION = importlib.import_module("universalrag.migrations.versions.0011_hnsw_build").EF_CONSTRUCTION


def _search(store, vectors, questions, *, exact_scan: bool | None) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """``(share of questions whose gold table is in the top 5, p50 ms)``."""
    found, times = 0, []
    for q, v in zip(questions, vectors, strict=True):
        started = time.perf_counter()
        hits = store.search("table", v.tolist(), k=5, exact_scan=exact_scan)
        times.append((time.perf_counter() - started) * 1000)
        found += any(h.id in q.gold_units for h in hits)
    return found / len(questions), statistics.median(times)


def main() -> None:
    ap = bench.parser(__doc__.splitlines()[0])
    ap.add_argument("--schema", default="hnsw_build", help="schema of the ingested pages (default %(default)s)")
    ap.add_argument("--pages", type=int, help="ingest this many evenly spaced pages (default: all)")
    ap.add_argument("--builds", type=int, default=3, help="builds of each list (default %(default)s)")
    ap.add_argument("--ef-construction", default=f"64,{EF_CONSTRUCTION}", help="lists to compare (default %(default)s)")
    args = ap.parse_args()
    if args.quick:
        args.pages, args.builds = args.pages or 40, min(args.builds, 2)
    lists = [int(x) for x in args.ef_construction.split(",")]

    from universalrag.config import Settings
    from universalrag.pipeline import UniversalRAG

    # the rounds rebuild full-precision indexes (scaling.rebuild_index): the corpora are made with one
    settings = Settings.from_env().with_(schema=args.schema, vector_index="vector")
    if args.database_url:
        settings = settings.with_(database_url=args.database_url)
    rag = UniversalRAG(settings=settings, generator=None, visual_encoder=None, log_decisions=False)
    try:
        chosen = wikitables_pages(WIKITABLES, limit=args.pages)
        rag.init()
        if not rag.store.counts().get("table"):
            bench.log(f"ingesting {len(chosen)} wikitables pages into {args.schema}")
            target = [WIKITABLES / "pages"] if len(chosen) == len(wikitables_pages(WIKITABLES)) else chosen
            rag.ingest(target)
        questions, _ = resolve_gold(
            rag.store, [q for q in wikitables_questions(WIKITABLES, pages=chosen) if q.corpus == "table"]
        )
        questions = [q for q in questions if q.gold_units]
        vectors = rag.embedder.embed([q.query for q in questions])
        tables = rag.store.counts().get("table", 0)
        bench.log(bench.machine_line())
        bench.log(f"{len(questions)} questions over {tables} tables of {len(chosen)} pages")
        exact_share, exact_ms = _search(rag.store, vectors, questions, exact_scan=True)
        bench.log(f"exact scan                     top-5 {100 * exact_share:5.2f} %  p50 {exact_ms:6.2f} ms")
        runs: dict[int, list[dict[str, float]]] = {ef: [] for ef in lists}
        for round_ in range(args.builds):
            for ef in lists:
                build_s = rebuild_index(rag.store, "table", ef, parts=True)
                share, ms = _search(rag.store, vectors, questions, exact_scan=False)
                runs[ef].append({"top5": share, "p50_ms": ms, "build_s": build_s})
                bench.log(
                    f"ef_construction {ef:4d}, build {round_ + 1}  top-5 {100 * share:5.2f} %  p50 {ms:6.2f} ms"
                    f"  build {build_s:5.1f} s"
                )
        rebuild_index(rag.store, "table", EF_CONSTRUCTION, parts=True)
        summary = {
            str(ef): {key: round(statistics.mean(r[key] for r in rs), 4) for key in rs[0]} for ef, rs in runs.items()
        }
        for ef, s in summary.items():
            bench.log(
                f"ef_construction {ef:>4s}, mean of {args.builds}  top-5 {100 * s['top5']:5.2f} %"
                f"  p50 {s['p50_ms']:6.2f} ms  build {s['build_s']:5.1f} s"
            )
        _plot(runs, exact_share, args.out / "hnsw_build.png")
        bench.finish(
            "hnsw_build",
            {
                "questions": len(questions),
                "pages": len(chosen),
                "exact": {"top5": exact_share, "p50_ms": exact_ms},
                "builds": summary,
            },
            args.out,
        )
    finally:
        rag.close()


def _plot(runs: dict[int, list[dict[str, float]]], exact: float, path: Path) -> None:
    fig, ax = bench.figure()
    for i, (ef, rs) in enumerate(runs.items()):
        ax.scatter([i] * len(rs), [100 * r["top5"] for r in rs], label=f"ef_construction {ef}")
    ax.axhline(100 * exact, color="grey", linestyle="--", label="exact scan")
    ax.set_xticks(range(len(runs)), [str(ef) for ef in runs])
    ax.set_xlabel("ef_construction (one point per build)")
    ax.set_ylabel("answering table in the top 5 (%)")
    ax.legend(fontsize=7)
    bench.save_png(fig, path, title="Wikitables questions through the table rows' HNSW graph")


if __name__ == "__main__":
    main()
