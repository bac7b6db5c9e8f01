"""A routed, multimodal LangChain retriever in a chain — offline.

1. Opens the knowledge base of ``universalrag demo`` (documents, tables, photographs, a subtitled video;
   built and ingested on the first run, reused afterwards) in embedded Postgres or
   ``UNIVERSALRAG_DATABASE_URL``.
2. ``UniversalRAGRetriever`` routes each question to the corpora that can answer it and returns
   ``Document``s with the corpus, score, time range and route decision in their metadata.
3. Uses the retriever in an LCEL chain, and sends an image hit to a chat model as image content blocks.

The chat models are stand-ins so that the example runs without a key; swap in any LangChain chat model
(``init_chat_model("openai:gpt-4o-mini")``, ``ChatOllama(model="llava")``...).

    python examples/langchain_retriever/main.py [--database-url URL] [--schema NAME]
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough

from langchain_universalrag import UniversalRAGRetriever, build_chat_messages, format_documents
from universalrag.demo import demo_arguments, demo_questions, open_demo


class PictureCounter(BaseChatModel):
    """A stand-in multimodal chat model: says how many pictures it was shown and quotes the first evidence."""

    @property
    def _llm_type(self) -> str:
        return "picture-counter"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        blocks = [b for m in messages if isinstance(m.content, list) for b in m.content]
        pictures = sum(1 for b in blocks if b.get("type") == "image")
        first = next((b["text"] for b in blocks if b.get("type") == "text"), "")
        reply = f"I was shown {pictures} picture(s). The evidence begins: {first[:160]!r} [E1]"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])


def main() -> None:
    parser = demo_arguments(description=__doc__.splitlines()[0])
    args = parser.parse_args()
    rag, _ = open_demo(database_url=args.database_url, schema=args.schema, generator=None)
    questions = {q.route: q.question for q in demo_questions()}

    # 1. The retriever: routing + per-corpus search, Documents with rich metadata.
    retriever = UniversalRAGRetriever(rag=rag, k=2)
    for route in ("paragraph", "table", "image", "clip"):
        docs = retriever.invoke(questions[route])
        print(f"\nQ: {questions[route]}")
        print(f"   routes: {docs[0].metadata['routes'] if docs else []}")
        for doc in docs:
            m = doc.metadata
            span = f" {m['start_s']:.1f}-{m['end_s']:.1f}s" if m["start_s"] is not None else ""
            print(f"   - [{m['corpus']}] score={m['score']:.3f}{span} {doc.page_content[:70]!r}")
    print(f"\nk per call: {len(retriever.invoke(questions['paragraph'], k=1))} document")

    # 2. In an LCEL chain (the stand-in model returns a canned answer).
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from this context only.\n\n{context}"), ("human", "{question}")]
    )
    llm = FakeListChatModel(responses=["Meridian Hill recorded its clear nights and meteors in the log."])
    chain = (
        {"context": retriever | (lambda docs: format_documents(docs, rag=rag)), "question": RunnablePassthrough()}
        | prompt
        | llm
        | StrOutputParser()
    )
    print(f"\nchain answer: {chain.invoke(questions['table'])}")

    # 3. Image hits as image content blocks for a multimodal chat model.
    docs = retriever.invoke(questions["image"])
    messages = build_chat_messages(questions["image"], docs)
    print(f"\nmultimodal answer: {PictureCounter().invoke(messages).text}")
    rag.close()


if __name__ == "__main__":
    main()
