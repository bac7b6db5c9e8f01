"""A question the router sends to a page's text also gets the page's own table (``fusion.with_source_table``):
the rule on hits built by hand, then pages ingested into a real PostgreSQL and searched with the real bundled MiniLM.
Its gain on real questions is measured by ``benchmarks/routing_e2e.py`` over 250 Wikipedia pages."""

from __future__ import annotations

from typing import Any

import pytest
from support.schemas import ingested_rag

from universalrag.fusion import SOURCE_TABLE_MARGIN, with_source_table
from universalrag.pipeline import UniversalRAG
from universalrag.plan import QueryPlan
from universalrag.types import Granularity, Hit, RouteDecision


def hit(uid: str, source: str, score: float, granularity: Granularity = Granularity.PARAGRAPH) -> Hit:
    corpus = "table" if granularity is Granularity.TABLE else "paragraph"
    return Hit(corpus=corpus, id=uid, score=score, content=uid, source_id=source, granularity=granularity)


def table(uid: str, source: str, score: float) -> Hit:
    return hit(uid, source, score, Granularity.TABLE)


# -- the rule -------------------------------------------------------------------------------------------------------
TEXTS = [hit("p1", "page", 0.70), hit("p2", "page", 0.66), hit("q1", "other", 0.64)]


def test_the_best_table_of_the_best_hits_source_takes_the_last_place() -> None:
    tables = [table("t-other", "other", 0.60), table("t-page", "page", 0.55), table("t-page-2", "page", 0.52)]
    assert [h.id for h in with_source_table(TEXTS, tables, k=3)] == ["p1", "p2", "t-page"]
    assert [h.id for h in with_source_table(TEXTS[:2], tables, k=3)] == ["p1", "p2", "t-page"]  # a free place
    assert with_source_table(TEXTS, tables, k=1) == TEXTS[:1]  # the best hit keeps its place


def test_no_table_of_that_source_within_the_margin_changes_nothing() -> None:
    far = 0.70 - SOURCE_TABLE_MARGIN - 0.01
    for tables in ([table("t-other", "other", 0.69)], [table("t-page", "page", far)], []):
        assert with_source_table(TEXTS, tables, k=3) == TEXTS
    present = [*TEXTS[:2], table("t-page", "page", 0.6)]
    assert with_source_table(present, [table("t-page", "page", 0.6)], k=3) == present  # already there


# -- a real store and the bundled MiniLM -----------------------------------------------------------------------------
FILMS = (
    ("1998", "Tide Mill", "Drama"),
    ("2003", "Salt Road", "Thriller"),
    ("2007", "Harbour Lights", "Drama"),
    ("2011", "The Last Ferry", "Comedy"),
)
BIO = (
    "Anna Vey is a film director from the port town of Marlowe.",
    "She studied painting in Glasgow before she turned to cinema, and directs her films with local fishermen.",
    "Critics compare her long takes of the sea to the Scottish documentary movement of the 1930s.",
)
QUESTION = "which film did anna vey direct before harbour lights?"


@pytest.fixture(scope="module")
def director(database_url: str, tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> Any:
    folder = tmp_path_factory.mktemp("director")
    rows = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in FILMS)
    prose = "".join(f"<p>{text}</p>" for text in BIO)
    (folder / "anna_vey.html").write_text(
        f"<html><head><title>Anna Vey</title></head><body><h1>Anna Vey</h1>{prose}<h2>Filmography</h2>"
        f"<table><tr><th>Year</th><th>Film</th><th>Genre</th></tr>{rows}</table></body></html>",
        encoding="utf-8",
    )
    # another page with a table that reads more like the question (films, a director, years): not the page asked about
    (folder / "festival.html").write_text(
        "<html><head><title>Harbour film festival</title></head><body><h1>Harbour film festival</h1><p>The festival "
        "shows new films every spring.</p><table><tr><th>Year</th><th>Film</th><th>Director</th></tr><tr><td>2007</td>"
        "<td>Harbour Lights</td><td>Anna Vey</td></tr><tr><td>2008</td><td>North Light</td><td>Ian Roe</td></tr>"
        "</table>"
        "</body></html>",
        encoding="utf-8",
    )
    with ingested_rag(database_url, minilm, [folder]) as rag:
        yield rag


def _kinds(hits: list[Hit]) -> list[tuple[str, str]]:
    return [(h.corpus, (h.uri or "").rsplit("/", 1)[-1]) for h in hits]


def test_a_question_routed_to_the_pages_text_gets_the_pages_filmography(director: UniversalRAG) -> None:
    texts = director.retrieve(QUESTION, k=2, routes=["paragraph"])
    tables = director.retrieve(QUESTION, k=2, routes=["table"])
    # the premise: the director's page is the best text, and the other page's table reads closer than hers
    assert _kinds(texts) == [("paragraph", "anna_vey.html"), ("paragraph", "festival.html")], texts
    assert _kinds(tables) == [("table", "festival.html"), ("table", "anna_vey.html")], tables
    for k, expected in ((2, [texts[0].id, tables[1].id]), (1, [texts[0].id])):
        plan = QueryPlan(QUESTION, k=k)
        director.searcher.probe(plan, ["paragraph", "table"])  # as evidence routing probes every corpus
        plan.decision = RouteDecision(routes=("paragraph",), scores={"paragraph": 0.9}, router="test")
        assert [h.id for h in director.retrieve(plan)] == expected, (k, director.retrieve(plan))
    # the caller's own routes are searched as they are
    fixed = QueryPlan(QUESTION, k=2, routes=("paragraph",))
    director.searcher.probe(fixed, ["paragraph", "table"])
    assert [h.id for h in director.retrieve(fixed)] == [h.id for h in texts]


def test_the_langgraph_route_node_gives_the_first_corpus_node_what_retrieve_gives(director: UniversalRAG) -> None:
    """The route node stores each chosen corpus's hits in the state; the first corpus's node returns the page's
    table as ``retrieve`` does, without searching again."""
    lg = pytest.importorskip("langchain_universalrag.graph")
    plan = QueryPlan(QUESTION)
    director.searcher.probe(plan, ["paragraph", "table"])
    plan.decision = RouteDecision(routes=("paragraph",), scores={"paragraph": 0.9}, router="test")
    expected = [h.id for h in director.retrieve(plan)]
    assert _kinds(director.retrieve(plan))[-1] == ("table", "anna_vey.html")
    state = {"question": QUESTION, "decision": lg._state_decision(director, plan, plan.decision)}
    documents = lg.make_retrieve_node(director, "paragraph").invoke(state)["documents"]
    assert [d.metadata["id"] for d in documents] == expected
