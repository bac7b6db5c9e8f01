"""Probe evidence → features: what the combiner sees for one (query, corpus) pair. Pure functions, no I/O.

For every candidate corpus the engine probes the corpus with the query (its own embedding space, a few hits).
:func:`pair_features` turns the router's prior and one probe into numbers; :func:`query_features` adds the
comparisons across corpora (is this corpus's best hit better than the others'?) and the per-query summary the
``none`` decision uses. Feature names are fixed by :data:`PAIR_FEATURES` and :data:`QUERY_FEATURES`; the
combiner's JSON records them so that weights are never applied to the wrong column.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import snowballstemmer

from ..exact_terms import exact_terms, identifiers, is_number
from ..types import NO_RETRIEVAL, Hit, Modality

__all__ = [
    "GRANULARITIES",
    "PAIR_FEATURES",
    "QUERY_FEATURES",
    "QUERY_ONLY",
    "QUERY_TERMS",
    "SIBLINGS",
    "ProbeEvidence",
    "hit_similarity",
    "lexical_overlap",
    "matched_terms",
    "pair_features",
    "prior_route",
    "query_features",
    "query_shape",
    "query_terms",
    "sibling_corpora",
]

#: Granularities with a feature of their own (a learned base rate per kind of corpus).
GRANULARITIES: tuple[str, ...] = ("paragraph", "document", "table", "image", "clip", "video")

#: Features of one (query, corpus) pair, in column order.
PAIR_FEATURES: tuple[str, ...] = (
    "prior",
    "prior_logit",
    "prior_none",
    "prior_top",
    "best",
    "margin",
    "rel_best",
    "second_rel",
    "lexical",
    "rel_lexical",
    "log_size",
    "description",
    "examples",
    "empty",
    "sib_prior",
    "sib_best",
    "sib_lexical",
    *(f"is_{g}" for g in GRANULARITIES),
    "matched",
    "query_terms",
    "content_share",
    "numeric_share",
    "named",
)

#: The pair features that describe the query alone (the same in every row of one query): what the ``none``
#: decision reads besides the evidence, not what tells one corpus from another.
QUERY_ONLY: tuple[str, ...] = ("query_terms", "content_share", "numeric_share")

#: Granularities of one modality that answer different questions (a passage or the whole text, a scene or the
#: whole video): the ``sib_*`` features compare a corpus with the candidates of its sibling granularity.
SIBLINGS: dict[str, str] = {"paragraph": "document", "document": "paragraph", "clip": "video", "video": "clip"}

#: Features of one query (for "does any corpus answer it?"), in column order.
QUERY_FEATURES: tuple[str, ...] = (
    "prior_none_logit",
    "best_combined",
    "best_similarity",
    "best_lexical",
    "best_margin",
    "prior_top_corpus",
    "prior_none_margin",
    "best_matched",
    *QUERY_ONLY,
)

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_STOP = frozenset(
    """a about above after again all also an and any are as at be been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers him his
how i if in into is it its itself just me more most my no nor not of off on once only or other our out over own same
she should so some such than that the their them then there these they this those through to too under until up very
was we were what when where which while who whom why will with would you your yours tell show give find please know
many much""".split()
)
_TEXT_LIMIT = 3000
#: At most this many content words of a query are looked for in the hits: its first ones (a question has a dozen; a
#: pasted page has thousands, and stemming 2,900 of them took 1.3 s a query).
QUERY_TERMS = 64
_STEMMER = snowballstemmer.stemmer("english")
_STEM_LOCK = threading.Lock()


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """``word``'s Snowball stem, remembered: a query's terms are stemmed once, not again for every corpus probed
    (pure Python, about 20 µs a word), nor for the next query that uses them. Under a lock: the stemmer object keeps
    a word's state while it works, so two threads in it at once would mix their words."""
    with _STEM_LOCK:
        return str(_STEMMER.stemWord(word))


def query_terms(query: str) -> frozenset[str]:
    """The query's content words: lowercased word tokens that are not stop words (numbers kept), the first
    :data:`QUERY_TERMS` of them."""
    terms: dict[str, None] = {}  # in the query's order
    for match in _TOKEN.finditer(query):
        word = match.group(0).lower()
        if word not in _STOP and (len(word) > 2 or word.isdigit()):
            terms[word] = None
            if len(terms) == QUERY_TERMS:
                break
    return frozenset(terms)


def query_shape(query: str, terms: frozenset[str] | None = None) -> dict[str, float]:
    """What the query is made of (:data:`QUERY_ONLY`): how many content words it has (``log1p``), their share of
    its word tokens, and the share of its word tokens that are numbers. A greeting or a request to the assistant
    has few content words; arithmetic is mostly numbers; a question about someone's content names things."""
    terms = query_terms(query) if terms is None else terms
    tokens = [m.group(0) for m in _TOKEN.finditer(query)]
    n = max(len(tokens), 1)
    return {
        "query_terms": math.log1p(len(terms)),
        "content_share": len(terms) / n if tokens else 0.0,
        "numeric_share": sum(t.isdigit() for t in tokens) / n if tokens else 0.0,
    }


def _hit_text(hit: Hit) -> str:
    parts = " ".join(text for _, text, _ in hit.matched_parts)
    return f"{parts} {hit.content[:_TEXT_LIMIT]} {hit.metadata.get('title', '')}"


def lexical_overlap(terms: frozenset[str], hits: Sequence[Hit], *, top: int = 3) -> float:
    """The largest share of ``terms`` found in one of the ``top`` hits (matched parts, text, title)."""
    return _overlaps(terms, hits, top=top)[0]


def matched_terms(terms: frozenset[str], hits: Sequence[Hit], *, top: int = 3) -> int:
    """The largest number of ``terms`` found in one of the ``top`` hits: as spelled, or by stem (a word of the hit
    starts with the term's Snowball stem: "tuple" is found in "Tuples", "changed" in "change")."""
    return _overlaps(terms, hits, top=top)[1]


def _overlaps(terms: frozenset[str], hits: Sequence[Hit], *, top: int) -> tuple[float, int]:
    """:func:`lexical_overlap` and :func:`matched_terms` in one pass over the hits (a term found as it is spelled
    counts; the others are looked for by stem: a word of the hit that starts with it)."""
    if not terms:
        return 0.0, 0
    stems: dict[str, str] | None = None
    share, count = 0.0, 0
    plain_terms = all(t.isalnum() for t in terms)
    for hit in hits[:top]:
        text = _hit_text(hit)
        lowered = text.lower()
        # The words are found where they stand in the lowered text (str.find, a C scan), not by tokenising it: over
        # the 250 Wikipedia pages the tokenising took 10 ms of every routed query's Python time. The text is cut
        # into words where lowering changed its length (a dotted capital I) or a term is not a plain word.
        words = None if plain_terms and len(lowered) == len(text) else _words(text)
        if words is None:
            exact = frozenset(t for t in terms if _starts_word(lowered, t, whole=True))
        else:
            exact = terms & words
        share = max(share, len(exact) / len(terms))
        if len(exact) < len(terms):
            if stems is None:
                stems = {term: _stem(term) for term in terms}
            wanted = {stems[term] for term in terms - exact}
            if words is None and all(stem.isalnum() for stem in wanted):
                # a stem of one character finds only a word of one character: the tokenising path below matches
                # a word by its first two characters
                found = {stem for stem in wanted if _starts_word(lowered, stem, whole=len(stem) < 2)}
            else:
                words = _words(text) if words is None else words
                by_start: dict[str, list[str]] = {}
                for stem in wanted:
                    by_start.setdefault(stem[:2], []).append(stem)
                found = {stem for w in words for stem in by_start.get(w[:2], ()) if w.startswith(stem)}
            count = max(count, len(exact) + len(found))
        else:
            count = max(count, len(exact))
    return share, count


def _words(text: str) -> set[str]:
    """The words of ``text`` (``_TOKEN``'s runs of letters and digits), lowercased."""
    return set(map(str.lower, _TOKEN.findall(text)))


def _starts_word(text: str, needle: str, *, whole: bool = False) -> bool:
    """Whether ``needle`` (letters and digits) begins a word of ``text`` — a run of letters and digits, as
    ``_TOKEN`` reads them — and with ``whole``, is that whole word."""
    end = len(text)
    at = text.find(needle)
    while at >= 0:
        after = at + len(needle)
        if (at == 0 or not text[at - 1].isalnum()) and (not whole or after == end or not text[after].isalnum()):
            return True
        at = text.find(needle, at + 1)
    return False


def hit_similarity(hit: Hit) -> float:
    """A hit's similarity in the text embedding space: the text channel of a fused text+visual search, the dense
    score of a hybrid search, else its score (comparable across corpora built with the same embedder)."""
    channels = hit.channel_scores
    for key in ("text", "dense", "similarity"):
        if key in channels:
            return float(channels[key])
    return float(hit.score)


def prior_route(name: str, granularity: str, modality: str, routes: Sequence[str]) -> str:
    """The route of the trained router whose probability stands for a corpus: its own name when the router
    knows it, else the built-in route of its granularity (a user's paragraph corpus → ``paragraph``), else of
    its modality."""
    if name in routes:
        return name
    if granularity in routes:
        return granularity
    by_modality = {Modality.TEXT: "paragraph", Modality.TABLE: "table", Modality.IMAGE: "image", Modality.VIDEO: "clip"}
    return by_modality.get(Modality(modality), "paragraph")


@dataclass(frozen=True, slots=True)
class ProbeEvidence:
    """What is known about one candidate corpus for one query before the combiner runs."""

    corpus: str
    granularity: str
    prior: float
    hits: tuple[Hit, ...] = ()
    size: int = 0
    description: float = 0.0
    examples: float | None = None


def _logit(p: float) -> float:
    p = min(max(float(p), 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def pair_features(
    query: str,
    probes: Sequence[ProbeEvidence],
    *,
    prior_none: float,
    terms: frozenset[str] | None = None,
    typed: Sequence[str] | None = None,
) -> dict[str, dict[str, float]]:
    """Features per corpus for one query (see :data:`PAIR_FEATURES`), keyed by corpus name. ``terms`` (its content
    words) and ``typed`` (its :func:`~universalrag.exact_terms.exact_terms`, as a query plan has them) are computed
    from ``query`` when not given."""
    terms = query_terms(query) if terms is None else terms
    typed = exact_terms(query) if typed is None else typed
    shape = query_shape(query, terms)
    # A hit holding a number the query typed is no sign the query needs retrieval ("if I save 120 a month ..."):
    # only a name of another kind makes the feature that keeps the decision from concluding `none`.
    names = any(not is_number(n) for n in identifiers(tuple(typed)))
    raw: dict[str, dict[str, float]] = {}
    for probe in probes:
        sims = sorted((hit_similarity(h) for h in probe.hits), reverse=True)
        best = sims[0] if sims else 0.0
        rest = sims[1:]
        margin = best - (sum(rest) / len(rest)) if rest else 0.0
        lexical, matched = _overlaps(terms, probe.hits, top=3)
        raw[probe.corpus] = {
            "prior": float(probe.prior),
            "prior_logit": _logit(probe.prior) / 5.0,
            "prior_none": float(prior_none),
            "best": best,
            "margin": margin,
            "lexical": lexical,
            "matched": math.log1p(matched),
            **shape,
            "log_size": math.log1p(max(probe.size, 0)) / 10.0,
            "description": float(probe.description),
            "examples": float(probe.examples if probe.examples is not None else probe.description),
            "empty": 0.0 if probe.hits else 1.0,
            "named": 1.0 if names and any(h.channel_scores.get("named") for h in probe.hits) else 0.0,
            **{f"is_{g}": 1.0 if probe.granularity == g else 0.0 for g in GRANULARITIES},
        }
    top_prior = max((p.prior for p in probes), default=0.0)
    for probe in probes:
        row = raw[probe.corpus]
        others = [raw[o.corpus] for o in probes if o.corpus != probe.corpus and o.hits]
        ranked = sorted((o["best"] for o in others), reverse=True)
        row["rel_best"] = row["best"] - ranked[0] if ranked else 0.0
        row["second_rel"] = row["best"] - ranked[1] if len(ranked) > 1 else row["rel_best"]
        row["rel_lexical"] = row["lexical"] - max((o["lexical"] for o in others), default=row["lexical"])
        row["prior_top"] = 1.0 if probe.prior >= top_prior else 0.0
        siblings = [raw[o.corpus] for o in probes if o.granularity == SIBLINGS.get(probe.granularity)]
        for feature, source in (("sib_prior", "prior_logit"), ("sib_best", "best"), ("sib_lexical", "lexical")):
            row[feature] = row[source] - max(o[source] for o in siblings) if siblings else 0.0
        if not probe.hits:
            row["rel_best"] = row["second_rel"] = -1.0
    return {name: {f: row[f] for f in PAIR_FEATURES} for name, row in raw.items()}


def sibling_corpora(pairs: Mapping[str, Mapping[str, float]]) -> dict[str, tuple[str, ...]]:
    """For each corpus of ``pairs`` (its ``is_<granularity>`` features), the corpora of its sibling granularity
    (:data:`SIBLINGS`: a passage and the whole text, a scene and the whole video)."""
    kind = {name: next((g for g in GRANULARITIES if row.get(f"is_{g}")), None) for name, row in pairs.items()}
    return {
        name: tuple(o for o, g in kind.items() if g is not None and g == SIBLINGS.get(k or ""))
        for name, k in kind.items()
    }


def query_features(
    pairs: Mapping[str, Mapping[str, float]],
    combined: Mapping[str, float],
    *,
    prior_none: float,
    prior_top_corpus: float,
) -> dict[str, float]:
    """The per-query summary the ``none`` model reads (see :data:`QUERY_FEATURES`): the prior's ``none``
    log-odds and its margin over the likeliest corpus's, the best combined corpus probability, the best
    similarity, lexical overlap (as a share and as a count of the query's content words found in one unit) and
    margin, and the query's shape (:func:`query_shape`; evidence logged before these features existed lacks it
    and counts as 0)."""
    rows = [r for name, r in pairs.items() if name != NO_RETRIEVAL]
    shape = next(iter(rows), {})
    return {
        "prior_none_logit": _logit(prior_none) / 5.0,
        "prior_none_margin": (_logit(prior_none) - _logit(prior_top_corpus)) / 5.0,
        "best_matched": max((r.get("matched", 0.0) for r in rows), default=0.0),
        **{f: float(shape.get(f, 0.0)) for f in QUERY_ONLY},
        "best_combined": max((float(p) for p in combined.values()), default=0.0),
        "best_similarity": max((r["best"] for r in rows), default=0.0),
        "best_lexical": max((r["lexical"] for r in rows), default=0.0),
        "best_margin": max((r["margin"] for r in rows), default=0.0),
        "prior_top_corpus": float(prior_top_corpus),
    }
