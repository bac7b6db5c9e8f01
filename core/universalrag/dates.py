"""Calendar dates as people spell them, read into ISO 8601, the one spelling a row and a question can share.

A table's cell reads "19-Sep-03" (matplotlib's msft.csv), "July 16, 1969" (a Wikipedia table) or "2003-09-19";
a question asks for "2003-09-19", "September 19, 2003" or "June 1996". An encoder places every date near every
other, so the row of that day is found by its characters instead (:mod:`universalrag.exact_terms`): a row's
date cell is followed by its ISO spelling when written otherwise (:func:`iso_date`), and a question's date is
read into that spelling (:func:`query_dates`). Only spellings that say which number is the day are read:
"9/3/2003" (the 9th of March, or September 3rd?) is left as it is.
"""

from __future__ import annotations

import datetime as dt
import re

__all__ = ["iso_date", "query_dates"]

_MONTH_NAMES = (
    ("jan", "january"),
    ("feb", "february"),
    ("mar", "march"),
    ("apr", "april"),
    ("may",),
    ("jun", "june"),
    ("jul", "july"),
    ("aug", "august"),
    ("sep", "sept", "september"),
    ("oct", "october"),
    ("nov", "november"),
    ("dec", "december"),
)
_MONTHS = {name: number for number, names in enumerate(_MONTH_NAMES, 1) for name in names}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
#: Day-month-year, month-day-year and year/month/day spellings ("19-Sep-03", "19 September 2003",
#: "September 19, 2003", "Sep 19 2003", "2003/09/19").
_DAY_PATTERNS = (
    rf"(?P<d>\d{{1,2}})(?:st|nd|rd|th)?[- ](?P<m>{_MONTH})\.?,?[- ](?P<y>\d{{4}}|\d{{2}})",
    rf"(?P<m>{_MONTH})\.? (?P<d>\d{{1,2}})(?:st|nd|rd|th)?,? (?P<y>\d{{4}})",
    r"(?P<y>\d{4})/(?P<m>\d{1,2})/(?P<d>\d{1,2})",
)
#: A month and a year ("June 1996", "Sep 2003").
_MONTH_YEAR = rf"(?P<m>{_MONTH})\.?,? (?P<y>\d{{4}})"
_CELL_DATES = [re.compile(p, re.IGNORECASE) for p in (*_DAY_PATTERNS, _MONTH_YEAR)]
#: In a question: a day (as above, the year in four digits but for "19-Sep-03"), else a month and a year ("June
#: 1996").
_QUERY_DATE = re.compile(
    r"(?<![\w-])(?:"
    + "|".join(f"(?:{p})".replace("?P<", f"?P<{k}") for k, p in zip("abc", _DAY_PATTERNS, strict=True))
    + "|"
    + _MONTH_YEAR.replace("?P<", "?P<z")
    + r")(?![\w-])",
    re.IGNORECASE,
)


def _iso(year: str, month: str, day: str | None) -> str:
    number = int(month) if month.isdigit() else _MONTHS.get(month.casefold(), 0)
    value = int(year)
    value += 0 if len(year) == 4 else 1900 if value >= 69 else 2000  # strptime's %y
    try:
        date = dt.date(value, number, int(day or 1))
    except ValueError:  # no such day or month: a code that looks like a date
        return ""
    return date.isoformat() if day else date.isoformat()[:7]


def iso_date(cell: str) -> str:
    """The ISO 8601 spelling of ``cell`` when it is a date spelled otherwise, without ambiguity ("19-Sep-03" →
    "2003-09-19", a two-digit year read as ``strptime``'s ``%y`` does: 69-99 → 19xx, else 20xx; "June 1996" →
    "1996-06"), else ``""``."""
    if not 8 <= len(cell) <= 20 or not cell[:1].isalnum():  # cheap: most cells are no date
        return ""
    for pattern in _CELL_DATES:
        match = pattern.fullmatch(cell)
        if match is not None:
            return _iso(match["y"], match["m"], match.groupdict().get("d"))
    return ""


def query_dates(query: str) -> list[tuple[tuple[int, int], str]]:
    """Each date ``query`` spells, as ``((start, end), ISO spelling)``: a day as "2003-09-19", a month and a
    year ("June 1996") as "1996-06"; an ISO date already typed is left to the caller."""
    out = []
    for match in _QUERY_DATE.finditer(query):
        groups = {k[1:]: v for k, v in match.groupdict().items() if v is not None}
        iso = _iso(groups["y"], groups["m"], groups.get("d"))
        if iso:
            out.append((match.span(), iso))
    return out
