"""Passage boundaries on the documentation Debian ships, found by ingesting it as a user would: zlib's plain-text FAQ
(numbered questions, some stated as a sentence, some answered by a line ending in ":" and a link), Nettle's Texinfo
manual (several function signatures before the one description they share) and GnuPG's DETAILS (a field's heading
and its text). Each text here is built to have the same structure; the words are made up."""

from __future__ import annotations

import re

from test_passage_boundaries import check_cover, last_paragraph, prose
from test_passage_boundaries import passage_with as holder

from universalrag.ingest.text import split_paragraphs


def test_a_faq_question_stated_as_a_sentence_starts_the_passage_of_its_answer() -> None:
    """zlib's FAQ: "5. deflate() or inflate() returns Z_BUF_ERROR." is a question although it ends a sentence; it
    ended the passage of the entry before while its answer began the next one."""
    entries = [
        ("4. compress() returns Z_BUF_ERROR.", prose(45, "four")),
        ("5. deflate() or inflate() returns Z_BUF_ERROR.", prose(90, "five")),
        ("8. I found a bug in zlib.", prose(40, "eight")),
        ("9. Why do I get an undefined reference?", prose(70, "nine")),
    ]
    text = "\n\n".join([prose(20, "intro"), *(part for entry in entries for part in entry)])
    passages = split_paragraphs(text)
    check_cover(text, passages)
    for question, answer in entries:
        assert f"{question}\n\n{answer[:20]}" in holder(passages, question).text
    assert all(not re.match(r"\d+\. ", last_paragraph(p)) for p in passages)


def test_an_entry_answered_by_leads_stays_whole() -> None:
    """zlib's "31. Does zlib infringe on any patents?" is answered by a line ending in ":" and a link, all short
    lines: only the last three of that run joined the next entry's text, so the question stayed behind alone."""
    question = "31. Does zlib infringe on any patents?"
    answer = "As far as we know, no. In fact, that was the whole point. Look here for some more information:"
    link = "http://www.example.org/#faq11"
    text = "\n\n".join(
        [
            prose(60, "a"),
            "30. Is there a simpler inflate?",
            prose(25, "b"),
            question,
            answer,
            link,
            "32. Can zlib work with greater than 4 GB of data?",
            prose(120, "c"),
        ]
    )
    passages = split_paragraphs(text)
    check_cover(text, passages)
    assert f"{question}\n\n{answer}\n\n{link}" in holder(passages, question).text
    assert "32. Can zlib work with greater than 4 GB of data?\n\nC0" in holder(passages, "32. Can zlib").text


SIGNATURES = [
    f"Function: void gcm_aes{bits}_digest (struct gcm_aes{bits}_ctx *ctx, size_t length, uint8_t *digest)"
    for bits in ("128", "192", "256", "")
]


def test_every_signature_stays_with_the_description_they_share() -> None:
    """Nettle's manual prints four ``gcm_aes*_digest`` signatures, then one description: only the last three
    joined it, and ``gcm_aes128_digest`` ended the passage before, without a word on what it does."""
    description = "Extracts the message digest (also known as authentication tag). " + prose(30, "tag")
    text = "\n\n".join([prose(70, "gcm"), *SIGNATURES, description, prose(60, "camellia")])
    passages = split_paragraphs(text)
    check_cover(text, passages)
    assert "\n\n".join([*SIGNATURES, description]) in holder(passages, SIGNATURES[0]).text


def test_a_long_list_of_short_lines_still_leaves_its_first_lines_apart() -> None:
    """Only signatures join all together: a table of contents' lines before a paragraph keep the rule of three."""
    contents = [f"Chapter {i} title" for i in range(8)]
    text = "\n\n".join([*contents, prose(40, "body")])
    passages = split_paragraphs(text, target_words=30, max_words=45, min_words=5)
    check_cover(text, passages, max_words=45)
    assert holder(passages, "Body0").text.startswith("Chapter 5 title\n\nChapter 6 title\n\nChapter 7 title\n\nBody0")


def test_a_heading_starts_a_passage_rather_than_ending_one_with_its_first_paragraph() -> None:
    """GnuPG's DETAILS: "Field 12 - Key capabilities", "The defined capabilities are:" and the list ended a passage
    while the text explaining the letters began the next; a section that does not fit where it starts goes whole
    into the next passage."""
    heading = "Field 12 - Key capabilities"
    text = "\n\n".join([prose(60, "eleven"), heading, prose(30, "caps"), prose(50, "letters"), prose(40, "thirteen")])
    passages = split_paragraphs(text)
    check_cover(text, passages)
    section = holder(passages, heading).text
    assert section.startswith(heading) and "Letters0" in section
    assert holder(passages, "Eleven0").text == prose(60, "eleven")


def test_small_sections_still_share_a_passage() -> None:
    """A section that fits in the passage it starts in stays there: short entries are not one passage each."""
    parts = [x for i in range(4) for x in (f"Field {i} - Name", prose(15, f"f{i}x"))]
    text = "\n\n".join(parts)
    passages = split_paragraphs(text)
    check_cover(text, passages)
    assert len(passages) == 1
