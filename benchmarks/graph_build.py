"""What the knowledge graph costs at ingestion, and how large it is.

    python benchmarks/graph_build.py [--quick] [--pages 40] [--database-url URL] [--out DIR]

``--pages`` pages of ``../shared/data/wikitables`` (HTML pages with their tables) are ingested with the bundled
MiniLM three times, each into a scratch schema of its own, through the public call ``ingest_paths``:

- ``plain``: no graph;
- ``graph_no_vectors``: the structural extractor's graph written with each source (``IngestOptions(graph=...)``),
  as ingestion does by default;
- ``graph``: the same with entity vectors computed at write time (``GraphStore(store, embedder)``).

The time spent extracting and writing the graph is also measured inside each ingest (the hook is timed), and set
against the rest of the same ingest: on a loaded machine that ratio is steadier than two runs set side by side.
Then ``GraphStore.rebuild`` builds the graph of the ``plain`` schema from its stored units (``universalrag graph
build``). Prints each wall time, the graph's share of the ingest, the rows the graph holds per 1,000 units, with the
CPU model and the load; writes ``graph_build.json`` into ``--out``; ends with one JSON line.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import finish, log, machine_line, parser, scratch_store, timed  # noqa: E402

PAGES = Path(__file__).resolve().parents[2] / "shared" / "data" / "wikitables" / "pages"


def _units(report: Any) -> int:
    return sum(n for o in report.outcomes for k, n in o.rows.items() if not k.endswith(".parts"))


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--pages", type=int, default=40)
    args = ap.parse_args()
    n = 8 if args.quick else args.pages
    if not PAGES.is_dir():
        raise SystemExit(f"{PAGES} is missing: this benchmark reads the wikitables pages.")
    from universalrag.embed import bundled_minilm
    from universalrag.graph.store import GraphStore
    from universalrag.graph.structural import StructuralExtractor
    from universalrag.ingest import IngestOptions, ingest_paths

    pages = sorted(PAGES.glob("*.html"))[:n]
    embedder = bundled_minilm()
    embedder.embed(["warm the encoder up"])
    log(machine_line())
    log(f"{len(pages)} wikitables pages")
    result: dict[str, Any] = {"pages": len(pages)}
    with scratch_store(args.database_url, "warm") as store:  # the first ingest of a process pays for imports
        store.init(embedder=embedder.name, dimension=embedder.dimension)
        ingest_paths(store, embedder, pages[:2])
    for mode in ("plain", "graph_no_vectors", "graph"):
        with scratch_store(args.database_url, "graph") as store:
            store.init(embedder=embedder.name, dimension=embedder.dimension)
            graph = GraphStore(store, embedder)
            hook = graph.for_ingest(StructuralExtractor(), vectors=mode == "graph")
            spent = [0.0]

            def timed_hook(units: Any, uri: str, hook: Any = hook, spent: list[float] = spent) -> Any:
                started = time.perf_counter()
                write = hook(units, uri)  # the extraction

                def timed_write(*args: Any, write: Any = write, spent: list[float] = spent) -> None:
                    begun = time.perf_counter()
                    write(*args)
                    spent[0] += time.perf_counter() - begun

                spent[0] += time.perf_counter() - started
                return timed_write

            options = IngestOptions(graph=None if mode == "plain" else timed_hook)
            seconds, report = timed(ingest_paths, store, embedder, pages, options=options)
            failed = [o.path for o in report.outcomes if o.status == "failed"]
            if failed:
                raise SystemExit(f"pages failed: {failed[:3]}")
            units = _units(report)
            result[mode] = {"seconds": round(seconds, 2), "units": units, "graph_seconds": round(spent[0], 2)}
            if mode == "plain":
                built, build = timed(GraphStore(store, embedder).rebuild, StructuralExtractor())
                result["rebuild"] = {"seconds": round(built, 2), "sources": build.sources, "units": build.units}
            stats = GraphStore(store).stats()
            per = 1000 / max(units, 1)
            result[mode]["graph"] = {
                "entities": stats.entities,
                "relations": stats.relations,
                "mentions": stats.mentions,
                "per_1000_units": {
                    "entities": round(stats.entities * per),
                    "relations": round(stats.relations * per),
                    "mentions": round(stats.mentions * per),
                },
            }
            log(
                f"{mode:>17}: {seconds:6.2f} s, {units} units, graph {stats.entities} entities, "
                f"{stats.relations} relations, {stats.mentions} mentions"
            )
    plain = result["plain"]["seconds"]
    for mode in ("graph_no_vectors", "graph"):
        share = (result[mode]["seconds"] - plain) / plain
        inside = result[mode]["graph_seconds"] / (result[mode]["seconds"] - result[mode]["graph_seconds"])
        result[mode]["overhead"] = round(share, 3)
        result[mode]["graph_over_rest"] = round(inside, 3)
        log(
            f"{mode}: ingest {share:+.1%} against plain; extraction and graph writes took "
            f"{result[mode]['graph_seconds']:.2f} s, {inside:.1%} of the rest of the same ingest"
        )
    log(f"rebuild of the plain schema's graph: {result['rebuild']['seconds']:.2f} s")
    finish("graph_build", result, args.out)


if __name__ == "__main__":
    main()
