"""What the known page generators' class words (``universalrag.ingest.html_clean.SITE_MARKS``) change on real pages:
the tables ingestion reads from each Wikipedia page, with the words and with the generic words alone.

    python benchmarks/site_marks.py [--wikitables DIR] [--pages N]

For every page of the shared wikitables set (250 Wikipedia pages with crowd questions about one of their tables;
no embedding, no database), it parses the page's tables both ways and counts: the tables read (each one a unit that
competes for every question) and the tables the questions are about that are still read (a crowd question's table
must never be lost). Prints both counts and the JSON line. (The ``records`` words change how an infobox's rows are
written, not how many tables are read; ``tests/test_ingest_html_records.py`` checks them on real infoboxes.)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import machine_line  # noqa: E402
from routing_data import find_wikitables, wikitables_pages  # noqa: E402


@contextlib.contextmanager
def generic_words_only() -> Iterator[None]:
    """The HTML readers with no page generator's words (as if ``SITE_MARKS`` were empty), restored after."""
    from universalrag.ingest import html_clean
    from universalrag.ingest.tables import html as table_html

    saved = html_clean._NAV_WORDS, html_clean._TABLE_NAV_WORDS, table_html._RECORD_CLASSES
    html_clean._NAV_WORDS = html_clean._class_words(html_clean._GENERIC_NAV)
    html_clean._TABLE_NAV_WORDS = html_clean._class_words(html_clean._GENERIC_TABLE_NAV)
    table_html._RECORD_CLASSES = frozenset()
    try:
        yield
    finally:
        html_clean._NAV_WORDS, html_clean._TABLE_NAV_WORDS, table_html._RECORD_CLASSES = saved


def count(pages: Sequence[Path], questions: dict[str, set[int]]) -> dict[str, Any]:
    """Tables read and question tables still read, over ``pages``."""
    from bs4 import BeautifulSoup

    from universalrag.ingest.tables import tables_from_html

    tables = asked = kept = 0
    for page in pages:
        html = page.read_text(encoding="utf-8", errors="replace")
        parsed = tables_from_html(html, name=page.name)
        tables += len(parsed)
        keys = {_key(t) for t in parsed}
        soup = BeautifulSoup(html, "html.parser")
        wikitables = [t for t in soup.find_all("table") if "wikitable" in (t.get("class") or [])]
        for index in questions.get(page.name, ()):
            if index >= len(wikitables):
                continue
            asked += 1
            alone = tables_from_html(str(wikitables[index]), name=page.name)
            kept += bool(alone) and _key(alone[0]) in keys
    return {
        "pages": len(pages),
        "tables": tables,
        "question_tables": asked,
        "question_tables_read": kept,
    }


def _key(table: Any) -> str:
    """A parsed table as its header and first rows (how ``routing_data.wikitable_positions`` matches tables)."""
    return repr((table.header, next(iter(table.batches(3)), [])))


def main(argv: Sequence[str] | None = None) -> None:
    """Count both ways and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wikitables", type=Path, default=find_wikitables(), help="the shared wikitables folder")
    ap.add_argument("--pages", type=int, help="evenly spaced pages (default: all)")
    args = ap.parse_args(argv)
    if args.wikitables is None:
        raise SystemExit("The wikitables data set was not found; pass --wikitables DIR.")
    pages = wikitables_pages(args.wikitables, limit=args.pages)
    questions: dict[str, set[int]] = {}
    for line in (args.wikitables / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            questions.setdefault(row["page"], set()).add(int(row["table_index"]))
    print(machine_line(), file=sys.stderr)
    started = time.perf_counter()
    shipped = count(pages, questions)
    with generic_words_only():
        generic = count(pages, questions)
    for name, r in (("with SITE_MARKS", shipped), ("generic words only", generic)):
        print(
            f"{name:20} tables read {r['tables']:5d}  question tables read {r['question_tables_read']}/"
            f"{r['question_tables']}",
            file=sys.stderr,
        )
    print(f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
    print(json.dumps({"machine": machine_line(), "shipped": shipped, "generic": generic}))


if __name__ == "__main__":
    main()
