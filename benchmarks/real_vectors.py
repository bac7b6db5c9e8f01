"""Real embeddings for the storage and scaling benchmarks: every real text this project can reach, ingested once with
the bundled encoder, and the real questions about them, cached on disk.

The texts: the 250 Wikipedia pages of ``shared/data/wikitables`` (when present: :func:`routing_data.find_wikitables`),
Python's language reference topics (``pydoc_data.topics``, shipped with Python) and this repository's documentation
(``docs/*.md``), ingested as a user would (default chunking, the bundled MiniLM encoder, no graph). Every unit
vector and every part vector of every corpus (passages, table rows, pages, sections) is kept. The queries: the
crowd-written wikitables questions and the labelled routing queries of ``shared/data/routing`` (when present), and
the questions written for this project's own benchmarks (``benchmarks/data``), embedded as the library embeds a
query.

:func:`real_vectors` writes ``<out>/real_vectors.npz`` the first time and reads it afterwards, as long as the files,
their sizes and the encoder are the same (a key stored beside the arrays says which; the documentation's files count
by name only: delete the cache to embed them again).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import machine as bench
from routing_data import DATA, _write_pyref, find_wikitables, wikitables_pages

#: The cache's file name in the output folder.
CACHE = "real_vectors.npz"


def _sources(folder: Path, *, quick: bool) -> list[Path]:
    """The files and folders to ingest: the wikitables pages (when found), the Python reference topics written into
    ``folder``, and the repository's documentation (``quick``: that alone)."""
    docs = sorted((bench.REPO / "docs").glob("*.md"))
    if quick:
        return docs
    wikitables = find_wikitables()
    pages = wikitables_pages(wikitables) if wikitables is not None else []
    _write_pyref(folder / "pyref", None)
    return [*pages, folder / "pyref", *docs]


def _questions(*, quick: bool) -> list[str]:
    """Every real question: the wikitables crowd questions, the routing queries (when the shared data is present;
    not when ``quick``) and the questions written for this project's benchmarks."""
    files = [*sorted(DATA.glob("*.jsonl"))]
    wikitables = None if quick else find_wikitables()
    if wikitables is not None:
        files += [wikitables / "questions.jsonl", wikitables.parent / "routing" / "train.jsonl"]
    seen: dict[str, None] = {}
    for path in files:
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            query = json.loads(line).get("query") if line.strip() else None
            if isinstance(query, str) and query.strip():
                seen.setdefault(query.strip())
    return list(seen)


def _key(sources: list[Path], questions: list[str], encoder: str) -> str:
    """What the cache was made from: the encoder, the questions, and every file's name and, outside this repository,
    its size (the documentation changes with every release; its cached vectors are kept until the file is deleted)."""
    digest = hashlib.sha256(encoder.encode())
    for path in sources:
        for f in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if f.is_file():
                size = "" if f.resolve().is_relative_to(bench.REPO) else f":{f.stat().st_size}"
                digest.update(f"{f.name}{size}".encode())
    digest.update("\n".join(questions).encode())
    return digest.hexdigest()


def real_vectors(out: Path, database_url: str | None = None, *, quick: bool = False) -> dict[str, Any]:
    """The real slice (``quick``: the documentation and the project's own questions only, cached apart):
    ``{"units": float32 (n, 384) unit-length matrix, "queries": float32 (q, 384), "kinds": per unit "<corpus>" or
    "<corpus> part", "counts": {...}, "ingest_s": seconds the ingest took when the cache was made}``."""
    import numpy as np
    import sqlalchemy as sa

    from universalrag import UniversalRAG
    from universalrag.config import Settings
    from universalrag.embed import embedder_from_settings

    embedder = embedder_from_settings(Settings.from_env())
    cache = out / (CACHE.replace(".npz", "_quick.npz") if quick else CACHE)
    with tempfile.TemporaryDirectory() as tmp:
        sources = _sources(Path(tmp), quick=quick)
        questions = _questions(quick=quick)
        key = _key(sources, questions, embedder.name)
        if cache.is_file():
            held = np.load(cache, allow_pickle=False)
            if str(held["key"]) == key:
                bench.log(f"real vectors: read from {cache}")
                return _result(held)
        bench.log(f"real vectors: ingesting {len(sources)} files and folders once (cached in {cache})")
        with bench.scratch_store(database_url, "real_vectors") as store:
            settings = store.settings.with_(query_vectors=0, graph="off")
            rag = UniversalRAG(
                settings=settings,
                store=store,
                embedder=embedder,
                generator=None,
                visual_encoder=None,
                log_decisions=False,
            )
            started = time.perf_counter()
            rag.ingest(sources)
            ingest_s = time.perf_counter() - started
            chunks, kinds = [], []
            with store.engine.connect() as conn:
                for spec in store.corpora().values():
                    tables = store.tables.corpus(spec)
                    for table, kind in ((tables.units, spec.name), (tables.parts, f"{spec.name} part")):
                        if table is None or "embedding" not in table.c:
                            continue
                        rows = conn.execute(sa.select(table.c.embedding).where(table.c.embedding.is_not(None)))
                        got = [np.asarray(r[0], dtype=np.float32) for r in rows]
                        chunks += got
                        kinds += [kind] * len(got)
        units = bench.unit_rows(np.stack(chunks))
        queries = bench.unit_rows(np.stack([embedder.embed_query(q) for q in questions]).astype(np.float32))
        out.mkdir(parents=True, exist_ok=True)
        np.savez(cache, key=key, units=units, queries=queries, kinds=np.asarray(kinds), ingest_s=np.float64(ingest_s))
        bench.log(f"real vectors: {len(units)} units and {len(queries)} questions in {ingest_s:.0f} s of ingest")
        return _result(np.load(cache, allow_pickle=False))


def _result(held: Any) -> dict[str, Any]:
    kinds = [str(k) for k in held["kinds"]]
    return {
        "units": held["units"],
        "queries": held["queries"],
        "kinds": kinds,
        "counts": dict(Counter(kinds)),
        "ingest_s": float(held["ingest_s"]),
    }


if __name__ == "__main__":
    found = real_vectors(Path(os.environ.get("OUT", bench.DEFAULT_OUT)), quick="--quick" in sys.argv)
    bench.log(json.dumps({"units": len(found["units"]), "queries": len(found["queries"]), "counts": found["counts"]}))
