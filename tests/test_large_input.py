"""Large sources are committed in resumable batches and are never half-visible (universalrag.ingest.large).

Vectors come from the deterministic HashEmbedder of test_faults_kill (these tests count rows and find exact
texts; they do not judge retrieval quality). Sizes here are small but cross the batch boundaries (thresholds lowered
through IngestOptions); the 200 MB text file and the million-row CSV are measured by benchmarks/large_input.py. The
interruption is a real exception raised between two committed batches; the kill -9 variant is in test_faults_kill.py.
"""

from __future__ import annotations

import csv
import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from test_faults_kill import HashEmbedder, init_store

from universalrag.errors import InvalidInputError
from universalrag.ingest import IngestOptions, ingest_paths
from universalrag.ingest.large import sampled_rows, text_blocks
from universalrag.ingest.pipeline import Progress
from universalrag.ingest.text.passages import split_paragraphs
from universalrag.ingest.text.plain import extract_txt

WORDS = (
    "harbour lantern granite meadow orchard falcon copper willow summit canal quarry beacon glacier "
    "tundra prairie lagoon estuary ridge valley basin delta fjord plateau canyon marsh grove"
).split()


class Interrupted(Exception):
    """Stands for the process dying between two committed batches."""


class CountingEmbedder:
    """The real MiniLM, counting the texts it embeds."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.count = inner, 0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.count += len(texts)
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def write_csv(path: Path, rows: int) -> Path:
    rng = random.Random(7)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["station", "region", "reading"])
        for i in range(rows):
            w.writerow([f"station-{i:05d}", rng.choice(WORDS), f"{rng.uniform(0, 100):.2f}"])
    return path


def write_text(path: Path, paragraphs: int) -> Path:
    rng = random.Random(3)
    with path.open("w", encoding="utf-8") as fh:
        fh.write("Field Notes\n===========\n\n")
        for i in range(paragraphs):
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 90)))
            fh.write(f"Entry {i}: {words}.\n\n")
    return path


def counts(store: Any) -> dict[str, int]:
    out = dict(store.counts())
    with store.engine.connect() as conn:
        for name in ("document", "table"):
            out[f"{name}.parts"] = conn.execute(
                sa.text(f'SELECT count(*) FROM "{store.schema}".corpus_{name}_parts')
            ).scalar_one()
        out["sources"] = conn.execute(sa.text(f'SELECT count(*) FROM "{store.schema}".sources')).scalar_one()
        out["table_rows"] = conn.execute(sa.text(f'SELECT count(*) FROM "{store.schema}".table_rows')).scalar_one()
        out["stages"] = conn.execute(sa.text(f'SELECT count(*) FROM "{store.schema}".stages')).scalar_one()
    return out


@pytest.fixture
def store(settings: Any) -> Any:
    """An initialised store for HashEmbedder vectors (this module's own, closed after the test)."""
    s = init_store(settings)
    yield s
    s.close()


def interrupt_after(batches: int) -> Any:
    def on_progress(p: Progress) -> None:
        if p.done >= batches:
            raise Interrupted(p.path)

    return on_progress


def test_sampled_rows_are_exactly_the_limit_and_evenly_spread() -> None:
    keep = sampled_rows(1_000_000, 1000)
    picked = [i for i in range(1_000_000) if keep(i)]
    assert len(picked) == 1000
    gaps = np.diff(picked)
    assert gaps.min() == gaps.max() == 1000
    assert all(sampled_rows(50, 1000)(i) for i in range(50))


def test_text_blocks_cut_at_blank_lines_and_lose_nothing(tmp_path: Path) -> None:
    path = write_text(tmp_path / "notes.txt", 400)
    raw = path.read_text(encoding="utf-8")
    blocks = list(text_blocks(path, block_chars=4096))
    assert len(blocks) > 5 and "".join(blocks) == raw
    assert all(b.startswith("\n\n") or i == 0 for i, b in enumerate(blocks))  # each cut falls on a blank line


def test_large_csv_is_staged_in_batches_invisible_until_done_and_resumes(store: Any, tmp_path: Path) -> None:
    path = write_csv(tmp_path / "readings.csv", 1200)
    opts = IngestOptions(stage_rows=300, table_batch_rows=100, max_embedded_rows=400)
    embedder = CountingEmbedder(HashEmbedder())
    with pytest.raises(Interrupted):
        ingest_paths(store, embedder, [path], options=opts, on_progress=interrupt_after(3))
    middle = counts(store)
    assert middle["stages"] == 1 and middle["sources"] == 0 and middle["table"] == 0 and middle["table.parts"] == 0
    query = embedder.embed_query("readings: station: station-00002 | region")
    assert store.search("table", query.tolist(), k=5) == []  # staged rows are never searchable

    first_embedded = embedder.count
    seen: list[Progress] = []
    report = ingest_paths(store, embedder, [path], options=opts, on_progress=seen.append)
    assert report.ok and report.outcomes[0].status == "added"
    assert seen[0].done == 0 and seen[0].path == str(path)  # the file is announced before its work starts
    assert [p.done for p in seen[1:]] == [4, 5] and seen[-1].total == 5  # batch 1 = the table unit, then 4 x 100 rows
    assert embedder.count - first_embedded == 200  # only the batches not committed before were embedded
    final = counts(store)
    assert final["stages"] == 0 and final["sources"] == 1 and final["table"] == 1 and final["table.parts"] == 400
    hit = store.search("table", query.tolist(), k=1)[0]
    assert hit.metadata["row_count"] == 1200 and hit.metadata["embedded_rows"] == 400 and hit.metadata["rows_kept"]
    assert final["table_rows"] == 1200  # every row stays queryable, embedded or not
    assert not sampled_rows(1200, 400)(7)
    row = store.table_rows(hit.id, where={"station": "station-00007"})
    assert len(row) == 1 and row[0]["row"] == 7 and row[0]["cells"]["station"] == "station-00007"
    assert [r["row"] for r in store.table_rows(hit.id, limit=3)] == [0, 1, 2]
    with pytest.raises(InvalidInputError):
        store.table_rows("1; DROP TABLE x")
    assert ingest_paths(store, embedder, [path], options=opts).outcomes[0].status == "unchanged"


def test_large_text_is_streamed_in_batches_with_every_passage(store: Any, tmp_path: Path) -> None:
    embedder = HashEmbedder()
    path = write_text(tmp_path / "notes.txt", 120)
    opts = IngestOptions(large_text_bytes=4_000, text_batch_passages=32)
    with pytest.raises(Interrupted):
        ingest_paths(store, embedder, [path], options=opts, on_progress=interrupt_after(2))
    assert counts(store)["paragraph"] == 0
    seen: list[Progress] = []
    report = ingest_paths(store, embedder, [path], options=opts, on_progress=seen.append)
    assert report.ok and report.outcomes[0].status == "added" and [p.done for p in seen[:2]] == [0, 3]
    expected = split_paragraphs(extract_txt(path.read_text(encoding="utf-8"))[1])
    with store.engine.connect() as conn:
        stored = conn.execute(
            sa.text(
                f"SELECT content, (metadata->>'index')::int AS i, parent_id FROM \"{store.schema}\".corpus_paragraph "
                "ORDER BY i"
            )
        ).all()
        doc = conn.execute(sa.text(f'SELECT id, metadata FROM "{store.schema}".corpus_document')).one()
    assert [r.content for r in stored] == [p.text for p in expected]  # one block: exactly the whole-file split
    assert {r.parent_id for r in stored} == {doc.id}
    assert doc.metadata["truncated"] is True and doc.metadata["title"] == "Field Notes"
    assert Counter(counts(store)[k] for k in ("document", "sources")) == Counter([1, 1])
    hits = store.search("paragraph", embedder.embed_query(f"Field Notes\n{expected[-1].text}").tolist(), k=1)
    assert hits[0].content == expected[-1].text


def test_a_markup_file_too_large_to_parse_whole_is_refused_and_the_run_goes_on(store: Any, tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    big.write_text("# Big\n\n" + "A harbour lantern on the granite point.\n\n" * 200, encoding="utf-8")
    small = tmp_path / "small.txt"
    small.write_text("A short note about the canal quarry.", encoding="utf-8")
    report = ingest_paths(store, HashEmbedder(), [big, small], options=IngestOptions(max_markup_bytes=4000))
    assert [o.status for o in report.outcomes] == ["failed", "added"]
    assert "save its text as a .txt file" in (report.outcomes[0].error or "")
    assert counts(store)["sources"] == 1


def test_deleting_a_source_drops_what_a_crashed_run_left_staged(store: Any, tmp_path: Path) -> None:
    path = write_csv(tmp_path / "readings.csv", 400)
    with pytest.raises(Interrupted):
        ingest_paths(
            store,
            HashEmbedder(),
            [path],
            options=IngestOptions(stage_rows=100, table_batch_rows=100),
            on_progress=interrupt_after(2),
        )
    assert counts(store)["stages"] == 1
    store.delete_source(path.resolve().as_uri())
    assert counts(store)["stages"] == 0


def test_the_cli_shows_each_committed_batch_of_a_large_source(store: Any, tmp_path: Path) -> None:
    """What the ``ingest`` command shows while a large table is staged: a whole line per committed batch when
    its output is piped (beside the progress bar on a terminal), fed by the pipeline's ``on_progress``."""
    import io

    from universalrag.cli.context import Output
    from universalrag.cli.output import IngestProgress

    path = tmp_path / "big.csv"
    path.write_text("n,word\n" + "".join(f"{i},w{i}\n" for i in range(350)), encoding="utf-8")
    stdout = io.StringIO()
    progress = IngestProgress(Output(terminal=False, stdout=stdout, stderr=io.StringIO()))
    with progress:
        ingest_paths(
            store,
            HashEmbedder(),
            [path],
            options=IngestOptions(stage_rows=100, table_batch_rows=100),
            on_start=progress.on_start,
            on_file=progress.on_file,
            on_progress=progress.on_batch,
        )
    lines = stdout.getvalue().splitlines()
    batches = [line for line in lines if "batches committed" in line]
    assert len(batches) >= 4 and all(line.startswith(str(path)) for line in batches), lines
    assert lines[-1] == f"added: {path}"  # the file's outcome comes after its batches
