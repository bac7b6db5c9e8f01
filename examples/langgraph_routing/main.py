"""LangGraph routing: route → parallel per-corpus retrieval → generate, and the same edge in your own graph
— offline.

``build_graph(rag, llm)`` compiles the whole pipeline: the router writes its decision into the state, one
``retrieve_<corpus>`` node runs per chosen corpus (several in parallel through ``Send``), and the generate
node shows the evidence — text, table rows, photographs, video frames — to a chat model. The second part
adds only our route node and edge to a chat agent's own ``StateGraph``. The chat model is a stand-in so
that the example runs without a key; pass any LangChain chat model instead.

    python examples/langgraph_routing/main.py [--database-url URL] [--schema NAME] [--mermaid]
"""

from __future__ import annotations

import operator
from typing import Annotated, Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.graph import END, START, MessagesState, StateGraph

from langchain_universalrag.graph import build_graph, make_retrieve_node, make_route_edge, make_route_node
from universalrag.demo import demo_arguments, demo_questions, open_demo
from universalrag.pipeline import UniversalRAG


class EvidenceReader(BaseChatModel):
    """A stand-in multimodal chat model: reports what it was shown and cites the first item."""

    @property
    def _llm_type(self) -> str:
        return "evidence-reader"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        content = messages[-1].content
        if isinstance(content, str):  # the `none` route: no evidence, the bare question
            reply = "(answered from the model's own knowledge)"
        else:
            pictures = sum(1 for b in content if b.get("type") == "image")
            items = sum(1 for b in content if b.get("type") == "text" and b["text"].startswith("[E"))
            reply = f"Read {items} item(s) of evidence and {pictures} picture(s) [E1]."
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])


class ChatState(MessagesState):
    """A chat agent's own state, with the two keys our nodes write."""

    decision: dict[str, Any]
    documents: Annotated[list[Document], operator.add]


def chat_agent(rag: UniversalRAG) -> Any:
    """An existing chat graph that gains routed retrieval from our route node and edge."""

    def reply(state: ChatState) -> dict[str, Any]:
        docs = state.get("documents") or []
        text = f"I looked in {sorted({d.metadata['corpus'] for d in docs})}." if docs else "No lookup needed."
        return {"messages": [AIMessage(content=text)]}

    corpora = ["paragraph", "table", "image"]
    builder = StateGraph(ChatState)
    builder.add_node("route", make_route_node(rag, allow_none=True))  # `none`: reply without a lookup
    for corpus in corpora:
        builder.add_node(f"retrieve_{corpus}", make_retrieve_node(rag, corpus, k=2))
        builder.add_edge(f"retrieve_{corpus}", "reply")
    builder.add_node("reply", reply)
    builder.add_edge(START, "route")
    builder.add_conditional_edges(
        "route",
        make_route_edge(rag, corpora=corpora, none_node="reply", allow_none=True),
        [*(f"retrieve_{c}" for c in corpora), "reply"],
    )
    builder.add_edge("reply", END)
    return builder.compile()


def main() -> None:
    parser = demo_arguments(description=__doc__.splitlines()[0])
    parser.add_argument("--mermaid", action="store_true", help="print the compiled graph as a Mermaid diagram")
    args = parser.parse_args()
    rag, _ = open_demo(database_url=args.database_url, schema=args.schema, generator=None)
    questions = {q.route: q.question for q in demo_questions()}

    graph = build_graph(rag, EvidenceReader(), k=2, allow_none=True)  # `none` questions skip retrieval
    if args.mermaid:
        print(graph.get_graph().draw_mermaid())
    for route in ("none", "table", "image", "clip"):
        state = graph.invoke({"question": questions[route]})
        print(f"\nQ: {questions[route]}")
        print(f"   routes: {state['decision']['routes']}")
        for doc in state.get("documents", []):
            print(f"   - [{doc.metadata['corpus']}] score={doc.metadata['score']:.3f} {doc.page_content[:60]!r}")
        print(f"   answer: {state['answer']}  citations: {len(state['citations'])}")

    agent = chat_agent(rag)
    print("\nyour own graph + our route node and edge:")
    for route in ("none", "table", "image"):
        state = agent.invoke({"messages": [HumanMessage(questions[route])]})
        print(f"   {questions[route][:60]!r} -> {state['messages'][-1].content}")
    rag.close()


if __name__ == "__main__":
    main()
