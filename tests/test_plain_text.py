"""Plain text keeps what its layout says: a list's items, columns, a title that titles the page.

Found on Git's release notes and Vim's help ingested as a user would: joined into one line, Vim's table of
'shortmess' flags read "f use "(3 of 5)" instead of ... i use "[noeol]" ...", a release's list of commits ran into
one sentence, and two Vim pages were titled "<" (an example's closing mark above a rule of "=").
"""

from __future__ import annotations

from universalrag.ingest.text.plain import extract_txt

NOTES = """Git v2.39.5 Release Notes
=========================

In preparing security fixes for four CVEs, we made overly aggressive
"defense in depth" changes that broke legitimate use cases like 'git
lfs' and 'git annex.'  This release is to revert these misguided
changes.

Jeff King (2):
      send-email: drop FakeTerm hack
      ci: avoid bare "gcc" for osx-gcc job

 * "git push" sometimes performs poorly when reachability bitmaps are
   used.  The push.useBitmaps configuration variable is introduced.
 * "git grep -m<max-hits>" is a way to limit the hits shown per file.
"""

FLAGS = """*options.txt*\tFor Vim version 9.0.  Last change: 2023 Feb 17

'shortmess' 'shm'\tstring\t(Vim default "filnxtToOS")
\tflag\tmeaning when present\t~
\t  f\tuse "(3 of 5)" instead of "(file 3 of 5)"\t\t*shm-f*
\t  i\tuse "[noeol]" instead of "[Incomplete last line]"\t*shm-i*

Example: >
\t:set ei=WinEnter,WinLeave
<
==============================================================================
Vim's patterns are mostly compatible with Perl's, with the differences listed
below.

Some items can be used in Vim and not in Perl.

A few more explanations are in chapter 27 of the user manual.

Capability\t\t\tin Vimspeak\tin Perlspeak ~
----------------------------------------------------------------
force case insensitivity\t\\c\t\t(?i)
"""


def test_prose_is_joined_and_a_lists_items_keep_their_lines() -> None:
    title, text, _ = extract_txt(NOTES)
    assert title == "Git v2.39.5 Release Notes"
    paragraphs = text.split("\n\n")
    assert paragraphs[1].startswith("In preparing security fixes") and "\n" not in paragraphs[1]  # hard wrap joined
    assert paragraphs[2] == 'Jeff King (2):\nsend-email: drop FakeTerm hack\nci: avoid bare "gcc" for osx-gcc job'
    assert paragraphs[3].split("\n") == [
        (
            '* "git push" sometimes performs poorly when reachability bitmaps are used. The push.useBitmaps '
            "configuration variable is introduced."
        ),
        '* "git grep -m<max-hits>" is a way to limit the hits shown per file.',
    ]


def test_columns_keep_their_lines_and_a_title_is_a_title() -> None:
    title, text, _ = extract_txt(FLAGS)
    assert title.startswith("*options.txt*")  # not "<", not the table header further down
    table = text.split("\n\n")[1].split("\n")
    assert len(table) == 4 and table[2].lstrip().startswith('f\tuse "(3 of 5)"')
    assert "Capability in Vimspeak in Perlspeak ~" in text.split("\n\n")  # a heading of its own, not the title
