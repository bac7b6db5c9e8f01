"""Probe evidence → features: what the combiner sees for one (query, corpus) pair. Pure functions, no I/O.

For every candidate corpus the engine probes the corpus with the query (its own embedding space, a few hits).
:func:`pair_features` turns the router's prior and one probe into numbers; :func:`query_features` adds the
comparisons across corpora (is this corpus's best hit better than the others'?) and the per-query summary the
``none`` decision uses. Feature names are fixed by :data:`PAIR_FEATURES` and :data:`QUERY_FEATURES`; the
combiner's JSON records them so that weights are never applied to the wrong column.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..types import NO_RETRIEVAL, Hit, Modality

__all__ = [
    "GRANULARITIES",
    "PAIR_FEATURES",
    "QUERY_FEATURES",
    "SIBLINGS",
    "ProbeEvidence",
    "hit_similarity",
    "lexical_overlap",
    "pair_features",
    "prior_route",
    "query_features",
    "query_terms",
]

#: Granularities with a feature of their own (a learned base rate per kind of corpus).
GRANULARITIES: tuple[str, ...] = ("paragraph", "document", "table", "image", "clip", "video")

#: Features of one (query, corpus) pair, in column order.
PAIR_FEATURES: tuple[str, ...] = (
    "prior", "prior_logit", "prior_none", "prior_top",
    "best", "margin", "rel_best", "second_rel",
    "lexical", "rel_lexical", "log_size", "description", "examples", "empty",
    "sib_prior", "sib_best", "sib_lexical",
    *(f"is_{g}" for g in GRANULARITIES),
)

#: Granularities of one modality that answer different questions (a passage or the whole text, a scene or the
#: whole video): the ``sib_*`` features compare a corpus with the candidates of its sibling granularity.
SIBLINGS: dict[str, str] = {"paragraph": "document", "document": "paragraph", "clip": "video", "video": "clip"}

#: Features of one query (for "does any corpus answer it?"), in column order.
QUERY_FEATURES: tuple[str, ...] = (
    "prior_none_logit", "best_combined", "best_similarity", "best_lexical", "best_margin", "prior_top_corpus",
)

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_STOP = frozenset("""a about above after again all also an and any are as at be been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers him his
how i if in into is it its itself just me more most my no nor not of off on once only or other our out over own same
she should so some such than that the their them then there these they this those through to too under until up very
was we were what when where which while who whom why will with would you your yours tell show give find please know
many much""".split())
_TEXT_LIMIT = 3000


def query_terms(query: str) -> frozenset[str]:
    """The query's content words: lowercased word tokens that are not stop words (numbers kept)."""
    return frozenset(t for t in (m.group(0).lower() for m in _TOKEN.finditer(query))
                     if t not in _STOP and (len(t) > 2 or t.isdigit()))


def _hit_text(hit: Hit) -> str:
    parts = " ".join(text for _, text, _ in hit.matched_parts)
    return f"{parts} {hit.content[:_TEXT_LIMIT]} {hit.metadata.get('title', '')}"


def lexical_overlap(terms: frozenset[str], hits: Sequence[Hit], *, top: int = 3) -> float:
    """The largest share of ``terms`` found in one of the ``top`` hits (matched parts, text, title)."""
    if not terms:
        return 0.0
    best = 0.0
    for hit in hits[:top]:
        words = {m.group(0).lower() for m in _TOKEN.finditer(_hit_text(hit))}
        best = max(best, len(terms & words) / len(terms))
    return best


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
    by_modality = {Modality.TEXT: "paragraph", Modality.TABLE: "table", Modality.IMAGE: "image",
                   Modality.VIDEO: "clip"}
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


def pair_features(query: str, probes: Sequence[ProbeEvidence], *, prior_none: float,
                  terms: frozenset[str] | None = None) -> dict[str, dict[str, float]]:
    """Features per corpus for one query (see :data:`PAIR_FEATURES`), keyed by corpus name."""
    terms = query_terms(query) if terms is None else terms
    raw: dict[str, dict[str, float]] = {}
    for probe in probes:
        sims = sorted((hit_similarity(h) for h in probe.hits), reverse=True)
        best = sims[0] if sims else 0.0
        rest = sims[1:]
        margin = best - (sum(rest) / len(rest)) if rest else 0.0
        raw[probe.corpus] = {
            "prior": float(probe.prior), "prior_logit": _logit(probe.prior) / 5.0, "prior_none": float(prior_none),
            "best": best, "margin": margin,
            "lexical": lexical_overlap(terms, probe.hits),
            "log_size": math.log1p(max(probe.size, 0)) / 10.0,
            "description": float(probe.description),
            "examples": float(probe.examples if probe.examples is not None else probe.description),
            "empty": 0.0 if probe.hits else 1.0,
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


def query_features(pairs: Mapping[str, Mapping[str, float]], combined: Mapping[str, float], *,
                   prior_none: float, prior_top_corpus: float) -> dict[str, float]:
    """The per-query summary the ``none`` model reads (see :data:`QUERY_FEATURES`): the prior's ``none``
    log-odds, the best combined corpus probability, the best similarity, lexical overlap and margin."""
    rows = [r for name, r in pairs.items() if name != NO_RETRIEVAL]
    return {
        "prior_none_logit": _logit(prior_none) / 5.0,
        "best_combined": max((float(p) for p in combined.values()), default=0.0),
        "best_similarity": max((r["best"] for r in rows), default=0.0),
        "best_lexical": max((r["lexical"] for r in rows), default=0.0),
        "best_margin": max((r["margin"] for r in rows), default=0.0),
        "prior_top_corpus": float(prior_top_corpus),
    }

