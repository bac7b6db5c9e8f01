"""Exact questions get exact answers by default: a question naming a setting finds the entry that defines it (not
a table that mentions it, not a neighbouring setting), a lock mode typed in capitals finds the passage about it, and
a Unicode character named in quotes finds its own row among rows that begin alike. Real pages of the PostgreSQL 15
manual Debian ships and rows of Unicode's UnicodeData.txt, read from the system (skipped where not installed)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.s5_agents import folder_rag

from universalrag.pipeline import UniversalRAG

MANUAL = Path("/usr/share/doc/postgresql-doc-15/html")
UNICODE = Path("/usr/share/unicode/UnicodeData.txt")
PAGES = (
    "runtime-config-resource.html",
    "runtime-config-short.html",
    "runtime-config-wal.html",
    "explicit-locking.html",
)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (MANUAL.is_dir() and UNICODE.exists()),
        reason="needs postgresql-doc-15 and unicode-data (apt install postgresql-doc-15 unicode-data)",
    ),
]


@pytest.fixture(scope="module")
def rag(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UniversalRAG]:
    folder = tmp_path_factory.mktemp("pg15") / "docs"
    folder.mkdir()
    for page in PAGES:
        shutil.copy(MANUAL / page, folder / page)
    lines = UNICODE.read_text(encoding="utf-8").splitlines()
    greek = [line for line in lines if 0x0370 <= int(line.split(";", 1)[0], 16) <= 0x03FF]  # the Greek block
    (folder / "UnicodeGreek.txt").write_text("\n".join(greek) + "\n", encoding="utf-8")
    with folder_rag(database_url, folder) as instance:
        yield instance


def _text(hit) -> str:  # type: ignore[no-untyped-def]
    return "\n".join([hit.content, *(text for _, text, _ in hit.matched_parts)])


@pytest.mark.parametrize(
    ("question", "entry", "value"),
    [
        ("What is the default of work_mem?", "work_mem (integer)", "4MB"),
        ("What is the default value of max_wal_size?", "max_wal_size (integer)", "1 GB"),
    ],
)
def test_a_question_naming_a_setting_gets_its_entry_first(
    rag: UniversalRAG, question: str, entry: str, value: str
) -> None:
    _, hits = rag.search(question, k=5)
    first = hits[0]
    assert entry in first.content and value in first.content, [h.content[:80] for h in hits]
    assert first.channel_scores.get("defines")


def test_a_lock_mode_in_capitals_finds_the_passage_about_it(rag: UniversalRAG) -> None:
    _, hits = rag.search("Which lock modes conflict with ROW EXCLUSIVE?", k=5)
    assert any("ROW EXCLUSIVE (RowExclusiveLock)" in _text(h) and "Conflicts with the SHARE" in _text(h) for h in hits)


@pytest.mark.parametrize("question", ['"GREEK SMALL LETTER ALPHA"', "Which code point is GREEK SMALL LETTER ALPHA?"])
def test_a_row_whose_cell_is_the_name_comes_first(rag: UniversalRAG, question: str) -> None:
    _, hits = rag.search(question, k=5)
    table = next(h for h in hits if h.corpus == "table")
    _, row, _ = table.matched_parts[0]
    assert "03B1" in row and "GREEK SMALL LETTER ALPHA |" in row + " |", table.matched_parts[:3]
