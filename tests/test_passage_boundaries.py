"""Passage boundaries: a heading, a term or an option name starts the passage of the text it introduces (found on
Valgrind's DocBook manual and CMake's help), and an HTML ``<br>`` is a line break, not a paragraph break."""

from __future__ import annotations

import re

from universalrag.ingest.text import Passage, parse_text, split_paragraphs

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


def prose(n: int, tag: str) -> str:
    """A paragraph of ``n`` words in sentences of ten words (the last may be shorter), ending with a full stop."""
    words = [f"{tag}{i}" for i in range(n)]
    sentences = [" ".join(words[i : i + 10]) for i in range(0, n, 10)]
    return " ".join(s[0].upper() + s[1:] + "." for s in sentences)


def check_cover(text: str, passages: list[Passage], *, max_words: int = 150) -> None:
    """Every word once, in order; each passage is its slice of the text and within ``max_words``."""
    assert [w for p in passages for w in p.text.split()] == text.split()
    for p in passages:
        assert text[p.start_char : p.end_char] == p.text
        assert p.word_count <= max_words


def last_paragraph(passage: Passage) -> str:
    return _PARAGRAPH_BREAK.split(passage.text)[-1]


def passage_with(passages: list[Passage], needle: str) -> Passage:
    return next(p for p in passages if needle in p.text)


OPTIONS = [
    ("--leak-check=<no|summary|yes|full> [default: summary]", "When enabled, search for memory leaks", 70),
    ("--leak-resolution=<low|med|high> [default: high]", "When doing leak checking, determines", 80),
    ("--show-leak-kinds=<set> [default: definite,possible]", "Specifies the leak kinds to show", 55),
    ("--errors-for-leak-kinds=<set> [default: definite,possible]", "Specifies the leak kinds to count", 65),
]


def valgrind_options() -> str:
    """Memcheck's option list as the DocBook page reads: a section heading, then option / description pairs."""
    paragraphs = [prose(45, "intro"), prose(40, "leaks"), "4.3. Memcheck Command-Line Options"]
    for option, opening, n in OPTIONS:
        paragraphs += [option, f"{opening} {prose(n, option[2:6])}"]
    return "\n\n".join(paragraphs)


def test_option_names_start_the_passage_of_their_description() -> None:
    text = valgrind_options()
    passages = split_paragraphs(text)
    check_cover(text, passages)
    for p in passages[:-1]:
        assert not last_paragraph(p).startswith(("--", "4.3.")), p.text
    for option, opening, _ in OPTIONS:
        holder = passage_with(passages, option)
        assert f"{option}\n\n{opening}" in holder.text
    assert passage_with(passages, OPTIONS[0][0]).text.startswith(
        f"4.3. Memcheck Command-Line Options\n\n{OPTIONS[0][0]}"
    )


def test_numbered_question_stays_with_its_answer() -> None:
    """A DocBook FAQ prints the entry's number apart from its question; both introduce the answer."""
    question = (
        "My program uses the C++ STL and string classes. Valgrind reports 'still reachable' memory leaks "
        "involving these classes at the exit of the program, but there should be none."
    )
    answer = "First of all: relax, it's probably not a bug, but a feature. " + prose(50, "stl")
    text = "\n\n".join(
        [
            prose(50, "a"),
            prose(35, "b"),
            "4. Miscellaneous",
            "4.1.",
            question,
            answer,
            "4.2.",
            "Why do I get a warning about a file?",
            prose(60, "c"),
        ]
    )
    passages = split_paragraphs(text)
    check_cover(text, passages)
    assert passage_with(passages, question).text.startswith(f"4. Miscellaneous\n\n4.1.\n\n{question}\n\n{answer}")
    assert passage_with(passages, "4.2.").text.startswith("4.2.\n\nWhy do I get a warning about a file?\n\nC0")


def test_cmake_term_starts_its_definition() -> None:
    terms = [
        ("$<TARGET_FILE:tgt>", "Full path to the tgt binary file."),
        ("$<TARGET_FILE_BASE_NAME:tgt>", "Base name of main file where tgt is the name of a target."),
        ("$<TARGET_LINKER_FILE:tgt>", "File used when linking to the tgt target."),
    ]
    paragraphs = [prose(60, "intro"), prose(35, "more")]
    for term, definition in terms:
        paragraphs += [term, f"{definition} {prose(40, term[2:8])}"]
    paragraphs += ["none for the empty set.", "See also"]  # a short sentence is text; a last heading has no text
    text = "\n\n".join(paragraphs)
    passages = split_paragraphs(text)
    check_cover(text, passages)
    assert passages[-1].text.endswith(f"{prose(40, 'TARGET')}\n\nnone for the empty set.\n\nSee also")
    for term, definition in terms:
        holder = passage_with(passages, term)
        assert f"{term}\n\n{definition}" in holder.text
    for p in passages[:-1]:
        assert not last_paragraph(p).startswith("$<"), p.text


def test_lead_before_a_long_paragraph_keeps_its_first_sentences_within_max_words() -> None:
    """An option whose description nearly fills a passage on its own: the description is cut between sentences
    rather than the option left at the end of the passage before."""
    option = "--num-transtab-sectors=<number> [default: 16]"
    text = "\n\n".join([prose(95, "before"), option, prose(146, "sectors"), prose(40, "after")])
    passages = split_paragraphs(text)
    check_cover(text, passages)
    holder = passage_with(passages, option)
    assert holder.text.startswith(f"{option}\n\nSectors0")
    assert all(not last_paragraph(p).startswith("--") for p in passages[:-1])


def test_br_is_a_line_break_within_the_paragraph() -> None:
    """DocBook ``literallayout`` (NEWS, READMEs, licences) wraps its lines with ``<br>``; an empty line ends the
    paragraph, and a ``<hr>`` or a block element still does."""
    html = (
        b"<html><body><h1>2. NEWS</h1><div class='literallayout'><p><br>\n"
        b"Release 3.2.0 (7 Jun 2006)<br>\n~~~~~~~~~~~~~~~~~~~~~~~~~~<br>\n<br>\n"
        b"3.2.0 is a feature release with many significant improvements and the<br>\n"
        b"usual collection of bug fixes.<br>\n<br>\n"
        b"This release supports X86/Linux, AMD64/Linux and PPC32/Linux.<br>\n</p></div><hr>"
        b"<p>After the rule.</p><table><tr><td>cell<br>text</td><td>two</td></tr>"
        b"<tr><td>three</td><td>four</td></tr></table></body></html>"
    )
    doc = parse_text(html, format="html", name="dist.news.html")
    assert doc.text.split("\n\n") == [
        "2. NEWS",
        "Release 3.2.0 (7 Jun 2006)\n~~~~~~~~~~~~~~~~~~~~~~~~~~",
        "3.2.0 is a feature release with many significant improvements and the\nusual collection of bug fixes.",
        "This release supports X86/Linux, AMD64/Linux and PPC32/Linux.",
        "After the rule.",
        "cell text two",  # in a data table a <br> is a space, as in the table reader: a row stays one line
        "three four",
    ]
    sentence = "3.2.0 is a feature release with many significant improvements and the\nusual collection of bug fixes."
    assert any(sentence in p.text for p in split_paragraphs(doc.text, target_words=12, max_words=20, min_words=3))


def test_command_lines_stay_with_the_instruction_they_show() -> None:
    """pip's user guide: an instruction, then its command for each system under a label. Taken for headings, the
    commands and their labels began the passage of the next topic ("Requirements Files"), away from the sentence
    saying what they do."""
    paragraphs = [
        prose(60, "install"),
        "Upgrade an already installed SomePackage to the latest from PyPI.",
        "Unix/macOS",
        "python -m pip install --upgrade SomePackage",
        "Windows",
        "py -m pip install --upgrade SomePackage",
        "Requirements Files",
        prose(120, "req"),
    ]
    text = "\n\n".join(paragraphs)
    passages = split_paragraphs(text)
    check_cover(text, passages)
    for command in ("python -m pip install --upgrade SomePackage", "py -m pip install --upgrade SomePackage"):
        assert "Upgrade an already installed" in passage_with(passages, command).text
    assert passage_with(passages, "Req0").text.startswith("Requirements Files")
