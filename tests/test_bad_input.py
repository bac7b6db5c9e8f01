"""Hostile and broken input through every public path: typed errors with a sentence, nothing stored, no SQL
in any message, no NaN in JSON.

Real PostgreSQL + pgvector, the real MiniLM encoder, the real LangChain VectorStore and LlamaIndex retriever.
"""

from __future__ import annotations

import json
import math
import uuid

import numpy as np
import pytest
import sqlalchemy as sa

from universalrag import UniversalRAG
from universalrag.errors import (
    CorpusNotFoundError,
    DimensionMismatchError,
    FilterError,
    InvalidInputError,
    StoreError,
    UniversalRAGError,
)
from universalrag.store import Store
from universalrag.types import Unit

SQL_WORDS = ("SELECT ", "INSERT ", "[SQL:", "jsonb_", "FROM t_", "DELETE ")
HOSTILE_CORPUS_NAMES = [
    "x'; DROP TABLE corpora; --",
    'a"b',
    "a\\b",
    "a\x00b",
    "../etc",
    "Robert'); --",
    "ÄÖ",
    "a b",
    "",
    "a" * 200,
    "corpora",
    "pg_catalog.pg_class",
]


def _deep(depth: int, op: str = "$and") -> dict:
    node: dict = {"lang": "en"}
    for _ in range(depth):
        node = {op: [node]}
    return node


HOSTILE_FILTERS = [
    {"la'ng": "en"},
    {'la"ng': "en"},
    {"la\\ng": "en"},
    {"la\x00ng": "en"},
    {"lang": {"$regex": ".*"}},
    {"lang": {"$eq": {"$ne": 1}}},
    {"$where": "1=1"},
    {"lang": {"$in": []}},
    {"lang": object()},
    {"a.b.c.d.e.f.g.h.i.j": 1},
    _deep(2_000),
    _deep(2_000, "$or"),
    {"$not": _deep(5_000)},
]
HOSTILE_VALUES = [
    {"lang": "en'; DROP TABLE x; --"},
    {"lang": "a\\'b"},
    {"lang": {"$ilike": "%'%"}},
    {"lang": "nul\x00byte"},
    {"lang": {"$in": ["a\x00", "b"]}},
]


@pytest.fixture
def loaded(store: Store, minilm) -> Store:  # type: ignore[no-untyped-def]
    texts = ["Kestrel Point lighthouse was first lit in 1889.", "Sourdough needs a ripe starter and time."]
    vectors = minilm.embed(texts)
    store.add_units(
        [
            Unit(id=str(uuid.uuid4()), corpus="paragraph", content=t, embedding=v.tolist(), metadata={"lang": "en"})
            for i, (t, v) in enumerate(zip(texts, vectors, strict=True))
        ]
    )
    return store


def _clean(error: BaseException) -> None:
    message = str(error)
    assert message and not any(w in message for w in SQL_WORDS), message
    assert "Traceback" not in message and "RecursionError" not in message


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "short", "long", "zero", "text"])
def test_bad_query_vectors_are_refused_by_the_store(loaded: Store, bad: str) -> None:
    vector = np.full(384, 0.01).tolist()
    if bad in ("nan", "inf", "-inf"):
        vector[17] = float(bad)
    elif bad == "short":
        vector = vector[:100]
    elif bad == "long":
        vector = vector + [0.1]
    elif bad == "zero":
        vector = [0.0] * 384
    else:
        vector = ["0.1"] * 384  # type: ignore[list-item]
    with pytest.raises((InvalidInputError, DimensionMismatchError)) as info:
        loaded.search("paragraph", vector, k=2)
    _clean(info.value)


@pytest.mark.parametrize("bad", ["nan", "inf", "short"])
def test_bad_unit_vectors_store_nothing(loaded: Store, bad: str) -> None:
    vector = np.full(384, 0.02).tolist()
    if bad == "short":
        vector = vector[:10]
    else:
        vector[3] = float(bad)
    before = loaded.counts()["paragraph"]
    with pytest.raises((InvalidInputError, DimensionMismatchError)) as info:
        loaded.add_units(
            [
                Unit(id=str(uuid.uuid4()), corpus="paragraph", content="fine", embedding=np.full(384, 0.1).tolist()),
                Unit(id=str(uuid.uuid4()), corpus="paragraph", content="broken", embedding=vector),
            ]
        )
    _clean(info.value)
    assert loaded.counts()["paragraph"] == before  # the good unit of the batch was not written either


@pytest.mark.parametrize("hostile", HOSTILE_FILTERS, ids=range(len(HOSTILE_FILTERS)))
def test_hostile_filters_are_refused_with_a_typed_error(loaded: Store, minilm, hostile: dict) -> None:
    vector = minilm.embed(["lighthouse"])[0].tolist()
    with pytest.raises(FilterError) as info:
        loaded.search("paragraph", vector, k=2, filter=hostile)
    _clean(info.value)


@pytest.mark.parametrize("hostile", HOSTILE_VALUES, ids=range(len(HOSTILE_VALUES)))
def test_hostile_filter_values_are_bound_parameters(loaded: Store, minilm, hostile: dict) -> None:
    vector = minilm.embed(["lighthouse"])[0].tolist()
    try:
        hits = loaded.search("paragraph", vector, k=2, filter=hostile)
    except UniversalRAGError as e:  # NUL bytes cannot be stored in Postgres text: refused, typed
        _clean(e)
        assert isinstance(e, FilterError)
    else:
        assert hits == []  # matched literally, nothing executed
    assert loaded.counts()["paragraph"] == 2


@pytest.mark.parametrize("name", HOSTILE_CORPUS_NAMES, ids=range(len(HOSTILE_CORPUS_NAMES)))
def test_hostile_corpus_names_in_python_and_sql(loaded: Store, minilm, name: str) -> None:
    from universalrag.types import CorpusSpec, Granularity, Modality

    with pytest.raises(UniversalRAGError) as info:
        loaded.search(name, [0.1] * 384, k=1)
    _clean(info.value)
    if name != "corpora":
        with pytest.raises((InvalidInputError, StoreError)) as created:
            loaded.create_corpus(
                CorpusSpec(
                    name=name, modality=Modality.TEXT, granularity=Granularity.PARAGRAPH, dimension=384, embedder="m"
                )
            )
        _clean(created.value)
    tables_before = _tables(loaded)
    with loaded.engine.connect() as conn:  # straight to the SQL function, as a database user could
        try:
            with conn.begin():
                conn.execute(sa.text(f"SET LOCAL search_path TO {loaded.schema}, public"))
                conn.execute(sa.text("SELECT create_corpus(:n, 'text', 'paragraph', '', 'm', 8)"), {"n": name})
        except sa.exc.DBAPIError:
            pass  # refused by the function
    assert (
        _tables(loaded) - tables_before <= {f"corpus_{name}"}
        if name.isidentifier() and name.islower()
        else _tables(loaded) == tables_before
    )
    assert "corpora" in _tables(loaded)


def _tables(store: Store) -> set[str]:
    with store.engine.connect() as conn:
        return {
            r[0]
            for r in conn.execute(sa.text("SELECT tablename FROM pg_tables WHERE schemaname = :s"), {"s": store.schema})
        }


def test_unknown_corpus_is_typed(loaded: Store) -> None:
    with pytest.raises(CorpusNotFoundError, match="No corpus named 'nope'"):
        loaded.search("nope", [0.1] * 384)


class _Recording:
    """The real encoder, recording the length of every query text it is given."""

    def __init__(self, embedder) -> None:  # type: ignore[no-untyped-def]
        self._embedder = embedder
        self.lengths: list[int] = []

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self._embedder, name)

    def embed_query(self, text: str):  # type: ignore[no-untyped-def]
        self.lengths.append(len(text))
        return self._embedder.embed_query(text)


def _lexical_texts(store: Store) -> list[str]:
    """Every text the full-text channel sends to the server from now on (the ``lexical_text`` parameter)."""
    sent: list[str] = []

    @sa.event.listens_for(store.engine, "before_cursor_execute")
    def record(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if isinstance(parameters, dict) and isinstance(parameters.get("lexical_text"), str):
            sent.append(parameters["lexical_text"])

    return sent


def test_long_queries_are_read_up_to_a_bound_and_answered(loaded: Store, minilm, settings) -> None:  # type: ignore[no-untyped-def]
    from universalrag.plan import QUERY_CHARS, bounded_query
    from universalrag.store.queries import LEXICAL_WORDS

    recording = _Recording(minilm)
    rag = UniversalRAG(settings=settings, store=loaded, embedder=recording, generator=None)
    sent = _lexical_texts(loaded)
    huge = ("lighthouse keeper's log, entry " * 40_000)[:1_000_000]  # 1 MB
    for hybrid in (False, True):
        rag.hybrid = hybrid
        decision, hits = rag.search(huge, k=2)
        assert hits and all(math.isfinite(h.score) for h in hits)
        assert "lighthouse" in hits[0].content.lower()  # what the first words ask for
        whole, bounded = rag.route(huge), rag.route(bounded_query(huge))
        assert (whole.routes, whole.scores) == (bounded.routes, bounded.scores)
    assert recording.lengths and max(recording.lengths) <= QUERY_CHARS
    assert QUERY_CHARS // 2 < recording.lengths[0]  # cut at a word, not emptied
    assert sent and huge.startswith(" ".join(sent[0].split()))  # the hybrid search ran its full-text channel ...
    assert all(len(text.split()) <= LEXICAL_WORDS for text in sent)  # ... on the query's first words


def test_a_long_query_is_cut_after_a_whole_word() -> None:
    from universalrag.plan import QueryPlan, bounded_query

    assert bounded_query("a question of a few words", limit=1000) == "a question of a few words"
    assert bounded_query("lighthouse keeper log", limit=15) == "lighthouse"  # not "lighthouse keep"
    assert bounded_query("x" * 40, limit=15) == "x" * 15  # no word boundary in reach: the first characters
    assert bounded_query("ab " + "y" * 40, limit=15) == "ab " + "y" * 12  # one in the first half only: likewise
    plan = QueryPlan("how many moons does saturn have " * 2_000, k=2)
    assert plan.text == bounded_query(plan.query) and plan.query.startswith(plan.text)
    assert plan.text.split()[-1] in {"how", "many", "moons", "does", "saturn", "have"}  # a whole word last


def test_a_query_of_many_words_asks_the_full_text_channel_for_its_first_words(
    loaded: Store,
    minilm,  # type: ignore[no-untyped-def]
    settings,
) -> None:
    from universalrag.routing.features import QUERY_TERMS, query_terms
    from universalrag.store.queries import LEXICAL_WORDS, lexical_words

    rag = UniversalRAG(settings=settings, store=loaded, embedder=minilm, generator=None, hybrid=True)
    sent = _lexical_texts(loaded)
    words = " ".join(f"w{i}" for i in range(200_000))
    hits = rag.retrieve(words, k=2, routes=["paragraph"])
    assert all(math.isfinite(h.score) for h in hits)
    assert sent and all(text == lexical_words(words) for text in sent)
    assert lexical_words(words).split() == [f"w{i}" for i in range(LEXICAL_WORDS)]
    assert lexical_words("  few   words\t") == "  few   words\t"  # a question goes as typed
    assert query_terms(words) == frozenset(f"w{i}" for i in range(10, 10 + QUERY_TERMS))  # "w0"-"w9": too short


def test_langchain_vectorstore_refuses_bad_vectors_and_filters(loaded: Store, minilm) -> None:
    from langchain_universalrag import UniversalRAGVectorStore

    vs = UniversalRAGVectorStore(corpus="paragraph", store=loaded, embedding=minilm)
    good = minilm.embed(["lighthouse"])[0].tolist()
    for bad in ([math.nan] * 384, [math.inf] + good[1:], good[:5], [0.0] * 384):
        with pytest.raises((InvalidInputError, DimensionMismatchError)) as info:
            vs.similarity_search_by_vector(bad, k=1)
        _clean(info.value)
    for hostile in HOSTILE_FILTERS[:5] + [_deep(2_000)]:
        with pytest.raises(FilterError) as info:
            vs.similarity_search("lighthouse", k=1, filter=hostile)
        _clean(info.value)

    class NaNEmbeddings:
        name, dimension = minilm.name, 384

        def embed(self, texts):  # type: ignore[no-untyped-def]
            return np.full((len(texts), 384), np.nan, dtype=np.float32)

    broken = UniversalRAGVectorStore(corpus="paragraph", store=loaded, embedding=NaNEmbeddings())
    with pytest.raises(InvalidInputError):
        broken.add_texts(["poisoned"])
    assert loaded.counts()["paragraph"] == 2


def test_llamaindex_retriever_refuses_hostile_filters(loaded: Store, minilm, settings) -> None:  # type: ignore[no-untyped-def]
    from llama_index.retrievers.universalrag import UniversalRAGRetriever

    rag = UniversalRAG(settings=settings, store=loaded, embedder=minilm, generator=None)
    for hostile in HOSTILE_FILTERS[:5] + [_deep(2_000)]:
        retriever = UniversalRAGRetriever(rag=rag, routes=["paragraph"], filter=hostile)
        with pytest.raises(FilterError) as info:
            retriever.retrieve("lighthouse")
        _clean(info.value)
    assert UniversalRAGRetriever(rag=rag, routes=["paragraph"], filter={"lang": "en"}).retrieve("lighthouse")


def test_json_output_never_holds_nan(loaded: Store) -> None:
    from universalrag.cli.output import hit_dict
    from universalrag.types import Hit, Modality

    hit = Hit(
        id="x",
        corpus="paragraph",
        modality=Modality.TEXT,
        content="c",
        score=math.nan,
        channel_scores={"similarity": math.inf},
    )
    text = json.dumps(hit_dict(hit, 1), allow_nan=False)  # raises on NaN/inf
    assert json.loads(text)["similarity"] is None


def _adapter_calls(rag: UniversalRAG) -> dict[str, object]:
    """Every adapter entry point that takes a query, as ``name → call(query)``."""
    from langchain_universalrag import CorpusRetriever, create_corpus_tools
    from langchain_universalrag import UniversalRAGRetriever as LangChainRetriever
    from langchain_universalrag.graph import make_retrieve_node, make_route_edge, make_route_node
    from llama_index.retrievers.universalrag import UniversalRAGQueryEngine, UniversalRAGRetriever

    tool = create_corpus_tools(rag, ["paragraph"], k=2)[0]
    return {
        "langchain retriever": lambda q: LangChainRetriever(rag=rag, k=2).invoke(q),
        "langchain corpus retriever": lambda q: CorpusRetriever(rag=rag, routes=["paragraph"], k=2).invoke(q),
        "langchain tool": lambda q: tool.invoke({"query": q}),
        "langgraph route node": lambda q: make_route_node(rag).invoke({"question": q}),
        "langgraph route edge": lambda q: make_route_edge(rag).invoke({"question": q}),
        "langgraph retrieve node": lambda q: make_retrieve_node(rag, "paragraph", k=2).invoke({"question": q}),
        "llamaindex retriever": lambda q: UniversalRAGRetriever(rag=rag, similarity_top_k=2).retrieve(q),
        "llamaindex query engine": lambda q: UniversalRAGQueryEngine(rag=rag, similarity_top_k=2).query(q),
    }


@pytest.mark.parametrize("hybrid", [False, True], ids=["dense", "hybrid"])
def test_long_queries_through_the_adapters_are_answered_like_the_core(
    loaded: Store,
    minilm,
    settings,  # type: ignore[no-untyped-def]
    hybrid: bool,
) -> None:
    import time

    rag = UniversalRAG(settings=settings, store=loaded, embedder=minilm, generator=None, hybrid=hybrid)
    huge = ("lighthouse keeper's log, entry " * 40_000)[:1_000_000]  # 1 MB
    outcomes: dict[str, str] = {}
    for name, call in _adapter_calls(rag).items():
        start = time.monotonic()
        try:
            result = call(huge)  # type: ignore[operator]
        except UniversalRAGError as e:
            _clean(e)
            assert "max_stack_depth" not in str(e) and "shorten it" in str(e), (name, str(e))
            outcomes[name] = "refused"
        else:
            assert result and str(result), name  # documents, nodes, a state update, a route, a tool's text
            outcomes[name] = "answered"
        assert time.monotonic() - start < 120, name  # a bound against a hang, not a speed target
    try:  # the adapters do what the core does with the same query (both modes read its first words and answer)
        rag.search(huge, k=2)
        core = "answered"
    except UniversalRAGError:
        core = "refused"
    assert set(outcomes.values()) == {core} == {"answered"}, (core, outcomes)
