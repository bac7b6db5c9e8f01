"""Four ingesting processes over overlapping folders plus eight querying threads, for a bounded time: exact final
counts, no duplicates, no deadlock, no crash. Run against the test database's server and against an embedded
server that the processes start or join themselves (one data directory shared by all of them)."""

from __future__ import annotations

import csv
import json
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from test_faults_kill import OPTIONS, WORDS, HashEmbedder, init_store, orphans, per_source

from universalrag.config import Settings
from universalrag.ingest import IngestOptions, ingest_paths

CHILD = r"""
import json, sys
cfg = json.loads(sys.argv[1])
sys.path.insert(0, cfg["tests"])
from test_faults_kill import HashEmbedder
from universalrag.config import Settings
from universalrag.ingest import IngestOptions, ingest_paths
from universalrag.store import Store

from pathlib import Path
settings = Settings(database_url=cfg["url"], schema=cfg["schema"], home=Path(cfg["home"]))
with Store(settings=settings) as store:
    report = ingest_paths(store, HashEmbedder(), cfg["paths"], options=IngestOptions(**cfg["options"]))
print(json.dumps(report.to_dict()))
sys.exit(0 if report.ok else 3)
"""


def make_groups(root: Path) -> list[Path]:
    """Four folders of ten text files each; the first also holds a table large enough to be staged."""
    rng = random.Random(5)
    groups = []
    for g in range(4):
        folder = root / f"g{g}"
        folder.mkdir(parents=True)
        for i in range(10):
            body = "\n\n".join(" ".join(rng.choice(WORDS) for _ in range(50)) + "." for _ in range(3))
            (folder / f"doc{g}_{i}.txt").write_text(f"Document {g}-{i}\n\n{body}", encoding="utf-8")
        groups.append(folder)
    with (root / "g0" / "readings.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["station", "region", "reading"])
        for r in range(250):
            w.writerow([f"st-{r:04d}", rng.choice(WORDS), f"{rng.uniform(0, 99):.1f}"])
    return groups


def run_concurrently(
    groups: list[Path], *, url: str | None, schema: str, home: Path, store: Any, tests: Path
) -> tuple[list[subprocess.CompletedProcess[str]], int, list[BaseException]]:
    """Four ingesting processes (each over two overlapping folders; the first over all four) and eight
    querying threads until they finish; returns the processes, the queries run and the query errors."""
    plans = [[str(g) for g in groups]] + [[str(groups[i]), str(groups[(i + 1) % 4])] for i in (1, 2, 3)]
    children = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                CHILD,
                json.dumps(
                    {
                        "tests": str(tests),
                        "url": url,
                        "schema": schema,
                        "home": str(home),
                        "paths": paths,
                        "options": OPTIONS,
                    }
                ),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for paths in plans
    ]
    errors: list[BaseException] = []
    queries = [0]
    stop = threading.Event()
    embedder = HashEmbedder()

    def query(n: int) -> None:
        vector = embedder.embed_query(f"Document {n % 4}-{n} {WORDS[n]}").tolist()
        while not stop.is_set():
            try:
                store.search("paragraph" if n % 2 else "table", vector, k=3)
                queries[0] += 1
            except BaseException as e:  # noqa: BLE001 - every failure is what this test reports
                errors.append(e)
            time.sleep(0.01)

    threads = [threading.Thread(target=query, args=(n,), daemon=True) for n in range(8)]
    for t in threads:
        t.start()
    done = []
    try:
        for child in children:
            out, err = child.communicate(timeout=240)  # a deadlock fails here, not by hanging the suite
            done.append(subprocess.CompletedProcess(child.args, child.returncode, out, err))
    finally:
        stop.set()
        for t in threads:
            t.join(30)
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait(30)
    return done, queries[0], errors


def check(
    store: Any,
    done: list[subprocess.CompletedProcess[str]],
    queries: int,
    errors: list[BaseException],
    clean: dict[str, tuple[int, ...]],
) -> None:
    assert [c.returncode for c in done] == [0, 0, 0, 0], [c.stderr[-2000:] for c in done]
    assert not errors and queries > 8, (queries, errors[:3])
    added = sum(json.loads(c.stdout)["added"] for c in done)
    assert added == len(clean)  # each source written by exactly one process; the others found it unchanged
    assert per_source(store.engine, store.schema) == clean
    assert orphans(store.engine, store.schema) == 0
    with store.engine.connect() as conn:
        s = f'"{store.schema}"'
        assert conn.execute(sa.text(f"SELECT count(*) FROM {s}.stages")).scalar_one() == 0
        assert (
            conn.execute(
                sa.text(
                    f"SELECT count(*) FROM (SELECT content FROM {s}.corpus_paragraph GROUP BY source_id, content "
                    "HAVING count(*) > 1) d"
                )
            ).scalar_one()
            == 0
        )


@pytest.fixture(scope="module")
def groups(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return make_groups(tmp_path_factory.mktemp("concurrent"))


@pytest.fixture(scope="module")
def clean(groups: list[Path], database_url: str) -> dict[str, tuple[int, ...]]:
    store = init_store(Settings(database_url=database_url, schema="concurrent_clean"))
    try:
        assert ingest_paths(store, HashEmbedder(), groups, options=IngestOptions(**OPTIONS)).ok
        counts = per_source(store.engine, store.schema)
        assert len(counts) == 41 and counts["readings.csv"][3] == 60
        return counts
    finally:
        store.downgrade("base")
        store.close()


def test_four_processes_and_eight_query_threads_on_one_server(
    groups: list[Path], clean: dict[str, tuple[int, ...]], settings: Settings, tmp_path: Path
) -> None:
    store = init_store(settings)
    try:
        done, queries, errors = run_concurrently(
            groups,
            url=settings.database_url,
            schema=settings.schema,
            home=tmp_path,
            store=store,
            tests=Path(__file__).parent,
        )
        check(store, done, queries, errors, clean)
    finally:
        store.close()


def test_four_processes_sharing_one_embedded_server(groups: list[Path], clean: dict[str, tuple[int, ...]]) -> None:
    from universalrag.store.embedded import embedded_url, stop_embedded

    home = Path(tempfile.mkdtemp(prefix="universalrag-shared-"))
    store = None
    try:
        store = init_store(Settings(database_url=embedded_url(home), schema="shared", home=home))
        done, queries, errors = run_concurrently(
            groups, url=None, schema="shared", home=home, store=store, tests=Path(__file__).parent
        )
        check(store, done, queries, errors, clean)
    finally:
        if store is not None:
            store.close()
        stop_embedded(home)
        shutil.rmtree(home, ignore_errors=True)
