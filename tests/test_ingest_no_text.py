"""A text file with no readable text once its markup is read (pip's development/vendoring-policy.rst is one
``.. include::``; its reference/*.rst pages only redirect) is skipped by a folder walk, as an empty file is, and
fails only when named or under ``strict``. Real files, the real bundled MiniLM, a real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from universalrag.ingest.files import NO_TEXT_REASON
from universalrag.ingest.pipeline import ingest_paths
from universalrag.store import Store

REDIRECT = (
    ":orphan:\n\n.. meta::\n\n  :http-equiv=refresh: 3; url=../../cli/pip_show/\n\nThis page has moved\n"
    "===================\n\nYou should be redirected automatically in 3 seconds.\n"
)


def test_a_file_without_text_is_skipped_in_a_folder_and_fails_when_named(store: Store, minilm, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "development").mkdir(parents=True)
    policy = docs / "development" / "vendoring-policy.rst"
    policy.write_text(".. include:: ../../../src/pip/_vendor/README.rst\n", encoding="utf-8")
    (docs / "pip_show.rst").write_text(REDIRECT, encoding="utf-8")
    (docs / "page.md").write_text("# Locks\n\nThe gates open at high water.\n", encoding="utf-8")
    report = ingest_paths(store, minilm, [docs])
    assert report.ok and report.count("added") == 1
    assert {Path(o.path).name: o.reason for o in report.skipped} == {
        "vendoring-policy.rst": NO_TEXT_REASON,
        "pip_show.rst": NO_TEXT_REASON,
    }
    named = ingest_paths(store, minilm, [policy])
    assert not named.ok and "no readable text is left" in str(named.failed[0].error)
    strict = ingest_paths(store, minilm, [docs], strict=True)
    assert {Path(o.path).name for o in strict.failed} == {"vendoring-policy.rst", "pip_show.rst"}
    assert any("only sends its reader on to ../../cli/pip_show/" in str(o.error) for o in strict.failed)
