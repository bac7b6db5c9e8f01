"""Tables of the pages a question is about rank first: a table corpus searched beside the whole texts of
the same sources is ranked by their evidence too (``fusion.by_source``): the rule on hits built by hand, then on
pages ingested into a real PostgreSQL with the real bundled MiniLM. Its gain on real questions is measured by
``benchmarks/routing_e2e.py`` over 250 Wikipedia pages (a test's few pages hold too few rival tables)."""

from __future__ import annotations

from typing import Any

import pytest
from support.schemas import ingested_rag

from universalrag.errors import ConfigError
from universalrag.fusion import SOURCE_DEPTH, SOURCE_WEIGHT, by_source
from universalrag.pipeline import UniversalRAG
from universalrag.plan import QueryPlan
from universalrag.types import Granularity, Hit


def part(uid: str, source: str, score: float, **channels: float) -> Hit:
    return Hit(
        corpus="table",
        id=uid,
        score=score,
        content=uid,
        source_id=source,
        granularity=Granularity.TABLE,
        channel_scores=channels,
    )


def whole(source: str, score: float) -> Hit:
    return Hit(
        corpus="document",
        id="doc-" + source,
        score=score,
        content=source,
        source_id=source,
        granularity=Granularity.DOCUMENT,
    )


# -- the ranking rule ---------------------------------------------------------------------------------------------
def test_a_part_of_the_best_whole_text_passes_a_closer_part_of_a_text_far_behind() -> None:
    parts = [part("other-table", "other", 0.60), part("page-table", "page", 0.57), part("third", "third", 0.55)]
    wholes = [whole("page", 0.70), whole("third", 0.66), whole("other", 0.35)]
    ranked = by_source(parts, wholes, k=2)
    # "other" falls 0.35 behind the best whole text: 0.60 - 0.2 * 0.35 = 0.53, below 0.57 and 0.55 - 0.2 * 0.04
    assert [h.id for h in ranked] == ["page-table", "third"]
    assert [h.score for h in ranked] == [0.57, 0.55]  # each keeps its own similarity


def test_a_part_whose_source_no_whole_text_found_counts_below_the_last_of_them() -> None:
    parts = [part("unseen", "unseen", 0.60), part("seen", "seen", 0.595)]  # 0.60 - 0.2 * 0.05 = 0.59
    assert [h.id for h in by_source(parts, [whole("seen", 0.5)], k=2)] == ["seen", "unseen"]


def test_parts_sharing_no_source_with_the_whole_texts_or_weight_zero_come_back_as_searched() -> None:
    parts = [part("a", "a", 0.6), part("b", "b", 0.5), part("c", "c", 0.4)]
    assert by_source(parts, [whole("x", 0.9)], k=2) == parts[:2]
    assert by_source(parts, [whole("c", 0.9), whole("a", 0.1)], k=2, weight=0.0) == parts[:2]
    # a: 0.6 - 0.2 * 0.8 = 0.44, c: 0.4, b (no whole text found): 0.5 - 0.2 * (0.9 - 0.05) = 0.33
    assert [h.id for h in by_source(parts, [whole("c", 0.9), whole("a", 0.1)], k=2)] == ["a", "c"]


def test_a_name_few_candidates_hold_keeps_its_place_and_one_many_hold_does_not() -> None:
    named = part("named", "far", 0.40, named=1.0)
    wholes = [whole("near", 0.8), whole("far", 0.3)]
    few = [named, part("near-1", "near", 0.5)]
    assert by_source(few, wholes, k=2)[0].id == "named"
    many = [part(f"n{i}", "far", 0.45 - i / 100, named=1.0) for i in range(3)] + [part("near-1", "near", 0.44)]
    assert by_source(many, wholes, k=2)[0].id == "near-1"  # three named candidates for k=2: they tell nothing apart


def test_the_weight_is_checked() -> None:
    with pytest.raises(ConfigError, match="source_weight"):
        UniversalRAG(source_weight=-0.1)
    assert 0 < SOURCE_WEIGHT < 1


# -- a real store and the bundled MiniLM -------------------------------------------------------------------------
ROWS = (
    ("Kestrel", "John Brown", "June 1935"),
    ("Merlin", "Yarrow", "July 1935"),
    ("Osprey", "Thornycroft", "August 1935"),
)
#: Two pages holding one table of the same rows: only the prose says which class the Royal Navy scrapped in 1946.
PAGES = {
    "kestrel.html": (
        "Kestrel class",
        (
            "The Kestrel class was a class of three destroyers of the Royal Navy. The Royal "
            "Navy scrapped all the ships of the Kestrel class in 1946, after the Second World "
            "War."
        ),
    ),
    "osprey.html": (
        "Osprey class",
        (
            "The Osprey class was a class of three destroyers of the Royal Navy. The ships of "
            "the Osprey class were sold to the Greek navy in 1952 and served there until 1960."
        ),
    ),
}
QUESTION = "which ships did the Royal Navy scrap in 1946?"


@pytest.fixture(scope="module")
def classes(database_url: str, tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> Any:
    folder = tmp_path_factory.mktemp("classes")
    header = "".join(f"<th>{h}</th>" for h in ("Ship", "Builder", "Launched"))
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in ROWS)
    for name, (title, prose) in PAGES.items():
        (folder / name).write_text(
            f"<html><head><title>{title}</title></head><body><h1>{title}</h1><p>{prose}</p>"
            f"<table><tr>{header}</tr>{body}</table></body></html>",
            encoding="utf-8",
        )
    with ingested_rag(database_url, minilm, [folder]) as rag:
        yield rag


def _page(hit: Hit) -> str:
    return (hit.uri or "").rsplit("/", 1)[-1]


def test_the_table_of_the_page_the_question_is_about_comes_first(classes: UniversalRAG) -> None:
    plain = UniversalRAG(
        settings=classes.settings,
        store=classes.store,
        embedder=classes.embedder,
        generator=None,
        visual_encoder=None,
        log_decisions=False,
        source_weight=0.0,
    )
    tables = plain.retrieve(QUESTION, k=2, routes=["table"])
    pages = plain.retrieve(QUESTION, k=2, routes=["document"])
    # the premise: the tables alone lean (a little) to the wrong class, the whole pages clearly to the right one
    assert [_page(h) for h in tables] == ["osprey.html", "kestrel.html"], tables
    assert _page(pages[0]) == "kestrel.html" and pages[0].score - pages[1].score > 0.03, pages
    for rag, expected in ((classes, "kestrel.html"), (plain, "osprey.html")):
        # the whole pages probed (as routing does), then the tables retrieved for the same request
        plan = QueryPlan(QUESTION, k=1, routes=("table",))
        rag.searcher.probe(plan, ["document"])
        hits = rag.retrieve(plan)
        assert [_page(h) for h in hits] == [expected], (rag.source_weight, hits)
        assert hits[0].score == next(h.score for h in tables if _page(h) == expected)  # its own similarity


def test_a_deeper_search_returns_first_what_a_search_for_the_head_returns(classes: UniversalRAG) -> None:
    from universalrag.exact_terms import exact_terms
    from universalrag.store.corpus_search import CorpusQuery

    store = classes.store
    for query in (QUESTION, "ships launched in 1935", "Kestrel", "who built Merlin?"):
        vector = classes.embedder.embed_query(query)
        for corpus in store.nonempty():
            terms = exact_terms(query)
            head = store.search_many([CorpusQuery(corpus, vector, k=2, exact_terms=terms)])[0]
            deep = store.search_many([CorpusQuery(corpus, vector, k=30, exact_terms=terms, head=2)])[0]
            assert [h.id for h in deep[:2]] == [h.id for h in head], (query, corpus)
            assert len(deep) >= len(head)


def test_routing_probes_the_tables_as_deep_as_retrieval_wants_them_and_searches_each_corpus_once(
    classes: UniversalRAG,
) -> None:
    searched: list[tuple[str, int, int | None]] = []
    original = classes.store.search_many

    def counting(queries: Any) -> Any:
        searched.extend((q.corpus, q.k, q.head) for q in queries)
        return original(queries)

    classes.store.search_many = counting  # type: ignore[method-assign]
    try:
        plan = classes.plan(QUESTION, k=3)
        classes.retrieve(plan)
    finally:
        del classes.store.search_many
    assert sorted(c for c, _, _ in searched) == sorted(classes.store.nonempty()), searched  # each corpus once
    depth = {c: (k, head) for c, k, head in searched}
    assert depth["table"] == (SOURCE_DEPTH, 5), depth
    assert depth["paragraph"] == depth["document"] == (5, 5), depth  # passages carry their own prose
    assert plan.probed("table", SOURCE_DEPTH) is not None  # the probe serves retrieval: no second search
    hybrid = classes.plan(QUESTION, k=3, hybrid=True)  # rank-fused scores are not re-ranked: nothing to fetch for
    assert classes.searcher.depth(hybrid, "table", 5, classes.store.nonempty()) == 5
