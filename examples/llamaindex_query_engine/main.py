"""UniversalRAG as a LlamaIndex retriever and query engine — offline.

1. Opens the knowledge base of ``universalrag demo`` (documents, tables, photographs, a subtitled video;
   built and ingested on the first run, reused afterwards) in embedded Postgres or ``UNIVERSALRAG_DATABASE_URL``.
2. ``UniversalRAGRetriever`` routes each question to the corpora that can answer it and returns ``TextNode``s,
   and ``ImageNode``s for photographs, with the corpus, time range and route decision in their metadata.
3. ``UniversalRAGQueryEngine`` answers with a LlamaIndex LLM through a response synthesizer. ``MockLLM`` stands
   in for a real model: it answers with the prompt it was given, so you can see the evidence that reached it.
   Swap in any LlamaIndex LLM (``OpenAI(model="gpt-4o-mini")``, ``Ollama(model="llama3.2")``...).
4. Without an LLM the engine uses the core's generator (``UNIVERSALRAG_LLM_MODEL``), or returns the evidence.

    python examples/llamaindex_query_engine/main.py [--database-url URL] [--schema NAME]
"""

from __future__ import annotations

import asyncio

from llama_index.core.llms import MockLLM
from llama_index.core.response_synthesizers import ResponseMode, get_response_synthesizer
from llama_index.core.schema import ImageNode

from llama_index.retrievers.universalrag import UniversalRAGQueryEngine, UniversalRAGRetriever
from universalrag.demo import demo_arguments, demo_questions, open_demo


def context_of(prompt: str, limit: int = 240) -> str:
    """The evidence part of a question-answering prompt, shortened (MockLLM answers with its prompt)."""
    body = prompt.split("---------------------")[1] if prompt.count("---------------------") >= 2 else prompt
    flat = " ".join(body.split())
    return flat if len(flat) <= limit else flat[:limit] + " …"


def main() -> None:
    parser = demo_arguments(description=__doc__.splitlines()[0])
    args = parser.parse_args()
    rag, _ = open_demo(database_url=args.database_url, schema=args.schema, generator=None)
    questions = {q.route: q.question for q in demo_questions()}

    # 1. The retriever: routing + per-corpus search; TextNodes, and ImageNodes for photographs.
    retriever = UniversalRAGRetriever(rag=rag, similarity_top_k=2)
    for route in ("paragraph", "table", "image", "clip"):
        nodes = retriever.retrieve(questions[route])
        print(f"\nQ: {questions[route]}")
        print(f"   routes: {nodes[0].metadata['routes'] if nodes else []}")
        for item in nodes:
            m = item.metadata
            span = f" {m['start_s']:.1f}-{m['end_s']:.1f}s" if m.get("start_s") is not None else ""
            picture = f" image_path={item.node.image_path}" if isinstance(item.node, ImageNode) else ""
            print(f"   - {type(item.node).__name__} [{m['corpus']}] score={item.score:.3f}{span}{picture}")
            print(f"     {item.node.get_content()[:90]!r}")

    # 2. The query engine with a LlamaIndex LLM (MockLLM echoes the prompt the synthesizer built). One prompt
    # ("simple_summarize"): the default synthesizer refines over several prompts when the evidence is long, and a
    # refine step would hand MockLLM's echo — the whole first prompt — back to it. A real LLM needs none of this.
    llm = MockLLM()
    synthesizer = get_response_synthesizer(llm=llm, response_mode=ResponseMode.SIMPLE_SUMMARIZE)
    engine = UniversalRAGQueryEngine(rag=rag, llm=llm, response_synthesizer=synthesizer, similarity_top_k=2)
    for route in ("table", "clip"):
        response = engine.query(questions[route])
        print(
            f"\nQ: {questions[route]}\n   routes: {response.metadata['routes']}, "
            f"answered by {response.metadata['answered_by']}, {len(response.source_nodes)} source nodes"
        )
        print(f"   the LLM saw: {context_of(str(response))}")
    direct = engine.query(questions["none"])
    print(
        f"\nQ: {questions['none']}\n   routes: {direct.metadata['routes']}: the LLM answers alone "
        f"({len(direct.source_nodes)} source nodes)"
    )

    # 3. Without an LLM (and no UNIVERSALRAG_LLM_MODEL): the evidence, with a sentence saying why. Async here.
    retrieval_only = UniversalRAGQueryEngine(rag=rag, similarity_top_k=1)
    response = asyncio.run(retrieval_only.aquery(questions["image"]))
    print(f"\nretrieval only:\n{response}")
    rag.close()


if __name__ == "__main__":
    main()
