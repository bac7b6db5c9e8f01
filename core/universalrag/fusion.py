"""Score fusion, in one place: the weighted text/visual sum of one unit's channels, reciprocal rank fusion
of several rankings, and min-max normalisation of several corpora's scores.

A low layer: it knows hits and ids, never the store. ``store/search.py`` combines a corpus's channels with
:func:`weighted` and :func:`rrf_scores`; the pipeline merges corpora with :func:`fuse`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from typing import TypeVar

from .errors import ConfigError
from .types import Hit

__all__ = ["RRF_K", "FUSIONS", "fuse", "minmax", "rrf", "rrf_scores", "weighted"]

#: Reciprocal rank fusion constant (Cormack et al.): an item's fused score is the sum of 1 / (RRF_K + rank).
RRF_K = 60

_Id = TypeVar("_Id", bound=Hashable)


def weighted(text: float | None, visual: float | None, *, visual_weight: float) -> float | None:
    """``visual_weight · visual + (1 − visual_weight) · text``; one channel alone when the other is missing
    (no visual vector, no text), ``None`` when both are."""
    if text is None or visual is None:
        return visual if text is None else text
    return visual_weight * visual + (1.0 - visual_weight) * text


def rrf_scores(rankings: Sequence[Sequence[_Id]], *, rrf_k: int = RRF_K) -> dict[_Id, float]:
    """Reciprocal rank fusion of rankings of ids (best first): each id's summed ``1 / (rrf_k + rank)``."""
    out: dict[_Id, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            out[item] = out.get(item, 0.0) + 1.0 / (rrf_k + rank)
    return out


def rrf(per_corpus: Sequence[Sequence[Hit]], *, rrf_k: int = RRF_K) -> list[Hit]:
    """Hits of several corpora in one ranking by reciprocal rank; each keeps its similarity as
    ``channel_scores["similarity"]``."""
    fused = [(1.0 / (rrf_k + rank), hit) for hits in per_corpus for rank, hit in enumerate(hits, 1)]
    return [replace(h, score=s, channel_scores={**h.channel_scores, "similarity": h.score})
            for s, h in sorted(fused, key=lambda t: -t[0])]


def minmax(per_corpus: Sequence[Sequence[Hit]]) -> list[Hit]:
    """Hits of several corpora in one ranking by their scores min-max normalised per corpus."""
    out = []
    for hits in per_corpus:
        if not hits:
            continue
        low, high = min(h.score for h in hits), max(h.score for h in hits)
        for h in hits:
            norm = 1.0 if high == low else (h.score - low) / (high - low)
            out.append(replace(h, score=norm, channel_scores={**h.channel_scores, "similarity": h.score}))
    return sorted(out, key=lambda h: -h.score)


#: How the hits of several corpora are merged into one ranking.
FUSIONS: dict[str, Callable[[Sequence[Sequence[Hit]]], list[Hit]]] = {"rrf": rrf, "minmax": minmax}


def fuse(per_corpus: Sequence[Sequence[Hit]], *, method: str = "rrf") -> list[Hit]:
    """One ranking from several corpora's rankings: reciprocal rank fusion (default) or min-max normalised
    scores. A single ranking is returned unchanged."""
    if method not in FUSIONS:
        raise ConfigError(f"Unknown fusion {method!r}; choose one of {', '.join(FUSIONS)}.")
    lists = [list(h) for h in per_corpus if h]
    if len(lists) <= 1:
        return lists[0] if lists else []
    return FUSIONS[method](lists)
