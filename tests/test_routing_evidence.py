"""Evidence-aware routing on real ingested content, the real bundled MiniLM and the shipped router and combiner:
questions the trained router alone misroutes, as regression tests, and a request embeds the query once and searches each
corpus once."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.shared_data import WIKITABLES, WIKITABLES_PAGES, WIKITABLES_QUESTIONS, skip_unless

from universalrag.config import Settings
from universalrag.errors import ConfigError
from universalrag.pipeline import UniversalRAG

WITH_Q = "How does the with statement call __enter__ and __exit__ on a context manager?"
SATURN_Q = "How many moons does Saturn have according to the planets table?"

REFERENCE = {
    "compound_statements.txt": """The with statement

The with statement wraps the execution of a block with methods defined by a context manager. Executing it
evaluates the expression to obtain the context manager, loads the manager's __enter__() and __exit__() methods,
and calls __enter__(). If a target was given, the value returned by __enter__() is bound to it. Then the suite
runs. When the suite finishes, normally or because of an exception, __exit__() is called; if the suite raised,
the type, value and traceback are passed to __exit__(), and a true return value suppresses the exception.
Several context managers in one with statement behave as if the statements were nested.

The try statement

The try statement specifies exception handlers and cleanup code for a group of statements. The except clauses
are tried in order until one matches the raised exception; a finally clause always runs on the way out, even
when a return, break or continue statement leaves the try suite.

The for statement

The for statement iterates over the elements of an iterable. The iterable is evaluated once; an iterator is
created and the suite runs once for each item it provides, in order. An else clause runs when the loop ends
without a break statement.
""",
    "sequence_types.txt": """Sequence types

Lists, tuples and range objects are the three basic sequence types. They support membership tests with in,
concatenation with +, repetition with *, indexing, slicing, len(), min() and max(). Lists are mutable: items can
be replaced, appended, inserted and removed in place, and lists can be sorted in place with sort(). Tuples are
immutable and are often used to hold heterogeneous data; a range represents an immutable sequence of numbers and
takes the same small amount of memory whatever the size of the range it represents.
""",
    "data_model.txt": """The data model

Every object has an identity, a type and a value. Special methods such as __len__, __getitem__ and __iter__ let
classes take part in the built-in operations: a class that defines __len__ and __getitem__ can be used as a
sequence. Attribute access can be customised with __getattr__ and __getattribute__, and descriptors define
__get__, __set__ and __delete__ to manage attributes of other classes.
""",
}

PLANETS = """planet,diameter_km,moons,day_length_hours,distance_from_sun_million_km
Mercury,4879,0,4222.6,57.9
Venus,12104,0,2802.0,108.2
Earth,12756,1,24.0,149.6
Mars,6792,2,24.7,228.0
Jupiter,142984,95,9.9,778.5
Saturn,120536,146,10.7,1432.0
Uranus,51118,28,17.2,2867.0
Neptune,49528,16,16.1,4515.0
"""


def write_reference(root: Path) -> Path:
    """A folder holding Python-reference-like texts and a planets table (no paragraph about Saturn)."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in REFERENCE.items():
        (root / name).write_text(text, encoding="utf-8")
    (root / "planets.csv").write_text(PLANETS, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def ref_rag(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UniversalRAG]:
    """Evidence-aware routing (the defaults) over the reference texts and the planets table."""
    import uuid

    from universalrag.embed import bundled_minilm

    rag = UniversalRAG(
        settings=Settings(database_url=database_url, schema="ev_" + uuid.uuid4().hex[:12]),
        embedder=bundled_minilm(),
        generator=None,
        visual_encoder=None,
    )
    assert rag.ingest([write_reference(tmp_path_factory.mktemp("ref") / "reference")]).ok
    yield rag
    rag.store.downgrade("base")
    rag.close()


# -- questions the trained router alone misroutes ----------------------------------------------------------------------
def test_a_language_reference_question_is_not_routed_to_none(ref_rag: UniversalRAG) -> None:
    decision = ref_rag.route(WITH_Q)
    assert decision.prior["none"] > 0.5  # the trained router alone says `none` (0.94-0.99 for such questions)
    assert decision.primary in {"paragraph", "document"}, decision.to_dict()
    assert decision.evidence[decision.primary]["lexical"] > 0.5
    hits = ref_rag.retrieve(WITH_Q, k=3)
    assert "__enter__" in hits[0].content or any("__enter__" in t for _, t, _ in hits[0].matched_parts)


def test_the_langchain_retriever_returns_the_passage(ref_rag: UniversalRAG) -> None:
    from langchain_universalrag import UniversalRAGRetriever

    docs = UniversalRAGRetriever(rag=ref_rag, k=3).invoke(WITH_Q)
    assert docs and "__exit__" in docs[0].page_content
    assert docs[0].metadata["routes"][0] in {"paragraph", "document"}


def test_a_table_question_goes_to_the_table_without_a_paragraph_about_it(ref_rag: UniversalRAG) -> None:
    decision = ref_rag.route(SATURN_Q)
    assert decision.primary == "table", decision.to_dict()
    hits = ref_rag.retrieve(SATURN_Q, k=3)
    assert hits[0].corpus == "table" and "Saturn" in hits[0].matched_parts[0][1]


def test_the_langgraph_graph_answers_from_the_table(ref_rag: UniversalRAG) -> None:
    from langchain_core.language_models import FakeListChatModel

    from langchain_universalrag.graph import build_graph

    state = build_graph(ref_rag, FakeListChatModel(responses=["146 [1]"])).invoke({"question": SATURN_Q})
    assert state["decision"]["routes"][0] == "table"
    top = state["documents"][0]
    assert top.metadata["corpus"] == "table" and "Saturn" in top.metadata["matched_parts"][0]["text"]
    assert state["answer"] == "146 [1]"


def test_the_llamaindex_query_engine_answers_from_the_table(ref_rag: UniversalRAG) -> None:
    from llama_index.core.llms import MockLLM

    from llama_index.retrievers.universalrag import UniversalRAGQueryEngine

    response = UniversalRAGQueryEngine(rag=ref_rag, llm=MockLLM()).query(SATURN_Q)
    assert response.metadata["routes"][0] == "table"
    assert response.source_nodes[0].node.metadata["corpus"] == "table"
    assert "Saturn" in str(response) and "146" in str(response)  # MockLLM echoes the prompt: the table is in it


# -- `none` only when nothing answers ------------------------------------------------------------------------
@pytest.mark.parametrize("question", ["What is 17 times 3?", "hello! how are you doing today?"])
def test_real_none_questions_skip_retrieval_in_query_but_not_in_agent_tools(
    ref_rag: UniversalRAG, question: str
) -> None:
    from langchain_universalrag import UniversalRAGRetriever

    answer = ref_rag.query(question)
    assert answer.decision.routes == ("none",) and answer.hits == ()
    assert ref_rag.retrieve(question, allow_none=True) == []
    assert ref_rag.retrieve(question)  # a retrieval call searches unless told that `none` may mean nothing
    docs = UniversalRAGRetriever(rag=ref_rag, k=2).invoke(question)
    assert docs  # an agent's tool never comes back empty because of `none`
    decision, _ = ref_rag.search(question)
    assert decision.fallback and decision.scores["none"] > 0.5
    assert UniversalRAGRetriever(rag=ref_rag, k=2, allow_none=True).invoke(question) == []


# Not from the benchmark's questions nor from the combiner's training file: chit-chat, questions to the assistant,
# arithmetic, time and unit arithmetic — asked of a store that holds real texts and a table full of numbers.
NO_RETRIEVAL_QUESTIONS = [
    "alright, talk soon",
    "what's the weather like",
    "what's 64 divided by 8?",
    "how many hours are there from 8:15 to 13:45",
    "is 2100 a leap year?",
    "good evening! how has your day been?",
    "convert 12 inches to centimetres",
]
# Questions about what that store holds, terse, chatty and with numbers ("can a tuple be changed..." shares no
# content word with the text that answers it, which says "immutable": the prior keeps it out of `none`).
CONTENT_QUESTIONS = [
    "jupiter moons",
    "which planet has the longest day?",
    "hey, what does a finally clause do?",
    "how far is neptune from the sun in million km",
    "can a tuple be changed after it is made",
    "descriptor __get__ __set__",
]


def test_chit_chat_and_arithmetic_go_to_none_while_questions_about_the_content_do_not(ref_rag: UniversalRAG) -> None:
    for question in NO_RETRIEVAL_QUESTIONS:
        decision = ref_rag.route(question)
        assert decision.routes == ("none",), (question, decision.to_dict())
    for question in CONTENT_QUESTIONS:
        decision = ref_rag.route(question)
        assert "none" not in decision.routes and decision.scores["none"] < 0.5, (question, decision.to_dict())
        assert ref_rag.retrieve(question, k=3)


# -- one embedding per model, one search per corpus ----------------------------------------------------------
class CountingEmbedder:
    """The real MiniLM, counting every text it embeds."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.texts = inner, Counter()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.update(texts)
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        self.texts[text] += 1
        return self.inner.embed_query(text)

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)

    async def aembed_query(self, text: str) -> np.ndarray:
        return self.embed_query(text)


def test_a_request_embeds_the_query_once_and_searches_each_corpus_once(ref_rag: UniversalRAG) -> None:
    from langchain_universalrag import UniversalRAGRetriever
    from langchain_universalrag.graph import build_graph

    embedder = CountingEmbedder(ref_rag.embedder)
    rag = UniversalRAG(
        settings=ref_rag.settings,
        store=ref_rag.store,
        embedder=embedder,
        generator=None,
        visual_encoder=None,
        log_decisions=False,
    )
    searched: Counter[str] = Counter()
    original = rag.store.search_many  # Store.search goes through it too: every corpus search is counted here

    def counting_search(queries: Any) -> Any:
        searched.update(q.corpus for q in queries)
        return original(queries)

    rag.store.search_many = counting_search  # type: ignore[method-assign]
    try:
        nonempty = set(ref_rag.store.nonempty())
        calls = [
            lambda: rag.query(SATURN_Q),
            lambda: rag.retrieve(SATURN_Q, k=5),
            lambda: rag.search(SATURN_Q),
            lambda: UniversalRAGRetriever(rag=rag, k=4).invoke(SATURN_Q),
            lambda: build_graph(rag).invoke({"question": SATURN_Q}),
        ]
        for call in calls:
            embedder.texts.clear()
            searched.clear()
            rag.query_vectors.clear()  # each call as a new question (the next test asks one again)
            call()
            assert embedder.texts[SATURN_Q] == 1, (calls.index(call), embedder.texts)
            assert set(searched) == nonempty and set(searched.values()) == {1}, searched
    finally:
        del rag.store.search_many


def test_a_question_asked_again_by_another_tool_or_node_is_not_embedded_again(ref_rag: UniversalRAG) -> None:
    from langgraph.graph import END, START, StateGraph

    from langchain_universalrag import create_corpus_tools
    from langchain_universalrag.graph import UniversalRAGState, make_retrieve_node, make_route_node

    embedder = CountingEmbedder(ref_rag.embedder)
    rag = UniversalRAG(
        settings=ref_rag.settings,
        store=ref_rag.store,
        embedder=embedder,
        generator=None,
        visual_encoder=None,
        log_decisions=False,
    )
    tools = {t.name: t for t in create_corpus_tools(rag)}
    assert {"search_paragraph", "search_table"} <= set(tools)
    # An agent asking one question of two per-corpus tools: embedded once, each tool still finds its own units.
    rows = tools["search_table"].invoke({"query": SATURN_Q})
    passages = tools["search_paragraph"].invoke({"query": SATURN_Q})
    assert embedder.texts[SATURN_Q] == 1, embedder.texts
    assert "Saturn" in rows and passages != rows
    # A graph whose table node has a filter searches again (the probe had no filter) but does not embed again.
    builder = StateGraph(UniversalRAGState)
    builder.add_node("route", make_route_node(rag))
    builder.add_node("retrieve_table", make_retrieve_node(rag, "table", filter={"source": "planets.csv"}))
    builder.add_edge(START, "route")
    builder.add_edge("route", "retrieve_table")
    builder.add_edge("retrieve_table", END)
    embedder.texts.clear()
    rag.query_vectors.clear()
    state = builder.compile().invoke({"question": SATURN_Q})
    assert embedder.texts[SATURN_Q] == 1, embedder.texts
    assert state["documents"] and all(d.metadata["source"].endswith("planets.csv") for d in state["documents"])
    # Another question is embedded; the vectors kept are bounded.
    rag.retrieve("which planet has the longest day?", k=2)
    assert embedder.texts["which planet has the longest day?"] == 1
    assert 1 <= len(rag.query_vectors) <= rag.query_vectors.size


def test_query_vectors_keep_the_most_recently_used_and_are_read_only() -> None:
    from universalrag.plan import QueryVectors

    kept = QueryVectors(size=2)
    first = kept.put("a", np.ones(3, dtype=np.float32))
    kept.put("b", np.zeros(3, dtype=np.float32))
    assert kept.get("a") is first  # "a" is now the most recently used: "b" goes first
    kept.put("c", np.ones(3, dtype=np.float32))
    assert kept.get("b") is None and kept.get("a") is not None and len(kept) == 2
    with pytest.raises(ValueError):
        first[0] = 2.0  # shared between plans: nobody may change it in place
    with pytest.raises(ValueError):
        QueryVectors(size=0)
    assert UniversalRAG(settings=Settings(query_vectors=0)).query_vectors is None  # the setting turns it off
    assert Settings.from_env({"UNIVERSALRAG_QUERY_VECTORS": "12"}).query_vectors == 12
    with pytest.raises(ConfigError):
        Settings(query_vectors=-1)


class Slowed:
    """``inner`` (the shipped router or embedder) with its method ``method`` ``delay`` seconds slower, recording
    when each call started and ended; every other attribute is ``inner``'s (bulk embedding stays as fast)."""

    def __init__(self, inner: Any, method: str, delay: float) -> None:
        self.inner, self.method, self.delay = inner, method, delay
        self.calls: list[tuple[float, float]] = []

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.inner, name)
        if name != self.method:
            return found

        def slowed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            result = found(*args, **kwargs)
            time.sleep(self.delay)
            self.calls.append((started, time.perf_counter()))
            return result

        return slowed


def test_the_prior_runs_beside_the_embedding_and_the_probes_while_it_computes(ref_rag: UniversalRAG) -> None:
    """Evidence routing starts the router's forward pass in the pool before it embeds the query, sends the probes
    as soon as the query is embedded and reads the prior after: with the embedding 0.3 s slow and the prior 0.6 s,
    the two overlap, and every corpus search starts (each on its own pooled connection) once the query is embedded
    and well before the prior is done."""
    router, embedder = Slowed(ref_rag.router, "route", 0.6), Slowed(ref_rag.embedder, "embed_query", 0.3)
    rag = UniversalRAG(
        settings=ref_rag.settings,
        store=ref_rag.store,
        embedder=embedder,
        router=router,
        combiner=ref_rag.combiner,
        generator=None,
        visual_encoder=None,
        log_decisions=False,
    )
    starts: dict[str, float] = {}
    original = rag.store.search_many

    def timed_search(queries: Any) -> Any:
        starts.update((q.corpus, time.perf_counter()) for q in queries)
        return original(queries)

    rag.store.search_many = timed_search  # type: ignore[method-assign]
    try:
        rag.search("warm up: load both models")
        for log in (router.calls, embedder.calls, starts):
            log.clear()
        _, hits = rag.search(SATURN_Q)
        assert hits and len(router.calls) == 1 and len(embedder.calls) == 1
        (prior_started, prior_done), (_, embed_done) = router.calls[0], embedder.calls[0]
        assert prior_started < embed_done - 0.2, (router.calls, embedder.calls)  # the pass ran beside the embedding
        assert set(starts) == set(ref_rag.store.nonempty()) and len(starts) > 1
        assert all(embed_done <= t < prior_done - 0.2 for t in starts.values()), (starts, router.calls, embedder.calls)
    finally:
        del rag.store.search_many  # the store is the fixture's: not closed here
        rag.close()


# -- real Wikipedia pages with crowd-written questions (the test half of the split) -----------------------------
WIKI_PAGES = ("Panellinios B.C..html", "2010_11 UAB Blazers men's basketball team.html")


@skip_unless(WIKITABLES_QUESTIONS)
@skip_unless(WIKITABLES_PAGES)
def test_wikipedia_table_questions_go_to_the_table_first(database_url: str, tmp_path: Path, minilm) -> None:  # type: ignore[no-untyped-def]
    """Pages of the held-out ("report") half, ingested as a folder; every question written about them."""
    import json
    import shutil
    import uuid
    from urllib.parse import unquote

    from universalrag.routing.dataset import wikitables_split

    assert all(wikitables_split(p) == "report" for p in WIKI_PAGES)  # never trained the shipped combiner
    folder = tmp_path / "wiki"
    folder.mkdir()
    for page in WIKI_PAGES:
        shutil.copy(WIKITABLES / "pages" / page, folder / page)
    rows = [json.loads(line) for line in (WIKITABLES / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    questions = [r for r in rows if r["page"] in WIKI_PAGES]
    rag = UniversalRAG(
        settings=Settings(database_url=database_url, schema="wk_" + uuid.uuid4().hex[:12]),
        embedder=minilm,
        generator=None,
        visual_encoder=None,
        log_decisions=False,
    )
    try:
        assert rag.ingest([folder]).ok
        table_first = found = prior_table_first = 0
        for row in questions:
            plan = rag.plan(row["query"])
            decision = rag.route(plan)
            table_first += decision.primary == "table"
            prior_table_first += max(decision.prior, key=decision.prior.get) == "table"
            found += any(
                h.corpus == "table" and unquote(h.uri or "").endswith(row["page"]) for h in rag.retrieve(plan, k=5)
            )
        n = len(questions)
        assert n >= 20
        assert table_first / n >= 0.8 and table_first > prior_table_first, (table_first, prior_table_first, n)
        assert found / n >= 0.8, (found, n)
    finally:
        rag.store.downgrade("base")
        rag.close()
