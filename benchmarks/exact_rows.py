"""Which rows a table hit shows, with and without the query's exact terms, on real pages and crowd-written questions.

    python benchmarks/exact_rows.py [--quick] [--pages 60] [--schema NAME]

Ingests ``--pages`` pages of ``shared/data/wikitables`` as a folder (real 2014 Wikipedia HTML; a fresh scratch
schema unless ``--schema`` names one to fill or reuse), then takes every question about those pages that holds an
exact term (:func:`universalrag.exact_terms.exact_terms`: identifiers, numbers of two digits or more, quoted
phrases — mostly years and seasons here) and searches the ``table`` corpus twice with the bundled MiniLM:
``Store.search(..., exact_terms=())`` (similarity alone picks a hit's matched rows) and with the question's terms
(rows holding them first). Among the questions whose gold page has a table in the top 5, it counts how often the
gold answer's text stands in that hit's first matched row, in its first three, and in all five (an answer that is
a count or a sum stands in no row: the share cannot reach 1). Latency: p50 of the two calls, interleaved.
``--quick``: 12 pages.
"""

from __future__ import annotations

import json
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from machine import figure, finish, log, machine_line, parser, save_png, scratch_store, timed
from routing_data import find_wikitables, wikitables_pages

SHOWN = (1, 3, 5)  # the first n matched rows


def _store(args: Any, stack: Any) -> Any:
    """The store to search: ``--schema`` (reused when it holds the pages), else a scratch schema."""
    if not args.schema:
        return stack.enter_context(scratch_store(args.database_url, "exact_rows"))
    from universalrag.config import Settings
    from universalrag.store import Store

    settings = Settings.from_env().with_(schema=args.schema)
    return Store(settings=settings.with_(database_url=args.database_url) if args.database_url else settings)


def main() -> None:
    import contextlib

    ap = parser(__doc__)
    ap.add_argument("--pages", type=int, help="wikitables pages to ingest (default 60; --quick 12)")
    ap.add_argument("--schema", help="schema to ingest into and search (kept); default: a scratch schema")
    args = ap.parse_args()
    log(machine_line())
    root = find_wikitables()
    if root is None:
        raise SystemExit("the shared wikitables folder (shared/data/wikitables) is not on this machine")
    from universalrag.embed import bundled_minilm
    from universalrag.exact_terms import exact_terms
    from universalrag.ingest.pipeline import ingest_paths

    pages = wikitables_pages(root, limit=args.pages or (12 if args.quick else 60))
    names = {p.name for p in pages}
    questions = [
        q
        for q in map(json.loads, (root / "questions.jsonl").read_text(encoding="utf-8").splitlines())
        if q["page"] in names and exact_terms(q["query"])
    ]
    embedder = bundled_minilm()
    shown = {mode: dict.fromkeys(SHOWN, 0) for mode in ("similarity", "exact terms")}
    ms: dict[str, list[float]] = {mode: [] for mode in shown}
    judged = 0
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        store = _store(args, stack)
        store.init(embedder=embedder.name, dimension=embedder.dimension)
        folder = Path(tmp) / "pages"
        folder.mkdir()
        for page in pages:  # the folder a user would point at (copies: ingestion does not follow symbolic links)
            shutil.copyfile(page, folder / page.name)
        report = ingest_paths(store, embedder, [folder])
        if not report.ok or report.count("added") + report.count("unchanged") != len(pages):
            failed = [(o.path, o.status) for o in report.outcomes if o.status != "added"]
            raise SystemExit(f"ingestion failed: {failed}")
        log(
            f"{len(pages)} pages ingested ({report.count('added')} added, {report.count('unchanged')} unchanged); "
            f"{len(questions)} questions hold an exact term"
        )
        for i, q in enumerate(questions):
            vector = embedder.embed_query(q["query"])
            runs = {"similarity": (), "exact terms": exact_terms(q["query"])}
            order = list(runs) if i % 2 else list(runs)[::-1]  # interleaved: drift evens out
            hits = {}
            for mode in order:
                seconds, hits[mode] = timed(store.search, "table", vector, k=5, exact_terms=runs[mode])
                ms[mode].append(seconds * 1000)
            gold = {
                mode: next((h for h in found if q["page"] in unquote(h.uri or "")), None)
                for mode, found in hits.items()
            }
            if any(hit is None for hit in gold.values()):
                continue
            judged += 1
            answer = str(q["answer"]).lower()
            for mode, hit in gold.items():
                rows = [text.lower() for _, text, _ in hit.matched_parts]
                for n in SHOWN:
                    shown[mode][n] += any(answer in row for row in rows[:n])
    share = {
        mode: {f"row{n}" if n == 1 else f"rows1_{n}": round(c / max(judged, 1), 4) for n, c in counts.items()}
        for mode, counts in shown.items()
    }
    p50 = {mode: round(statistics.median(v), 2) if v else None for mode, v in ms.items()}
    for mode in shown:
        log(
            f"{mode:12}: answer in the first matched row {share[mode]['row1']:.1%}, in rows 1-3 "
            f"{share[mode]['rows1_3']:.1%}, in rows 1-5 {share[mode]['rows1_5']:.1%}; search p50 {p50[mode]} ms"
        )
    log(f"{judged} of {len(questions)} questions have their gold page's table in the top 5")
    log(machine_line())
    fig, ax = figure(size=(6.4, 3.8))
    width = 0.38
    for j, mode in enumerate(shown):
        values = list(share[mode].values())
        ax.bar(
            [i + (j - 0.5) * width for i in range(len(values))],
            values,
            width,
            label=mode,
            color="C0" if mode == "exact terms" else "C7",
        )
    ax.set_xticks(range(len(SHOWN)), [f"first {n} row{'s' if n > 1 else ''}" for n in SHOWN])
    ax.set_ylabel("answer shown (share of judged questions)")
    ax.legend(fontsize=8)
    save_png(
        fig,
        args.out / "exact_rows.png",
        title=f"Matched rows of the gold table, {judged} wikitables questions with exact terms, {len(pages)} pages",
    )
    finish(
        "exact_rows",
        {
            "pages": len(pages),
            "questions": len(questions),
            "judged": judged,
            "similarity": share["similarity"],
            "exact_terms": share["exact terms"],
            "p50_ms_similarity": p50["similarity"],
            "p50_ms_exact_terms": p50["exact terms"],
        },
        args.out,
    )


if __name__ == "__main__":
    main()
