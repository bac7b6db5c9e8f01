"""What an ingest writes is settled in the full-text indexes: no entries wait in a GIN index's pending list.

New rows wait in that list until autovacuum merges it, which a corpus of a few hundred documents never triggers;
every lookup then reads the whole list, and over 276 whole Wikipedia pages the planner scanned the table row by row
instead (a typo's neighbour words: 655 ms against 2 ms). Checked on a real server: ``gin_clean_pending_list`` says how
many pending pages it merged (0 when the ingest settled them).
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest
from conftest import DATA
from support.schemas import pending_pages
from universalrag.ingest.pipeline import ingest_paths
from universalrag.store import Store
from universalrag.types import Unit


def test_an_ingest_leaves_no_pending_index_entries(store: Store, minilm, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    for name in ("apollo_11.txt", "honeybee_behaviour.md", "brennmoor_tramways.html"):
        shutil.copy(DATA / "corpus" / name, first / name)
    shutil.copy(DATA / "corpus" / "sourdough_baking.md", second / "sourdough_baking.md")

    report = ingest_paths(store, minilm, [first])
    assert report.count("added") == 3
    assert pending_pages(store) == 0

    # The same ingest without the settling step leaves pages pending: what the check above would have seen.
    monkeypatch.setattr(Store, "settle", lambda self, corpora: 0)
    assert ingest_paths(store, minilm, [second]).count("added") == 1
    assert pending_pages(store) > 0


def test_units_added_directly_are_settled_too(store: Store, minilm) -> None:  # type: ignore[no-untyped-def]
    texts = ["The tram depot at Brennmoor closed in 1961.", "Sourdough starter needs feeding twice a day."]
    vectors = minilm.embed(texts)
    units = [Unit(id=str(uuid.uuid4()), corpus="paragraph", content=t, embedding=v.tolist()) for t, v in zip(texts, vectors)]
    assert store.add_units(units) == 2
    assert pending_pages(store) == 0
    assert store.settle(["paragraph", "no_such_corpus"]) == 0  # nothing left; an unknown corpus is skipped
