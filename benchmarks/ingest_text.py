"""Text ingestion throughput against the raw encoder, measured in the same run.

    python benchmarks/ingest_text.py [--copies 6] [--table-rows 20000]

1. Raw encoder: the bundled MiniLM embeds exactly the texts the pipeline will embed (document chunks and
   paragraphs, each with its title), in the pipeline's batch size. rows/s = embedded texts per second.
2. Pipeline: `ingest_paths` on the same files into a fresh schema of the embedded PostgreSQL (parse, split,
   embed, COPY, one transaction per file). rows/s = the same number of texts per second.
Prints both and their ratio (goal >= 0.9: the pipeline adds at most 10% to the encoder's cost).
With --table-rows N it also ingests an N-row CSV and prints rows/s and the peak Python memory (tracemalloc),
which must stay bounded (rows are streamed in batches).
"""

from __future__ import annotations

import argparse
import csv
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _corpus(folder: Path, copies: int) -> list[Path]:
    sources = sorted((REPO / "tests" / "data" / "corpus").iterdir())
    files = []
    for i in range(copies):
        for src in sources:
            dst = folder / f"{src.stem}_{i}{src.suffix}"
            text = src.read_text(encoding="utf-8")
            dst.write_text(text.replace("</body>", f"<p>Copy {i}.</p></body>") if src.suffix == ".html"
                           else text + f"\n\nCopy {i}.\n", encoding="utf-8")
            files.append(dst)
    return files


def _texts(files: list[Path]) -> list[str]:
    from universalrag.ingest.passages import chunk_for_embedding, split_paragraphs
    from universalrag.ingest.text import read_text_file

    out = []
    for f in files:
        doc = read_text_file(f)
        out += [f"{doc.title}\n{t}" for t in chunk_for_embedding(doc.text)]
        out += [f"{doc.title}\n{p.text}" for p in split_paragraphs(doc.text)]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=6, help="copies of the 7-file test corpus")
    parser.add_argument("--table-rows", type=int, default=0, help="also ingest a CSV of this many rows")
    args = parser.parse_args()

    from universalrag.config import Settings
    from universalrag.embed import bundled_minilm
    from universalrag.ingest.pipeline import ingest_paths
    from universalrag.store import Store

    embedder = bundled_minilm()
    embedder.embed(["warm up"])
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        folder.mkdir()
        files = _corpus(folder, args.copies)
        texts = _texts(files)

        started = time.perf_counter()
        embedder.embed(texts)
        raw_s = time.perf_counter() - started

        store = Store(settings=Settings(home=Path(tmp) / "home", schema="bench_" + uuid.uuid4().hex[:8]))
        store.init(embedder=embedder.name, dimension=embedder.dimension)
        started = time.perf_counter()
        report = ingest_paths(store, embedder, [folder])
        pipe_s = time.perf_counter() - started
        assert report.ok, report.failed

        raw_rate, pipe_rate = len(texts) / raw_s, len(texts) / pipe_s
        print(f"files: {len(files)}, texts embedded: {len(texts)}")
        print(f"raw encoder : {raw_rate:8.1f} texts/s ({raw_s:.2f} s)")
        print(f"pipeline    : {pipe_rate:8.1f} texts/s ({pipe_s:.2f} s)")
        print(f"ratio       : {pipe_rate / raw_rate:8.3f}  (goal >= 0.9)")

        if args.table_rows:
            path = Path(tmp) / "big.csv"
            with path.open("w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow(["id", "city", "product", "quantity", "price", "note"])
                for i in range(args.table_rows):
                    w.writerow([i, f"city {i % 97}", f"product {i % 31}", i % 13, f"{(i % 500) / 7:.2f}",
                                f"order number {i}"])
            tracemalloc.start()
            started = time.perf_counter()
            report = ingest_paths(store, embedder, [path])
            table_s = time.perf_counter() - started
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            assert report.ok, report.failed
            print(f"table       : {args.table_rows / table_s:8.1f} rows/s ({table_s:.1f} s), "
                  f"peak Python memory {peak:.1f} MiB, size on disk {path.stat().st_size / 2**20:.1f} MiB")
        store.downgrade("base")
        store.close()


if __name__ == "__main__":
    main()
