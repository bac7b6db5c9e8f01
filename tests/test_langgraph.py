"""The LangGraph pieces on a real database with the real encoder and the shipped router: the compiled
route → parallel retrieval → generate graph, and our route node and edge inside a user's own StateGraph."""

from __future__ import annotations

import asyncio
import importlib
import operator
import sys
from collections.abc import Collection, Sequence
from typing import Annotated, Any, ClassVar

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Send

import langchain_universalrag.graph as lg
from langchain_universalrag.graph import (
    build_graph,
    make_generate_node,
    make_retrieve_node,
    make_route_edge,
    make_route_node,
    question_of,
)
from universalrag.errors import MissingDependencyError, RoutingError
from universalrag.pipeline import UniversalRAG
from universalrag.types import RouteDecision


class FixedRouter:
    """Always chooses the same routes (to exercise fan-out and ``none`` deterministically)."""

    name = "fixed"

    def __init__(self, *routes: str) -> None:
        self.routes = routes

    def route(self, query: str, *, candidates: Collection[str] | None = None) -> RouteDecision:
        return RouteDecision(routes=self.routes, scores={r: 1.0 for r in self.routes}, router=self.name)

    def route_many(self, queries: Sequence[str], *, candidates: Collection[str] | None = None) -> list[RouteDecision]:
        return [self.route(q) for q in queries]

    async def aroute(self, query: str, *, candidates: Collection[str] | None = None) -> RouteDecision:
        return self.route(query)

    async def aroute_many(
        self, queries: Sequence[str], *, candidates: Collection[str] | None = None
    ) -> list[RouteDecision]:
        return self.route_many(queries)


def _with_router(rag: UniversalRAG, *routes: str) -> UniversalRAG:
    return UniversalRAG(
        store=rag.store, embedder=rag.embedder, router=FixedRouter(*routes), generator=None, visual_encoder=None
    )


class RecordingModel(GenericFakeChatModel):
    """A scripted chat model that records the messages it was sent."""

    seen: ClassVar[list[Any]] = []

    def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def test_graph_routes_retrieves_and_returns_evidence_without_a_model(rag: UniversalRAG) -> None:
    graph = build_graph(rag, k=2)
    assert {"route", "generate", "retrieve_table", "retrieve_image", "retrieve_clip"} <= set(graph.nodes)
    state = graph.invoke({"question": "What is the win-loss record of the Quarry Lions?"})
    assert state["decision"]["routes"][0] == "table" and state["decision"]["router"]
    assert state["documents"] and {d.metadata["corpus"] for d in state["documents"]} == {"table"}
    assert state["documents"][0].metadata["routes"] == state["decision"]["routes"]
    assert state["answer"] is None and state["citations"] == []


def test_graph_answers_from_image_evidence_with_a_chat_model(rag: UniversalRAG) -> None:
    llm = RecordingModel(messages=iter([AIMessage(content="A white cup on a saucer [E1].")]))
    llm.seen.clear()
    graph = build_graph(rag, llm, k=1)
    state = graph.invoke({"messages": [HumanMessage("Show me what the coffee cup on the saucer looks like")]})
    assert state["decision"]["routes"][0] == "image"
    assert state["answer"] == "A white cup on a saucer [E1]."
    assert state["citations"] == [state["documents"][0].id]
    assert state["messages"][-1].content == state["answer"]  # appended to the conversation
    sent = llm.seen[-1][-1].content
    assert any(block["type"] == "image" and block["mime_type"] == "image/jpeg" for block in sent)


def test_several_routes_fan_out_in_parallel(rag: UniversalRAG) -> None:
    two = _with_router(rag, "table", "paragraph")
    edge = make_route_edge(two)
    sends = edge.invoke({"question": "Quarry Lions and the lighthouse"})
    assert [s.node for s in sends] == ["retrieve_table", "retrieve_paragraph"] and all(
        isinstance(s, Send) and s.arg["question"] == "Quarry Lions and the lighthouse" for s in sends
    )
    assert make_route_edge(two, corpora=["table"]).invoke({"question": "x"}) == "retrieve_table"
    none = _with_router(rag, "none")
    assert make_route_edge(none, allow_none=True).invoke({"question": "What is 2+2?"}) == "generate"
    assert make_route_edge(none, none_node=END, allow_none=True).invoke({"question": "2+2?"}) == END
    assert make_route_edge(none, corpora=["table"]).invoke({"question": "2+2?"}) == "retrieve_table"

    graph = build_graph(two, corpora=["table", "paragraph", "image"], k=2)
    state = graph.invoke({"question": "Quarry Lions and the lighthouse"})
    assert {d.metadata["corpus"] for d in state["documents"]} == {"table", "paragraph"}
    assert len(state["documents"]) == 4
    state = asyncio.run(graph.ainvoke({"question": "Quarry Lions and the lighthouse"}))
    assert {d.metadata["corpus"] for d in state["documents"]} == {"table", "paragraph"}

    state = build_graph(_with_router(rag, "none"), corpora=["table"], allow_none=True).invoke(
        {"question": "What is 2+2?"}
    )
    assert state["decision"]["routes"] == ["none"] and not state.get("documents") and state["answer"] is None
    # By default a graph answers, so `none` is a conclusion (as for UniversalRAG.query); allow_none=False searches
    # the likeliest corpus instead.
    state = build_graph(_with_router(rag, "none"), corpora=["table"]).invoke({"question": "What is 2+2?"})
    assert state["decision"]["routes"] == ["none"] and not state.get("documents")
    state = build_graph(_with_router(rag, "none"), corpora=["table"], allow_none=False).invoke(
        {"question": "What is 2+2?"}
    )
    assert state["decision"]["fallback"] and {d.metadata["corpus"] for d in state["documents"]} == {"table"}


def test_route_node_and_edge_in_a_users_own_graph(rag: UniversalRAG) -> None:
    """A user's chat agent gains routed retrieval by adding our node and edge; its own node answers."""

    class AgentState(MessagesState):
        decision: dict[str, Any]
        documents: Annotated[list[Document], operator.add]

    def respond(state: AgentState) -> dict[str, Any]:
        found = "; ".join(sorted({d.metadata["corpus"] for d in state.get("documents", [])})) or "nothing"
        return {"messages": [AIMessage(content=f"searched: {found}")]}

    builder = StateGraph(AgentState)
    builder.add_node("route", make_route_node(rag))
    builder.add_node("retrieve_table", make_retrieve_node(rag, "table", k=1))
    builder.add_node("retrieve_clip", make_retrieve_node(rag, "clip", k=1))
    builder.add_node("respond", respond)
    builder.add_edge(START, "route")
    builder.add_conditional_edges(
        "route",
        make_route_edge(rag, corpora=["table", "clip"], none_node="respond"),
        ["retrieve_table", "retrieve_clip", "respond"],
    )
    builder.add_edge("retrieve_table", "respond")
    builder.add_edge("retrieve_clip", "respond")
    builder.add_edge("respond", END)
    graph = builder.compile(checkpointer=InMemorySaver())

    config = {"configurable": {"thread_id": "t1"}}
    state = graph.invoke({"messages": [HumanMessage("What is the win-loss record of the Quarry Lions?")]}, config)
    assert state["decision"]["routes"][0] == "table" and state["messages"][-1].content == "searched: table"
    assert "Quarry Lions" in state["documents"][0].page_content
    state = graph.invoke(
        {"messages": [HumanMessage("In the morning video, what happens in the moment when the cat is sleeping?")]},
        config,
    )
    assert state["decision"]["routes"][0] == "clip" and "Chelsea" in state["documents"][-1].page_content
    assert len(state["messages"]) == 4


def test_generate_node_uses_the_state_documents(rag: UniversalRAG) -> None:
    llm = RecordingModel(messages=iter([AIMessage(content="Agnes Ferrow designed it [E1].")]))
    llm.seen.clear()
    docs = make_retrieve_node(rag, "paragraph", k=2).invoke({"question": "Who designed the lighthouse?"})
    update = make_generate_node(rag, llm).invoke({"question": "Who designed the lighthouse?", **docs})
    assert update["answer"].startswith("Agnes Ferrow") and update["citations"] == [docs["documents"][0].id]
    assert "messages" not in update  # the state has no conversation
    assert make_generate_node(rag).invoke({"question": "q", "documents": []}) == {"answer": None, "citations": []}


def test_the_answer_is_written_from_k_documents_merged_as_retrieve_merges(rag: UniversalRAG) -> None:
    """Two retrieve nodes give k documents each; the model is handed the best k of them, ranked as
    ``rag.retrieve`` ranks the same corpora (it was handed all 2k, one corpus after the other)."""
    question = "Who designed the lighthouse?"
    docs = [
        d
        for corpus in ("table", "paragraph")
        for d in make_retrieve_node(rag, corpus, k=2).invoke({"question": question})["documents"]
    ]
    assert len(docs) == 4
    llm = RecordingModel(messages=iter([AIMessage(content="Agnes Ferrow designed it [E1].")]))
    llm.seen.clear()
    make_generate_node(rag, llm, k=2).invoke({"question": question, "documents": docs})
    prompt = str(llm.seen[-1][-1].content)  # the question and its evidence (the system message explains the ids)
    assert "[E2]" in prompt and "[E3]" not in prompt
    expected = rag.retrieve(question, k=2, routes=["table", "paragraph"])
    assert prompt.index(expected[0].content[:40]) < prompt.index("[E2]")


def test_question_comes_from_the_state_or_the_last_human_message() -> None:
    assert question_of({"question": "a"}) == "a"
    assert question_of({"messages": [HumanMessage("b"), AIMessage("c")]}) == "b"
    assert question_of({"messages": [{"role": "user", "content": "d"}]}) == "d"
    with pytest.raises(RoutingError, match="no question"):
        question_of({"messages": []})


def test_public_api_is_pinned() -> None:
    assert sorted(lg.__all__) == sorted(
        [
            "UniversalRAGState",
            "question_of",
            "retrieve_node_name",
            "make_route_node",
            "make_route_edge",
            "make_retrieve_node",
            "make_generate_node",
            "build_graph",
            "MissingStateKeysError",
            "add_documents",
        ]
    )


def test_missing_langgraph_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langgraph", None)
    monkeypatch.delitem(sys.modules, "langchain_universalrag.graph")
    with pytest.raises(MissingDependencyError, match=r"langchain-universalrag\[langgraph\]"):
        importlib.import_module("langchain_universalrag.graph")
