"""Text ingestion throughput against the raw encoder, measured in the same run.

    python benchmarks/ingest_text.py [--copies 6] [--table-rows 20000]

1. Pipeline: `ingest_paths` on the files into a fresh schema of the embedded PostgreSQL (parse, split,
   embed, COPY, one transaction per file), with the encoder wrapped to record every text it is given
   (document chunks, paragraphs, and the rows of the tables inside the HTML pages).
2. Raw encoder: the bundled MiniLM embeds exactly those recorded texts in one call, before and after the
   pipeline run (the mean of the two is the baseline, to even out a machine whose load drifts).
rows/s = recorded texts per second in each case.
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


class _Recording:
    """Delegates to an embedder and records the texts it embeds."""

    def __init__(self, inner):  # type: ignore[no-untyped-def]
        self.inner, self.texts = inner, []
        self.name, self.dimension = inner.name, inner.dimension

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.texts.extend(texts)
        return self.inner.embed(texts)

    def embed_query(self, text):  # type: ignore[no-untyped-def]
        return self.inner.embed_query(text)


def _timed(fn) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


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
        store = Store(settings=Settings(home=Path(tmp) / "home", schema="bench_" + uuid.uuid4().hex[:8]))
        store.init(embedder=embedder.name, dimension=embedder.dimension)
        recording = _Recording(embedder)
        # Dry run of the baseline on the same texts is only possible once they are known: embed a first
        # time through a throw-away pipeline run in another schema, then time raw / pipeline / raw.
        warm = Store(settings=Settings(home=Path(tmp) / "home", schema="warm_" + uuid.uuid4().hex[:8]))
        warm.init(embedder=embedder.name, dimension=embedder.dimension)
        ingest_paths(warm, recording, [folder])
        warm.downgrade("base")
        warm.close()
        texts = list(recording.texts)
        raw_before = _timed(lambda: embedder.embed(texts))
        report = None

        def run() -> None:
            nonlocal report
            report = ingest_paths(store, embedder, [folder])

        pipe_s = _timed(run)
        raw_after = _timed(lambda: embedder.embed(texts))
        assert report is not None and report.ok, report
        raw_s = (raw_before + raw_after) / 2

        raw_rate, pipe_rate = len(texts) / raw_s, len(texts) / pipe_s
        print(f"files: {len(files)}, texts embedded: {len(texts)}")
        print(f"raw encoder : {raw_rate:8.1f} texts/s ({raw_s:.2f} s; {raw_before:.2f} s before, "
              f"{raw_after:.2f} s after)")
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
