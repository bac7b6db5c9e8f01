"""Defects a LangGraph user met, each pinned on a real database with the real encoder and the shipped router:
nodes whose writes a ``MessagesState`` graph dropped, a stale ``question`` and piled-up documents in a checkpointed
thread, and a graph built before anything was ingested."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, ClassVar

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from langchain_universalrag.graph import (
    MissingStateKeysError,
    build_graph,
    make_generate_node,
    make_retrieve_node,
    make_route_edge,
    make_route_node,
    retrieve_node_name,
)
from universalrag.pipeline import UniversalRAG

QUARRY = "What is the win-loss record of the Quarry Lions?"
CAT = "In the morning video, what happens in the moment when the cat is sleeping?"


class RecordingModel(GenericFakeChatModel):
    """A scripted chat model that records the messages it was sent."""

    seen: ClassVar[list[Any]] = []

    def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def _messages_graph(
    rag: UniversalRAG, corpora: list[str], answer: Any, *, route_node: bool, output: str = "documents"
) -> Any:
    """The user's plain ``StateGraph(MessagesState)``: (route node →) routing edge → retrieve nodes → answer."""
    nodes = [retrieve_node_name(c) for c in corpora]
    builder = StateGraph(MessagesState)
    for corpus in corpora:
        builder.add_node(retrieve_node_name(corpus), make_retrieve_node(rag, corpus, k=2, output=output))  # type: ignore[arg-type]
        builder.add_edge(retrieve_node_name(corpus), "answer")
    builder.add_node("answer", answer)
    edge = make_route_edge(rag, corpora=corpora, none_node="answer")
    if route_node:
        builder.add_node("route", make_route_node(rag))
        builder.add_edge(START, "route")
        builder.add_conditional_edges("route", edge, [*nodes, "answer"])
    else:
        builder.add_conditional_edges(START, edge, [*nodes, "answer"])
    builder.add_edge("answer", END)
    return builder.compile()


def test_nodes_in_a_messages_state_graph_raise_instead_of_dropping_their_writes(rag: UniversalRAG) -> None:
    """Before: the route and retrieve nodes' ``decision``/``documents`` writes vanished; the answer saw nothing."""

    def answer(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [AIMessage("answered")]}

    graph = _messages_graph(rag, ["table", "clip"], answer, route_node=True)
    with pytest.raises(MissingStateKeysError, match=r"'decision'.*UniversalRAGState.*output=\"messages\"") as info:
        graph.invoke({"messages": [HumanMessage(QUARRY)]})
    assert info.value.keys == ("decision",) and info.value.node == "route"
    graph = _messages_graph(rag, ["table", "clip"], answer, route_node=False)
    with pytest.raises(MissingStateKeysError, match="'documents'"):
        graph.invoke({"messages": [HumanMessage(QUARRY)]})


def test_messages_output_puts_the_evidence_in_a_messages_state_conversation(rag: UniversalRAG) -> None:
    """``output="messages"``: the evidence reaches a plain MessagesState graph as a tool call and its result, and our
    generation node answers from those documents."""
    llm = RecordingModel(messages=iter([AIMessage(content="They won 20 and lost 18 [E1].")]))
    llm.seen.clear()
    graph = _messages_graph(rag, ["table", "clip"], make_generate_node(rag, llm), route_node=False, output="messages")
    state = graph.invoke({"messages": [HumanMessage(QUARRY)]})
    kinds = [type(m).__name__ for m in state["messages"]]
    assert kinds == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    call, result = state["messages"][1], state["messages"][2]
    assert call.tool_calls[0]["name"] == "search_table" and call.tool_calls[0]["args"] == {"query": QUARRY}
    assert isinstance(result, ToolMessage) and result.tool_call_id == call.tool_calls[0]["id"]
    assert "Quarry Lions" in result.content and result.content.startswith("[table 1]")
    assert len(result.artifact) == 2 and result.artifact[0].metadata["corpus"] == "table"
    assert state["messages"][-1].content == "They won 20 and lost 18 [E1]."
    sent = llm.seen[-1][-1].content
    assert any(block.get("type") == "text" and "Quarry Lions" in block.get("text", "") for block in sent)


def test_the_newest_human_message_wins_and_documents_reset_per_turn(rag: UniversalRAG) -> None:
    """Before: turn 4's human message was answered as turn 3's ``question``, and each turn's documents piled up."""
    graph = build_graph(rag, k=2, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "user-thread"}}
    first = graph.invoke({"messages": [HumanMessage(QUARRY)]}, config)
    assert {d.metadata["corpus"] for d in first["documents"]} == {"table"} and len(first["documents"]) == 2
    third = graph.invoke({"question": "Show me what the coffee cup on the saucer looks like"}, config)
    assert third["decision"]["routes"][0] == "image" and len(third["documents"]) == 2
    assert {d.metadata["corpus"] for d in third["documents"]} == {"image"}  # the first turn's are gone
    assert not third.get("question")  # consumed once answered
    assert [m.content for m in third["messages"] if m.type == "human"][-1].startswith("Show me what the coffee")
    fourth = graph.invoke({"messages": [HumanMessage(CAT)]}, config)
    assert fourth["decision"]["routes"][0] == "clip"
    corpora = {d.metadata["corpus"] for d in fourth["documents"]}
    assert "clip" in corpora and corpora <= {"clip", "video"}  # none of the earlier turns' table or image units
    assert len(fourth["documents"]) <= 2 * len(corpora)  # k=2 per routed corpus (the video corpus holds one)
    assert any("Chelsea" in d.page_content for d in fourth["documents"])


def test_a_graph_built_before_ingestion_warns_then_finds_what_is_ingested(
    settings: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: ``build_graph`` on an empty knowledge base made a graph without retrieval nodes, silently."""
    empty = UniversalRAG(settings=settings, generator=None, visual_encoder=None, log_decisions=False)
    empty.store.init(embedder=empty.embedder.name, dimension=empty.embedder.dimension)
    with caplog.at_level(logging.WARNING, logger="langchain_universalrag.graph"):
        graph = build_graph(empty, k=1)
    assert "holds rows" in caplog.text and "rag.ingest" in caplog.text
    assert "retrieve_paragraph" in graph.nodes
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "kestrel.txt").write_text("The Kestrel Point lighthouse was designed by Agnes Ferrow.")
    empty.ingest([tmp_path / "kb"])
    state = graph.invoke({"question": "Who designed the Kestrel Point lighthouse?"})
    assert state["documents"] and "Agnes Ferrow" in state["documents"][0].page_content
