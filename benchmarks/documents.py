"""Document parsing speed, memory and table accuracy on PDFs generated here with reportlab.

    python benchmarks/documents.py --quick      # about a minute on 2 cores
    python benchmarks/documents.py              # larger files

Measures, with :func:`universalrag.ingest.documents.read_document`'s page stream:
- pages per second on a text PDF (dense body text, headings, running header and footer) and on a PDF
  where every page holds a ruled table and a photograph; baselines in the same run: PDFium's plain text
  extraction (the floor of any PDFium-based reader) and pdfplumber's ``extract_text`` (a pure-Python
  reader);
- resident memory while streaming a 500-page PDF: after page 25 and after page 500 (flat = the growth
  stays within a few MB);
- table cell accuracy on generated tables with known cells (cells equal / cells expected), ruled as grids
  and as booktabs tables (horizontal rules only).
Goals: >= 20 text pages/s on this 2-core machine, flat memory, cell accuracy >= 95 %.
Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # for support.documents

from machine import cpu_model  # noqa: E402  (benchmarks/ is on sys.path when a script runs)
from support.documents import write_table_pdf, write_text_pdf  # noqa: E402

from universalrag.ingest.documents import BlockKind, open_document  # noqa: E402


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _stream(path: Path, *, on_page=None) -> tuple[int, float]:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    reader = open_document(path)
    reader.open()
    count = 0
    try:
        for page in reader.pages():
            count += 1
            if on_page is not None:
                on_page(page)
    finally:
        reader.close()
    return count, time.perf_counter() - start


def _pdfium_baseline(path: Path) -> float:
    import pypdfium2 as pdfium

    start = time.perf_counter()
    doc = pdfium.PdfDocument(str(path))
    for i in range(len(doc)):
        page = doc[i]
        textpage = page.get_textpage()
        textpage.get_text_range()
        textpage.close()
        page.close()
    n = len(doc)
    doc.close()
    return n / (time.perf_counter() - start)


def _pdfplumber_baseline(path: Path, pages: int) -> float:
    import pdfplumber

    start = time.perf_counter()
    with pdfplumber.open(path, pages=list(range(1, pages + 1))) as pdf:
        for page in pdf.pages:
            page.extract_text()
            page.close()
    return pages / (time.perf_counter() - start)


def _random_tables(count: int, seed: int) -> list[list[list[str]]]:
    rng = random.Random(seed)
    words = ["north", "south", "east", "west", "harbour", "quarry", "tower", "Lamp A", "fog bell"]
    tables = []
    for _ in range(count):
        width = rng.randint(2, 6)
        header = [f"{rng.choice(words).title()} {c}" for c in range(width)]
        rows = [
            [
                (f"{rng.uniform(0, 5000):,.2f}" if rng.random() < 0.5 else f"{rng.choice(words)} {rng.randint(1, 99)}")
                for _ in range(width)
            ]
            for _ in range(rng.randint(3, 15))
        ]
        tables.append([header, *rows])
    return tables


def _cell_accuracy(path: Path, tables: list[list[list[str]]]) -> tuple[float, int]:
    """Share of the known cells found at their row and column, and how many tables were found."""
    found: list[tuple[tuple[str, ...], ...]] = []

    def collect(page):  # type: ignore[no-untyped-def]
        found.extend(b.table.rows for b in page.blocks if b.kind is BlockKind.TABLE)

    _stream(path, on_page=collect)
    expected = sum(len(t) * len(t[0]) for t in tables)
    right = 0
    for want, got in zip(tables, found, strict=False):
        for r, row in enumerate(want):
            for c, cell in enumerate(row):
                right += r < len(got) and c < len(got[r]) and got[r][c] == cell
    return right / expected, len(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller files (about a minute)")
    args = parser.parse_args()
    text_pages, mixed_pages, tables_n = (40, 15, 20) if args.quick else (200, 60, 60)
    long_pages = 500
    results: dict[str, object] = {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "load_1m": os.getloadavg()[0],
        "quick": args.quick,
    }
    with tempfile.TemporaryDirectory(prefix="documents-bench-") as tmp:
        folder = Path(tmp)
        text_pdf = write_text_pdf(folder / "text.pdf", pages=text_pages)
        mixed_tables = _random_tables(mixed_pages, seed=1)
        mixed_pdf = write_table_pdf(folder / "mixed.pdf", mixed_tables, images=True)

        n, seconds = _stream(text_pdf)
        results["text_pages_per_s"] = round(n / seconds, 1)
        results["text_pdfium_plain_pages_per_s"] = round(_pdfium_baseline(text_pdf), 1)
        results["text_pdfplumber_pages_per_s"] = round(_pdfplumber_baseline(text_pdf, min(n, 20)), 1)
        n, seconds = _stream(mixed_pdf)
        results["tables_figures_pages_per_s"] = round(n / seconds, 1)
        print(
            f"text PDF ({text_pages} pages): {results['text_pages_per_s']} pages/s "
            f"(PDFium plain text {results['text_pdfium_plain_pages_per_s']}, pdfplumber text "
            f"{results['text_pdfplumber_pages_per_s']})"
        )
        print(f"tables+figures PDF ({mixed_pages} pages): {results['tables_figures_pages_per_s']} pages/s")

        long_pdf = write_text_pdf(folder / "long.pdf", pages=long_pages, seed=2)
        samples: dict[int, float] = {}

        def sample(page):  # type: ignore[no-untyped-def]
            if page.number in (25, 250, long_pages):
                samples[page.number] = _rss_mb()

        n, seconds = _stream(long_pdf, on_page=sample)
        results["long_pages"] = n
        results["long_pages_per_s"] = round(n / seconds, 1)
        results["rss_mb_at_page"] = {str(k): round(v, 1) for k, v in sorted(samples.items())}
        results["rss_growth_mb_25_to_500"] = round(samples[long_pages] - samples[25], 1)
        print(
            f"{long_pages}-page PDF: {results['long_pages_per_s']} pages/s, RSS at pages 25/250/500: "
            f"{results['rss_mb_at_page']} MB (growth {results['rss_growth_mb_25_to_500']} MB)"
        )

        tables = _random_tables(tables_n, seed=9)
        accuracies = []
        for ruling in ("grid", "booktabs"):
            pdf = write_table_pdf(folder / f"tables-{ruling}.pdf", tables, ruling=ruling)
            accuracy, found = _cell_accuracy(pdf, tables)
            accuracies.append(accuracy)
            results[f"table_cell_accuracy_{ruling}"] = round(accuracy, 4)
            results[f"tables_found_{ruling}"] = f"{found}/{len(tables)}"
            print(f"table cell accuracy ({ruling} rules): {accuracy:.1%} ({found}/{len(tables)} tables found)")
        accuracy = min(accuracies)
    results["goals_met"] = {
        "text_pages_per_s>=20": results["text_pages_per_s"] >= 20,  # type: ignore[operator]
        "flat_memory(<25MB growth)": results["rss_growth_mb_25_to_500"] < 25,  # type: ignore[operator]
        "cell_accuracy>=0.95": accuracy >= 0.95,
    }
    print(f"CPU: {results['cpu']} ({results['cores']} cores), load {results['load_1m']:.2f}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
