"""Score fusion, in one place: the weighted text/visual sum of one unit's channels, reciprocal rank fusion
of several rankings, min-max normalisation of several corpora's scores, and a plain merge by similarity for
corpora that share one embedding space; a merge keeps one hit of each text.

A low layer: it knows hits and ids, never the store. ``store/corpus_search.py`` combines a corpus's channels with
:func:`weighted` and :func:`rrf_scores`; the pipeline merges corpora with :func:`fuse`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from typing import TypeVar

from .errors import ConfigError
from .types import Granularity, Hit, Modality

__all__ = [
    "FUSIONS",
    "GRAPH_SLOTS",
    "PASSAGE_TIE",
    "RRF_K",
    "SOURCE_DEPTH",
    "SOURCE_TABLE_MARGIN",
    "SOURCE_WEIGHT",
    "TABLE_OFFSET",
    "SeenTexts",
    "by_source",
    "comparable",
    "distinct",
    "fuse",
    "lifted",
    "minmax",
    "rrf",
    "rrf_scores",
    "similarity",
    "text_key",
    "weighted",
    "with_graph",
    "with_source_table",
]

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
    return [
        replace(h, score=s, channel_scores={**h.channel_scores, "similarity": h.score})
        for s, h in sorted(fused, key=lambda t: -t[0])
    ]


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


#: Added to a table hit's similarity when several corpora are merged by similarity (the hit keeps its own score):
#: a table's rows (``title: column: value | ...``) sit further from a question in the encoder's space than prose
#: saying as much, so a table that answers scored below passages that only resembled the question. Chosen on the
#: tune split of ``benchmarks/routing_e2e.py`` over all 250 Wikipedia pages (answering unit in the top 5, routed:
#: 57.7 % at 0, 58.5 % at 0.02, 58.8 % at 0.05, 59.0 % at 0.08, 59.1 % at 0.12; every corpus merged: 54.4 % to
#: 59.9 %; page in the top 5 71.1 % up to 0.05, 71.0 % beyond): the smallest offset past the knee.
TABLE_OFFSET = 0.05


def lifted(score: float, *, table: bool) -> float:
    """A similarity as merging ranks it: a table's lifted by :data:`TABLE_OFFSET`."""
    return score + (TABLE_OFFSET if table else 0.0)


def similarity(per_corpus: Sequence[Sequence[Hit]]) -> list[Hit]:
    """Hits of several corpora in one ranking by their own similarity, as one shared index would rank them
    (meaningful only when the scores are comparable: see :func:`comparable`), tables lifted by
    :data:`TABLE_OFFSET`; the units found by a name the query typed (channel ``exact``) first, then the other hits
    holding it (``named``), as each corpus ranks them.

    A whole document holding the name goes by its similarity when a passage or row among the hits holds the name
    too: the document holds whatever any of its passages holds, so it would otherwise come first for a product's
    own name ("libtasn1" on every page of its manual), above the passage that answers; the passages holding the
    name are the precise evidence. That goes for another file's document too: a short README naming the product
    came first for five of six questions typing it (similarity 0.40–0.56, the manual's passages 0.78 below it),
    its own passages not among the hits because the manual's passages holding the name were nearer. Likewise a
    document comes after its own best passage when it is no more than :data:`PASSAGE_TIE` more similar: its
    similarity is that of its best chunk, which is mostly that passage again (on pip's docs, the same file's
    document beat the answering passage by 0.001 for most questions whose passage came second), and the passage
    says where the answer is."""
    merged = [
        replace(h, channel_scores={**h.channel_scores, "similarity": h.score}) for hits in per_corpus for h in hits
    ]
    finer = any(_names(h) and h.granularity is not Granularity.DOCUMENT for h in merged)
    passage: dict[str | None, float] = {}
    for h in merged:
        if h.granularity is Granularity.PARAGRAPH:
            passage[_source(h)] = max(h.score, passage.get(_source(h), -2.0))

    def key(h: Hit) -> tuple[bool, bool, float, bool]:
        whole = h.granularity is Granularity.DOCUMENT
        held = not whole or not finer
        score = lifted(h.score, table=h.granularity is Granularity.TABLE)
        tied = whole and passage.get(_source(h), -2.0) >= h.score - PASSAGE_TIE
        return (
            not (held and h.channel_scores.get("exact")),
            not (held and h.channel_scores.get("named")),
            -(min(score, passage[_source(h)]) if tied else score),
            tied,
        )

    return sorted(merged, key=key)


#: How much more similar than its own best passage a document may be and still come after it (see
#: :func:`similarity`).
PASSAGE_TIE = 0.02


def _names(h: Hit) -> bool:
    """Whether ``h`` holds a name the query typed (channel ``exact`` or ``named``)."""
    return bool(h.channel_scores.get("exact") or h.channel_scores.get("named"))


def _source(h: Hit) -> str | None:
    """The source ``h`` was cut from (its id, else its uri)."""
    return h.source_id or h.uri


def text_key(content: str | None) -> str:
    """A unit's text with its whitespace collapsed: two units with one key say the same word for word."""
    return " ".join((content or "").split())


#: The words :class:`SeenTexts` compares before it reads two texts whole.
_HEAD_WORDS = 32


def _head(content: str | None) -> str:
    """The first :data:`_HEAD_WORDS` words of a text, whitespace collapsed (the start of its :func:`text_key`)."""
    return " ".join((content or "").split(None, _HEAD_WORDS)[:_HEAD_WORDS])


class SeenTexts:
    """Texts met so far, compared word for word (:func:`text_key`), reading a text whole only when its first
    words are those of a text met before: the units of a corpus of whole documents are whole pages, and collapsing
    the whitespace of each of a search's candidates cost 2.7 ms of CPU a query over the 250 Wikipedia pages."""

    def __init__(self) -> None:
        self._by_head: dict[str, list[str]] = {}  # first words -> the texts met that begin with them

    def add(self, content: str) -> bool:
        """Remember ``content``; ``False`` when a text met before says the same word for word (an empty text is
        always new)."""
        head = _head(content)
        if not head:
            return True
        earlier = self._by_head.get(head)
        if earlier is None:
            self._by_head[head] = [content]
            return True
        key = text_key(content)  # texts that begin alike (rare but for copies): read them whole
        if any(text_key(other) == key for other in earlier):
            return False
        earlier.append(content)
        return True


#: The modalities whose units are their text: of two with one text, one is kept (a clip's or a picture's text is
#: a transcript slice or a caption, and two scenes saying the same are still two scenes).
_TEXTUAL = frozenset({Modality.TEXT, Modality.TABLE})


#: Tables of the page a question is about rank first: a table's similarity counts less by this much per unit of
#: similarity its page's whole text falls below the best whole text found (see :func:`by_source`; the pipeline ranks
#: tables so, not passages). A question about one of a page's tables ("how many teams for the 2010 chinese super
#: league had an average of over 15,000 audience members attend?") matches rows of other pages' tables as closely as
#: the answering one (14th of the table corpus), while the page it is about is the best whole text. Chosen on the
#: tune split of ``benchmarks/routing_e2e.py`` (answering unit in the top 5, routed: 58.9 % without, 60.7 % at 0.15,
#: 60.9 % at 0.2, 61.0 % at 0.25, from the five best whole texts and 30 candidates of tables and passages); held
#: out, the held-out split: routed 60.6 → 62.2 % (15 candidates of tables); users' PDFs, manuals, JSON and CSV files
#: (271 questions): one more answer first, none lost.
SOURCE_WEIGHT = 0.2
#: ... among this many candidates of a table corpus (its best ``k`` by similarity alone when no whole text of
#: the same sources was searched). 30 found more (tables and passages: tune split 61.1 against 60.6 %, report 62.3
#: against 62.0 %), but a table corpus searched 30 deep through its index cost route + retrieve 18 % (38.7 against
#: 32.9 ms at p50 over the 250 pages; 15: 33.5 ms).
SOURCE_DEPTH = 15
#: A part whose source is not among the whole texts found counts as this much below the last of them.
_UNSEEN_SOURCE = 0.05


def by_source(parts: Sequence[Hit], wholes: Sequence[Hit], *, k: int, weight: float = SOURCE_WEIGHT) -> list[Hit]:
    """The best ``k`` of ``parts`` (a corpus's passages or tables, best first) when each counts its source's
    evidence: ``parts`` ranked by their similarity less ``weight`` (:data:`SOURCE_WEIGHT`) times how far their
    source's best whole text (among ``wholes``, the hits of corpora of whole texts) falls below the best of
    ``wholes``; a part of a source not among them counts as falling a little below the last. The hits holding a
    name the query typed keep their place first when at most ``k`` candidates hold one; scores are left as they are
    (each still the unit's own similarity). ``parts`` come back cut to ``k`` unchanged when no part shares a source
    with ``wholes`` or ``weight`` is 0; both must be :func:`comparable` (the caller checks: a rank-fused score is on
    another scale)."""
    best: dict[str, float] = {}
    for h in wholes:
        source = _source(h)
        if source is not None:
            best[source] = max(best.get(source, h.score), h.score)
    if weight <= 0 or not any(_source(h) in best for h in parts):
        return list(parts[:k])
    top, floor = max(best.values()), min(best.values()) - _UNSEEN_SOURCE
    # A name held by more than k candidates ("2005" in a year column of many tables) singles out none of them.
    singles = sum(map(_names, parts)) <= k

    def key(h: Hit) -> tuple[bool, float]:
        source = _source(h)
        known = best.get(source, floor) if source is not None else floor
        return (singles and not _names(h), -(h.score - weight * (top - known)))

    return sorted(parts, key=key)[:k]


#: How far below the best hit a table of the best hit's own source may rank and still take the last place
#: (:func:`with_source_table`). Replayed on the tune split of ``benchmarks/routing_e2e.py`` (answering unit in the
#: top 5, routed): 61.0 % without, 61.2 / 61.9 / 62.2 / 62.3 % at 0.1 / 0.15 / 0.2 / any margin.
SOURCE_TABLE_MARGIN = 0.2


def with_source_table(
    hits: Sequence[Hit], tables: Sequence[Hit], *, k: int, margin: float = SOURCE_TABLE_MARGIN
) -> list[Hit]:
    """The first ``k`` of ``hits`` (texts, best first) with the best of ``tables`` (candidates of table corpora,
    best first) cut from the same source as the best hit in the last place (``k`` ≥ 2), when its similarity is within
    ``margin`` of the best hit's and it is not among them already. Routing sent the question to the text of a
    page, and a question about a page is often answered by its table ("what movie did sunil kumar desai star in
    before marma?": the page's passages filled the top 5, its filmography came 6th of the page's own units).
    Both lists must be :func:`comparable`."""
    top = list(hits[:k])
    source = _source(top[0]) if top and k > 1 else None  # the best hit keeps its place
    if source is None:
        return top
    table = next((t for t in tables if _source(t) == source), None)
    if table is None or table.score < top[0].score - margin or any(h.id == table.id for h in top):
        return top
    if len(top) < k:
        return [*top, table]
    return [*top[:-1], table]


#: How many of a ranking's last places the knowledge graph's hits may take (:func:`with_graph`).
GRAPH_SLOTS = 2


def with_graph(hits: Sequence[Hit], graph: Sequence[Hit], *, k: int, slots: int = GRAPH_SLOTS) -> list[Hit]:
    """The first ``k`` of ``hits`` (a routed ranking) joined by the knowledge graph's hits (``graph``, best first,
    each with its ``path``): a graph hit that is among the ``k`` already keeps its place and its path, its matched
    parts (the rows or chunks naming what the walk reached) shown first; up to ``slots`` others take the last
    places, pushing out the lowest hits the graph did not reach. The routed best stays first: the graph adds what
    a question about something tied to the thing it names needs (see :mod:`universalrag.graph.retrieve`).

    A graph hit pushes a hit out only when its fused score (similarity, the walk's share and its bonuses) is at least
    the score of the hit it replaces, the best graph hit against the lowest hit: a unit that neither resembles the
    question nor stands out on the walk does not displace one that resembles it. On the tune split of
    ``benchmarks/routing_e2e.py`` the answering unit stayed in the top 5 for 69.8 % of the questions with this
    condition, 69.6 % without it and 69.8 % without the graph; the second fact of the two-hop questions of
    ``benchmarks/graph.py``'s tune split was shown for 80.5 % with it and 80.6 % without it. Where ``hits`` are
    ranked by reciprocal rank (corpora of different embedding spaces), their scores are far below any similarity and
    the condition always holds."""
    top = list(hits[:k])
    if not graph or k < 1:
        return top
    place = {h.id: i for i, h in enumerate(top)}
    new: list[Hit] = []
    for g in graph:
        i = place.get(g.id)
        if i is None:
            if len(new) < slots:
                new.append(g)
            continue
        shown = {p[0] for p in g.matched_parts}
        parts = (*g.matched_parts, *(p for p in top[i].matched_parts if p[0] not in shown))
        top[i] = replace(top[i], matched_parts=parts, path=g.path)
    room = k - len(top)
    droppable = iter([i for i in range(len(top) - 1, 0, -1) if top[i].path is None])  # the lowest first
    dropped: set[int] = set()
    added: list[Hit] = []
    for g in new:
        if room > 0:
            room -= 1
            added.append(g)
            continue
        i = next(droppable, None)
        if i is None or g.score < top[i].score:
            break  # the graph's next hits score lower still
        dropped.add(i)
        added.append(g)
    return [*(h for i, h in enumerate(top) if i not in dropped), *added]


def distinct(hits: Sequence[Hit]) -> list[Hit]:
    """``hits`` without the text or table units whose text repeats, word for word, the text of one ranked before
    them: a document that is a single passage is also that passage, and the same passage twice is one answer twice.
    Of a whole document and a passage with one text, the passage is kept, in its own place (its id is the one a
    caller's evidence names, its parent the document)."""
    textual = _text_keys(hits)
    finer = {key for h, key in zip(hits, textual, strict=True) if key and h.granularity is not Granularity.DOCUMENT}
    seen: set[str] = set()
    out = []
    for h, key in zip(hits, textual, strict=True):
        if key and (key in seen or h.granularity is Granularity.DOCUMENT and key in finer):
            continue
        if key:
            seen.add(key)
        out.append(h)
    return out


def _text_keys(hits: Sequence[Hit]) -> list[str | None]:
    """For each hit of a text or table corpus, a key equal to another's exactly when their texts are word for word
    the same (``None`` for the others and for empty texts): the first words, and the whole :func:`text_key` only
    for hits whose first words another hit shares. Two texts alike have the same first words, so a text whose first
    words no other hit has is unlike every other; fused rankings hold whole pages, and collapsing the whitespace of
    each took ~1 ms of a routed query's Python time over the 250 Wikipedia pages."""
    heads = [_head(h.content) if h.modality in _TEXTUAL else "" for h in hits]
    shared = {head for head, n in Counter(heads).items() if head and n > 1}
    return [(text_key(h.content) if head in shared else head) or None for h, head in zip(hits, heads, strict=True)]


def comparable(per_corpus: Sequence[Sequence[Hit]], spaces: Sequence[str]) -> bool:
    """Whether the scores of these rankings can be compared directly: every corpus embedded in one space
    (``spaces``: each ranking's embedder) and every score a plain cosine similarity in it (no visual
    weighting, no rank-fused lexical channel, which put scores on other scales)."""
    if len(set(spaces)) > 1:
        return False
    return all(not (h.channel_scores.keys() & {"visual", "lexical", "dense"}) for hits in per_corpus for h in hits)


#: How the hits of several corpora are merged into one ranking (``auto``: by similarity where the corpora share
#: one embedding space, else by reciprocal rank).
FUSIONS: dict[str, Callable[[Sequence[Sequence[Hit]]], list[Hit]] | None] = {
    "auto": None,
    "rrf": rrf,
    "minmax": minmax,
    "similarity": similarity,
}


def fuse(
    per_corpus: Sequence[Sequence[Hit]], *, method: str = "auto", spaces: Sequence[str] | None = None
) -> list[Hit]:
    """One ranking from several corpora's rankings. ``auto`` (default) merges by similarity when the scores
    are :func:`comparable` (``spaces`` names each ranking's embedding space; unknown spaces count as different)
    and by reciprocal rank otherwise; ``rrf``, ``minmax`` and ``similarity`` force one method. A single
    ranking is returned unchanged."""
    if method not in FUSIONS:
        raise ConfigError(f"Unknown fusion {method!r}; choose one of {', '.join(FUSIONS)}.")
    if spaces is not None and len(spaces) != len(per_corpus):
        raise ConfigError(f"fuse() got {len(per_corpus)} rankings but {len(spaces)} embedding spaces; give one each.")
    named: Sequence[str | None] = spaces if spaces is not None else [None] * len(per_corpus)
    kept = [(list(h), space) for h, space in zip(per_corpus, named, strict=True) if h]
    lists = [hits for hits, _ in kept]
    if len(lists) <= 1:
        return lists[0] if lists else []
    if method == "auto":
        known = [space for _, space in kept if space is not None]
        method = "similarity" if len(known) == len(kept) and comparable(lists, known) else "rrf"
    chosen = FUSIONS[method]
    assert chosen is not None
    return distinct(chosen(lists))
