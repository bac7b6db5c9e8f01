"""Facts joined by a name: does routed retrieval show a model the second fact, with and without the knowledge graph?

    python benchmarks/graph.py [--quick] [--structures 150] [--pages 40] [--split all] [--database-url URL] [--out DIR]

One knowledge base holds a seeded world (``graph_world.py``: structures, the engineers who designed them, the firms that
built them, the towns they stand in; pages in Markdown, engineers and towns in CSV tables; survey reports in PDF whose
captioned photographs show the structures and whose notes, citing each figure, name its photographer; museum pages in
HTML linking to their first curator's page; subtitled videos of events whose transcript names a person with a page of
their own) and, when the shared wikitables folder is there, ``--pages`` of its Wikipedia pages (skipped with a message
otherwise). The graph is built from the stored units by the structural extractor (timed, with its rows counted). Then
every question is asked of ``UniversalRAG.retrieve`` twice in the same run, routed as the library routes by default:

- ``graph``: the default facade, which walks the graph when its rule says so (:mod:`universalrag.graph.retrieve`);
- ``plain``: the same facade built with ``walk_graph=False``.

A question counts when the fact it needs is *shown* within the top 5: in a hit's text, or among the first three matched
rows or chunks of a table or document hit (what a model is given first). Two-hop questions ("where was the designer of
the X born?") need a unit that shares only a name with the one the question names; single-fact ones ("who designed the
X?", "where was Y born?") ask the named thing's own unit. The media's two-hop families: a figure and the note citing it
(``figure_photographer``: "who photographed the X for the survey?", ``figure_subject``: the other way round,
``figure_birthplace``: on to the photographer's page), a page reached by a hyperlink whose words do not name it
(``link_*``: "where was the first curator of the M born?") and a clip and the page about the person its transcript names
(``clip_*``). The wikitables questions (single-fact, crowd-written) count when their page is in the top 5. The world's
questions of every third structure (and of every third engineer, firm and town, every third report figure, museum and
video) are held out (``heldout``): the walk rule and the fusion weights were chosen on the ``tune`` questions only.
Prints hit rates per split and kind, per family and split, how often the graph was walked, route + retrieve p50 of both,
the graph's build time and rows; writes ``graph.json`` and ``graph.png`` into ``--out`` and ends with one JSON line.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from graph_world import WorldQuestion, build_world  # noqa: E402
from machine import figure, finish, log, machine_line, parser, percentile, save_png, scratch_store  # noqa: E402
from routing_data import find_wikitables, wikitables_pages, wikitables_questions  # noqa: E402

K = 5
#: Matched parts (rows, chunks) of a hit counted as shown.
SHOWN_PARTS = 3
TARGETS = {"two_hop": 0.80, "single_drop_points": 0.5}


@dataclass(frozen=True)
class Question:
    """A question of either set: ``needs`` (all in one shown text) or ``uri`` (the page in the top k)."""

    query: str
    hops: int
    family: str
    split: str
    source: str
    needs: tuple[str, ...] = ()
    uri: str | None = None


def shown(hit: Any) -> list[str]:
    """What a model is shown of ``hit`` first: the first matched parts of a table or document, else its text."""
    if hit.matched_parts:
        return [text for _, text, _ in hit.matched_parts[:SHOWN_PARTS]]
    return [hit.content]


def answered(q: Question, hits: Sequence[Any]) -> bool:
    """Whether the top ``K`` of ``hits`` show what ``q`` needs."""
    if q.uri is not None:
        return any(h.uri == q.uri for h in hits[:K])
    needs = [n.casefold() for n in q.needs]
    return any(all(n in text.casefold() for n in needs) for h in hits[:K] for text in shown(h))


def world_questions(items: Sequence[WorldQuestion]) -> list[Question]:
    return [Question(q.query, q.hops, q.family, q.split, "world", needs=q.needs) for q in items]


def evaluate(
    name: str,
    run: Callable[[str], tuple[list[Any], bool]],
    questions: Sequence[Question],
    *,
    misses: Sequence[str] = (),
) -> dict[str, Any]:
    """Hit rates per (split, kind), walk rates, latency of ``run`` (route + retrieve) over ``questions``; logs the
    top hits of the tune questions of the families in ``misses`` that were missed."""
    for q in questions[:3]:
        run(q.query)  # warm connections and caches
    rows, times = [], []
    for q in questions:
        started = time.perf_counter()
        hits, walked = run(q.query)
        times.append((time.perf_counter() - started) * 1000)
        rows.append((q, answered(q, hits), walked))
        if q.family in misses and q.split == "tune" and not rows[-1][1]:
            log(f"{name} missed {q.query!r} (needs {q.needs}; walked {walked}):")
            for h in hits[:K]:
                path = f" via {h.path.seed} -> {h.path.entity} ({h.path.relation}, {h.path.hops})" if h.path else ""
                log(f"    {h.corpus} {h.score:.3f}{path}: {' | '.join(shown(h))[:160]!r}")

    def share(pick: Callable[[Question], bool], of: int = 1) -> float | None:
        chosen = [r for r in rows if pick(r[0])]
        return round(sum(bool(r[of]) for r in chosen) / len(chosen), 4) if chosen else None

    out: dict[str, Any] = {"p50_ms": round(percentile(times, 50), 2), "p95_ms": round(percentile(times, 95), 2)}
    for split in ("tune", "heldout", "all"):
        for source in ("world", "wikitables"):
            for hops, kind in ((1, "single"), (2, "two_hop")):

                def pick(q: Question, split: str = split, source: str = source, hops: int = hops) -> bool:
                    return q.source == source and q.hops == hops and split in ("all", q.split)

                if any(pick(r[0]) for r in rows):
                    out[f"{source}_{kind}_{split}"] = share(pick)
                    out[f"{source}_{kind}_{split}_walked"] = share(pick, of=2)
    families = sorted({(q.hops, q.family) for q in questions if q.source == "world"})
    for split in ("all", "tune", "heldout"):

        def in_family(q: Question, family: str, hops: int, split: str = split) -> bool:
            return q.source == "world" and q.family == family and q.hops == hops and split in ("all", q.split)

        out["families" if split == "all" else f"families_{split}"] = {
            f"{hops}:{family}": share(lambda q, f=family, h=hops: in_family(q, f, h)) for hops, family in families
        }
    log(f"{name}: {len(rows)} questions, p50 {out['p50_ms']} ms")
    return out


def build_graph(rag: Any) -> dict[str, Any]:
    """Build the graph of the stored sources with the structural extractor; its time and rows."""
    from universalrag.graph.store import GraphStore
    from universalrag.graph.structural import StructuralExtractor

    graph = GraphStore(rag.store, rag.embedder)
    started = time.perf_counter()
    report = graph.rebuild(StructuralExtractor())
    seconds = time.perf_counter() - started
    stats = graph.stats()
    if rag.graph_retrieval is not None:
        rag.graph_retrieval.invalidate()
    return {
        "build_s": round(seconds, 2),
        "sources": report.sources,
        "entities": stats.entities,
        "relations": stats.relations,
        "mentions": stats.mentions,
    }


def main(argv: list[str] | None = None) -> int:
    from universalrag.pipeline import UniversalRAG

    ap = parser(__doc__)
    ap.add_argument("--structures", type=int, help="structures in the world (default 150; --quick 24)")
    ap.add_argument("--pages", type=int, help="wikitables pages (default 40; --quick 0)")
    ap.add_argument("--questions", type=int, default=200, help="wikitables questions asked at most (default 200)")
    ap.add_argument("--wikitables", type=Path, default=find_wikitables(), help="the shared wikitables folder")
    ap.add_argument("--seed", type=int, default=7, help="the world's seed (default 7)")
    ap.add_argument("--misses", nargs="*", default=(), help="log the missed tune questions of these families")
    args = ap.parse_args(argv)
    structures = args.structures or (24 if args.quick else 150)
    pages_wanted = args.pages if args.pages is not None else (0 if args.quick else 40)
    log(machine_line())
    with tempfile.TemporaryDirectory() as tmp, scratch_store(args.database_url, "graph") as store:
        folder = Path(tmp) / "world"
        questions = world_questions(build_world(folder, structures=structures, seed=args.seed))
        paths: list[Path] = [folder]
        if pages_wanted:
            if args.wikitables is None:
                log("wikitables: the shared folder was not found; that part is skipped (pass --wikitables)")
            else:
                pages = wikitables_pages(args.wikitables, limit=pages_wanted)
                paths += pages
                asked = wikitables_questions(args.wikitables, pages=pages)[: args.questions]
                questions += [Question(q.query, 1, "wikitables", "heldout", "wikitables", uri=q.uri) for q in asked]
        # ingested without a graph, then built from the stored units, so the graph's cost is timed on its own
        settings = store.settings.with_(query_vectors=0, graph="off")
        rag = UniversalRAG(settings=settings, store=store, generator=None, visual_encoder=None, log_decisions=False)
        plain = UniversalRAG(
            settings=settings,
            store=store,
            embedder=rag.embedder,
            generator=None,
            visual_encoder=None,
            log_decisions=False,
            walk_graph=False,
        )
        started = time.perf_counter()
        report = rag.ingest(paths)
        ingest_s = time.perf_counter() - started
        log(f"ingested in {ingest_s:.0f} s: {report}")
        graph = build_graph(rag)
        log(
            f"graph built in {graph['build_s']} s: {graph['entities']} entities, {graph['relations']} relations, "
            f"{graph['mentions']} mentions"
        )

        def with_graph(query: str) -> tuple[list[Any], bool]:
            plan = rag.plan(query, k=K)
            hits = rag.retrieve(plan, allow_none=True)
            return hits, bool(plan.graph_hits)

        def without(query: str) -> tuple[list[Any], bool]:
            return plain.retrieve(query, k=K, allow_none=True), False

        results = {
            "graph": evaluate("graph", with_graph, questions, misses=args.misses),
            "plain": evaluate("plain", without, questions),
        }
        rag.close()
        plain.close()
    g, p = results["graph"], results["plain"]
    log(f"{'':28}{'plain':>8}{'graph':>8}")
    for key in sorted(k for k in g if k.startswith(("world_", "wikitables_")) and not k.endswith("_walked")):
        log(f"{key:28}{_pct(p.get(key)):>8}{_pct(g.get(key)):>8}   walked {_pct(g.get(key + '_walked'))}")
    log(f"{'family':28}{'tune plain':>12}{'graph':>8}{'held-out plain':>16}{'graph':>8}")
    for family in g["families"]:
        figures = [_pct(r[f"families_{s}"].get(family)) for s in ("tune", "heldout") for r in (p, g)]
        log(f"  {family:26}{figures[0]:>12}{figures[1]:>8}{figures[2]:>16}{figures[3]:>8}")
    log(f"route + retrieve p50: plain {p['p50_ms']} ms, graph {g['p50_ms']} ms")
    targets = {
        "two_hop_heldout": {
            "value": g.get("world_two_hop_heldout"),
            "target": f">= {TARGETS['two_hop']}",
            "met": (g.get("world_two_hop_heldout") or 0) >= TARGETS["two_hop"],
        },
        "single_drop_points": {
            "value": _drop(p, g),
            "target": f"<= {TARGETS['single_drop_points']}",
            "met": _drop(p, g) <= TARGETS["single_drop_points"],
        },
    }
    fig, ax = figure()
    keys = [k for k in ("world_two_hop_all", "world_single_all", "wikitables_single_all") if k in g]
    xs = range(len(keys))
    ax.bar([x - 0.2 for x in xs], [100 * (p.get(k) or 0) for k in keys], width=0.4, label="plain")
    ax.bar([x + 0.2 for x in xs], [100 * (g.get(k) or 0) for k in keys], width=0.4, label="graph")
    ax.set_xticks(list(xs), [k.replace("_all", "") for k in keys], fontsize=7)
    ax.set_ylabel(f"second fact shown in the top {K} (%)")
    ax.legend()
    save_png(fig, args.out / "graph.png", title="Routed retrieval with and without the knowledge graph")
    finish(
        "graph",
        {
            "structures": structures,
            "questions": len(questions),
            "ingest_s": round(ingest_s, 1),
            "graph": graph,
            "results": results,
            "targets": targets,
        },
        args.out,
    )
    return 0


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _drop(plain: dict[str, Any], graph: dict[str, Any]) -> float:
    """The largest drop (points) of a single-fact hit rate with the graph, over every set and split measured."""
    keys = [k for k in plain if "_single_" in k and not k.endswith("_walked")]
    return max((round(100 * ((plain[k] or 0) - (graph.get(k) or 0)), 1) for k in keys), default=0.0)


if __name__ == "__main__":
    raise SystemExit(main())
