"""``print(report)`` after an ingest says what a person needs: the counts, the rows per corpus, and each skipped or
failed file with why, not every ``FileOutcome`` field by field (the report of ~70 Debian doc files). Real PostgreSQL,
real MiniLM."""

from __future__ import annotations

from pathlib import Path

from universalrag.ingest.pipeline import ingest_paths
from universalrag.store import Store


def test_a_printed_report_is_a_summary(store: Store, minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes\n\nThe tide mill grinds oats on the ebb twice a day.\n", encoding="utf-8")
    (folder / "data.bin").write_bytes(bytes(range(256)) * 8)
    report = ingest_paths(store, minilm, [folder])
    text = str(report)
    assert text.splitlines()[0] == "2 inputs: 1 added, 1 skipped, 0 failed."
    assert "Rows: document 1, paragraph 1." in text
    skipped = report.skipped[0]
    assert f"skipped {skipped.path}: {skipped.reason}" in text
    assert "FileOutcome(" not in text
