"""What a folder of real system files turns into: a style sheet is skipped with its reason, not made a document;
a tab-separated table without a table's extension (tzdata's ``zone1970.tab``, public domain, copied into
tests/data) becomes one table with a row per zone, not paragraphs of run-together cells. The PostgreSQL manual's
own ``stylesheet.css`` is read from the system where postgresql-doc-15 is installed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import DATA

from universalrag.embed.base import Embedder
from universalrag.ingest.detect import detect
from universalrag.ingest.pipeline import IngestOptions, ingest_paths
from universalrag.store import Store

ZONES = DATA / "tables" / "zone1970.tab"
MANUAL_CSS = Path("/usr/share/doc/postgresql-doc-15/html/stylesheet.css")


def test_a_tab_separated_file_is_a_table_whatever_its_name(store: Store, minilm: Embedder, tmp_path: Path) -> None:
    assert (detect(ZONES).kind, detect(ZONES).format) == ("table", "tsv")
    folder = tmp_path / "zoneinfo"
    folder.mkdir()
    shutil.copy(ZONES, folder / ZONES.name)
    report = ingest_paths(store, minilm, [folder], options=IngestOptions())
    (outcome,) = report.outcomes
    assert outcome.status == "added" and outcome.kind == "table" and outcome.corpora == ("table",)
    zones = sum(1 for line in ZONES.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#"))
    assert outcome.rows.get("table.parts") == zones and not outcome.rows.get("paragraph")
    hits = store.search("table", minilm.embed_query("Europe/Andorra"), k=1, exact_terms=("Europe/Andorra",))
    index, row, _ = hits[0].matched_parts[0]
    assert "Europe/Andorra" in row and "+4230+00131" in row


def test_prose_with_a_few_tabs_stays_text(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text(
        "Meeting notes\n\nWe agreed to move the release.\tEveryone was there.\nThe next meeting is on Monday.\n"
        "Bring the figures.\nAsk about the budget.\nCheck the room.\n",
        encoding="utf-8",
    )
    assert detect(notes).kind == "text"


@pytest.mark.skipif(not MANUAL_CSS.exists(), reason="the PostgreSQL 15 manual (postgresql-doc-15) is not installed")
def test_a_style_sheet_is_skipped_with_its_reason(store: Store, minilm: Embedder, tmp_path: Path) -> None:
    folder = tmp_path / "html"
    folder.mkdir()
    shutil.copy(MANUAL_CSS, folder / "stylesheet.css")
    report = ingest_paths(store, minilm, [folder], options=IngestOptions())
    (outcome,) = report.outcomes
    assert outcome.status == "skipped" and "style sheet" in (outcome.reason or "")
