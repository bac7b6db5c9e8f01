"""Exact questions over material nobody here wrote: the PostgreSQL 15 manual Debian ships and Unicode's table.

    python benchmarks/exact_questions.py [--home DIR] [--manual DIR] [--unicode FILE] [--repeat N]

The questions (``benchmarks/data/pg15_exact_questions.json``) were written before any search: a setting's default,
what a function or an option does, which lock modes conflict, a Unicode character by its name. Each names the
page (or the table) that answers and strings the answering passage or row must hold. They alternate between a dev
half (looked at while changing the ranking) and a held-out half (only measured); both are reported.

The pages the questions name, and the other pages of ``--manual`` in ``--pages`` (default: the settings chapters, a
few function and SQL command pages), are ingested into ``--home`` (a ``UNIVERSALRAG_HOME``; embedded server) when
not there yet, with ``UnicodeData.txt`` as a table (``UnicodeData.csv``: the reader finds its ``;`` delimiter).
Then every question is searched as ``universalrag search`` does (routed, k=5) in two modes, alternately, each
question ``--repeat`` times: the default search and ``--hybrid`` (the dense ranking fused with Postgres full-text
rank). Reported per mode and half: answer@1 (the first hit holds every ``must`` string, in its text or a matched
part), answer@5, page@5 (a hit of the right page), and the search's p50 latency (plan + route + retrieve).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from machine import machine_line  # noqa: E402  (benchmarks/ is on sys.path when a script runs)

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = REPO / "benchmarks" / "data" / "pg15_exact_questions.json"
PAGES = (
    "runtime-config-*.html",
    "explicit-locking.html",
    "functions-string.html",
    "functions-datetime.html",
    "functions-json.html",
    "functions-admin.html",
    "functions-math.html",
    "functions-uuid.html",
    "sql-createindex.html",
    "sql-vacuum.html",
    "sql-copy.html",
    "sql-createtable.html",
    "sql-select.html",
    "wal-configuration.html",
    "routine-vacuuming.html",
    "mvcc-intro.html",
    "transaction-iso.html",
)


def _texts(hit: Any) -> str:
    return "\n".join([hit.content, *(text for _, text, _ in hit.matched_parts)])


def _holds(hit: Any, must: list[str]) -> bool:
    text = _texts(hit)
    return all(m in text for m in must)


def _page(hit: Any) -> str:
    uri = hit.uri or str(hit.metadata.get("source") or "")
    return uri.rsplit("/", 1)[-1]


def _ingest(home: Path, manual: Path, unicode: Path | None, pages: tuple[str, ...]) -> None:
    from universalrag.pipeline import UniversalRAG

    folder = home / "input"
    if not folder.exists():
        (folder / "manual").mkdir(parents=True)
        for pattern in pages:
            for page in manual.glob(pattern):
                shutil.copy(page, folder / "manual" / page.name)
        if unicode is not None and unicode.exists():
            (folder / "unicode").mkdir()
            shutil.copy(unicode, folder / "unicode" / "UnicodeData.csv")
    rag = UniversalRAG(generator=None, log_decisions=False)
    started = time.perf_counter()
    report = rag.ingest([folder])
    print(f"ingested {folder}: {len(report.outcomes)} files in {time.perf_counter() - started:.0f} s", flush=True)
    rag.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", type=Path, default=Path("/tmp/universalrag-pg15"), help="UNIVERSALRAG_HOME to use")
    ap.add_argument("--manual", type=Path, default=Path("/usr/share/doc/postgresql-doc-15/html"))
    ap.add_argument("--unicode", type=Path, default=Path("/usr/share/unicode/UnicodeData.txt"))
    ap.add_argument("--repeat", type=int, default=3, help="timed searches per question and mode")
    ap.add_argument("--no-ingest", action="store_true", help="search what --home holds")
    args = ap.parse_args()
    if not args.manual.is_dir():
        raise SystemExit(f"{args.manual} is absent: apt install postgresql-doc-15")
    os.environ["UNIVERSALRAG_HOME"] = str(args.home)
    os.environ.setdefault("UNIVERSALRAG_QUERY_VECTORS", "0")  # every timed question embedded as a new one
    args.home.mkdir(parents=True, exist_ok=True)
    if not args.no_ingest:
        _ingest(args.home, args.manual, args.unicode, PAGES)

    from universalrag.pipeline import UniversalRAG

    questions = json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]
    rag = UniversalRAG(generator=None, log_decisions=False)
    rag.search(rag.plan("warm up", k=5, allow_none=False))
    modes = ("default", "hybrid")
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for q in questions:
        for repeat in range(args.repeat):
            for mode in modes if repeat % 2 == 0 else modes[::-1]:
                rag.hybrid = mode == "hybrid"
                started = time.perf_counter()
                _, hits = rag.search(rag.plan(q["q"], k=5, allow_none=False))
                ms = (time.perf_counter() - started) * 1000
                if repeat == 0:
                    rows.setdefault((mode, q["half"]), []).append(
                        {
                            "q": q["q"],
                            "at1": bool(hits) and _holds(hits[0], q["must"]),
                            "at5": any(_holds(h, q["must"]) for h in hits[:5]),
                            "page5": any(_page(h) == q["page"] for h in hits[:5]),
                            "first": f"{hits[0].corpus}:{_page(hits[0])}" if hits else "-",
                            "ms": [],
                        }
                    )
                rows[(mode, q["half"])][[r["q"] for r in rows[(mode, q["half"])]].index(q["q"])]["ms"].append(ms)
    rag.close()
    print(machine_line())
    summary: dict[str, Any] = {}
    for (mode, half), results in sorted(rows.items()):
        n = len(results)
        p50 = statistics.median(m for r in results for m in r["ms"])
        line = {
            "answer@1": sum(r["at1"] for r in results) / n,
            "answer@5": sum(r["at5"] for r in results) / n,
            "page@5": sum(r["page5"] for r in results) / n,
            "p50_ms": round(p50, 1),
            "n": n,
        }
        summary[f"{mode}/{half}"] = line
        print(
            f"{mode:8} {half:5} n={n:2}  answer@1 {line['answer@1']:.2f}  answer@5 {line['answer@5']:.2f}  "
            f"page@5 {line['page@5']:.2f}  p50 {p50:.0f} ms"
        )
        for r in results:
            if not r["at5"]:
                print(f"    missed: {r['q']}  (first: {r['first']})")
    print(json.dumps(summary))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
