"""reStructuredText pages are parsed with docutils: Sphinx markup keeps its words, tables become tables of the
table corpus, and a page never reads another file. Real files, the real bundled MiniLM, a real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from universalrag.ingest.pipeline import ingest_paths
from universalrag.ingest.text.document import read_text_file
from universalrag.ingest.text_group import page_tables
from universalrag.retrieve import search_corpus
from universalrag.store import Store

#: A page as Sphinx projects write them: domain roles, directives docutils does not know, a simple table (as in
#: scikit-learn's dataset descriptions), a list-table and a table of contents.
SPHINX = """\
.. _locks:

===============
Harbour locks
===============

.. contents::
   :local:

.. currentmodule:: harbour.locks

Opening the gates
=================

Call :func:`~harbour.locks.open_gate` with the lock's name; :py:class:`harbour.locks.Lock` keeps the
state. See :ref:`the tide tables <tides>` and |details-start| the keeper's notes.

.. versionadded:: 2.1
   Gates can be opened remotely from the harbour office.

.. dropdown:: Why do the gates close at low water?
   :open:

   Below half tide the sill is exposed and a keel would strike it.

.. toctree::
   :maxdepth: 2

   secret_index
   other_page

Lock dimensions
===============

=============  ======  =====  ======
Lock           Length  Beam   Depth
=============  ======  =====  ======
Kirkwall lock  42 m    9 m    4.1 m
Sandwick lock  31 m    7 m    3.2 m
Holm lock      18 m    5 m    2.4 m
=============  ======  =====  ======

.. list-table:: Lock keepers
   :header-rows: 1

   * - Lock
     - Keeper
     - Radio channel
   * - Kirkwall lock
     - Morag Flett
     - VHF 14
   * - Holm lock
     - Tam Rendall
     - VHF 16
"""


def _page(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "locks.rst"
    page.write_text(SPHINX, encoding="utf-8")
    return page


def test_sphinx_markup_keeps_the_words_sphinx_shows(tmp_path: Path) -> None:
    doc = read_text_file(_page(tmp_path))
    assert doc.title == "Harbour locks" and doc.metadata["headings"][:3] == [
        "Harbour locks", "Opening the gates", "Lock dimensions"]
    text = doc.text
    assert "Call open_gate with the lock's name; harbour.locks.Lock keeps the state." in text
    assert "See the tide tables and the keeper's notes." in " ".join(text.split())
    # an unknown directive keeps its argument and its body; one whose body is not prose is left out
    assert "Gates can be opened remotely from the harbour office." in text
    assert "Why do the gates close at low water?" in text and "a keel would strike it" in text
    for markup in (":func:", ":py:class:", ":ref:", "|details-start|", "versionadded", "dropdown", ":open:",
                   "toctree", "secret_index", "currentmodule", "Contents", "===", "ERROR", "Unknown"):
        assert markup not in text, markup
    assert "Sandwick lock" in text and "Tam Rendall" in text  # the whole document keeps its tables


def test_an_rst_page_never_reads_another_file(tmp_path: Path) -> None:
    """``include``, ``raw`` and ``csv-table :file:`` would read files the user did not give."""
    secret = tmp_path / "secret.txt"
    secret.write_text("the launch code is 0000\n", encoding="utf-8")
    page = tmp_path / "page.rst"
    page.write_text(f"Page\n====\n\nBefore.\n\n.. include:: {secret}\n\n.. raw:: html\n   :file: {secret}\n\n"
                    f".. csv-table:: Codes\n   :file: {secret}\n\nAfter.\n", encoding="utf-8")
    doc = read_text_file(page)
    assert "Before." in doc.text and "After." in doc.text
    assert "launch code" not in doc.text and str(secret) not in doc.text
    assert page_tables(page, "rst") == []


def test_an_rst_pages_tables_go_to_the_table_corpus_and_answer_from_there(store: Store, minilm,
                                                                         tmp_path: Path) -> None:
    page = _page(tmp_path)
    tables = page_tables(page, "rst")
    assert [(t.header, list(t.rows())) for t in tables] == [
        (["Lock", "Length", "Beam", "Depth"], [["Kirkwall lock", "42 m", "9 m", "4.1 m"],
                                               ["Sandwick lock", "31 m", "7 m", "3.2 m"],
                                               ["Holm lock", "18 m", "5 m", "2.4 m"]]),
        (["Lock", "Keeper", "Radio channel"], [["Kirkwall lock", "Morag Flett", "VHF 14"],
                                               ["Holm lock", "Tam Rendall", "VHF 16"]]),
    ]
    assert tables[1].title == "Lock keepers"
    assert ingest_paths(store, minilm, [page.parent]).ok
    units = store.tables.corpus(store.corpus("paragraph")).units
    with store.transaction() as conn:
        passages = " ".join(conn.execute(sa.select(units.c.content)).scalars())
    assert "keel would strike it" in passages  # the prose is cut into passages...
    assert "Morag Flett" not in passages and "31 m" not in passages  # ...without the tables' cells
    assert "[Table: Lock keepers — 2 rows; columns: Lock, Keeper, Radio channel]" in passages
    hit = search_corpus(store, minilm, "table", "which radio channel does the Holm lock keeper use?", k=1)[0]
    assert hit.uri.endswith("locks.rst") and "VHF 16" in hit.matched_parts[0][1]


def test_a_page_docutils_cannot_parse_is_read_as_plain_text(tmp_path: Path) -> None:
    """400 nested list levels exhaust docutils' recursion; the page's words are still indexed."""
    page = tmp_path / "nested.rst"
    page.write_text("Deep list\n=========\n\n" + "".join("  " * i + f"- level {i}\n\n" for i in range(400)),
                    encoding="utf-8")
    doc = read_text_file(page)
    assert doc.title == "Deep list" and "- level 0" in doc.text and "- level 399" in doc.text
    assert page_tables(page, "rst") == []


def test_a_page_without_a_heading_is_titled_by_its_title_field_or_its_name(tmp_path: Path) -> None:
    """Generated docs (the AWS CLI's topics) put the title in a ``:title:`` field; docutils would name an untitled
    page after its source, "<string>"."""
    fielded = tmp_path / "s3-config.rst"
    fielded.write_text(":title: AWS CLI S3 Configuration\n:category: S3\n\nThe transfer commands have settings of "
                       "their own.\n", encoding="utf-8")
    plain = tmp_path / "notes.rst"
    plain.write_text("A page of prose with no heading.\n\nA second paragraph.\n", encoding="utf-8")
    assert read_text_file(fielded).title == "AWS CLI S3 Configuration"
    assert read_text_file(plain).title == "notes"
    assert "<string>" not in read_text_file(plain).text


def test_a_malformed_table_keeps_its_text(tmp_path: Path) -> None:
    """docutils reports a table whose columns do not line up as an error and drops it; its cells are still the
    author's text."""
    page = tmp_path / "scores.rst"
    page.write_text("Scores\n======\n\n=====  =====\nTeam   Wins\n=====  =====\nLions  57\nQuarry Rovers 41\n"
                    "=====  =====\n\nAfter the table.\n", encoding="utf-8")
    text = read_text_file(page).text
    assert "Quarry Rovers 41" in text and "Lions  57" in text and "After the table." in text
    assert "Malformed" not in text


def test_tables_under_one_heading_are_told_apart_by_their_lead_in(store: Store, minilm, tmp_path: Path) -> None:
    """scikit-learn's KDD Cup page: five tables under one heading, each introduced by "SA structure:" and the
    like. Titled by the heading alone they were "Kddcup 99 dataset (2)" to "(5)", and a question naming a subset
    found any of them."""
    subsets = {"SA": 976158, "SF": 699691, "http": 619052, "smtp": 95373}
    body = "".join(f"{name} structure:\n\n==============  =======\nSamples total   {n}\nDimensionality  41\n"
                   f"==============  =======\n\n" for name, n in subsets.items())
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "kddcup99.rst").write_text(f"Kddcup 99 dataset\n-----------------\n\n{body}",
                                                    encoding="utf-8")
    assert ingest_paths(store, minilm, [tmp_path / "docs"]).ok
    hits = search_corpus(store, minilm, "table", "how many samples does the smtp subset have", k=4)
    assert hits[0].metadata["title"] == "Kddcup 99 dataset — smtp structure"
    assert "95373" in hits[0].matched_parts[0][1]
