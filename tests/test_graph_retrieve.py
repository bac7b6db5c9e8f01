"""Retrieval through the knowledge graph, on a small real world: Markdown pages of structures (who designed each,
which firm built it, linked), the firms' pages and a CSV table of engineers, ingested with the bundled MiniLM into a
real PostgreSQL, the graph built by the structural extractor. "Where was the designer of the Varnholt Bridge born?"
needs the bridge's page and the engineers table's row of Ilse Kadrow, which shares only her name with the page."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from universalrag.errors import InvalidInputError
from universalrag.evidence import hit_content, hit_text
from universalrag.fusion import with_graph
from universalrag.graph.walk import MAX_HOPS, WalkLimits, graph_tables, name_keys, walk_select, walk_statement
from universalrag.types import GraphPath, Hit

STRUCTURES = [
    ("Varnholt Bridge", "steel arch bridge", "Quellmark", "Ilse Kadrow", "Halvorsen Works", 1921),
    ("Brennlid Tower", "granite tower", "Ostervik", "Tomas Ekrin", "Sorgan & Pell", 1898),
    ("Dromol Dam", "concrete dam", "Lunholm", "Maren Solvik", "Halvorsen Works", 1934),
    ("Kesmir Viaduct", "stone viaduct", "Quellmark", "Oskar Talvo", "Sorgan & Pell", 1907),
    ("Ulgard Lighthouse", "cast iron lighthouse", "Ostervik", "Greta Morrow", "Vendel Ironworks", 1889),
    ("Tavrin Station", "timber station", "Lunholm", "Jorin Haldt", "Vendel Ironworks", 1952),
]
ENGINEERS = [
    ("Ilse Kadrow", "Ostermark", 1879, "Royal Academy of Works"),
    ("Tomas Ekrin", "Brennvik", 1851, "Harbour School of Building"),
    ("Maren Solvik", "Gardholm", 1890, "University of the Vale"),
    ("Oskar Talvo", "Ostervik", 1866, "Royal Academy of Works"),
    ("Greta Morrow", "Lunholm", 1848, "Brennvik Polytechnic"),
    ("Jorin Haldt", "Quellmark", 1911, "Northern Institute of Engineering"),
]
FIRMS = [
    ("Halvorsen Works", "Brennvik", 1888),
    ("Sorgan & Pell", "Gardholm", 1870),
    ("Vendel Ironworks", "Mirstad", 1861),
]
TWO_HOP = "Where was the designer of the Varnholt Bridge born?"
SINGLE = "Who designed the Varnholt Bridge?"


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")


def write_world(root: Path) -> Path:
    for sub in ("structures", "firms", "tables"):
        (root / sub).mkdir(parents=True)
    for name, kind, town, designer, firm, year in STRUCTURES:
        (root / "structures" / f"{_slug(name)}.md").write_text(
            f"# {name}\n\nThe {name} is a {kind} in {town}. It was designed by {designer} and built by "
            f"[{firm}](../firms/{_slug(firm)}.md); work on it was completed in {year}.\n",
            encoding="utf-8",
        )
    for firm, town, year in FIRMS:
        (root / "firms" / f"{_slug(firm)}.md").write_text(
            f"# {firm}\n\n{firm} is a construction firm founded in {year}. Its head office is in {town}.\n",
            encoding="utf-8",
        )
    rows = "\n".join(f"{n},{b},{y},{u}" for n, b, y, u in ENGINEERS)
    (root / "tables" / "engineers.csv").write_text(f"Engineer,Birthplace,Born,University\n{rows}\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def world(database_url: str, minilm: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The world ingested once, its graph built; ``rag`` walks the graph, ``plain`` (``walk_graph=False``) does not."""
    from universalrag.config import Settings
    from universalrag.graph.store import GraphStore
    from universalrag.pipeline import UniversalRAG

    settings = Settings(database_url=database_url, schema="g_" + uuid.uuid4().hex[:12], query_vectors=0)
    common: dict[str, Any] = {"settings": settings, "embedder": minilm, "generator": None, "visual_encoder": None}
    rag = UniversalRAG(log_decisions=False, **common)
    report = rag.ingest([write_world(tmp_path_factory.mktemp("world"))])  # the structural graph, by default
    assert report.ok, report.failed
    assert GraphStore(rag.store).stats().mentions > 0
    plain = UniversalRAG(store=rag.store, log_decisions=False, walk_graph=False, **common)
    yield {"rag": rag, "plain": plain}
    plain.close()
    rag.store.downgrade("base")
    rag.close()


def shown(hits: list[Hit], *needs: str) -> Hit | None:
    """The first hit whose text, or one of whose first three matched parts, holds all of ``needs``."""
    for hit in hits[:5]:
        texts = [t for _, t, _ in hit.matched_parts[:3]] if hit.matched_parts else [hit.content]
        if any(all(n in t for n in needs) for t in texts):
            return hit
    return None


def test_a_two_hop_question_is_shown_the_row_a_name_links_to(world: dict[str, Any]) -> None:
    hits = world["rag"].retrieve(TWO_HOP)
    assert shown(hits, "Varnholt Bridge", "Ilse Kadrow") is not None, "the first fact is kept"
    row = shown(hits, "Ilse Kadrow", "Ostermark")
    assert row is not None, [(h.corpus, h.content[:60], h.matched_parts[:2]) for h in hits]
    assert row.corpus == "table"
    # without the graph the row is out of reach: the table shares no word with the question but its headers
    assert shown(world["plain"].retrieve(TWO_HOP), "Ilse Kadrow", "Ostermark") is None


def test_the_hit_says_which_path_brought_it(world: dict[str, Any]) -> None:
    row = shown(world["rag"].retrieve(TWO_HOP), "Ilse Kadrow", "Ostermark")
    assert row is not None and row.path is not None
    assert row.path.seed == "Varnholt Bridge"
    assert row.path.entity == "Ilse Kadrow"
    assert row.path.hops == 1 and row.path.relation
    as_dict = row.to_dict()["path"]
    assert as_dict["seed"] == "Varnholt Bridge" and as_dict["hops"] == 1
    # a model is told the path and what the graph knows of the entity, beside the rows
    text = hit_text(row)
    assert text.startswith("Reached through the knowledge graph: Varnholt Bridge -[")
    assert "Ilse Kadrow: " in text and "Ostermark" in text.split("Matched rows")[0]
    assert hit_content(text, row) == row.content


def test_the_router_walks_for_a_two_hop_question_and_not_for_a_single_fact(world: dict[str, Any]) -> None:
    rag = world["rag"]
    two = rag.plan(TWO_HOP)
    rag.route(two)
    assert two.graph_features["seeds"] >= 1 and two.graph_hits
    one = rag.plan(SINGLE)
    rag.route(one)
    assert one.graph_features["seeds"] >= 1, "the bridge is named, and found"
    assert one.graph_features["residual"] == 0 and one.graph_features["relational"] == 0
    assert one.graph_hits == ()
    single = rag.retrieve(SINGLE)
    assert single == world["plain"].retrieve(SINGLE), "a single-fact question is retrieved as without the graph"
    assert shown(single, "Varnholt Bridge", "Ilse Kadrow") is not None


def test_the_walk_is_bounded(world: dict[str, Any]) -> None:
    store = world["rag"].store
    tables = graph_tables(store.schema)
    keys = name_keys(TWO_HOP)
    with store.transaction("walk") as conn:
        only_seed = conn.execute(walk_statement(tables, keys, WalkLimits(hops=0))).all()
        narrow = conn.execute(walk_statement(tables, keys, WalkLimits(hops=2, fan_out=1, units=3))).all()
        wide = conn.execute(walk_statement(tables, keys, WalkLimits(hops=2, fan_out=50, units=200))).all()
    assert only_seed and all(r.hops == 0 and r.seed == "Varnholt Bridge" for r in only_seed)
    assert 1 <= len(narrow) <= 3
    assert len(wide) > len(narrow) and max(r.hops for r in wide) <= 2
    with pytest.raises(InvalidInputError, match="hops"):
        WalkLimits(hops=MAX_HOPS + 1)
    with pytest.raises(InvalidInputError, match="fan_out"):
        WalkLimits(fan_out=0)
    assert len(name_keys("Bridge " * 10_000)) <= 96


def test_nothing_changes_without_a_graph(database_url: str, minilm: Any, tmp_path: Path) -> None:
    """No graph built (``UNIVERSALRAG_GRAPH=off`` at ingestion): the same hits as ``walk_graph=False``, and, once the
    schema is known to hold none, no statement about the graph per question."""
    from universalrag.config import Settings
    from universalrag.pipeline import UniversalRAG

    schema = "g_" + uuid.uuid4().hex[:12]
    settings = Settings(database_url=database_url, schema=schema, query_vectors=0, graph="off")
    common: dict[str, Any] = {"settings": settings, "embedder": minilm, "generator": None, "visual_encoder": None}
    rag = UniversalRAG(log_decisions=False, **common)
    plain = UniversalRAG(store=rag.store, log_decisions=False, walk_graph=False, **common)
    try:
        assert rag.ingest([write_world(tmp_path / "world")]).ok
        statements: list[str] = []
        sa.event.listen(rag.store.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
        for pipeline in (
            rag,
            plain,
        ):  # the first question reads the registry, sizes, combiner; and that there is no graph
            pipeline.retrieve(TWO_HOP)
        statements.clear()
        hits = rag.retrieve(TWO_HOP)
        assert statements and not [s for s in statements if "graph_" in s]
        assert all(h.path is None for h in hits)
        assert rag.retrieve(TWO_HOP) == plain.retrieve(TWO_HOP)
    finally:
        rag.store.downgrade("base")
        plain.close()
        rag.close()


def _hit(
    id_: str, *, parts: tuple[tuple[int, str, float], ...] = (), path: GraphPath | None = None, score: float = 0.5
) -> Hit:
    return Hit(corpus="c", id=id_, score=score, content=id_, matched_parts=parts, path=path)


def test_graph_hits_take_the_last_places_and_keep_the_routed_best() -> None:
    routed = [_hit(str(i)) for i in range(5)]
    path = GraphPath(seed="A", entity="B", relation="co_occurs", hops=1)
    graph = [_hit("g1", path=path), _hit("g2", path=path), _hit("g3", path=path)]
    merged = with_graph(routed, graph, k=5)
    assert [h.id for h in merged] == ["0", "1", "2", "g1", "g2"]
    # a graph hit already ranked keeps its place, its graph rows shown first; no routed hit is pushed out for it
    table = _hit("3", parts=((7, "row seven", 0.4), (1, "row one", 0.6)))
    found = _hit("3", parts=((1, "row one", 0.2),), path=path)
    merged = with_graph([*routed[:3], table, routed[4]], [found, graph[0]], k=5)
    assert [h.id for h in merged] == ["0", "1", "2", "3", "g1"]
    assert [p[0] for p in merged[3].matched_parts] == [1, 7] and merged[3].path == path
    assert with_graph(routed, [], k=5) == routed
    assert [h.id for h in with_graph(routed[:2], graph, k=5)] == ["0", "1", "g1", "g2"]


def test_a_graph_hit_scoring_below_the_hit_it_would_push_out_stays_out() -> None:
    """The best graph hit is weighed against the lowest routed hit, the next against the next lowest: a graph hit
    takes a place only when its fused score is at least the score of the hit it pushes out."""
    routed = [_hit(str(i), score=s) for i, s in enumerate((0.8, 0.7, 0.6, 0.5, 0.4))]
    path = GraphPath(seed="A", entity="B", relation="co_occurs", hops=1)
    graph = [_hit("g1", score=0.45, path=path), _hit("g2", score=0.45, path=path)]
    assert [h.id for h in with_graph(routed, graph, k=5)] == ["0", "1", "2", "3", "g1"], "0.45 < 0.5: g2 stays out"
    assert [h.id for h in with_graph(routed, graph[:1], k=5)] == ["0", "1", "2", "3", "g1"]
    low = [_hit("g0", score=0.1, path=path)]
    assert with_graph(routed, low, k=5) == routed
    # with room left nothing is pushed out, and the graph's hits join whatever they score
    assert [h.id for h in with_graph(routed[:3], low, k=5)] == ["0", "1", "2", "g0"]


def test_a_single_word_starts_a_walk_only_when_typed_as_a_name() -> None:
    """A word on its own is a name where its capitals say so; common words the graph holds as names (a table's
    column "Season") start no walk from a question typed in lower case, and a name of several words is found however
    it is typed."""
    keys = name_keys("who was the last celebrity guest in the 2010 season?")
    assert "season" not in keys and "celebrity" not in keys and "guest" not in keys
    assert "2010 season" in keys and "celebrity guest" in keys
    assert "finland" in name_keys("How many matches did Finland lose at home?")
    assert "season" not in name_keys("Season 3: who won it?"), "a sentence's first word is capitalised by grammar"
    assert "won" not in name_keys("The team lost. Won the cup later?")
    assert "nasa" in name_keys("NASA launched what in 1969?") and "iphone" in name_keys("when was the iPhone sold?")
    assert "varnholt bridge" in name_keys("where was the designer of the varnholt bridge born?")
    assert "chelsea" in name_keys("Who is Chelsea's manager?"), "a possessive's name, typed as a name"
    assert "القاهرة" in name_keys("أين تقع القاهرة؟"), "a script without capitals: looked up as before"
    assert "2010" not in name_keys("who won in 2010?")


def test_the_langgraph_retrieve_node_gets_the_graph_hits(world: dict[str, Any]) -> None:
    """The LangGraph route and retrieve nodes join the graph's hits as ``retrieve`` does: the second fact (the
    engineers table's row of the bridge's designer) is among the first route's documents, with its path."""
    pytest.importorskip("langgraph")
    from langchain_universalrag.graph import make_retrieve_node, make_route_node

    rag = world["rag"]
    decision = make_route_node(rag).invoke({"question": TWO_HOP})["decision"]
    assert decision["graph_hits"], "routing chose the graph's hits"
    first = decision["routes"][0]
    state = {"question": TWO_HOP, "decision": decision}
    documents = make_retrieve_node(rag, first).invoke(state)["documents"]
    row = shown(rag.retrieve(TWO_HOP), "Ilse Kadrow", "Ostermark")
    assert row is not None and row.id in {d.id for d in documents}, "the hit the facade shows the row by"
    assert any("Ilse Kadrow" in d.page_content and "Ostermark" in d.page_content for d in documents), [
        d.page_content[:80] for d in documents
    ]
    # without the graph's hits in the decision, the node's documents lack the row
    del decision["graph_hits"]
    plain = make_retrieve_node(rag, first).invoke({"question": TWO_HOP, "decision": decision})["documents"]
    assert not any("Ilse Kadrow" in d.page_content and "Ostermark" in d.page_content for d in plain)


def test_a_possessive_names_the_entity(world: dict[str, Any]) -> None:
    """ "the Varnholt Bridge's designer" (or ’s) starts the walk at the bridge, as "the designer of the Varnholt
    Bridge" does; a word that only looks possessive keeps its own key."""
    assert "varnholt bridge" in name_keys("Where was the Varnholt Bridge's designer born?")
    assert "varnholt bridge" in name_keys("Where was the Varnholt Bridge’s designer born?")
    assert "varnholt bridge" not in name_keys("Where was the Varnholt Bridges designer born?")
    assert "it" not in name_keys("it's"), "a stop word is no name, possessive or not"
    graph = world["rag"].graph_retrieval
    for question in (
        "Where was the Varnholt Bridge's designer born?",
        "Where was the Varnholt Bridge’s designer born?",
    ):
        reached = graph.walk(world["rag"].store, question)
        assert any(r.seed == "Varnholt Bridge" for r in reached), question
        assert any(r.entity == "Ilse Kadrow" and r.hops == 1 for r in reached), question


def test_a_reached_unit_of_a_kind_the_probes_lack_ranks_higher(world: dict[str, Any]) -> None:
    """The engineers table, reached from the bridge's page over its designer, adds a kind of evidence the pages the
    question found lack: it ranks above the reached pages by the named bonus, which a table already shown lacks."""
    from universalrag.graph.retrieve import NEW_KIND_BONUS, shown_modalities
    from universalrag.types import Modality

    rag = world["rag"]
    plan = rag.plan(TWO_HOP)
    rag.route(plan)
    modality = {n: s.modality for n, s in rag.store.corpora().items()}
    assert Modality.TABLE not in shown_modalities(plan.probes, modality, k=2), "the pages come first"
    assert shown_modalities({"table": plan.probes["table"]}, modality, k=2) == {Modality.TABLE}
    reached = rag.graph_retrieval.walk(rag.store, TWO_HOP)
    vector = [float(x) for x in plan.embedding(rag.embedder)]
    text_shown = rag.graph_retrieval.hits(rag.store, TWO_HOP, vector, reached, shown={Modality.TEXT})
    table_shown = rag.graph_retrieval.hits(rag.store, TWO_HOP, vector, reached, shown={Modality.TEXT, Modality.TABLE})
    row = next(h for h in text_shown if h.corpus == "table")
    same = next(h for h in table_shown if h.id == row.id)
    assert row.score == pytest.approx(same.score + NEW_KIND_BONUS)
    page = next(h for h in text_shown if h.corpus != "table" and h.path is not None and h.path.hops > 0)
    assert page.score == pytest.approx(next(h for h in table_shown if h.id == page.id).score), "a page: no bonus"
    assert text_shown.index(row) < text_shown.index(page)


def test_graph_table_descriptions_are_kept_per_schema() -> None:
    """One description per schema (and vector width), reused by every walk: a fresh one misses SQLAlchemy's cache of
    compiled statements."""
    first, again, other = graph_tables("kb_one"), graph_tables("kb_one"), graph_tables("kb_two")
    assert first is again
    assert other is not first and other.entities.schema == "kb_two" and first.entities.schema == "kb_one"
    assert graph_tables("kb_one", 384) is not first, "the vector width types other columns"
    assert graph_tables("kb_one", 384).entities.c.embedding.type.dim == 384


def test_a_kept_walk_statement_walks_as_a_new_one(world: dict[str, Any]) -> None:
    """The walk statement is built once per tables and limits, its keys given when it runs: the same rows as a
    statement built with the keys, for different questions in turn."""
    store = world["rag"].store
    tables, limits = graph_tables(store.schema), WalkLimits(hops=2)
    assert walk_select(tables, limits) is walk_select(tables, WalkLimits(hops=2))
    with store.transaction("walk") as conn:
        for question in (TWO_HOP, SINGLE, "Which firm built the Dromol Dam?"):
            keys = name_keys(question)
            kept = conn.execute(walk_select(tables, limits), {"keys": keys}).all()
            built = conn.execute(walk_statement(tables, keys, limits)).all()
            assert kept and kept == built, question


def test_units_read_ahead_give_the_same_hits_as_read_after_the_probes(world: dict[str, Any]) -> None:
    """The walk reads its units' rows in the worker, before the probes are back: the hits made from them are those
    made by reading after the probes, and routing gives them."""
    from universalrag.graph.retrieve import Walked, residual_terms, shown_modalities

    rag = world["rag"]
    graph = rag.graph_retrieval
    plan = rag.plan(TWO_HOP)
    rag.route(plan)
    vector = [float(x) for x in plan.embedding(rag.embedder)]
    walked = graph.walk_ahead(rag.store, TWO_HOP, vector)
    assert walked.rows, "a walk reaching units over a relation reads them ahead"
    assert walked.reached == graph.walk(rag.store, TWO_HOP)
    modality = {n: s.modality for n, s in rag.store.corpora().items()}
    wanted = residual_terms(TWO_HOP, walked.reached, plan.probes)
    shown_kinds = shown_modalities(plan.probes, modality, k=plan.k)
    ahead = graph.hits(rag.store, TWO_HOP, vector, walked.reached, wanted=wanted, shown=shown_kinds, rows=walked.rows)
    after = graph.hits(rag.store, TWO_HOP, vector, walked.reached, wanted=wanted, shown=shown_kinds)
    assert ahead and ahead == after
    assert list(plan.graph_hits) == after, "routing (the walk in the pool, read ahead) gives them too"
    assert any(h.corpus == "table" and h.matched_parts for h in ahead)
    # nothing is read ahead for a walk that reached only the names it started from, or nothing
    assert not graph.read_ahead([r for r in walked.reached if r.hops == 0])
    assert graph.walk_ahead(rag.store, "hello there", vector) == Walked([])


def test_parts_naming_more_of_the_reached_names_come_first(world: dict[str, Any]) -> None:
    """A table's rows naming a reached entity: those naming more of the names first, then the earlier name."""
    from universalrag.graph.units import read_parts

    rag = world["rag"]
    engineers = next(r.unit_id for r in rag.graph_retrieval.walk(rag.store, TWO_HOP) if r.corpus == "table")
    vector = [float(x) for x in rag.embedder.embed_query("engineers")]

    def rows(*names: str) -> list[str]:
        parts = read_parts(rag.store, {"table": {engineers: list(names)}}, vector, per_unit=3)
        return [text for _, text, _ in parts.get(("table", engineers), ())]

    # Ilse Kadrow's row names both, Oskar Talvo's only the academy
    assert [("Ilse Kadrow" in t, "Oskar Talvo" in t) for t in rows("Royal Academy of Works", "Ilse Kadrow")] == [
        (True, False),
        (False, True),
    ]
    # Oskar Talvo's row names both (Ostervik is his birthplace), Ilse Kadrow's one, the second
    assert [("Oskar Talvo" in t, "Ilse Kadrow" in t) for t in rows("Ostervik", "Royal Academy of Works")] == [
        (True, False),
        (False, True),
    ]
    assert rows("Nobody Named So") == []
