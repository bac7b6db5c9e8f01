"""Plain text as Debian ships it: GnuPG's DETAILS is an Org-mode file (headings of stars, ``#+begin_example``
blocks, ``#+TITLE:``), and zlib's FAQ shows commands one a line. Read as ordinary prose, DETAILS was titled
"DETAILS", "** Description of the fields" ran into "*** Field 1 - Type of record", and each status keyword of the
``--status-fd`` section ran into the next ("*** BEGIN_DECRYPTION Mark the start … *** END_DECRYPTION Mark the
end …"); zlib's "make distclean", "./configure", "make" read as one command. The files here are written in the test,
gzip-compressed as Debian installs them."""

from __future__ import annotations

import gzip
from pathlib import Path

from universalrag.ingest.text import read_text_file, split_paragraphs

DETAILS = """# doc/DETAILS                                                -*- org -*-
#+TITLE: Widget Details
#+OPTIONS: ^:{}
#

# Note: This file uses org-mode; it should be easy to read as plain
# text but be aware of some markup peculiarities.

This is the DETAILS file for Widget which specifies some internals.

* Format of the colon listings

  The format is based on colon separated records.  Here is an
  example:
#+begin_example
$ widget --with-colons --list
pub:f:1024:17:6C7EE1B8621CC013:899817715:1055898235::m:::scESC:
uid:f::::::::Some One <one@example.org>:
#+end_example

** Description of the fields
*** Field 1 - Type of record

    - pub :: Public key
    - sub :: Subkey (secondary key)

* Format of the --status-fd output
** General status codes
*** BEGIN_DECRYPTION
    Mark the start of the actual decryption process.  This is also
    emitted when in --list-only mode.
*** END_DECRYPTION
    Mark the end of the actual decryption process.  This are also
    emitted when in --list-only mode.
*** DECRYPTION_KEY <fpr> <fpr2> <otrust>
    This line is emitted when a public key decryption succeeded in
    providing a session key.  <fpr2> is the fingerprint of the primary key.
"""


def write_gz(path: Path, text: str) -> Path:
    path.write_bytes(gzip.compress(text.encode()))
    return path


def test_an_org_file_keeps_its_headings_blocks_and_title(tmp_path: Path) -> None:
    doc = read_text_file(write_gz(tmp_path / "DETAILS.gz", DETAILS))
    paragraphs = doc.text.split("\n\n")
    assert doc.title == "Widget Details"
    assert doc.metadata["headings"][:4] == [
        "Format of the colon listings",
        "Description of the fields",
        "Field 1 - Type of record",
        "Format of the --status-fd output",
    ]
    for heading in (
        "Description of the fields",
        "Field 1 - Type of record",
        "BEGIN_DECRYPTION",
        "END_DECRYPTION",
        "DECRYPTION_KEY <fpr> <fpr2> <otrust>",
    ):
        assert heading in paragraphs  # a paragraph of its own, without its stars
    assert (
        "Mark the start of the actual decryption process. This is also emitted when in --list-only mode." in paragraphs
    )
    assert (
        "$ widget --with-colons --list\npub:f:1024:17:6C7EE1B8621CC013:899817715:1055898235::m:::scESC:\n"
        "uid:f::::::::Some One <one@example.org>:"
    ) in paragraphs  # the example keeps its lines
    assert (
        "Note: This file uses org-mode; it should be easy to read as plain text but be aware of some markup "
        "peculiarities." in paragraphs
    )  # a comment reads as prose
    assert "#+OPTIONS" not in doc.text and "begin_example" not in doc.text and "***" not in doc.text


def test_each_status_keyword_starts_the_passage_of_its_description(tmp_path: Path) -> None:
    doc = read_text_file(write_gz(tmp_path / "DETAILS.gz", DETAILS))
    passages = split_paragraphs(doc.text, target_words=20, max_words=30, min_words=5)
    for keyword, opening in (
        ("BEGIN_DECRYPTION", "Mark the start"),
        ("END_DECRYPTION", "Mark the end"),
        ("DECRYPTION_KEY", "This line is emitted"),
    ):
        holder = next(p for p in passages if p.text.startswith(keyword) or f"\n\n{keyword}" in p.text)
        assert f"\n\n{opening}" in holder.text[holder.text.index(keyword) :][:60]


FAQ = """                Frequently Asked Questions about widgets

 13. How can I make a Unix shared library?

    By default a shared (and a static) library is built for Unix.  So:

    make distclean
    ./configure
    make

 14. How do I install a shared widget library on Unix?

    After the above, then:

    make install

    However, many flavors of Unix come with a shared widget library already
    installed.  Before going to the trouble of compiling a shared version of
    it and trying to install it, you may want to check if it's already there!
"""


def test_commands_one_a_line_keep_their_lines_and_prose_is_joined(tmp_path: Path) -> None:
    doc = read_text_file(write_gz(tmp_path / "FAQ.gz", FAQ))
    paragraphs = doc.text.split("\n\n")
    assert "make distclean\n./configure\nmake" in paragraphs
    assert (
        "However, many flavors of Unix come with a shared widget library already installed. Before going to the "
        "trouble of compiling a shared version of it and trying to install it, you may want to check if it's "
        "already there!"
    ) in paragraphs
