"""Defects a LangChain user met, each pinned on a real database with the real encoder and the shipped router:
a bad tool argument that crashed the agent, whole units as ``page_content``, ignored or unchecked retriever
arguments, tools built before ingestion, no ``rank`` to restore the order, and retrievers that could not be copied."""

from __future__ import annotations

import copy
import logging
import pickle
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from support.fake_chat import ToolCallingFakeModel

from langchain_universalrag import (
    CorpusRetriever,
    UniversalRAGRetriever,
    create_corpus_tool,
    create_corpus_tools,
    documents_to_evidence,
)
from langchain_universalrag._convert import document_to_hit
from universalrag.errors import InvalidInputError
from universalrag.evidence import hit_text
from universalrag.pipeline import UniversalRAG

LIGHTHOUSE = "Who designed the Kestrel Point lighthouse?"


# -- 3. a bad tool argument -------------------------------------------------------------------------------------------
def test_a_bad_tool_argument_goes_back_to_the_model_not_out_of_the_agent(rag: UniversalRAG) -> None:
    from langchain.agents import create_agent

    model = ToolCallingFakeModel(
        messages=iter(
            [
                AIMessage(
                    content="",
                    tool_calls=[{"name": "search_table", "args": {"query": ""}, "id": "call_1", "type": "tool_call"}],
                ),
                AIMessage(
                    content="",
                    tool_calls=[
                        {
                            "name": "search_table",
                            "args": {"query": "Quarry Lions record"},
                            "id": "call_2",
                            "type": "tool_call",
                        }
                    ],
                ),
                AIMessage(content="The Quarry Lions won 20 games and lost 18."),
            ]
        )
    )
    model.seen.clear()
    agent = create_agent(model, create_corpus_tools(rag, ["table"], k=2))
    state = agent.invoke({"messages": [HumanMessage("What is the win-loss record of the Quarry Lions?")]})
    failed, found = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert failed.status == "error" and "query was empty" in failed.content and "search_table again" in failed.content
    assert found.status == "success" and "Quarry Lions" in found.content
    assert state["messages"][-1].content == "The Quarry Lions won 20 games and lost 18."
    tool = create_corpus_tool(rag, "table")
    missing = tool.invoke({"type": "tool_call", "name": "search_table", "id": "c", "args": {}})
    assert isinstance(missing, ToolMessage) and missing.status == "error"


# -- 4. output size ----------------------------------------------------------------------------------------------------
def test_page_content_is_cut_at_max_unit_tokens_and_round_trips(rag: UniversalRAG) -> None:
    whole = UniversalRAGRetriever(rag=rag, k=3, routes=["table"], max_unit_tokens=None).invoke("Quarry Lions wins")
    cut = UniversalRAGRetriever(rag=rag, k=3, routes=["table"], max_unit_tokens=20).invoke("Quarry Lions wins")
    assert [d.id for d in whole] == [d.id for d in cut] and not any(d.metadata["truncated"] for d in whole)
    for short, full in zip(cut, whole, strict=True):
        assert short.metadata["truncated"] and short.page_content.endswith(" […]")
        assert len(short.page_content.split()) <= 16 and len(short.page_content) < len(full.page_content)
        assert document_to_hit(short).metadata == document_to_hit(full).metadata  # rank/truncated are not the unit's
    assert hit_text(document_to_hit(whole[0])) == whole[0].page_content  # whole units round trip exactly
    evidence = documents_to_evidence(cut, with_media=False)
    assert [e.id for e in evidence] == [d.id for d in cut] and evidence[0].text == cut[0].page_content
    default = UniversalRAGRetriever(rag=rag, k=2).invoke(LIGHTHOUSE)
    assert all(len(d.page_content.split()) <= 751 for d in default)  # the default cap: ~1000 tokens
    corpus = CorpusRetriever(rag=rag, routes=["table"], k=1, max_unit_tokens=20).invoke("Quarry Lions")
    assert corpus[0].metadata["truncated"]
    tool = create_corpus_tool(rag, "table", k=1, max_unit_tokens=20)
    content, docs = tool.func("Quarry Lions")  # type: ignore[misc]
    assert docs[0].metadata["truncated"] and "[…]" in content and content.startswith("[table 1]")
    with pytest.raises(InvalidInputError, match="max_unit_tokens"):
        UniversalRAGRetriever(rag=rag, max_unit_tokens=0)


# -- 5. arguments ------------------------------------------------------------------------------------------------------
def test_retriever_arguments_are_honoured_or_refused(rag: UniversalRAG) -> None:
    assert len(UniversalRAGRetriever(rag=rag, search_kwargs={"k": 3}).invoke(LIGHTHOUSE)) == 3
    fixed = UniversalRAGRetriever(rag=rag, search_kwargs={"k": 1, "routes": ["image"]}).invoke(LIGHTHOUSE)
    assert [d.metadata["corpus"] for d in fixed] == ["image"]
    assert len(CorpusRetriever(rag=rag, routes=["paragraph"], search_kwargs={"k": 1}).invoke(LIGHTHOUSE)) == 1
    with pytest.raises(InvalidInputError, match="search_type"):
        UniversalRAGRetriever(rag=rag, search_kwargs={"search_type": "mmr"})
    with pytest.raises(ValueError, match="top_k"):
        UniversalRAGRetriever(rag=rag, top_k=3)
    for bad in (0, -1):
        with pytest.raises(InvalidInputError, match="k must be an integer of at least 1"):
            UniversalRAGRetriever(rag=rag, k=bad)
        with pytest.raises(InvalidInputError, match="at least 1"):
            UniversalRAGRetriever(rag=rag).invoke(LIGHTHOUSE, k=bad)
        with pytest.raises(InvalidInputError, match="at least 1"):
            CorpusRetriever(rag=rag, routes=["table"]).invoke(LIGHTHOUSE, k=bad)
    with pytest.raises(TypeError, match=r"routes=\['table'\]"):
        UniversalRAGRetriever(rag=rag, routes="table")
    with pytest.raises(TypeError, match=r"routes=\['table'\]"):
        UniversalRAGRetriever(rag=rag).invoke(LIGHTHOUSE, routes="table")


def test_a_documents_source_filters_its_file(rag: UniversalRAG) -> None:
    """A Document names its file in ``source`` (as LangChain's loaders do); filtering on it keeps that file's units
    (it found nothing: no unit holds the key), in the routed retriever and in one corpus's."""
    docs = UniversalRAGRetriever(rag=rag, k=4, routes=["paragraph", "document"]).invoke(LIGHTHOUSE)
    source = docs[0].metadata["source"]
    kept = UniversalRAGRetriever(
        rag=rag, k=4, routes=["paragraph", "document"], search_kwargs={"filter": {"source": source}}
    ).invoke(LIGHTHOUSE)
    assert kept and {d.metadata["source"] for d in kept} == {source}
    others = CorpusRetriever(rag=rag, routes=["paragraph"], k=4).invoke(LIGHTHOUSE, filter={"source": {"$ne": source}})
    assert source not in {d.metadata["source"] for d in others}
    assert (
        UniversalRAGRetriever(rag=rag, k=4, routes=["paragraph"], filter={"source": source + ".missing"}).invoke(
            LIGHTHOUSE
        )
        == []
    )
    # the file's name alone, as a user types it, matches that file in whatever folder it was ingested from (it was
    # read as a path under the working directory, and found nothing)
    name = Path(source).name
    kept = UniversalRAGRetriever(
        rag=rag, k=4, routes=["paragraph", "document"], search_kwargs={"filter": {"source": name}}
    ).invoke(LIGHTHOUSE)
    assert kept and {d.metadata["source"] for d in kept} == {source}
    others = UniversalRAGRetriever(
        rag=rag, k=4, routes=["paragraph", "table"], search_kwargs={"filter": {"source": {"$nin": [name]}}}
    ).invoke(LIGHTHOUSE)
    assert others and source not in {d.metadata["source"] for d in others}  # the league's table, not the text


# -- 6. tools built before ingestion -----------------------------------------------------------------------------------
def test_tools_built_before_ingestion_warn_and_search_at_call_time(
    settings: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    empty = UniversalRAG(settings=settings, generator=None, visual_encoder=None, log_decisions=False)
    empty.store.init(embedder=empty.embedder.name, dimension=empty.embedder.dimension)
    with caplog.at_level(logging.WARNING, logger="langchain_universalrag.tools"):
        assert create_corpus_tools(empty) == []
        assert "no tools were made" in caplog.text and "Ingest first" in caplog.text
        caplog.clear()
        named = create_corpus_tools(empty, ["paragraph"], k=1)
        assert "['paragraph'] hold no rows yet" in caplog.text
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "kestrel.txt").write_text("The Kestrel Point lighthouse was designed by Agnes Ferrow.")
    empty.ingest([tmp_path / "kb"])
    content, docs = named[0].func(LIGHTHOUSE)  # type: ignore[misc]
    assert docs and "Agnes Ferrow" in content


# -- 7. rank -----------------------------------------------------------------------------------------------------------
def test_documents_carry_their_rank(rag: UniversalRAG) -> None:
    docs = UniversalRAGRetriever(rag=rag, k=4, routes=["table", "paragraph"]).invoke("Quarry Lions and the lighthouse")
    assert [d.metadata["rank"] for d in docs] == [1, 2, 3, 4]
    shuffled = sorted(docs, key=lambda d: -d.metadata["score"])
    assert [d.id for d in sorted(shuffled, key=lambda d: d.metadata["rank"])] == [d.id for d in docs]
    assert [d.metadata["rank"] for d in CorpusRetriever(rag=rag, routes=["image"], k=2).invoke("cup")] == [1, 2]


# -- 8. copying --------------------------------------------------------------------------------------------------------
def test_retrievers_copy_sharing_the_pipeline_and_refuse_pickling(rag: UniversalRAG) -> None:
    for retriever in (
        UniversalRAGRetriever(rag=rag, k=2, filter={"a": {"$eq": 1}}),
        CorpusRetriever(rag=rag, routes=["table"], k=1),
    ):
        for twin in (copy.deepcopy(retriever), retriever.model_copy(deep=True), copy.copy(retriever)):
            assert twin.rag is rag and twin.k == retriever.k and twin is not retriever
        deep = copy.deepcopy(retriever)
        if deep.filter is not None:
            assert deep.filter == retriever.filter and deep.filter is not retriever.filter  # its own fields copied
        with pytest.raises(TypeError, match="live database pipeline.*one per process"):
            pickle.dumps(retriever)
    assert copy.deepcopy(UniversalRAGRetriever(rag=rag, k=1)).invoke(LIGHTHOUSE)
