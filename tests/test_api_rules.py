"""The arguments every surface shares mean one thing everywhere: ``k`` (default 5, below 1 refused with one
sentence), ``allow_none`` (default by what a call returns), ``routes`` (``corpus=`` a deprecated spelling), and the
async twins take what the sync methods take."""

from __future__ import annotations

import asyncio
import inspect
import warnings

import pytest

from universalrag import UniversalRAG
from universalrag.errors import InvalidInputError
from universalrag.plan import DEFAULT_K, check_k
from universalrag.retrieve import Retrieval

QUESTION = "Who designed the lighthouse?"
RULE = "must be an integer of at least 1"


def test_check_k_is_one_rule() -> None:
    assert check_k(3) == 3 and DEFAULT_K == 5
    for bad in (0, -1, 2.5, True, "3", None):
        with pytest.raises(InvalidInputError, match=f"k {RULE}"):
            check_k(bad)
    with pytest.raises(InvalidInputError, match=f"similarity_top_k {RULE}"):
        check_k(0, name="similarity_top_k")


def test_the_facade_refuses_k_below_one_on_every_call(rag: UniversalRAG) -> None:
    with pytest.raises(InvalidInputError, match=f"k {RULE}"):
        UniversalRAG(k=0)
    calls = {
        "plan": lambda k: rag.plan(QUESTION, k=k),
        "retrieve": lambda k: rag.retrieve(QUESTION, k=k),
        "search": lambda k: rag.search(QUESTION, k=k),
        "query": lambda k: rag.query(QUESTION, k=k),
        "aretrieve": lambda k: asyncio.run(rag.aretrieve(QUESTION, k=k)),
        "store.search": lambda k: rag.store.search("paragraph", [0.0] * 384, k=k),
    }
    for name, call in calls.items():
        for bad in (0, -2):
            with pytest.raises(InvalidInputError, match=f"k {RULE}"):
                call(bad)
                pytest.fail(f"{name} accepted k={bad}")
    assert len(rag.retrieve(QUESTION)) == rag.k == DEFAULT_K


def test_async_twins_take_what_the_sync_methods_take() -> None:
    for name in ("ingest", "route", "retrieve", "search", "query"):
        sync = inspect.signature(getattr(UniversalRAG, name))
        twin = inspect.signature(getattr(UniversalRAG, f"a{name}"))
        assert list(twin.parameters) == list(sync.parameters), name
        for param, spec in sync.parameters.items():
            assert twin.parameters[param].default == spec.default, (name, param)
            assert twin.parameters[param].kind == spec.kind, (name, param)


def test_allow_none_defaults_follow_what_a_call_returns() -> None:
    def default(func: object) -> object:
        return inspect.signature(func).parameters["allow_none"].default  # type: ignore[arg-type]

    # A decision or an answer: `none` is a result.
    for func in (UniversalRAG.plan, UniversalRAG.route, UniversalRAG.query, UniversalRAG.aroute, UniversalRAG.aquery):
        assert default(func) is True, func
    # Hits: a `none` conclusion searches the most likely corpus.
    for func in (UniversalRAG.retrieve, UniversalRAG.search, UniversalRAG.aretrieve, UniversalRAG.asearch):
        assert default(func) is False, func


def test_retrieval_steps_give_what_retrieve_gives(rag: UniversalRAG) -> None:
    routes = ["paragraph", "image"]
    retrieval = rag.retrieval
    assert isinstance(retrieval, Retrieval)
    plan = rag.plan(QUESTION, routes=routes, k=3)
    per_corpus = retrieval.corpus_hits(plan, routes, k=3)
    assert list(per_corpus) == routes and all(len(hits) <= 3 for hits in per_corpus.values())
    merged = retrieval.merge(per_corpus, k=3)
    assert [h.id for h in merged] == [h.id for h in rag.retrieve(QUESTION, routes=routes, k=3)]
    assert any(h.corpus == "paragraph" for h in merged)  # the first corpus's best is kept
    with pytest.raises(InvalidInputError, match=f"k {RULE}"):
        retrieval.merge(per_corpus, k=0)


def test_langchain_surfaces_share_the_rules(rag: UniversalRAG) -> None:
    pytest.importorskip("langchain_core")
    from langchain_universalrag import CorpusRetriever, UniversalRAGRetriever, create_corpus_tool

    assert UniversalRAGRetriever(rag=rag).k is None
    assert len(UniversalRAGRetriever(rag=rag).invoke(QUESTION)) == rag.k
    assert UniversalRAGRetriever(rag=rag).allow_none is False
    with pytest.raises(InvalidInputError, match=f"k {RULE}"):
        UniversalRAGRetriever(rag=rag, k=0)
    with pytest.raises(InvalidInputError, match=f"k {RULE}"):
        create_corpus_tool(rag, "paragraph", k=0)

    fixed = CorpusRetriever(rag=rag, routes=["paragraph"], k=2)
    with pytest.warns(DeprecationWarning, match="routes="):
        old = CorpusRetriever(rag=rag, corpus="paragraph", k=2)
    assert old.routes == ["paragraph"]
    assert [d.metadata["id"] for d in old.invoke(QUESTION)] == [d.metadata["id"] for d in fixed.invoke(QUESTION)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CorpusRetriever(rag=rag, routes=["table"])  # the current spelling warns of nothing
    with pytest.raises(InvalidInputError, match="routes= only"), pytest.warns(DeprecationWarning):
        CorpusRetriever(rag=rag, corpus="paragraph", routes=["table"])


def test_langgraph_nodes_share_the_rules(rag: UniversalRAG) -> None:
    pytest.importorskip("langgraph")
    from langchain_universalrag.graph import build_graph, make_generate_node, make_retrieve_node

    for make in (
        lambda: make_retrieve_node(rag, "paragraph", k=0),
        lambda: make_generate_node(rag, k=-1),
        lambda: build_graph(rag, corpora=["paragraph"], k=0),
    ):
        with pytest.raises(InvalidInputError, match=f"k {RULE}"):
            make()
    assert inspect.signature(build_graph).parameters["allow_none"].default is True  # it answers
    assert inspect.signature(make_retrieve_node).parameters["k"].default is None  # rag.k


def test_llamaindex_surfaces_share_the_rules(rag: UniversalRAG) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.retrievers.universalrag import UniversalRAGRetriever

    retriever = UniversalRAGRetriever(rag=rag)
    assert retriever.similarity_top_k is None and retriever.allow_none is False
    assert len(retriever.retrieve(QUESTION)) == rag.k
    with pytest.raises(InvalidInputError, match=f"similarity_top_k {RULE}"):
        UniversalRAGRetriever(rag=rag, similarity_top_k=0)
