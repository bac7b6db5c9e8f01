"""Names in running text, found without a model: what the structural extractor turns into entities.

- capitalised names of one or more words ("Kestrel Point Lighthouse", "Royal Academy of Music"), joined by a few
  lowercase particles (``of``, ``the``, ``de``, ``von``, …); a run that opens a sentence loses a leading article or
  pronoun ("The Kestrel Company" → "Kestrel Company"), and one capitalised word that opens a sentence is left out
  (it may be any word);
- the identifiers and quoted phrases :func:`universalrag.exact_terms.exact_terms` recognises ("KC-1801",
  "max_connections", "PGVectorStore", ``"Northmere Yard"``), sentence by sentence, but not bare numbers and dates
  (a year names nothing on its own and would join every unit that states it).

Labels ("Figure 1", "Table 2") are not names here: the extractor ties them to their figure or table.
"""

from __future__ import annotations

import re

from ..exact_terms import exact_terms

__all__ = ["LABEL", "find_names", "sentences"]

#: A figure's or table's label as documents cite it.
LABEL = re.compile(r"\b(?:Figure|Fig\.|Table|Chart|Plate|Exhibit)\s+[A-Z]?\d+(?:\.\d+)*[a-z]?\b")

_SENTENCE = re.compile(r"(?<=[.!?;:])\s+(?=\S)|\n+")
_WORD = re.compile(r"[^\W_](?:[\w'’&.-]*[\w&])?", re.UNICODE)
_PARTICLES = frozenset("of the de del della da di du la le van von der den al bin y and & for on upon".split())
#: Particles that may not end or join two names on their own ("Harbour Herons and Quarry Lions" are two names).
_NO_JOIN = frozenset({"and", "&", "for", "on", "upon"})
_OPENERS = frozenset(
    """the a an this that these those it its in on at by for from with as to of and but or if when while after before
    during since his her their our my your we they he she there here what which who how why where all some many most
    each every no not one two three first last next figure table see also note chapter section""".split()
)
_NOT_NAMES = frozenset(
    """i figure fig table chart plate exhibit section chapter page pages appendix january february march april may
    june july august september october november december monday tuesday wednesday thursday friday saturday sunday
    mr mrs ms dr st""".split()
)
_DATE = re.compile(r"\d{4}-\d{2}(?:-\d{2})?")
_NUMERIC = re.compile(r"[\d.,:/%+-]+[a-z]{0,3}", re.IGNORECASE)


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences and lines (a heading is a line of its own)."""
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def _capitalised(word: str) -> bool:
    return word[:1].isupper() and not word.isdigit()


def _runs(sentence: str) -> list[str]:
    matches = list(_WORD.finditer(sentence))
    words = [m.group() for m in matches]
    # a name does not run across punctuation ("Alder Quay, Birch Quay" are two)
    joined = [not sentence[a.end() : b.start()].strip() for a, b in zip(matches, matches[1:], strict=False)]
    names: list[str] = []
    opening = next((k for k, w in enumerate(words) if not _NUMERIC.fullmatch(w)), 0)  # after a heading's number
    i = 0
    while i < len(words):
        if not _capitalised(words[i]):
            i += 1
            continue
        start = i
        run = [words[i]]
        i += 1
        while i < len(words) and joined[i - 1]:
            if _capitalised(words[i]):
                run.append(words[i])
                i += 1
            elif (
                words[i].lower() in _PARTICLES
                and words[i].lower() not in _NO_JOIN
                and i + 1 < len(words)
                and joined[i]
                and _capitalised(words[i + 1])
            ):
                run += [words[i], words[i + 1]]
                i += 2
            else:
                break
        if start == opening:
            while run and run[0].lower() in _OPENERS:
                run = run[1:]
            if len(run) == 1:  # one capitalised word opening a sentence (or a heading): any word
                continue
        while run and (run[-1].lower() in _PARTICLES or run[-1].lower() in _NOT_NAMES):
            run = run[:-1]
        while run and run[0].lower() in _NOT_NAMES:
            run = run[1:]
        name = " ".join(run).strip(".'’-")
        if len(name) >= 3 and not _NUMERIC.fullmatch(name) and not (len(run) == 1 and name.lower() in _OPENERS):
            names.append(name)
    return names


def _identifier(term: str) -> bool:
    """An identifier or quoted name of :func:`exact_terms`, not a number or a date."""
    return not (_DATE.fullmatch(term) or _NUMERIC.fullmatch(term)) and any(c.isalpha() for c in term)


def find_names(text: str, *, limit: int = 24) -> list[str]:
    """The names in ``text`` (see the module docstring), first occurrence first, without repeats (case-insensitive),
    at most ``limit``. Labels are left out."""
    seen: dict[str, str] = {}
    for sentence in sentences(LABEL.sub(" ", text)):
        for name in (*_runs(sentence), *(t for t in exact_terms(sentence) if _identifier(t))):
            if len(name) <= 120:
                seen.setdefault(name.casefold(), name)
            if len(seen) >= limit:
                return list(seen.values())
    return list(seen.values())
