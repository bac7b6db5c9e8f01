"""Page geometry → reading order → blocks: columns, running headers and footers, headings, paragraphs.

Format-neutral and pure: the PDF reader and the OCR reader give lines of text with their boxes and font
sizes; this module orders them as a person reads (column by column on a two-column page, with full-width
items such as titles, tables and figures separating the column runs), removes page numbers and lines that
repeat in the margins of neighbouring pages, recognises headings by size or weight, and joins the other
lines into paragraphs — or into navigation, the entries of a table of contents or an index (dot leaders and
page numbers), which point at the text rather than say anything.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from .model import BBox, box_union

__all__ = [
    "DEFINITION_TAG",
    "HeadingStyle",
    "Line",
    "TextRun",
    "group_lines",
    "is_navigation",
    "is_navigation_page",
    "is_page_number",
    "is_prose",
    "reading_order",
    "strip_running_lines",
]

T = TypeVar("T")

#: Share of the page height at the top and at the bottom where running headers and footers live.
MARGIN_SHARE = 0.1
#: Share of the page height at the top and at the bottom where a page number alone on the first or last line is
#: dropped as a folio.
FOLIO_SHARE = 0.15
#: Pages before and after a page that are compared with it to find running headers and footers.
MARGIN_WINDOW = 2

_PAGE_NUMBER = re.compile(
    r"^(?:[-–—]\s*)?(?:page\s+|p\.\s*|seite\s+)?(?:\d{1,4}|[ivxlcdm]{1,6})(?:\s*(?:/|of|von)\s*\d{1,4})?(?:\s*[-–—])?$",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\d+")
_SENTENCE_END = (".", "!", "?", ":", ";")
#: A dot leader (four or more dots, spaced or not, or ellipses) and the page number it leads to, if on the same line.
_LEADER = r"(?:[.\u2026\u00b7]\s?){4,}\s*(?:\d{1,4}|[ivxlcdm]{1,6})?"
_LEADER_END = re.compile(_LEADER + r"\s*$", re.IGNORECASE)
_LEADER_ENTRY = re.compile(_LEADER + r"(?=\s|$)", re.IGNORECASE)
#: An entry of a table of contents or an index names its target in at most this many characters on average.
_NAVIGATION_LABEL = 80
#: A definition's category tag, as Texinfo sets it flush right ("[Function]", "[Macro]"); the PDF reader puts it in
#: front of its line, and a line it opens starts a paragraph of its own.
DEFINITION_TAG = re.compile(r"^\[[A-Za-z][A-Za-z -]{0,38}\](?=\s|$)")
#: A run on a contents page needs this many words, ending a sentence, to be prose rather than an entry.
_PROSE_WORDS = 8
#: A page is a table of contents or an index when at least this share of its lines (and three) end in a leader.
_NAVIGATION_PAGE_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class Line:
    """One line of text on a page: its box, font size (points) and whether its font is bold."""

    text: str
    bbox: BBox
    size: float
    bold: bool = False

    @property
    def height(self) -> float:
        """The line's box height in points."""
        return self.bbox[3] - self.bbox[1]


def is_navigation(text: str) -> bool:
    """True for a table-of-contents or index block: entries with dot leaders and page numbers ("2.1 Naming . . . 3
    2.2 Parsing . . . 4"), whose other text is short names (the entries' labels), not prose with a leader in it."""
    entries = len(_LEADER_ENTRY.findall(text))
    return entries > 0 and len(" ".join(_LEADER_ENTRY.sub(" ", text).split())) <= _NAVIGATION_LABEL * entries


def is_prose(text: str) -> bool:
    """True for a run of text that reads as sentences (at least :data:`_PROSE_WORDS` words ending in a full stop,
    question or exclamation mark, and no dot leader): kept as text even on a contents page, where a chapter's
    own table of contents precedes its opening paragraphs."""
    return (
        len(text.split()) >= _PROSE_WORDS and text.rstrip().endswith((".", "!", "?")) and not _LEADER_ENTRY.search(text)
    )


def is_navigation_page(lines: Sequence[Line]) -> bool:
    """True for a page of a table of contents or an index: most of its lines end in a dot leader (and page number);
    its other lines (an index's letters, an entry's first line when it wraps) belong to it."""
    leaders = sum(1 for line in lines if _LEADER_END.search(line.text))
    return leaders >= 3 and leaders >= _NAVIGATION_PAGE_SHARE * len(lines)


@dataclass(frozen=True, slots=True)
class TextRun:
    """A run of consecutive lines that became one heading, paragraph or navigation block (a table of contents or
    an index: see :func:`is_navigation`)."""

    kind: str  # "heading", "paragraph" or "navigation"
    text: str
    bbox: BBox
    level: int = 0


def is_page_number(text: str) -> bool:
    """True for a line that is only a page number ("12", "- 12 -", "Page 3 of 9", "iv")."""
    return bool(_PAGE_NUMBER.match(text.strip()))


def _margin_key(line: Line, height: float) -> str | None:
    """A comparable form of a line in the top or bottom margin (digits folded), else None."""
    top, bottom = line.bbox[1], line.bbox[3]
    if bottom > height * MARGIN_SHARE and top < height * (1 - MARGIN_SHARE):
        return None
    return _DIGITS.sub("#", " ".join(line.text.lower().split()))


def _folios(lines: Sequence[Line], height: float) -> list[Line]:
    """The page numbers set a little inside the margin tenth (LaTeX's article class puts them 12 % up from the
    bottom): a page number that is the page's first or last line and lies in its outer :data:`FOLIO_SHARE`."""
    if not lines:
        return []
    top = min(lines, key=lambda ln: ln.bbox[1])
    bottom = max(lines, key=lambda ln: ln.bbox[3])
    return [
        ln
        for ln, outer in (
            (top, top.bbox[3] <= height * FOLIO_SHARE),
            (bottom, bottom.bbox[1] >= height * (1 - FOLIO_SHARE)),
        )
        if outer and is_page_number(ln.text)
    ]


@dataclass(slots=True)
class _Buffered(Generic[T]):
    payload: T
    lines: list[Line]
    height: float
    keys: set[str] = field(default_factory=set)


def strip_running_lines(pages: Iterable[tuple[T, list[Line], float]]) -> Iterator[tuple[T, list[Line]]]:
    """Drop page numbers and running headers/footers from a stream of ``(payload, lines, page height)``.

    A line in the top or bottom tenth of the page is dropped when it is a page number, or when the same
    line (digits ignored) sits in the margin of one of the :data:`MARGIN_WINDOW` pages before or after it; so is
    a page number that is the first or last line of the page within its outer :data:`FOLIO_SHARE`.
    Pages are held back only that many at a time, so memory stays flat on long documents.
    """
    window: deque[_Buffered[T]] = deque()
    done: deque[set[str]] = deque(maxlen=MARGIN_WINDOW)  # margin keys of pages already released

    def release() -> tuple[T, list[Line]]:
        page = window.popleft()
        others: Counter[str] = Counter()
        for keys in (*done, *(b.keys for b in window)):
            others.update(keys)
        kept = []
        folios = _folios(page.lines, page.height)
        for line in page.lines:
            key = _margin_key(line, page.height)
            if line in folios or (key is not None and (is_page_number(line.text) or others[key] > 0)):
                continue
            kept.append(line)
        done.append(page.keys)
        return page.payload, kept

    for payload, lines, height in pages:
        keys = {k for k in (_margin_key(line, height) for line in lines) if k}
        window.append(_Buffered(payload, lines, height, keys))
        if len(window) > MARGIN_WINDOW:
            yield release()
    while window:
        yield release()


# --------------------------------------------------------------------------- reading order


def _gutter(boxes: Sequence[BBox], width: float) -> float | None:
    """The x of the gap between two text columns, or None for a single-column page.

    Only boxes narrower than 55 % of the page count as column content. The gutter is the middle of the widest
    stretch in the central 30-70 % of the page crossed by the fewest of them — at most one in ten (titles,
    centred headings and wide figures cross it and become separators) — with at least three boxes wholly on
    each side.
    """
    narrow = [b for b in boxes if (b[2] - b[0]) < 0.55 * width]
    if len(narrow) < 6:
        return None
    lo, hi = int(width * 0.3), int(width * 0.7)
    crossing = [0] * (hi - lo + 1)
    for x0, _, x1, _ in narrow:
        for x in range(max(lo, int(x0)), min(hi, int(x1)) + 1):
            crossing[x - lo] += 1
    fewest = min(crossing)
    if fewest > max(1, len(narrow) // 10):
        return None
    best: tuple[int, int] | None = None
    start = None
    for i, count in enumerate([*crossing, fewest + 1]):
        if count == fewest and start is None:
            start = i
        elif count != fewest and start is not None:
            if best is None or i - start > best[1] - best[0]:
                best = (start, i)
            start = None
    if best is None or best[1] - best[0] < 4:
        return None
    gutter = lo + (best[0] + best[1]) / 2
    left = sum(1 for b in narrow if b[2] <= gutter)
    right = sum(1 for b in narrow if b[0] >= gutter)
    return gutter if left >= 3 and right >= 3 else None


#: Items whose tops differ by at most this share of the shorter one's height sit on one visual line.
_SAME_LINE_SHARE = 0.3


def _by_lines(items: Sequence[tuple[BBox, T]]) -> list[tuple[BBox, T]]:
    """``items`` top to bottom, those on one visual line left to right.

    Pieces of one line rarely share a top to the tenth of a point (PDFium's boxes follow each font's ascent, and
    producers round positions), so sorting on the top alone swapped them ("exit -v, --version"); an item joins the
    line of the item that opened it when their tops lie within :data:`_SAME_LINE_SHARE` of the shorter height.
    """
    rows: list[list[tuple[BBox, T]]] = []
    for item in sorted(items, key=lambda it: (it[0][1], it[0][0])):
        if rows:
            first = rows[-1][0][0]
            shorter = min(first[3] - first[1], item[0][3] - item[0][1])
            if item[0][1] - first[1] <= _SAME_LINE_SHARE * max(shorter, 0.0):
                rows[-1].append(item)
                continue
        rows.append([item])
    return [it for row in rows for it in sorted(row, key=lambda it: it[0][0])]


def reading_order(items: Sequence[tuple[BBox, T]], *, width: float) -> list[T]:
    """The payloads of ``items`` in reading order.

    Items are read top to bottom, those on one visual line left to right; on a page with two columns, each run
    of column items between two full-width items (a title, a wide table or figure) is read left column first,
    then right column.
    """
    ordered = _by_lines(items)
    gutter = _gutter([b for b, _ in ordered], width)
    if gutter is None:
        return [p for _, p in ordered]
    out: list[T] = []
    left: list[T] = []
    right: list[T] = []
    for (x0, _, x1, _), payload in ordered:
        if x1 <= gutter + 1:
            left.append(payload)
        elif x0 >= gutter - 1:
            right.append(payload)
        else:  # spans both columns: closes the current run
            out.extend(left)
            out.extend(right)
            left, right = [], []
            out.append(payload)
    out.extend(left)
    out.extend(right)
    return out


# --------------------------------------------------------------------------- headings and paragraphs


@dataclass(slots=True)
class HeadingStyle:
    """The document's body font size (learned as pages are read) and the heading level of each style."""

    sizes: Counter[float] = field(default_factory=Counter)

    def learn(self, lines: Iterable[Line]) -> None:
        """Count the characters of ``lines`` per font size."""
        for line in lines:
            self.sizes[round(line.size * 2) / 2] += len(line.text)

    @property
    def body(self) -> float:
        """The most common font size so far (10 when nothing was seen)."""
        return self.sizes.most_common(1)[0][0] if self.sizes else 10.0

    def level(self, line: Line) -> int:
        """The heading level of ``line`` (1 = largest), or 0 when it is body text."""
        words = len(line.text.split())
        if words == 0 or words > 20 or line.text.rstrip().endswith((".", ",", ";")) or _LEADER_END.search(line.text):
            return 0  # a contents entry set in the heading's font is still an entry, not the heading
        ratio = line.size / self.body
        if ratio >= 1.5:
            return 1
        if ratio >= 1.25:
            return 2
        if ratio >= 1.12:
            return 3
        if line.bold and words <= 12 and abs(ratio - 1) < 0.12:
            return 4
        return 0


def _word_break(before: str, after: str) -> bool:
    """Whether a hyphen between the last word of ``before`` and the first of ``after`` only splits one word: both
    sides letters in lower case (the first may be a capital) — "YYMMDDhhmm-hh'mm'" and "UTF-8" keep theirs."""
    left_words, right_words = before.split(), after.split()
    if not left_words or not right_words:
        return False
    left = left_words[-1].lstrip("([{\"'\u2018\u201c")
    right = right_words[0].rstrip(".,;:!?)]}\"'\u2019\u201d")
    return left.isalpha() and (left[1:] or left).islower() and right.isalpha() and right.islower()


def _join(lines: Sequence[str]) -> str:
    text = ""
    for line in lines:
        line = line.strip()
        if not text:
            text = line
        elif text.endswith("\u00ad"):  # the author's soft hyphen: a word break by definition
            text = text[:-1] + line
        elif text.endswith("\x02"):  # PDFium's guess that a line-end hyphen breaks a word: checked
            text = text[:-1] + ("" if _word_break(text[:-1], line) else "-") + line
        elif text.endswith("-") and line[:1].islower():
            text = text + line
        elif text.endswith("_") and (line[:1].isalnum() or line[:1] == "_"):
            text = text + line  # an identifier broken after its underscore ("SHA256_DIGEST_" / "SIZE")
        else:
            text = f"{text} {line}"
    return text


def group_lines(lines: Sequence[Line], style: HeadingStyle) -> list[TextRun]:
    """Join lines (already in reading order) into headings and paragraphs.

    A paragraph ends at a heading, at a vertical gap of more than half a line, at a change of font size,
    or after a short line that closes a sentence, and a line opened by a definition's tag (:data:`DEFINITION_TAG`)
    starts one. A heading's consecutive lines of the same style, aligned and
    less than half a line apart, are one heading (a title wrapped over two lines is one title, not a title and
    a heading "forget" that every later heading path starts with). A paragraph made of contents or index entries
    (:func:`is_navigation`) is a ``navigation`` run.
    """
    runs: list[TextRun] = []
    current: list[Line] = []
    current_level = 0

    def flush() -> None:
        if current:
            text = _join([ln.text for ln in current])
            if text:
                kind = "heading" if current_level else "navigation" if is_navigation(text) else "paragraph"
                runs.append(TextRun(kind, text, box_union(ln.bbox for ln in current), current_level))
            current.clear()

    for line in lines:
        level = style.level(line)
        if current:
            prev = current[-1]
            gap = line.bbox[1] - prev.bbox[3]
            same_style = level == current_level and abs(line.size - prev.size) < 0.6
            moved_up = line.bbox[1] < prev.bbox[1] - 1
            width = max(ln.bbox[2] for ln in current) - min(ln.bbox[0] for ln in current)
            short_end = prev.text.rstrip().endswith(_SENTENCE_END) and (prev.bbox[2] - prev.bbox[0]) < 0.8 * width
            aligned = (
                abs(line.bbox[0] - prev.bbox[0]) < 2
                or abs((line.bbox[0] + line.bbox[2]) - (prev.bbox[0] + prev.bbox[2])) < 4
            )
            breaks = (
                not same_style
                or (not moved_up and gap > 0.5 * max(prev.height, 1.0))
                or (level != 0 and not aligned)
                or short_end
                or bool(DEFINITION_TAG.match(line.text))
                or (moved_up and (level != 0 or prev.text.rstrip().endswith(_SENTENCE_END)))
            )
            if breaks:
                flush()
        if not current:
            current_level = level
        current.append(line)
    flush()
    return runs
