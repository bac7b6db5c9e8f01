"""Splitting clean text into ~100-word passages that respect sentence boundaries, and into embedding windows.

Pure functions over the clean text made by :mod:`universalrag.ingest.text.document` (paragraphs separated by a
blank line).
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

from ...errors import ConfigError

__all__ = ["Passage", "chunk_for_embedding", "split_paragraphs"]

_BLANK_LINE = re.compile(r"\n[ \t\f\v]*\n")
_WORD = re.compile(r"\S+")

#: A paragraph of at most this many words that does not end a sentence is a heading, a term or an option signature.
_MAX_LEAD_WORDS = 12
#: A paragraph ending with ':', a question or a numbered entry's title of at most this many words introduces the text
#: after it; a longer one is text in its own right.
_MAX_INTRO_WORDS = 50
#: At most this many lead paragraphs are kept with the text after them (a heading, a subheading and a term): the last
#: ones of a longer run of short lines, which is a list, a table of contents or a table's rows, not a heading.
_MAX_LEADS = 3
#: Sentence-final punctuation, then optional closing quotes and brackets.
_SENTENCE_END = re.compile(r"[.!?…。！？]['\"’”»)\]]*$")
#: A section number alone ("2.1.", "5.3"): DocBook puts a FAQ entry's or a heading's number in a cell of its own.
_SECTION_NUMBER = re.compile(r"\d+(?:\.\d+)*\.?")
#: A paragraph opening with a numbered section ("4.1. My program uses the C++ STL…").
_NUMBERED_TITLE = re.compile(r"\d+(?:\.\d+)+\.\s")
#: A paragraph opening with an entry's number, one level or more ("5. ", "4.1. "): a FAQ's question or a section.
_NUMBERED_ENTRY = re.compile(r"\d+(?:\.\d+)*\.\s")
#: A function's signature: a name, then its parameters in brackets to the end of the line ("Function: void
#: sha256_update (struct sha256_ctx *ctx, size_t length, const uint8_t *data)"), as Texinfo, Doxygen and man
#: pages print several before the one description they share.
_SIGNATURE = re.compile(r".*\w[ \t]*\(.*\)[ \t]*;?")
#: A command line: a program's name in lower case (after an optional prompt), then arguments among which an option
#: ("python -m pip install --upgrade SomePackage", "$ git commit --amend"). It shows the text before it (an
#: instruction, "Upgrade an already installed package:") rather than heading the text after it.
_COMMAND = re.compile(r"(?:[$>%#] )?[a-z][\w.+-]*(?: \S+)*? --?[A-Za-z]\S*(?: \S+)*")


@dataclass(frozen=True, slots=True)
class Passage:
    """A slice of a document's text: ``text == document_text[start_char:end_char]``."""

    index: int
    text: str
    start_char: int
    end_char: int

    @property
    def word_count(self) -> int:
        """Number of whitespace-separated words."""
        return len(self.text.split())


@dataclass(frozen=True, slots=True)
class _Span:
    start: int
    end: int
    words: int
    #: A whole paragraph that introduces what follows it (:func:`_lead_flags`).
    lead: bool = False
    #: A lead that opens a numbered entry ("31. Does zlib infringe on any patents?", "4.1.").
    entry: bool = False
    #: A lead that is a function's signature (:data:`_SIGNATURE`).
    signature: bool = False


def _paragraph_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each paragraph, trimmed of surrounding whitespace."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for sep in [*_BLANK_LINE.finditer(text), None]:
        end = sep.start() if sep else len(text)
        chunk = text[pos:end]
        if chunk.strip():
            lead = len(chunk) - len(chunk.lstrip())
            spans.append((pos + lead, pos + len(chunk.rstrip())))
        pos = sep.end() if sep else len(text)
    return spans


def _word_count(text: str, start: int, end: int) -> int:
    return len(text[start:end].split())


def _introduces(paragraph: str, *, numbered: bool) -> bool:
    """Whether ``paragraph`` introduces the text after it rather than being text: a heading, a definition term, an
    option signature (``--leak-check=<no|summary|yes|full> [default: summary]``, ``$<TARGET_FILE:tgt>``), a
    section number alone ("2.1."), or a paragraph of up to ``_MAX_INTRO_WORDS`` words that ends with ``:``, asks a
    question or is the title of a numbered entry ("4.1. My program uses the C++ STL…"; ``numbered``: the paragraph
    before it is a section number alone, as DocBook FAQs print "4.1." apart from their question).

    Judged from the paragraph alone, as the clean text keeps no markup: a heading or a term has at most
    ``_MAX_LEAD_WORDS`` words and ends no sentence (a short sentence such as "none for the empty set." is text),
    unless it opens with an entry's number: zlib's FAQ puts some questions as statements ("5. deflate() or inflate()
    returns Z_BUF_ERROR."), which ended the passage before their answer. Only one-line paragraphs qualify; a paragraph
    of several lines is code or verse, a block in its own right, and a command line (``python -m pip install --upgrade
    pkg``: a program's name, then an option) shows the instruction before it: taken for a heading, pip's commands (and
    their "Unix/macOS" labels) began the passage of the next topic instead of ending their own.
    """
    if "\n" in paragraph or _COMMAND.fullmatch(paragraph):
        return False
    words = len(paragraph.split())
    if _SECTION_NUMBER.fullmatch(paragraph):
        return True
    if words <= _MAX_LEAD_WORDS and (not _SENTENCE_END.search(paragraph) or _NUMBERED_ENTRY.match(paragraph)):
        return True
    opens = paragraph.endswith((":", "?")) or numbered or _NUMBERED_TITLE.match(paragraph) is not None
    return opens and words <= _MAX_INTRO_WORDS


def _lead_flags(paragraphs: list[str]) -> list[bool]:
    """:func:`_introduces` for each paragraph, knowing which follow a section number alone."""
    flags: list[bool] = []
    numbered = False
    for paragraph in paragraphs:
        flags.append(_introduces(paragraph, numbered=numbered))
        numbered = _SECTION_NUMBER.fullmatch(paragraph) is not None
    return flags


def _sentence_spans(text: str, start: int, end: int, language: str) -> list[tuple[int, int]]:
    """Sentences of ``text[start:end]`` (sentencex for ``language``), trimmed.

    Only boundaries followed by whitespace are used, so no word is ever cut ("end.Next" stays whole);
    sentences tile the paragraph, so no text can be lost even if the segmenter skipped some.
    """
    from sentencex import segment  # type: ignore[import-untyped]

    starts = [start]
    pos = start
    for sentence in segment(language, text[start:end]):
        found = text.find(sentence, pos, end) if sentence else -1
        if found < 0:
            break
        pos = found + len(sentence)
        nxt = pos + len(text[pos:end]) - len(text[pos:end].lstrip())
        if starts[-1] < nxt < end and text[nxt - 1].isspace():
            starts.append(nxt)
    bounds = [*starts, end]
    return [(s, s + len(text[s:e].rstrip())) for s, e in itertools.pairwise(bounds)]


def _hard_split(text: str, start: int, end: int, target_words: int) -> list[_Span]:
    """Cut one over-long sentence at word boundaries into near-equal pieces of at most ``target_words``."""
    words = [m.span() for m in _WORD.finditer(text, start, end)]
    pieces = math.ceil(len(words) / target_words)
    size = math.ceil(len(words) / pieces)
    return [
        _Span(words[i][0], words[min(i + size, len(words)) - 1][1], len(words[i : i + size]))
        for i in range(0, len(words), size)
    ]


def _units(text: str, *, max_words: int, target_words: int, language: str, by_paragraph: bool) -> list[_Span]:
    """Atoms to group: whole paragraphs up to ``max_words`` (when ``by_paragraph``), else sentences;
    sentences longer than ``max_words`` are hard-split. A paragraph that would not fit in ``max_words`` with the
    lead paragraphs before it is also cut into sentences, so that its first sentences can stay with them
    (:func:`_keep_leads_with_text`): an option's long description then starts in the passage holding the option."""
    units: list[_Span] = []
    spans = _paragraph_spans(text)
    leads = _lead_flags([text[s:e] for s, e in spans]) if by_paragraph else [False] * len(spans)
    run: list[int] = []  # word counts of the lead paragraphs just before
    for (p_start, p_end), lead in zip(spans, leads, strict=True):
        words = _word_count(text, p_start, p_end)
        before, run = sum(run[-_MAX_LEADS:]), [*run, words] if lead else []
        if by_paragraph and (words <= max_words - before or lead and words <= max_words):
            paragraph = text[p_start:p_end]
            units.append(
                _Span(
                    p_start,
                    p_end,
                    words,
                    lead,
                    entry=lead
                    and _NUMBERED_ENTRY.match(paragraph) is not None
                    or _SECTION_NUMBER.fullmatch(paragraph) is not None,
                    signature=lead and _SIGNATURE.fullmatch(paragraph) is not None,
                )
            )
            continue
        for s_start, s_end in _sentence_spans(text, p_start, p_end, language):
            n = _word_count(text, s_start, s_end)
            if n > max_words:
                units.extend(_hard_split(text, s_start, s_end, target_words))
            else:
                units.append(_Span(s_start, s_end, n))
    return units


def _keep_leads_with_text(units: list[_Span], *, max_words: int) -> list[list[_Span]]:
    """Atoms for grouping: each unit alone, except that lead paragraphs (the last ``_MAX_LEADS`` of a run, or more
    when they are the signatures of the functions one description documents) are glued to the unit after them when
    that unit is text and the whole stays within ``max_words``.

    A passage must not end with a heading, a term or an option name whose text starts the next passage: the
    description would be stored without the name it describes ("what does --leak-resolution do" then misses it).
    Gluing before packing (rather than moving leads after) keeps the packing rules as they are, and a lead can
    only move forward into the next passage. A paragraph too long to join its leads was cut into sentences
    (:func:`_units`), so they join its first sentence; should even that not fit (a sentence of nearly
    ``max_words``), the leads stay units of their own: passage sizes win. Leads at the end of the text, and those
    before the last ``_MAX_LEADS`` of a longer run (a list, a table of contents, a table's rows, where the
    paragraph right before the text is the likeliest heading), stay units of their own.

    Two runs are told apart: a numbered entry whose whole answer is leads ("31. Does zlib infringe on any
    patents?", "As far as we know, no. Look here for more:", a link) is one atom, closed when the next entry
    starts, rather than losing its question to the passage before while its answer joins the next entry's; and
    Texinfo's four ``gcm_aes*_digest`` signatures all stay with the sentence describing them.
    """
    atoms: list[list[_Span]] = []
    run: list[_Span] = []
    for unit in units:
        if unit.lead:
            if unit.entry and _answered(run):
                atoms.extend([run] if sum(u.words for u in run) <= max_words else [[u] for u in run])
                run = []
            run.append(unit)
            continue
        kept = next(
            (run[-n:] for n in _kept_sizes(run) if sum(u.words for u in run[-n:]) + unit.words <= max_words), []
        )
        atoms.extend([u] for u in run[: len(run) - len(kept)])
        atoms.append([*kept, unit])
        run = []
    atoms.extend([u] for u in run)
    return atoms


def _kept_sizes(run: list[_Span]) -> list[int]:
    """How many leads at the end of ``run`` may join the text after them, the most first: every signature of the
    run's end (and a lead before them, their heading), else the last ``_MAX_LEADS``."""
    signatures = next((i for i, u in enumerate(reversed(run)) if not u.signature), len(run))
    sizes = [min(signatures + 1, len(run))] if signatures >= _MAX_LEADS else []
    return [*sizes, min(_MAX_LEADS, len(run))] if run else []


def _answered(run: list[_Span]) -> bool:
    """Whether a run of leads holds a numbered entry followed by a lead that is not one (its answer)."""
    opened = False
    for unit in run:
        if unit.entry:
            opened = True
        elif opened:
            return True
    return False


def _check_sizes(min_words: int, target_words: int, max_words: int) -> None:
    if not 1 <= min_words <= target_words <= max_words:
        raise ConfigError(
            f"Need 1 <= min_words <= target_words <= max_words, got {min_words}, {target_words}, {max_words}."
        )


def split_paragraphs(
    text: str,
    *,
    target_words: int = 100,
    max_words: int = 150,
    min_words: int = 30,
    language: str = "en",
) -> list[Passage]:
    """Split ``text`` into passages of about ``target_words`` words that respect sentence boundaries.

    Paragraphs up to ``max_words`` stay whole; consecutive short ones merge up to ``target_words``
    (a group still under ``min_words``, such as a heading, may grow up to ``max_words``); longer
    paragraphs split between sentences (segmented by sentencex for ``language``); a sentence over
    ``max_words`` is cut at word boundaries. A heading, a term or an option signature starts the passage
    of the text it introduces rather than ending the one before (:func:`_keep_leads_with_text`), which
    may take that passage past ``target_words`` but never past ``max_words``; and a passage already
    ``min_words`` long ends before a heading whose section (:func:`_section_words`) would not fit in it
    (GnuPG's "Field 12 - Key capabilities" and its list ended one passage, the letters' meaning began the next).
    A passage under ``min_words`` joins a neighbour when the result stays within ``max_words``. Every word of ``text``
    lands in exactly one passage.
    """
    _check_sizes(min_words, target_words, max_words)
    groups: list[list[_Span]] = []
    current: list[_Span] = []
    total = 0
    units = _units(text, max_words=max_words, target_words=target_words, language=language, by_paragraph=True)
    atoms = _keep_leads_with_text(units, max_words=max_words)
    sections = _section_words(atoms)
    for atom, section in zip(atoms, sections, strict=True):
        words = sum(u.words for u in atom)
        combined = total + words
        fits = combined <= target_words or (total < min_words and combined <= max_words)
        if section and total >= min_words and total + section > target_words:
            fits = False  # a heading starts a passage rather than ending one with the start of its section
        if current and not fits:
            groups.append(current)
            current, total = [], 0
        current.extend(atom)
        total += words
    if current:
        groups.append(current)
    groups = _absorb_small(groups, min_words=min_words, max_words=max_words)
    return [
        Passage(index=i, text=text[g[0].start : g[-1].end], start_char=g[0].start, end_char=g[-1].end)
        for i, g in enumerate(groups)
    ]


def _section_words(atoms: list[list[_Span]]) -> list[int]:
    """For each atom that a lead opens, the words of its section: that atom and the text atoms after it, up to the
    next atom a lead opens; 0 for the others."""
    sections = [0] * len(atoms)
    following = 0  # words of the text atoms after the current position, up to the next lead
    for i in range(len(atoms) - 1, -1, -1):
        words = sum(u.words for u in atoms[i])
        if atoms[i][0].lead:
            sections[i], following = words + following, 0
        else:
            following += words
    return sections


def _absorb_small(groups: list[list[_Span]], *, min_words: int, max_words: int) -> list[list[_Span]]:
    """Merge each group under ``min_words`` into its previous (else next) neighbour within ``max_words``."""

    def size(g: list[_Span]) -> int:
        return sum(u.words for u in g)

    out: list[list[_Span]] = []
    pending: list[_Span] = []  # a small group that could not join its predecessor; offered to the next
    for group in groups:
        if pending:
            if size(pending) + size(group) <= max_words:
                group = pending + group
            else:
                out.append(pending)
            pending = []
        if size(group) < min_words:
            if out and size(out[-1]) + size(group) <= max_words:
                out[-1] = out[-1] + group
                continue
            pending = group
            continue
        out.append(group)
    if pending:
        out.append(pending)
    return out


def chunk_for_embedding(
    text: str,
    *,
    max_words: int = 180,
    overlap_words: int = 30,
    language: str = "en",
) -> list[str]:
    """Overlapping windows of at most ``max_words`` words for embedding a long document.

    Sized for 256-token encoders (180 words ≈ 240 tokens). Windows start and end at sentence
    boundaries (a sentence longer than ``max_words`` is cut at word boundaries); consecutive
    windows share whole trailing sentences of up to ``overlap_words`` words. A text of at most
    ``max_words`` words is one chunk; an empty text gives none.
    """
    if max_words < 1 or not 0 <= overlap_words < max_words:
        raise ConfigError(f"Need max_words >= 1 and 0 <= overlap_words < max_words, got {max_words}, {overlap_words}.")
    stripped = text.strip()
    if not stripped:
        return []
    if len(stripped.split()) <= max_words:
        return [stripped]
    units = _units(text, max_words=max_words, target_words=max_words, language=language, by_paragraph=False)
    chunks: list[str] = []
    first = 0
    while first < len(units):
        last, total = first, units[first].words
        while last + 1 < len(units) and total + units[last + 1].words <= max_words:
            last += 1
            total += units[last].words
        chunks.append(text[units[first].start : units[last].end])
        if last == len(units) - 1:
            break
        nxt, shared = last + 1, 0
        while nxt - 1 > first and shared + units[nxt - 1].words <= overlap_words:
            nxt -= 1
            shared += units[nxt].words
        first = nxt
    return chunks
