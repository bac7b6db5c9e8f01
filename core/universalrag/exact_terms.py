"""Terms of a query that a row or passage should contain character for character: identifiers, codes, numbers and
quoted phrases.

A text encoder places "10.0.1.5" near any address, "build-04" near any host name and "1952-53" near any season,
so among the rows of one table the nearest by meaning is often not the row that holds the term the user typed
(in a 60-row server inventory, "who owns the box at 10.0.1.5" matched the row of another address). Such a row
is found by its characters instead: a multi-vector corpus's search puts the parts holding these terms first among
a hit's matched parts (:func:`universalrag.store.corpus_search`). Which tokens count:

- a phrase in double quotes, as typed;
- a date, in ISO 8601 ("September 10, 2003" → ``2003-09-10``, "June 1996" → ``1996-06``): a table's date cells
  carry that spelling beside their own (:mod:`universalrag.dates`);
- a token holding a digit (``db-02``, ``sgp1``, ``10.0.1.5``, ``1977``, ``1,500``; a lone digit is too common
  to count);
- a token with ``-``, ``_``, ``.``, ``:``, ``/`` or ``@`` between letters or digits (``exact_scan_max_rows``,
  ``sign-on``, ``security@example.org``);
- a camel-case token (``PGVectorStore``);
- what only a program's text spells so: a long command-line option (``--no-deps``), a dotfile or a path under one
  (``.netrc``, ``~/.cache/pip``, kept from the dot), a name in double underscores (``__NOGLOBS__``, ``__init__``).

A term matches where it stands as a whole word (case-insensitive), so ``10.0.1.5`` does not match ``10.0.1.50``.
"""

from __future__ import annotations

import functools
import mimetypes
import re

from .dates import query_dates

__all__ = [
    "DASHES",
    "MAX_TERMS",
    "definable",
    "defines",
    "defining_pattern",
    "exact_terms",
    "holds_name",
    "identifiers",
    "is_number",
    "term_pattern",
]

#: At most this many terms are taken from one query (the first ones, quoted phrases first).
MAX_TERMS = 4

_QUOTED = re.compile(r"\"([^\"]{2,80})\"")
#: Two or more words in capitals in a question otherwise written in lower case: a name as its source spells it
#: ("ROW EXCLUSIVE", "GREEK SMALL LETTER ALPHA", "VACUUM FULL"), looked up like a quoted phrase.
_CAPS_RUN = re.compile(r"(?<![\w-])[A-Z][A-Z0-9_]+(?: (?:[A-Z][A-Z0-9_]*|[0-9]+))+(?![\w-])")
#: Spelled only in a program's text: a long option, a dunder name, a dotfile (a path from the dot on: the parser of
#: PostgreSQL's full-text search reads "~/.cache/pip" as "/.cache/pip", so "~" is not part of the term).
_PROGRAM = re.compile(
    r"--[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]|__[A-Za-z0-9][A-Za-z0-9_]*?__(?:\.[A-Za-z0-9]+)*"
    r"|(?<![\w.])\.[A-Za-z][A-Za-z0-9_-]*(?:/[A-Za-z0-9._-]*[A-Za-z0-9])*"
)
_TOKEN = re.compile(rf"{_PROGRAM.pattern}|\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|[A-Za-z0-9][A-Za-z0-9._:/@-]*[A-Za-z0-9]")
_JOINED = re.compile(r"[A-Za-z0-9][._:/@-][A-Za-z0-9]")
_CAMEL = re.compile(r"[a-z][A-Z]")
#: Joined by a character that words of prose are not joined by (a hyphen is: "sign-on", "1952-53").
_CODE_JOIN = re.compile(r"[A-Za-z0-9][_.:/@][A-Za-z]")
#: A number with a short suffix: an ordinal, a decade, a quantity ("2nd", "1990s", "100m", "5km").
_NUMBER_WORD = re.compile(r"\d[\d,.]*[A-Za-z]{1,3}")
#: A whole number of three digits or more ("533", "1977", "1,500"): a code or a count the user read somewhere.
_NUMBER = re.compile(r"\d{3,}|\d{1,3}(?:,\d{3})+")


def exact_terms(query: str) -> tuple[str, ...]:
    """The terms of ``query`` a matching part should contain verbatim (see the module docstring), in order,
    without repeats (case-insensitive), at most :data:`MAX_TERMS`."""
    terms = [t.strip() for t in _QUOTED.findall(query) if t.strip()]
    rest = _QUOTED.sub(lambda m: " " * len(m.group()), query)
    if any(c.islower() for c in rest):  # a name in capitals inside a sentence: as if quoted
        terms += [m.group() for m in _CAPS_RUN.finditer(rest)]
        rest = _CAPS_RUN.sub(lambda m: " " * len(m.group()), rest)
    for (start, end), iso in query_dates(rest):  # "September 10, 2003": one term, "2003-09-10", not "10" and "2003"
        terms.append(iso)
        rest = rest[:start] + " " * (end - start) + rest[end:]
    for token in _TOKEN.findall(rest):
        if (
            any(c.isdigit() for c in token)
            or _JOINED.search(token)
            or _CAMEL.search(token)
            or _PROGRAM.fullmatch(token)
        ):
            terms.append(token)
    seen: dict[str, str] = {}
    for term in terms:
        seen.setdefault(term.casefold(), term)
    return tuple(seen.values())[:MAX_TERMS]


def identifiers(terms: tuple[str, ...]) -> tuple[str, ...]:
    """The ``terms`` (of :func:`exact_terms`) that name one thing, which a unit that does not hold them verbatim is
    unlikely to be about: quoted phrases, codes mixing letters and digits ("E0382", "sgp1"), names joined by
    ``_ . : / @`` ("max_concurrent_requests", "dns.lookup", "os.EOL"), camel case ("PGVectorStore") and what only a
    program's text spells ("--no-deps", ".netrc", "__NOGLOBS__"), and whole numbers of three digits or more ("533",
    "1977", "1,500"). Not shorter numbers, decimals, addresses, seasons or ordinals ("24", "2.5", "10.0.1.5", "1952-53",
    "2nd"), nor hyphenated words, nor a file name's extension (".bz2", ".yaml"). A name many units hold is left alone by
    the search (it tells them apart no better than their meaning): so a year every page of a history holds changes
    nothing, while the code 533 that three of eight ISO tables hold brings the countries table into the top 5 for "which
    country has numeric code 533", where the encoder had put it sixth."""
    out = []
    for term in terms:
        if _file_extension(term):
            continue
        quoted = " " in term
        letters, digits = any(c.isalpha() for c in term), any(c.isdigit() for c in term)
        code = letters and digits and not _NUMBER_WORD.fullmatch(term) and not term[:1].isdigit()
        joined = _CODE_JOIN.search(term) and sum(c.isalnum() for c in term) >= 4  # not "U.S" or "e.g"
        number = is_number(term)
        if quoted or code or joined or number or _CAMEL.search(term) or _PROGRAM.fullmatch(term):
            out.append(term)
    return tuple(out)


#: Extensions of configuration files, which :mod:`mimetypes` does not know.
_CONFIG_EXTENSIONS = frozenset({".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".log", ".lock"})


def _file_extension(term: str) -> bool:
    """Whether ``term`` is a file name's extension (".bz2", ".pdf", ".yaml"): a kind of file many units mention,
    not one thing's name ("how do I recover data from a damaged .bz2 file" put a changelog that says ".bz2" before
    the answering passage). A dotfile (".netrc") or a path under one (".cache/pip") is a name."""
    if not term.startswith(".") or "/" in term:
        return False
    kind, encoding = mimetypes.guess_type(f"file{term}")
    return kind is not None or encoding is not None or term.lower() in _CONFIG_EXTENSIONS


def is_number(term: str) -> bool:
    """Whether ``term`` is a whole number of three digits or more, the one kind of name (:func:`identifiers`) an
    arithmetic question types too ("add 1,250 and 3,875"): a clue to where an answer is, not a sign that the
    question needs one."""
    return _NUMBER.fullmatch(term) is not None


#: What a hyphen the user typed matches: any dash (pages write seasons and ranges with en dashes, "1952–53").
DASHES = "[-\u2010\u2011\u2012\u2013\u2014]"


def term_pattern(term: str) -> str:
    """A PostgreSQL regular expression (for ``~*``) matching ``term`` as a whole word: a hyphen matches any dash
    (:data:`DASHES`), every other character but letters, digits and spaces is escaped, and a word boundary
    (``\\m``, ``\\M``) stands where the term begins or ends with a letter or digit."""
    body = "".join(DASHES if c == "-" else (c if c.isalnum() or c == " " else "\\" + c) for c in term)
    start = r"\m" if term[:1].isalnum() else ""
    end = r"\M" if term[-1:].isalnum() else ""
    return f"{start}{body}{end}"


@functools.lru_cache(maxsize=256)
def _python_pattern(term: str) -> re.Pattern[str]:
    """:func:`term_pattern` for Python's ``re`` (a word boundary is a position not next to a letter, digit or
    ``_``, as Postgres's ``\\m`` and ``\\M`` put it)."""
    body = "".join(DASHES if c == "-" else re.escape(c) for c in term)
    start = r"(?<!\w)" if term[:1].isalnum() else ""
    end = r"(?!\w)" if term[-1:].isalnum() else ""
    return re.compile(f"{start}{body}{end}", re.IGNORECASE)


def definable(terms: tuple[str, ...]) -> tuple[str, ...]:
    """The names of ``terms`` (:func:`identifiers`) a text can define: not numbers (a cell holding "1967" is a season,
    not the entry of 1967)."""
    return tuple(t for t in identifiers(terms) if not is_number(t))


def defining_pattern(term: str) -> str:
    """A PostgreSQL regular expression (for ``~*``) matching a text that *defines* ``term`` rather than mentions it:
    the term opens the text, a line or a table cell (after a cell's ``column:`` label) and is followed by the end of
    that line or cell, or by ``(`` — a setting's entry ("work_mem (integer)"), a function's ("jsonb_set ( target
    jsonb, ..."), an option of a command's reference page ("CONCURRENTLY" on a line of its own), a row whose cell
    is the value (``Name: GREEK SMALL LETTER ALPHA |``, not ``... ALPHA WITH TONOS``)."""
    return rf"(^|\n|\|)[ \t]*([^|:\n]*:[ \t]*)?{term_pattern(term)}[ \t]*(\(|\||\n|$)"


@functools.lru_cache(maxsize=256)
def _python_defining(term: str) -> re.Pattern[str]:
    body = _python_pattern(term).pattern
    return re.compile(rf"(?:^|\n|\|)[ \t]*(?:[^|:\n]*:[ \t]*)?{body}[ \t]*(?:\(|\||\n|$)", re.IGNORECASE)


def defines(text: str, names: tuple[str, ...]) -> bool:
    """Whether ``text`` defines one of ``names`` as :func:`defining_pattern` matches it in the database."""
    return any(_python_defining(name).search(text) for name in names)


def holds_name(text: str, names: tuple[str, ...]) -> bool:
    """Whether ``text`` holds one of ``names`` (of :func:`identifiers`) as :func:`term_pattern` matches it in the
    database: whole, case-insensitive, a hyphen matching any dash."""
    return any(_python_pattern(name).search(text) for name in names)
