"""HTML boilerplate that is not content: layout tables and navigation.

Shared by the text reader (paragraphs) and the table reader (data tables), on a BeautifulSoup tree:

- :func:`unwrap_layout_tables` turns tables used for page layout into plain blocks (``<div>``), so their
  cells read as paragraphs and never become "data tables". A table is layout when it says so
  (``role="presentation"``/``"none"``) or, when it has no header cell (``<th>``/``<thead>``), when it nests
  another table, holds block content (headings, lists, forms, several paragraphs in a cell), is mostly
  links, or is a single row or column of text. Tables with header cells are data unless they say otherwise
  or nearly all their words are links (an index).
- :func:`remove_navigation` drops navigation: ``<nav>``, ARIA landmarks (``navigation``, ``banner``,
  ``contentinfo``, ``search``), ``<aside>``, page-level ``<header>``/``<footer>``, elements whose class or id
  names a menu, breadcrumb, sidebar, navigation bar, header or footer (Texinfo's ``div.header`` and
  ``div.nav-panel`` with "Previous: … Up: … Next: …") or what a known page generator names its chrome
  (:data:`SITE_MARKS`: MediaWiki's navigation boxes and hidden person data), skip links, and blocks that are mostly
  links (tables of contents, link lists), and interface controls (``<button>``, ``<select>``: the "copy" a code block's
  button would add to it). A class name never makes chrome of a heading or its parts: mdBook's
  ``<h2><a class="header">``, rustdoc's ``<h4 class="code-header">`` (each method's signature) and Wikipedia's
  ``<h3><span id="Toolbar">`` are content. When the page marks its
  main content (``<main>``, ``role="main"``) and that holds most of what is left, everything outside it goes too:
  help pop-ups, cookie banners and page furniture that no pattern names (mdBook's "Keyboard shortcuts" box).

These are the heuristics main-content extractors use (link density, landmarks, layout-table signals), kept
small and deterministic. The caller keeps the unpruned text when pruning would leave nothing.

Why not trafilatura (Apache-2.0, the best-known extractor): measured on Debian's Texinfo and libxslt manuals
and on ``tests/data/html/texinfo_tides.html``, trafilatura 2.0 kept the "Previous: … Up: …" header and the
"Main Menu" layout table (as a Markdown table mixing menu and data), dropped the section heading, and brings
about 68 MB of dependencies (lxml, dateparser, babel, justext, courlan, htmldate) into the core install.
Tuned for news articles, it does not fit manuals.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "HEADINGS",
    "MEDIAWIKI",
    "SITE_MARKS",
    "SiteMarks",
    "heading_text",
    "is_layout_table",
    "is_permalink",
    "keep_main",
    "link_density",
    "remove_navigation",
    "unwrap_layout_tables",
]


@dataclass(frozen=True)
class SiteMarks:
    """The class words one page generator gives its chrome, beside the generic ones every site uses (``nav``,
    ``menu``, ``sidebar``, ...): ``navigation``, elements that are navigation wherever they stand; ``furniture``,
    tables that are page furniture (message boxes), not data; ``records``, tables laid out as one record (a label
    beside its value in each row), read as fields by :mod:`universalrag.ingest.tables.html`."""

    generator: str
    navigation: tuple[str, ...] = ()
    furniture: tuple[str, ...] = ()
    records: tuple[str, ...] = ()


#: MediaWiki (Wikipedia and every wiki on its software). ``navbox``: on the page of Kazakhstan 10 of its 13 tables
#: are navigation boxes, which came out as "data tables" titled "Government (2)" to "(7)" and were found for questions
#: on other pages; ``persondata``, hidden person data; ``ambox``, ``mbox-small`` and ``sistersitebox``, the message
#: boxes ("This article needs additional citations", "Wikimedia Commons has media related to ..."); ``infobox``, the
#: summary box, one record. Chosen on the page of Kazakhstan (``tests/test_ingest_wiki_boxes.py``); held out, the 250
#: Wikipedia pages of ``benchmarks/site_marks.py``: 1,532 tables read with these words against 1,783 with the generic
#: words alone (251 navigation and message boxes fewer, each a unit that competed for every question), and the tables
#: the 250 crowd questions are about read alike either way (242 found by header and first rows in both counts).
MEDIAWIKI = SiteMarks(
    "MediaWiki",
    navigation=("navbox", "vertical-navbox", "persondata"),
    furniture=("ambox", "mbox-small", "sistersitebox"),
    records=("infobox",),
)
#: The page generators whose class words are known; the generic words apply to every page.
SITE_MARKS: tuple[SiteMarks, ...] = (MEDIAWIKI,)

_NAV_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "menubar", "menu"})
_LAYOUT_ROLES = frozenset({"presentation", "none"})


def _class_words(words: Sequence[str]) -> re.Pattern[str]:
    """A pattern matching any of ``words`` as a whole word of a class or id (case-insensitive)."""
    return re.compile(r"(?:^|[\s_-])(?:" + "|".join(words) + r")(?:$|[\s_-])", re.IGNORECASE)


#: Class or id words of navigation and page chrome on every site (patterns)...
_GENERIC_NAV = (
    *("nav", "navbar", "navigation", "nav-panel", "breadcrumbs?", "menu", "menubar", "sidebar", "sidenav", "header"),
    *("footer", "skip", "skiplink", "skip-link", "topbar", "toolbar", "pager", "pagination", "crumbs"),
)
#: ... and of tables that are page furniture: an index, a table of contents.
_GENERIC_TABLE_NAV = ("index", "navigation", "toc", "contents")
#: The generic words and those of the :data:`SITE_MARKS` generators, as the readers match them.
_NAV_WORDS = _class_words([*_GENERIC_NAV, *(re.escape(w) for marks in SITE_MARKS for w in marks.navigation)])
_TABLE_NAV_WORDS = _class_words([*_GENERIC_TABLE_NAV, *(re.escape(w) for marks in SITE_MARKS for w in marks.furniture)])
_BLOCK_CONTENT = ["h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "dl", "form", "pre", "blockquote"]
_LINK_BLOCKS = ["ul", "ol", "dl", "p", "div", "td", "section", "menu"]
#: A block whose link text is at least this share of its text (and has this many links) is navigation.
_LINK_SHARE = 0.6
_MIN_LINKS = 2
#: A table with header cells is still navigation (an index, a link directory) when nearly all its words are links.
_INDEX_LINK_SHARE = 0.8
#: An element named like page chrome is kept when it is this long or holds a main heading (a wrapper, not a bar).
_MAX_CHROME_WORDS = 200
#: ... or longer when this share of its words are links: Texinfo's main menu (``table.menu``: each chapter's link,
#: a bullet and a line saying what it holds, several hundred words in a long manual) is chrome, a wrapper is prose.
_CHROME_LINK_SHARE = 0.3
#: The heading elements (a list, as BeautifulSoup's searches take them).
HEADINGS = ["h1", "h2", "h3", "h4", "h5", "h6"]
#: The text of a permalink after a heading: Sphinx's "¶", Node.js's and GitHub's "#", "§", a link emoji.
_PERMALINK_MARKS = frozenset({"¶", "#", "§", "🔗"})
#: The main landmark replaces the page when it holds at least this share of the words left after pruning.
_MAIN_SHARE = 0.5


#: Per element: (words, words inside links, links), computed for the whole tree in one pass.
_Stats = dict[int, tuple[int, int, int]]
_NO_TEXT = frozenset({"script", "style", "template", "noscript", "head", "title"})


def _stats(root: Any) -> _Stats:
    """Words, link words and links of every element under ``root`` (one post-order walk, no re-counting)."""
    from bs4.element import NavigableString, PreformattedString, Tag

    stats: _Stats = {}
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if not done:
            stack.append((node, True))
            stack.extend((c, False) for c in node.children if isinstance(c, Tag) and c.name not in _NO_TEXT)
            continue
        words = link_words = links = 0
        for child in node.children:
            if isinstance(child, Tag):
                w, lw, n = stats.get(id(child), (0, 0, 0))
                words, link_words, links = words + w, link_words + lw, links + n
            elif isinstance(child, NavigableString) and not isinstance(child, PreformattedString):
                words += len(child.split())
        if node.name == "a":
            link_words, links = words, links + 1
        stats[id(node)] = (words, link_words, links)
    return stats


def _words(node: Any, stats: _Stats | None = None) -> int:
    return (stats or _stats(node)).get(id(node), (0, 0, 0))[0]


def link_density(node: Any, stats: _Stats | None = None) -> tuple[float, int]:
    """(share of the node's words that sit inside links, number of links); ``stats`` from one walk of the
    page saves counting again."""
    words, link_words, links = (stats or _stats(node)).get(id(node), (0, 0, 0))
    return (link_words / words if words else 0.0), links


def _marks(node: Any) -> str:
    """Class, id and (old tables') summary of an element, where pages name their chrome."""
    classes = node.get("class") or []
    return " ".join(
        [
            *(classes if isinstance(classes, list) else [classes]),
            str(node.get("id") or ""),
            str(node.get("summary") or ""),
        ]
    )


def _own(node: Any, name: str | list[str]) -> list[Any]:
    """Descendants named ``name`` that belong to ``node`` itself, not to a table nested in it."""
    return [d for d in node.find_all(name) if d.find_parent("table") is node]


def is_layout_table(table: Any, stats: _Stats | None = None) -> bool:
    """True when ``table`` lays out a page rather than holding data (see the module docstring)."""
    if str(table.get("role") or "").lower() in _LAYOUT_ROLES:
        return True
    marks = _marks(table)
    if _NAV_WORDS.search(marks) or _TABLE_NAV_WORDS.search(marks):
        return True  # DocBook's summary="Header navigation table", Texinfo's class="index-cp" and "menu"
    has_header = bool(_own(table, "th")) or bool(_own(table, "thead"))
    share, links = link_density(table, stats)
    if has_header:
        return links >= 2 * _MIN_LINKS and share >= _INDEX_LINK_SHARE  # an index or link directory
    if table.find("table") is not None:
        return True
    cells = _own(table, "td")
    if not cells:
        return False
    if any(cell.find(_BLOCK_CONTENT) is not None or len(cell.find_all("p")) > 1 for cell in cells):
        return True
    if links >= _MIN_LINKS and share >= _LINK_SHARE:
        return True
    rows = [tr for tr in _own(table, "tr")]
    widths = [len([c for c in tr.find_all(["td", "th"]) if c.find_parent("tr") is tr]) for tr in rows]
    return len(rows) <= 1 or max(widths, default=0) <= 1


def unwrap_layout_tables(soup: Any) -> int:
    """Rename every layout table (and its rows and cells) to ``div`` so its cells read as blocks; return how
    many there were. Decided for all tables first, so a nested data table is judged on its own."""
    stats = _stats(soup)
    layout = [t for t in soup.find_all("table") if is_layout_table(t, stats)]
    for table in layout:
        for part in [*_own(table, ["tr", "td", "th", "tbody", "thead", "tfoot"])]:
            part.name = "div"
        for caption in _own(table, "caption"):
            caption.name = "div"
        table.name = "div"
    return len(layout)


def _is_navigation(node: Any, stats: _Stats) -> bool:
    if node.name == "nav" or str(node.get("role") or "").lower() in _NAV_ROLES:
        return True
    if node.name == "aside":
        return True
    if node.name in ("header", "footer"):  # page-level bars, not an article's own header with its title
        return node.find_parent(["article", "main", "section"]) is None and node.find("h1") is None
    if node.name in ("body", "html", "main", "article"):
        return False
    if node.name not in HEADINGS and _NAV_WORDS.search(_marks(node)) and node.find_parent(HEADINGS) is None:
        short = _words(node, stats) <= _MAX_CHROME_WORDS
        return node.find(["h1", "h2"]) is None and (short or link_density(node, stats)[0] >= _CHROME_LINK_SHARE)
    if node.name == "a":  # skip links ("Skip to content") and permalink marks
        text = node.get_text(" ").strip()
        return is_permalink(node) or (str(node.get("href") or "").startswith("#") and "skip" in text.lower())
    return False


def is_permalink(node: Any) -> bool:
    """True for a link to its own page whose text is only a mark (the "¶" Sphinx puts after each heading)."""
    return (
        node.name == "a"
        and str(node.get("href") or "").startswith("#")
        and node.get_text(" ").strip() in _PERMALINK_MARKS
    )


def heading_text(heading: Any) -> str:
    """A heading's words without its permalink mark ("dns.lookup(hostname) #" is "dns.lookup(hostname)")."""
    words = []
    for string in heading.find_all(string=True):
        link = string.find_parent("a")
        if link is not None and is_permalink(link) and heading in link.parents:
            continue
        words.append(str(string))
    return " ".join(" ".join(words).split())


def _prune(nodes: list[Any], remove: Callable[[Any], bool]) -> int:
    """Decompose the ``nodes`` (in document order) that ``remove`` picks, skipping those inside one already
    picked; return how many were removed."""
    within: set[int] = set()  # the nodes inside one already picked (picked subtrees are disjoint: linear)
    chosen = []
    for node in nodes:
        if id(node) in within:
            continue
        if remove(node):
            within.update(id(d) for d in node.descendants)
            chosen.append(node)
    for node in chosen:
        node.decompose()
    return len(chosen)


def remove_navigation(soup: Any) -> int:
    """Remove navigation and link-list blocks from ``soup``, then what lies outside its main landmark (see the
    module docstring); return how many elements went."""
    controls = soup.find_all(["button", "select"])
    for control in controls:
        control.decompose()
    stats = _stats(soup)
    removed = len(controls) + _prune(soup.find_all(True), lambda node: _is_navigation(node, stats))
    stats = _stats(soup)  # counted again without what was just removed

    def link_list(node: Any) -> bool:
        share, links = link_density(node, stats)
        return links >= _MIN_LINKS and share >= _LINK_SHARE and node.find(["h1", "h2", "h3", "pre"]) is None

    removed += _prune(soup.find_all(_LINK_BLOCKS), link_list)
    return removed + keep_main(soup)


def _is_main(node: Any) -> bool:
    return node.name == "main" or str(node.get("role") or "").lower() == "main"


def keep_main(soup: Any) -> int:
    """Keep only the page's main landmark (``<main>`` or ``role="main"``) and the elements that contain it, when
    there is one outermost landmark and it holds at least half of the page's words; return how many elements
    outside it were removed. The ``<head>`` stays (the title is read from it)."""
    from bs4.element import NavigableString, Tag

    landmarks = soup.find_all(_is_main)
    outermost = [m for m in landmarks if m.find_parent(_is_main) is None]
    if len(outermost) != 1:
        return 0
    main = outermost[0]
    stats = _stats(soup)
    if _words(main, stats) < _MAIN_SHARE * _words(soup, stats):
        return 0
    removed = 0
    node = main
    while node.parent is not None:
        for sibling in list(node.parent.children):
            if sibling is node or (isinstance(sibling, Tag) and sibling.name == "head"):
                continue
            if isinstance(sibling, Tag):
                sibling.decompose()
                removed += 1
            elif isinstance(sibling, NavigableString):
                sibling.extract()
        node = node.parent
    return removed
