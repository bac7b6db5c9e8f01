"""kill -9 of an ingesting process at several points: nothing half-written, and a re-run ends exactly like a clean run.

The child process is the real pipeline against the real database; it only pauses at the chosen point (a wrapper
around one store function writes a marker file and sleeps) so that SIGKILL lands there every time, not by luck
of timing. Points: early (source row inserted, no unit yet), mid-COPY (inside the binary COPY of a table's row
parts), mid-file (a large table with some batches committed to the staging tables) and in the final move of a
staged source (its transaction open).
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa

from universalrag.ingest import IngestOptions, ingest_paths

OPTIONS = {"stage_rows": 100, "table_batch_rows": 20, "max_embedded_rows": 60}


class HashEmbedder:
    """A deterministic bag-of-words embedder (each word hashed to a signed coordinate), the same in every
    process. Fault tests count rows and compare runs; they do not judge retrieval quality, and the real
    MiniLM would make each child process spend most of its time loading torch."""

    name = "test-hash-64"
    dimension = 64

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                h = hashlib.blake2b(word.encode(), digest_size=8).digest()
                out[row, h[0] % self.dimension] += 1.0 if h[1] & 1 else -1.0
            out[row] /= max(float(np.linalg.norm(out[row])), 1e-6)
            out[row, 0] += 1e-3  # never the zero vector
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)

    async def aembed_query(self, text: str) -> np.ndarray:
        return self.embed_query(text)


def init_store(settings: Any) -> Any:
    """An initialised store whose built-in corpora take :class:`HashEmbedder` vectors."""
    from universalrag.store import Store

    store = Store(settings=settings)
    store.init(embedder=HashEmbedder.name, dimension=HashEmbedder.dimension)
    return store


WORDS = "harbour lantern granite meadow orchard falcon copper willow summit canal quarry beacon".split()

CHILD = r"""
import json, sys, time
from pathlib import Path
cfg = json.loads(sys.argv[1])
sys.path.insert(0, cfg["tests"])
from test_faults_kill import HashEmbedder
from universalrag.config import Settings
from universalrag.ingest import IngestOptions, ingest_paths
from universalrag.store import Store, staging, writer

marker = Path(cfg["marker"])

def pause():
    marker.write_text("paused")
    time.sleep(600)

point = cfg["point"]
if point == "early":
    original_units = writer.copy_units
    def copy_units(*a, **k):
        pause()
    writer.copy_units = copy_units
elif point == "mid-copy":
    original_batch = writer.copy_part_batch
    calls = []
    class Pausing(list):
        def __iter__(self):
            for i, item in enumerate(list.__iter__(self)):
                if i == len(self) // 2:
                    pause()  # the COPY is open on the server with half of this batch sent
                yield item
    def copy_part_batch(raw, schema, tables, batch):
        calls.append(1)
        if len(calls) == 2:
            from dataclasses import replace
            batch = replace(batch, texts=Pausing(batch.texts))
        return original_batch(raw, schema, tables, batch)
    writer.copy_part_batch = copy_part_batch
elif point == "in-move":
    def move(*a, **k):
        pause()
    staging.move = move

def progress(p):
    if point == "mid-file" and p.done == 2:
        pause()  # two batches of the large table committed to the staging tables

store = Store(settings=Settings(database_url=cfg["url"], schema=cfg["schema"]))
ingest_paths(store, HashEmbedder(), [cfg["folder"]], options=IngestOptions(**cfg["options"]), on_progress=progress)
marker.write_text("finished")
"""


def make_folder(root: Path) -> Path:
    rng = random.Random(11)
    root.mkdir()
    for i in range(3):
        paragraphs = [" ".join(rng.choice(WORDS) for _ in range(60)) + "." for _ in range(4)]
        (root / f"note{i}.txt").write_text(f"Note {i}\n\n" + "\n\n".join(paragraphs), encoding="utf-8")
    for name, rows in (("small.csv", 50), ("large.csv", 250)):
        with (root / name).open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["station", "region", "reading"])
            for r in range(rows):
                w.writerow([f"{name[:1]}-{r:04d}", rng.choice(WORDS), f"{rng.uniform(0, 99):.1f}"])
    return root


def per_source(engine: sa.Engine, schema: str) -> dict[str, tuple[int, ...]]:
    """uri → (documents, paragraphs, tables, table parts, document parts, whole table rows) for every stored
    source."""
    q = sa.text(f"""
        SELECT s.uri,
          (SELECT count(*) FROM "{schema}".corpus_document u WHERE u.source_id = s.id),
          (SELECT count(*) FROM "{schema}".corpus_paragraph u WHERE u.source_id = s.id),
          (SELECT count(*) FROM "{schema}".corpus_table u WHERE u.source_id = s.id),
          (SELECT count(*) FROM "{schema}".corpus_table_parts p JOIN "{schema}".corpus_table u ON u.id = p.unit_id
            WHERE u.source_id = s.id),
          (SELECT count(*) FROM "{schema}".corpus_document_parts p
            JOIN "{schema}".corpus_document u ON u.id = p.unit_id WHERE u.source_id = s.id),
          (SELECT count(*) FROM "{schema}".table_rows r WHERE r.source_id = s.id)
        FROM "{schema}".sources s""")
    with engine.connect() as conn:
        return {Path(r[0]).name: tuple(r[1:]) for r in conn.execute(q)}


def orphans(engine: sa.Engine, schema: str) -> int:
    with engine.connect() as conn:
        return sum(
            conn.execute(
                sa.text(
                    f'SELECT count(*) FROM "{schema}".corpus_{c} u WHERE u.source_id IS NULL OR NOT EXISTS '
                    f'(SELECT 1 FROM "{schema}".sources s WHERE s.id = u.source_id)'
                )
            ).scalar_one()
            for c in ("document", "paragraph", "table")
        )


@pytest.fixture
def store(settings: Any) -> Any:
    """An initialised store for HashEmbedder vectors (this module's own, closed after the test)."""
    s = init_store(settings)
    yield s
    s.close()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_folder(tmp_path_factory.mktemp("kill") / "inbox")


@pytest.fixture(scope="module")
def clean(folder: Path, database_url: str) -> dict[str, tuple[int, ...]]:
    """Per-source counts of an uninterrupted run."""
    from universalrag.config import Settings

    store = init_store(Settings(database_url=database_url, schema="kill_clean_" + str(os.getpid())))
    try:
        report = ingest_paths(store, HashEmbedder(), [folder], options=IngestOptions(**OPTIONS))
        assert report.ok and report.count("added") == 5
        return per_source(store.engine, store.schema)
    finally:
        store.downgrade("base")
        store.close()


@pytest.mark.parametrize("point", ["early", "mid-copy", "mid-file", "in-move"])
def test_kill_9_leaves_nothing_half_written_and_a_rerun_matches_a_clean_run(
    point: str, folder: Path, clean: dict[str, tuple[int, ...]], store: Any, tmp_path: Path
) -> None:
    assert clean["large.csv"][3] == 60 and clean["small.csv"][3] == 50  # the sizes cross the batch boundaries
    assert clean["large.csv"][5] == 250 and clean["small.csv"][5] == 0  # the sampled table keeps every row
    marker = tmp_path / "marker"
    cfg = {
        "tests": str(Path(__file__).parent),
        "url": store.url,
        "schema": store.schema,
        "folder": str(folder),
        "point": point,
        "marker": str(marker),
        "options": OPTIONS,
    }
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, json.dumps(cfg)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 240
        while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists() and marker.read_text() == "paused", child.stderr.read() if child.poll() else point
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(30)
    after_kill = per_source(store.engine, store.schema)
    with store.engine.connect() as conn:
        staged = conn.execute(sa.text(f'SELECT batches FROM "{store.schema}".stages')).scalars().all()
    expected_stage = {"mid-file": [2], "in-move": [4]}.get(point, [])
    assert staged == expected_stage  # committed batches of the large table wait, invisible, for the re-run
    assert after_kill or staged, "nothing was committed before the kill: the point tests nothing"
    for name, row in after_kill.items():  # every stored source is whole
        assert row == clean[name], (point, name, row, clean[name])
    assert orphans(store.engine, store.schema) == 0
    report = ingest_paths(store, HashEmbedder(), [folder], options=IngestOptions(**OPTIONS))
    assert report.ok
    assert report.count("unchanged") == len(after_kill)
    assert per_source(store.engine, store.schema) == clean
    with store.engine.connect() as conn:
        assert conn.execute(sa.text(f'SELECT count(*) FROM "{store.schema}".stages')).scalar_one() == 0
