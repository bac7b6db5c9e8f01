"""LlamaIndex's own RouterQueryEngine and RouterRetriever, routed by UniversalRAG's evidence-aware router — offline.

1. Opens the knowledge base of ``universalrag demo`` (built and ingested on the first run, reused afterwards) in
   embedded Postgres or ``UNIVERSALRAG_DATABASE_URL``.
2. Wraps one query engine per corpus in ``QueryEngineTool``s whose names say nothing about corpora; the
   ``UniversalRAGSelector`` maps each tool to a route by its description, then lets the pipeline's routing (the
   shipped router's prior and a probe of each tool's corpus) choose among them for every question (a tool described
   as answering from general knowledge stands for ``none``; several tools are selected when the decision is).
3. Does the same for a ``RouterRetriever`` over ``corpus_retriever_tools(rag)`` (tools named ``search_<corpus>``,
   mapped by name).

``MockLLM`` stands in for the LLM that LlamaIndex's router engines require (it is only used to combine answers
when several engines are selected); no LLM chooses a route.

    python examples/llamaindex_router_query_engine/main.py [--database-url URL] [--schema NAME]
"""

from __future__ import annotations

from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RouterQueryEngine
from llama_index.core.retrievers import RouterRetriever
from llama_index.core.tools import QueryEngineTool, ToolMetadata

from llama_index.retrievers.universalrag import (
    UniversalRAGQueryEngine,
    UniversalRAGSelector,
    corpus_retriever_tools,
)
from universalrag.demo import demo_arguments, demo_questions, open_demo

#: (tool name, description, the corpus its engine searches — "none": the LLM answers alone)
ENGINES = [
    (
        "observatory_facts",
        (
            "Short passages about Meridian Hill Observatory and its history, each answering one "
            "specific factual question."
        ),
        "paragraph",
    ),
    (
        "logs_and_measurements",
        (
            "Tables: the observatory's observing log and the glacier's yearly measurements, "
            "with figures, counts and records."
        ),
        "table",
    ),
    ("photo_library", "Photographs, for questions about what something or someone looks like.", "image"),
    (
        "video_moments",
        (
            "Scenes of the night-sky photography video with their transcript, for questions about a "
            "specific moment in the video."
        ),
        "clip",
    ),
    ("general_knowledge", "Answers from general knowledge, arithmetic or reasoning alone, without searching.", "none"),
]


def main() -> None:
    parser = demo_arguments(description=__doc__.splitlines()[0])
    args = parser.parse_args()
    rag, _ = open_demo(database_url=args.database_url, schema=args.schema, generator=None)
    llm = MockLLM()

    # 1. RouterQueryEngine: LlamaIndex's engine, our selector, tools mapped to routes by their descriptions.
    tools = [
        QueryEngineTool(
            query_engine=UniversalRAGQueryEngine(
                rag=rag, routes=[corpus], similarity_top_k=1, llm=llm if corpus == "none" else None
            ),
            metadata=ToolMetadata(name=name, description=description),
        )
        for name, description, corpus in ENGINES
    ]
    selector = UniversalRAGSelector(rag=rag)
    print(
        "tools → routes:",
        ", ".join(
            f"{t.metadata.name} → {m.route} (by {m.how})"
            for t, m in zip(tools, selector.map_choices([t.metadata for t in tools]), strict=True)
        ),
    )
    engine = RouterQueryEngine(selector=selector, query_engine_tools=tools, llm=llm)
    for question in demo_questions():
        if question.route in ("document", "video"):
            continue  # no tool searches these corpora here; the router may only choose among the tools' routes
        response = engine.query(question.question)
        result = response.metadata["selector_result"]
        chosen = ", ".join(tools[i].metadata.name or "?" for i in result.inds)
        sources = sorted({n.metadata["corpus"] for n in response.source_nodes}) or ["-"]
        print(f"\nQ: {question.question}\n   selected: {chosen}  (sources: {', '.join(sources)})")
        print(f"   why: {result.reasons[0]}")

    # 2. RouterRetriever over one RetrieverTool per corpus (named search_<corpus>: mapped by name).
    retriever = RouterRetriever(
        selector=UniversalRAGSelector(rag=rag), retriever_tools=corpus_retriever_tools(rag), llm=llm
    )
    for question in demo_questions():
        if question.route == "none":
            continue  # no tool stands for `none`: the selector searches the likeliest corpus (fallback="best")
        nodes = retriever.retrieve(question.question)
        print(f"\nRouterRetriever: {question.question}\n   corpora: {sorted({n.metadata['corpus'] for n in nodes})}")
    rag.close()


if __name__ == "__main__":
    main()
