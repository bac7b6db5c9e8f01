"""reStructuredText pages are parsed with docutils: Sphinx markup keeps its words, tables become tables of the
table corpus, and a page never reads another file. Real files, the real bundled MiniLM, a real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from universalrag.errors import IngestError
from universalrag.ingest.pipeline import ingest_paths
from universalrag.ingest.text import split_paragraphs
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
        "Harbour locks",
        "Opening the gates",
        "Lock dimensions",
    ]
    text = doc.text
    assert "Call open_gate with the lock's name; harbour.locks.Lock keeps the state." in text
    assert "See the tide tables and the keeper's notes." in " ".join(text.split())
    # an unknown directive keeps its argument and its body; one whose body is not prose is left out
    assert "Gates can be opened remotely from the harbour office." in text
    assert "Why do the gates close at low water?" in text and "a keel would strike it" in text
    for markup in (
        ":func:",
        ":py:class:",
        ":ref:",
        "|details-start|",
        "versionadded",
        "dropdown",
        ":open:",
        "toctree",
        "secret_index",
        "currentmodule",
        "Contents",
        "===",
        "ERROR",
        "Unknown",
    ):
        assert markup not in text, markup
    assert "Sandwick lock" in text and "Tam Rendall" in text  # the whole document keeps its tables


def test_an_rst_page_never_reads_another_file(tmp_path: Path) -> None:
    """``include``, ``raw`` and ``csv-table :file:`` would read files the user did not give."""
    secret = tmp_path / "secret.txt"
    secret.write_text("the launch code is 0000\n", encoding="utf-8")
    page = tmp_path / "page.rst"
    page.write_text(
        f"Page\n====\n\nBefore.\n\n.. include:: {secret}\n\n.. raw:: html\n   :file: {secret}\n\n"
        f".. csv-table:: Codes\n   :file: {secret}\n\nAfter.\n",
        encoding="utf-8",
    )
    doc = read_text_file(page)
    assert "Before." in doc.text and "After." in doc.text
    assert "launch code" not in doc.text and str(secret) not in doc.text
    assert page_tables(page, "rst") == []


def test_an_rst_pages_tables_go_to_the_table_corpus_and_answer_from_there(store: Store, minilm, tmp_path: Path) -> None:
    page = _page(tmp_path)
    tables = page_tables(page, "rst")
    assert [(t.header, list(t.rows())) for t in tables] == [
        (
            ["Lock", "Length", "Beam", "Depth"],
            [
                ["Kirkwall lock", "42 m", "9 m", "4.1 m"],
                ["Sandwick lock", "31 m", "7 m", "3.2 m"],
                ["Holm lock", "18 m", "5 m", "2.4 m"],
            ],
        ),
        (
            ["Lock", "Keeper", "Radio channel"],
            [["Kirkwall lock", "Morag Flett", "VHF 14"], ["Holm lock", "Tam Rendall", "VHF 16"]],
        ),
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
    page.write_text(
        "Deep list\n=========\n\n" + "".join("  " * i + f"- level {i}\n\n" for i in range(400)), encoding="utf-8"
    )
    doc = read_text_file(page)
    assert doc.title == "Deep list" and "- level 0" in doc.text and "- level 399" in doc.text
    assert page_tables(page, "rst") == []


def test_a_page_without_a_heading_is_titled_by_its_title_field_or_its_name(tmp_path: Path) -> None:
    """Generated docs (the AWS CLI's topics) put the title in a ``:title:`` field; docutils would name an untitled
    page after its source, "<string>"."""
    fielded = tmp_path / "s3-config.rst"
    fielded.write_text(
        ":title: AWS CLI S3 Configuration\n:category: S3\n\nThe transfer commands have settings of their own.\n",
        encoding="utf-8",
    )
    plain = tmp_path / "notes.rst"
    plain.write_text("A page of prose with no heading.\n\nA second paragraph.\n", encoding="utf-8")
    assert read_text_file(fielded).title == "AWS CLI S3 Configuration"
    assert read_text_file(plain).title == "notes"
    assert "<string>" not in read_text_file(plain).text


def test_a_malformed_table_keeps_its_text(tmp_path: Path) -> None:
    """docutils reports a table whose columns do not line up as an error and drops it; its cells are still the
    author's text."""
    page = tmp_path / "scores.rst"
    page.write_text(
        "Scores\n======\n\n=====  =====\nTeam   Wins\n=====  =====\nLions  57\nQuarry Rovers 41\n"
        "=====  =====\n\nAfter the table.\n",
        encoding="utf-8",
    )
    text = read_text_file(page).text
    assert "Quarry Rovers 41" in text and "Lions  57" in text and "After the table." in text
    assert "Malformed" not in text


def test_tables_under_one_heading_are_told_apart_by_their_lead_in(store: Store, minilm, tmp_path: Path) -> None:
    """scikit-learn's KDD Cup page: five tables under one heading, each introduced by "SA structure:" and the
    like. Titled by the heading alone they were "Kddcup 99 dataset (2)" to "(5)", and a question naming a subset
    found any of them."""
    subsets = {"SA": 976158, "SF": 699691, "http": 619052, "smtp": 95373}
    body = "".join(
        f"{name} structure:\n\n==============  =======\nSamples total   {n}\nDimensionality  41\n"
        f"==============  =======\n\n"
        for name, n in subsets.items()
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "kddcup99.rst").write_text(f"Kddcup 99 dataset\n-----------------\n\n{body}", encoding="utf-8")
    assert ingest_paths(store, minilm, [tmp_path / "docs"]).ok
    hits = search_corpus(store, minilm, "table", "how many samples does the smtp subset have", k=4)
    assert hits[0].metadata["title"] == "Kddcup 99 dataset — smtp structure"
    assert "95373" in hits[0].matched_parts[0][1]


def _text(tmp_path: Path, source: str, name: str = "page.rst") -> str:
    page = tmp_path / name
    page.write_text(source, encoding="utf-8")
    return read_text_file(page).text


def test_a_build_condition_keeps_its_body_without_its_condition(tmp_path: Path) -> None:
    """CMake's pages open with ``.. only:: html`` around their table of contents: the condition ("html") is for
    Sphinx's builder, never shown, and it was a stray line of its own at the top of 15 pages' text."""
    text = _text(
        tmp_path,
        "target_link_libraries\n---------------------\n\n.. only:: html\n\n  .. contents::\n\n"
        "Specify libraries or flags to use when linking.\n\n.. only:: not man\n\n"
        "   Read the reference online.\n\n.. ifconfig:: releaselevel in ('alpha', 'beta')\n\n"
        "   This release is a preview.\n",
    )
    assert "Specify libraries or flags" in text and "Read the reference online." in text
    assert "This release is a preview." in text
    for condition in ("html", "not man", "releaselevel", "Contents"):
        assert condition not in text, condition


def test_a_directive_that_only_sets_context_shows_nothing(tmp_path: Path) -> None:
    """``.. program:: cmake`` (cmake.1.rst) and its like only say what later markup refers to: Sphinx shows
    nothing of them, and their argument was a stray paragraph ("cmake")."""
    text = _text(
        tmp_path,
        "cmake(1)\n========\n\n.. program:: cmake\n\n.. default-domain:: cmake\n\n"
        ".. default-role:: py:obj\n\n.. role:: opt(option)\n\n.. std:program:: cmake-E\n\n"
        ".. py:currentmodule:: harbour.locks\n\n.. option:: --fresh\n\n"
        " Perform a fresh configuration of the build tree.\n",
    )
    assert "--fresh" in text and "Perform a fresh configuration of the build tree." in text
    lines = set(text.splitlines())
    for shown in ("cmake", "cmake-E", "py:obj", "opt(option)", "harbour.locks"):
        assert shown not in lines, shown


def test_a_version_note_says_which_version_in_words(tmp_path: Path) -> None:
    """``.. versionadded:: 3.19`` was a bare "3.19": "since which version can string() parse JSON" found no
    version. Sphinx writes the note's kind before the version, and its text after a colon."""
    text = _text(
        tmp_path,
        "string\n------\n\nJSON\n^^^^\n\n.. versionadded:: 3.19\n\n"
        "Functionality for querying a JSON string.\n\n.. versionadded:: 3.19\n"
        "  Functionality for querying a JSON string.\n\n.. versionchanged:: 3.2\n\n"
        "  If ``<string>`` is shorter than ``<length>`` then the end of the string is used.\n\n"
        "  Previous versions reported an error.\n\n.. deprecated:: 3.20\n"
        "  Use a local license file\n  (:variable:`CPACK_NUGET_PACKAGE_LICENSE_FILE_NAME`)"
        " instead.\n\n.. versionremoved:: 4.0\n\n.. versionadded:: 3.8 Added the ``SHA3_*`` hash"
        " algorithms.\n\n.. versionchanged:: 3.24\n\n  .. code-block:: cmake\n\n"
        "    string(JSON out GET ${doc} key)\n",
    )
    paragraphs = [" ".join(p.split()) for p in text.split("\n\n")]
    assert paragraphs[2:] == [
        "New in version 3.19.",
        "Functionality for querying a JSON string.",
        "New in version 3.19: Functionality for querying a JSON string.",
        "Changed in version 3.2: If <string> is shorter than <length> then the end of the string is used.",
        "Previous versions reported an error.",
        "Deprecated since version 3.20: Use a local license file (CPACK_NUGET_PACKAGE_LICENSE_FILE_NAME) instead.",
        "Removed in version 4.0.",
        "New in version 3.8: Added the SHA3_* hash algorithms.",
        "Changed in version 3.24:",
        "string(JSON out GET ${doc} key)",
    ]


def test_a_grammar_or_code_directive_keeps_its_body_as_written(tmp_path: Path) -> None:
    """A ``productionlist`` (cmake-language.7.rst) is a grammar: read as reStructuredText, ``[A-Za-z_]`` lost its
    underscore, ``[ \\t]`` its backslash, backquoted tokens became emphasis and the lines ran together. Sphinx shows
    the productions as written, their tokens without backquotes; doctest blocks are code too."""
    text = _text(
        tmp_path,
        "cmake-language(7)\n=================\n\n.. productionlist::\n"
        " file: `file_element`*\n file_element: `command_invocation` `line_ending` |\n"
        "             : (`bracket_comment`|`space`)* `line_ending`\n"
        " space: <match '[ \\t]+'>\n newline: <match '\\n'>\n"
        " identifier: <match '[A-Za-z_][A-Za-z0-9_]*'>\n\n"
        ".. testsetup::\n\n   import secret_setup\n\n.. doctest::\n\n"
        "   >>> '_'.join(['*a*', 'b_'])\n   '*a*_b_'\n\n.. testcode::\n\n   print(x_ * y_)  # `y_` scales\n\n"
        ".. testoutput::\n   :hide:\n\n   hidden_output\n\nAfter the grammar.\n",
    )
    assert (
        "file: file_element*\nfile_element: command_invocation line_ending |\n"
        "            : (bracket_comment|space)* line_ending\nspace: <match '[ \\t]+'>\n"
        "newline: <match '\\n'>\nidentifier: <match '[A-Za-z_][A-Za-z0-9_]*'>"
    ) in text
    assert ">>> '_'.join(['*a*', 'b_'])\n'*a*_b_'" in text and "print(x_ * y_)  # `y_` scales" in text
    assert "After the grammar." in text
    for hidden in ("secret_setup", "hidden_output", ":hide:", "productionlist", "doctest"):
        assert hidden not in text, hidden


def test_a_role_target_may_hold_angle_brackets(tmp_path: Path) -> None:
    """CMake's targets are placeholders in angle brackets: the title before the target is what Sphinx shows, and a
    name with no title before a space (``CMAKE_<LANG>_FLAGS``, ``$<TARGET_OBJECTS>``) is shown whole."""
    text = _text(
        tmp_path,
        "Roles\n=====\n\nIf :variable:`CMAKE_CXX_COMPILER_VERSION <CMAKE_<LANG>_COMPILER_VERSION>` "
        "is less than 4.2, append to :prop_tgt:`LINK_INTERFACE_LIBRARIES_DEBUG "
        "<LINK_INTERFACE_LIBRARIES_<CONFIG>>` and :variable:`CMAKE_<LANG>_FLAGS`, see "
        ":prop_tgt:`MAP_IMPORTED_CONFIG_<CONFIG>`, :genex:`$<TARGET_OBJECTS>` and "
        ":ref:`the guide <guide>`.\n",
    )
    assert (
        "If CMAKE_CXX_COMPILER_VERSION is less than 4.2, append to LINK_INTERFACE_LIBRARIES_DEBUG and "
        "CMAKE_<LANG>_FLAGS, see MAP_IMPORTED_CONFIG_<CONFIG>, $<TARGET_OBJECTS> and the guide."
    ) in " ".join(text.split())


def test_an_include_that_is_not_read_is_named_in_one_warning(tmp_path: Path, caplog) -> None:
    """An ``include`` stays disabled, but its content silently missing left a user wondering why cmake.1.rst
    lacks its options: one warning a page names the files it did not read."""
    (tmp_path / "OPTIONS_BUILD.txt").write_text("``-S <path-to-source>`` the source tree\n", encoding="utf-8")
    with caplog.at_level("WARNING", logger="universalrag.ingest.text.rst"):
        text = _text(
            tmp_path,
            "cmake(1)\n========\n\n.. include:: OPTIONS_BUILD.txt\n\nOptions.\n\n"
            ".. only:: html\n\n   .. include:: OPTIONS_HELP.txt\n\n.. include:: OPTIONS_BUILD.txt\n",
        )
    warnings = [r.getMessage() for r in caplog.records if r.name == "universalrag.ingest.text.rst"]
    assert len(warnings) == 1 and "OPTIONS_BUILD.txt" in warnings[0] and "OPTIONS_HELP.txt" in warnings[0]
    assert warnings[0].count("OPTIONS_BUILD.txt") == 1
    assert "Options." in text and "path-to-source" not in text


def test_a_leading_note_or_orphan_field_leaves_the_title_and_no_metadata(tmp_path: Path) -> None:
    """pip's anatomy.rst opens with a ``.. note::``, many of its pages with ``:orphan:``: docutils then found no
    title (the page was "anatomy") and showed the field ("orphan:" in 18 passages). Sphinx titles a page by its
    first section and keeps a leading field list as metadata; an admonition reads "Note: ..."."""
    noted = _text(
        tmp_path,
        ".. note::\n\n    This section is being written.\n\n*****************\nRepository anatomy"
        "\n*****************\n\nThe codebase is a standard package.\n",
        "anatomy.rst",
    )
    doc = read_text_file(tmp_path / "anatomy.rst")
    assert doc.title == "Repository anatomy"
    assert [" ".join(p.split()) for p in noted.split("\n\n")][:2] == [
        "Note: This section is being written.",
        "Repository anatomy",
    ]
    orphan = tmp_path / "overview.rst"
    orphan.write_text(
        ":orphan:\n:tocdepth: 2\n\nBroad overview\n==============\n\npip is a package installer.\n", encoding="utf-8"
    )
    doc = read_text_file(orphan)
    assert doc.title == "Broad overview" and doc.text == "Broad overview\n\npip is a package installer."


def test_a_field_list_reads_one_field_a_line(tmp_path: Path) -> None:
    """scikit-learn's dataset descriptions are field lists: each name was a paragraph of its own, and passages cut
    "Donor:" from "Nick Street". A field reads "Name: value"; a name whose value is a list or a table leads it."""
    attributes = "".join(f"        - attribute number {i} of the cell nuclei measured\n" for i in range(12))
    text = _text(
        tmp_path,
        "Harbour dataset\n---------------\n\n**Data Set Characteristics:**\n\n"
        ":Number of Instances: 150 (50 in each of three classes)\n:Number of Attributes: 4\n"
        f":Attribute Information:\n{attributes}\n:Summary Statistics:\n\n"
        ":Missing Attribute Values: None\n:Creator: R.A. Fisher\n:Donor: Nick Street\n"
        ":Date: November, 1995\n\nThe famous harbour database.\n",
    )
    paragraphs = [" ".join(p.split()) for p in text.split("\n\n")]
    assert paragraphs[2:4] == ["Number of Instances: 150 (50 in each of three classes)", "Number of Attributes: 4"]
    assert "Attribute Information:" in paragraphs and "Summary Statistics:" in paragraphs
    assert paragraphs[-5:] == [
        "Missing Attribute Values: None",
        "Creator: R.A. Fisher",
        "Donor: Nick Street",
        "Date: November, 1995",
        "The famous harbour database.",
    ]
    assert any("Donor: Nick Street" in p.text for p in split_paragraphs(text, target_words=40, max_words=60))


def test_a_reference_title_needs_no_space_before_its_target(tmp_path: Path) -> None:
    """Sphinx reads ``:ref:`pip install Examples<pip install Examples>``` as a title and a target; the title and
    the target both showed ("pip install Examples<pip install Examples>")."""
    text = _text(
        tmp_path,
        "Install\n=======\n\nSee the :ref:`pip install Examples<pip install Examples>` and "
        ":doc:`the guide<../user_guide>`.\n",
    )
    assert "See the pip install Examples and the guide." in " ".join(text.split())


def test_an_extension_directive_without_a_body_shows_nothing(tmp_path: Path) -> None:
    """pip's ``.. pip-command-usage:: install "python -m pip"`` and ``.. pip-news-include:: ../../NEWS.rst``
    make their content from their argument when Sphinx builds the page: the argument was a stray paragraph, and a
    tab holding only such a directive a stray label. An object's signature still shows without a body."""
    text = _text(
        tmp_path,
        "pip install\n===========\n\nUsage\n-----\n\n.. tab:: Unix/macOS\n\n"
        '   .. pip-command-usage:: install "python -m pip"\n\n'
        ".. pip-news-include:: ../../NEWS.rst\n\n.. towncrier-draft-entries:: Not yet released\n\n"
        ".. tab:: Windows\n\n   .. code-block:: doscon\n\n      C:> py -m pip install harbour\n\n"
        ".. option:: --fresh\n\n.. py:function:: open_gate(name)\n\n.. seealso:: The tide tables.\n",
    )
    paragraphs = [" ".join(p.split()) for p in text.split("\n\n")]
    assert paragraphs == [
        "pip install",
        "Usage",
        "Windows",
        "C:> py -m pip install harbour",
        "--fresh",
        "open_gate(name)",
        "See also: The tide tables.",
    ]


def test_a_redirect_page_has_no_text(tmp_path: Path) -> None:
    """pip's reference/pip_show.rst only sends its reader on to cli/pip_show: its "This page has moved" was indexed
    as content, 16 times. A page that refreshes to another address and says little is a redirect, in
    reStructuredText or HTML; a long page that refreshes keeps its text."""
    moved = tmp_path / "pip_show.rst"
    moved.write_text(
        ":orphan:\n\n.. meta::\n\n  :http-equiv=refresh: 3; url=../../cli/pip_show/\n\nThis page has moved\n"
        "===================\n\nYou should be redirected automatically in 3 seconds. If that didn't\n"
        "work, here's a link: :doc:`../cli/pip_show`\n",
        encoding="utf-8",
    )
    with pytest.raises(IngestError, match=r"only sends its reader on to \.\./\.\./cli/pip_show/; ingest that page"):
        read_text_file(moved)
    html = tmp_path / "old.html"
    html.write_text(
        '<html><head><meta http-equiv="Refresh" content="0; URL=\'new.html\'"></head><body><p>Redirecting'
        ' to <a href="new.html">new.html</a></p></body></html>',
        encoding="utf-8",
    )
    with pytest.raises(IngestError, match="new.html"):
        read_text_file(html)
    long = " ".join(["The lock keeper opens the gates at high water."] * 10)
    html.write_text(
        f'<html><head><meta http-equiv="refresh" content="300; url=board.html"></head><body><p>{long}</p>'
        "</body></html>",
        encoding="utf-8",
    )
    assert read_text_file(html).text == long


def test_a_simple_table_with_a_blank_first_header_cell_keeps_its_column_names() -> None:
    """scikit-learn's dataset descriptions print their statistics so; docutils dropped the header line (a line whose
    first column is blank continues the row above, and the first row has none), so every row read
    ``column_2: 278 | column_3: 1680`` and nobody could tell the maximum from the mean. The names overhang their
    columns' borders, as wine_data.rst's do."""
    from universalrag.ingest.tables import serialize_row, tables_from_html
    from universalrag.ingest.text.rst import rst_to_html

    page = (
        "Wine data\n=========\n\n"
        "============================= ==== ===== ======= =====\n"
        "                                Min   Max   Mean     SD\n"
        "============================= ==== ===== ======= =====\n"
        "Alcohol:                      11.0  14.8    13.0   0.8\n"
        "Proline:                       278  1680     746   315\n"
        "============================= ==== ===== ======= =====\n"
    )
    html = rst_to_html(page)
    assert html is not None
    table = tables_from_html(html, name="wine_data.html")[0]
    assert table.header[1:] == ["Min", "Max", "Mean", "SD"]
    rows = [serialize_row(table.header, row) for row in table.rows()]
    assert rows[1] == "Proline: | Min: 278 | Max: 1680 | Mean: 746 | SD: 315"
