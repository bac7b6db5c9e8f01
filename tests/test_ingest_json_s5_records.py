"""JSON files whose records sit under a key ({"3166-1": [{...}, ...]}, the shape of iso-codes' and most APIs' JSON)
are tables, and table files stored before their row text changed are read again (TABLE_RULES)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from universalrag.errors import IngestError
from universalrag.ingest.pipeline import ingest_paths
from universalrag.ingest.tables import read_tables, serialize_row
from universalrag.ingest.tables.json_records import records_in_object
from universalrag.ingest.tables.read import ROW_RULES, TABLE_RULES
from universalrag.retrieve import search_corpus
from universalrag.store import Store

COUNTRIES = {
    "3166-1": [
        {"alpha_2": "AW", "alpha_3": "ABW", "flag": "🇦🇼", "name": "Aruba", "numeric": "533"},
        {
            "alpha_2": "AF",
            "alpha_3": "AFG",
            "flag": "🇦🇫",
            "name": "Afghanistan",
            "numeric": "004",
            "official_name": "Islamic Republic of Afghanistan",
        },
        {
            "alpha_2": "BO",
            "alpha_3": "BOL",
            "common_name": "Bolivia",
            "flag": "🇧🇴",
            "name": "Bolivia, Plurinational State of",
            "numeric": "068",
        },
    ]
}


def _write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def _rows(path: Path) -> list[list[str]]:
    (table,) = read_tables(path)
    return list(table.rows())


def test_records_under_the_only_key_are_one_table_with_codes_and_flags_kept(tmp_path: Path) -> None:
    path = _write(tmp_path / "iso_3166-1.json", COUNTRIES)
    (table,) = read_tables(path)
    assert table.title == "iso_3166-1"  # the stem already names the key "3166-1"
    assert table.header == ["alpha_2", "alpha_3", "flag", "name", "numeric", "official_name", "common_name"]
    assert table.metadata["key"] == "3166-1" and table.metadata["row_count"] == 3
    rows = list(table.rows())
    assert serialize_row(table.header, rows[1]) == (
        "alpha_2: AF | alpha_3: AFG | flag: 🇦🇫 | name: Afghanistan | "
        "numeric: 004 | official_name: Islamic Republic of Afghanistan"
    )
    assert rows[2][6] == "Bolivia" and rows[0][5:] == ["", ""]  # optional fields: empty where missing


def test_several_arrays_are_several_tables_and_the_other_members_describe_them(tmp_path: Path) -> None:
    data = {
        "version": "4.17",
        "licence": {"name": "LGPL-2.1"},
        "aliases": ["iso", "codes"],
        "countries": COUNTRIES["3166-1"],
        "empty": [],
        "currencies": [{"alpha_3": "EUR", "name": "Euro"}],
        "nulls": [None, 1],
    }
    path = _write(tmp_path / "codes.json", data)
    countries, currencies = read_tables(path)
    assert (countries.title, currencies.title) == ("codes — countries", "codes — currencies")
    assert (countries.metadata["index_in_file"], currencies.metadata["index_in_file"]) == (0, 1)
    assert (
        countries.metadata["description"]
        == currencies.metadata["description"]
        == ('version: 4.17\nlicence: {"name": "LGPL-2.1"}\naliases: ["iso", "codes"]\nempty: []\nnulls: [null, 1]')
    )
    assert list(currencies.rows()) == [["EUR", "Euro"]]  # found past the first array, streamed again
    assert [r[1] for r in countries.rows()] == ["ABW", "AFG", "BOL"]


def test_a_top_level_array_is_read_as_before(tmp_path: Path) -> None:
    path = _write(tmp_path / "teams.json", [{"team": "Lakers", "wins": 57}, {"team": "Celtics"}])
    (table,) = read_tables(path)
    assert table.title == "teams" and "key" not in table.metadata and "description" not in table.metadata
    assert list(table.rows()) == [["Lakers", "57"], ["Celtics", ""]]


def test_records_under_a_key_are_streamed_not_loaded(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "big.json", {"meta": "x", "data": [{"id": r, "note": "lorem ipsum " * 8} for r in range(30_000)]}
    )
    tracemalloc.start()
    try:
        (table,) = read_tables(path)
        count = sum(len(batch) for batch in table.batches(1000))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 30_000 and table.title == "big — data"
    assert peak < path.stat().st_size / 1.5, f"peak {peak / 1e6:.1f} MB for a {path.stat().st_size / 1e6:.1f} MB file"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (
            '{"title": "ISO 3166-1", "properties": {"a": {"type": "string"}}}',
            "no array of records under any of its keys",
        ),
        ('{"data": [{"a": 1}, "b"]}', "item 1 of the array under 'data' is a string, not an object"),
        ('{"data": [{"a": 1}] "more": 1}', "expected ',' or '}' after an object member"),
        ('{"data": [{"a": 1}]} [', "extra data after the closing '}'"),
        ('{3: [{"a": 1}]}', "expected a quoted key"),
        ('"just text"', "a single value at the top level"),
    ],
    ids=["schema", "mixed-items", "missing-comma", "trailing", "bare-key", "scalar"],
)
def test_bad_objects_raise_an_actionable_error(tmp_path: Path, content: str, reason: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(IngestError, match=reason.replace("(", r"\(")) as info:
        read_tables(path)
    assert str(path) in str(info.value)


def test_records_in_object_tells_detection_what_is_a_table() -> None:
    assert records_in_object(b'{\n  "3166-1": [\n    {\n      "alpha_2": "AW"')
    assert records_in_object(b'{"da\\"ta":[{"a":1}]}')
    assert not records_in_object(b'{"$schema": "http://json-schema.org/draft-04/schema#"')
    assert not records_in_object(b'{"tags": ["a", "b"]}')
    assert not records_in_object(b'[{"a": 1}]')


def test_every_table_format_has_rules_that_cover_the_row_text() -> None:
    assert set(TABLE_RULES) == {"csv", "tsv", "xlsx", "json"}
    assert all(ROW_RULES in rules for rules in TABLE_RULES.values())


def _xlsx(path: Path) -> Path:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    book.active.title = "launches"
    for row in (["mission", "launched"], ["Mars Express", "2-Jun-03"], ["Rosetta", "2-Mar-04"]):
        book.active.append(row)
    book.save(path)
    return path


@pytest.mark.parametrize("kind", ["json", "xlsx"])
def test_tables_stored_before_their_rows_carried_iso_dates_are_read_again_once(
    store: Store, minilm, tmp_path: Path, kind: str
) -> None:
    """XLSX and JSON tables stored when only the CSV rule said that rows carry ISO dates ("2-Jun-03 (2003-06-02)")
    were identified by their bytes alone and never read again; their identity now covers TABLE_RULES."""
    import sqlalchemy as sa

    from universalrag.ingest.files import hash_file

    if kind == "xlsx":
        path = _xlsx(tmp_path / "launches.xlsx").resolve()
    else:
        path = _write(
            tmp_path / "launches.json",
            [{"mission": "Mars Express", "launched": "2-Jun-03"}, {"mission": "Rosetta", "launched": "2-Mar-04"}],
        ).resolve()
    assert ingest_paths(store, minilm, [path]).ok
    assert store.source_state(path.as_uri())[0] not in (None, hash_file(path))  # the identity covers TABLE_RULES
    hit = search_corpus(store, minilm, "table", "Mars Express launch", k=1)[0]
    assert "launched: 2-Jun-03 (2003-06-02)" in hit.matched_parts[0][1]
    with store.transaction() as conn:  # as the earlier rule stored it: identified by its file hash alone
        conn.execute(
            sa.update(store.tables.sources)
            .where(store.tables.sources.c.uri == path.as_uri())
            .values(content_hash=hash_file(path))
        )
    assert [o.status for o in ingest_paths(store, minilm, [path]).outcomes] == ["replaced"]
    assert [o.status for o in ingest_paths(store, minilm, [path]).outcomes] == ["unchanged"]
