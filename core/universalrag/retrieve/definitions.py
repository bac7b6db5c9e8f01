"""A question that names a setting, a function, an option or a row's value gets the passage that defines it first.

Each corpus's search marks the hits that *define* a name the question typed (channel ``defines``: the name opens
the text, a line or a cell and is followed by its end or by ``(``, :func:`~universalrag.exact_terms.defining_pattern`)
and ranks them first within that corpus. Routing may still choose a corpus where the name is only mentioned: for
"What is the default of work_mem?" the table of short options holds ``work_mem = x``, the router chose the tables
alone, and the settings page whose entry begins "work_mem (integer)" was never shown. :func:`definitions_first`
puts a defining hit first — one among the hits, else the nearest among the hits the routing probes found in the
other corpora — so the answer's passage is the first thing the caller reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..exact_terms import definable
from ..types import Hit

__all__ = ["DEFINES", "definitions_first"]

#: The channel score a corpus search gives a hit that defines a name the query typed.
DEFINES = "defines"


def definitions_first(
    hits: Sequence[Hit], probes: Mapping[str, Sequence[Hit]], terms: tuple[str, ...], *, k: int
) -> list[Hit]:
    """The first ``k`` of ``hits`` with the hits that define one of the query's names (of ``terms``, the query's
    :func:`~universalrag.exact_terms.exact_terms`; not numbers) first, in their order; when none of ``hits`` does,
    the best defining hit of the routing ``probes`` (another corpus's) is put first. ``hits`` unchanged otherwise."""
    if not definable(terms):
        return list(hits[:k])
    defining = [h for h in hits if h.channel_scores.get(DEFINES)]
    if not defining:
        seen = {(h.corpus, h.id) for h in hits}
        probed = [
            h
            for found in list(probes.values())
            for h in found
            if h.channel_scores.get(DEFINES) and (h.corpus, h.id) not in seen
        ]
        if not probed:
            return list(hits[:k])
        defining = [max(probed, key=lambda h: h.score)]
    first = {(h.corpus, h.id) for h in defining}
    return [*defining, *(h for h in hits if (h.corpus, h.id) not in first)][:k]
