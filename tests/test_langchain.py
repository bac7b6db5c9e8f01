"""The LangChain adapter on a real database with the real encoder and the shipped router: retrievers, corpus
tools inside ``create_agent``, the vector store, image/frame content blocks and the chat-model generator.
LangChain's standard suites (``RetrieversIntegrationTests``, ``VectorStoreIntegrationTests``) run here."""

from __future__ import annotations

import asyncio
import base64
import importlib
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage, convert_to_openai_messages
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnablePassthrough
from langchain_core.vectorstores import VectorStore
from langchain_tests.integration_tests import RetrieversIntegrationTests, VectorStoreIntegrationTests
from support.fake_chat import ToolCallingFakeModel

import langchain_universalrag
from langchain_universalrag import (
    CorpusRetriever,
    LangChainEmbedder,
    LangChainGenerator,
    UniversalRAGEmbeddings,
    UniversalRAGRetriever,
    UniversalRAGVectorStore,
    build_chat_messages,
    create_corpus_tools,
    documents_to_content_blocks,
)
from universalrag.errors import ConfigError, GenerationError, MissingDependencyError
from universalrag.generate import build_messages
from universalrag.pipeline import UniversalRAG
from universalrag.types import CorpusSpec

CORE_KEYS = {
    "id",
    "corpus",
    "modality",
    "granularity",
    "score",
    "uri",
    "start_s",
    "end_s",
    "source_id",
    "parent_id",
    "routes",
    "route_scores",
    "router",
}


# -- the routed retriever ----------------------------------------------------------------------------------
def test_retriever_routes_and_returns_documents_with_metadata(rag: UniversalRAG) -> None:
    retriever = UniversalRAGRetriever(rag=rag, k=3)
    docs = retriever.invoke("What is the win-loss record of the Quarry Lions?")
    assert 1 <= len(docs) <= 3
    top = docs[0]
    assert CORE_KEYS <= set(top.metadata)
    assert top.metadata["corpus"] == "table" and top.metadata["modality"] == "table"
    assert top.metadata["routes"][0] == "table" and top.metadata["router"]
    assert set(top.metadata["route_scores"]) <= {"none", "paragraph", "document", "table", "image", "clip", "video"}
    assert any("Quarry Lions" in p["text"] for p in top.metadata["matched_parts"])
    assert top.id == top.metadata["id"] and top.metadata["uri"].startswith("file://")

    clip = retriever.invoke("In the morning video, what happens in the moment when the cat is sleeping?")[0]
    assert clip.metadata["corpus"] == "clip" and "Chelsea" in clip.page_content
    assert clip.metadata["start_s"] is not None and clip.metadata["end_s"] > clip.metadata["start_s"]
    assert clip.metadata["parent_id"] and clip.metadata["source_id"]


def test_retriever_call_arguments_override_fields(rag: UniversalRAG) -> None:
    retriever = UniversalRAGRetriever(rag=rag, k=4)
    assert len(retriever.invoke("Who designed the Kestrel Point lighthouse?", k=2)) == 2
    fixed = retriever.invoke("Quarry Lions and the lighthouse", routes=["table", "paragraph"], k=3)
    assert {d.metadata["corpus"] for d in fixed} == {"table", "paragraph"} and len(fixed) == 3
    assert fixed[0].metadata["router"] == "caller"
    assert retriever.invoke("What is 17 times 3?", routes=["none"]) == []
    only = UniversalRAGRetriever(rag=rag, routes=["image"]).invoke("a rocket", filter={"no_such_key": "x"})
    assert only == []
    legacy = UniversalRAGRetriever(rag=rag, routes=["table"], filters={"format": "xlsx"}).invoke("wins")
    assert [d.metadata["title"] for d in legacy] == ["Ferries"]  # `filters` still works (deprecated spelling)
    assert retriever.invoke("What is 17 times 3?")  # the router's `none` never empties an agent's tool
    assert retriever.invoke("What is 17 times 3?", allow_none=True) == []


def test_retriever_native_async(rag: UniversalRAG) -> None:
    retriever = UniversalRAGRetriever(rag=rag, k=2)

    async def main() -> tuple[list[Document], list[Document]]:
        return await asyncio.gather(
            retriever.ainvoke("Show me what the coffee cup on the saucer looks like"),
            retriever.ainvoke("Who designed the Kestrel Point lighthouse?", k=1),
        )

    images, paragraphs = asyncio.run(main())
    assert images[0].metadata["corpus"] == "image" and "saucer" in images[0].page_content
    assert len(paragraphs) == 1 and paragraphs[0].metadata["corpus"] == "paragraph"


def test_corpus_retriever_searches_one_corpus(rag: UniversalRAG) -> None:
    docs = CorpusRetriever(rag=rag, routes=["image"], k=5).invoke("Who designed the lighthouse?")
    assert len(docs) == 2 and {d.metadata["corpus"] for d in docs} == {"image"}
    assert "routes" not in docs[0].metadata
    assert (
        asyncio.run(CorpusRetriever(rag=rag, routes=["paragraph"], k=1).ainvoke("lighthouse"))[0].metadata["corpus"]
        == "paragraph"
    )


def test_retriever_in_a_chain(rag: UniversalRAG) -> None:
    prompt = ChatPromptTemplate.from_messages([("system", "Context:\n{context}"), ("human", "{question}")])
    llm = FakeListChatModel(responses=["The Quarry Lions won 20 and lost 18."])
    chain = (
        {
            "context": UniversalRAGRetriever(rag=rag, k=2) | (lambda ds: "\n".join(d.page_content for d in ds)),
            "question": RunnablePassthrough(),
        }
        | prompt
        | llm
        | StrOutputParser()
    )
    assert chain.invoke("What is the win-loss record of the Quarry Lions?") == "The Quarry Lions won 20 and lost 18."


def test_page_content_shows_a_tables_matched_rows_first(rag: UniversalRAG) -> None:
    """A chain that joins ``page_content`` (LangChain's RAG tutorial does) must show the row that answers: before,
    a table's page_content was its first rows only, so a row further down never reached the model."""
    from langchain_universalrag._convert import document_to_hit

    question = "What is the win-loss record of the Quarry Lions?"
    _, hits = rag.search(question, k=2, routes=["table"])
    docs = UniversalRAGRetriever(rag=rag, k=2, routes=["table"]).invoke(question)
    assert [d.metadata["id"] for d in docs] == [h.id for h in hits] and hits[0].matched_parts
    for doc, hit in zip(docs, hits, strict=True):
        first_row = hit.matched_parts[0][1]
        assert doc.page_content.startswith(
            f"Matched rows (best first):\n- row {hit.matched_parts[0][0] + 1}: {first_row}\n"
        )
        assert doc.page_content.endswith("\n\n" + hit.content)
        assert document_to_hit(doc).content == hit.content  # the round trip keeps the unit's own content


class TestUniversalRAGRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's standard retriever suite against the real knowledge base."""

    pytestmark = pytest.mark.anyio

    @pytest.fixture(autouse=True)
    def _bind(self, rag: UniversalRAG) -> None:
        self._rag = rag

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return UniversalRAGRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"rag": self._rag, "k": 4}

    @property
    def retriever_query_example(self) -> str:
        return "Who designed the Kestrel Point lighthouse?"


# -- tools and agents ----------------------------------------------------------------------------------------
def test_corpus_tools_return_text_and_documents(rag: UniversalRAG) -> None:
    tools = {t.name: t for t in create_corpus_tools(rag)}
    assert set(tools) == {
        "search_paragraph",
        "search_document",
        "search_table",
        "search_image",
        "search_clip",
        "search_video",
    }
    assert rag.store.corpus("table").description in tools["search_table"].description
    # what each corpus holds, so that a model choosing a tool knows what it can find there
    described = tools["search_table"].description
    assert "It holds 2 sources: " in described and "league.csv" in described
    assert "lighthouse.txt" in tools["search_paragraph"].description
    message = tools["search_table"].invoke(
        {"type": "tool_call", "name": "search_table", "id": "c1", "args": {"query": "Quarry Lions wins"}}
    )
    assert isinstance(message, ToolMessage) and "Quarry Lions" in message.content
    assert "Matched rows" in message.content  # the core's evidence text: the rows that matched come first
    assert all(isinstance(d, Document) and d.metadata["corpus"] == "table" for d in message.artifact)
    only = create_corpus_tools(rag, ["clip"], k=1)
    assert [t.name for t in only] == ["search_clip"]
    content, docs = asyncio.run(only[0].coroutine("the sleeping cat"))  # type: ignore[misc]
    assert len(docs) == 1 and "Transcript of" in content and "Chelsea" in content


def test_tools_inside_create_agent(rag: UniversalRAG) -> None:
    from langchain.agents import create_agent

    model = ToolCallingFakeModel(
        messages=iter(
            [
                AIMessage(
                    content="",
                    tool_calls=[
                        {
                            "name": "search_table",
                            "args": {"query": "Quarry Lions record"},
                            "id": "call_1",
                            "type": "tool_call",
                        }
                    ],
                ),
                AIMessage(content="The Quarry Lions won 20 games and lost 18."),
            ]
        )
    )
    model.seen.clear()
    agent = create_agent(model, create_corpus_tools(rag, k=2), system_prompt="Use the search tools.")
    state = agent.invoke({"messages": [HumanMessage("What is the win-loss record of the Quarry Lions?")]})
    tool_messages = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert len(tool_messages) == 1 and tool_messages[0].name == "search_table"
    docs = tool_messages[0].artifact
    assert docs and all(d.metadata["corpus"] == "table" for d in docs)
    assert any("Quarry Lions" in p["text"] for p in docs[0].metadata["matched_parts"])  # from the real DB
    assert state["messages"][-1].content == "The Quarry Lions won 20 games and lost 18."
    assert any(isinstance(m, ToolMessage) and "Quarry Lions" in m.content for m in model.seen[-1])


# -- multimodal messages and the generator --------------------------------------------------------------------
def _decoded(block: dict[str, Any]) -> bytes:
    return base64.b64decode(block["base64"])


def test_image_and_frame_hits_become_image_blocks(rag: UniversalRAG) -> None:
    image = CorpusRetriever(rag=rag, routes=["image"], k=1).invoke("coffee cup on a saucer")
    clip = CorpusRetriever(rag=rag, routes=["clip"], k=1).invoke("the sleeping cat")
    blocks = documents_to_content_blocks(image + clip)
    images = [b for b in blocks if b["type"] == "image"]
    assert blocks[0]["type"] == "text" and blocks[0]["text"].startswith("[E1] [image 1]")
    stamps = [b for b in blocks if b["type"] == "text" and b["text"].startswith("t=")]  # one per video frame
    assert stamps and len(images) == 1 + len(stamps)
    assert all(b["mime_type"] == "image/jpeg" and _decoded(b).startswith(b"\xff\xd8\xff") for b in images)
    assert documents_to_content_blocks(image, include_text=False) == [images[0]]
    assert documents_to_content_blocks([]) == []
    # a document from elsewhere is shown as text
    shown = documents_to_content_blocks([Document(page_content="plain")])[0]["text"]
    assert shown.endswith("\nplain\n</retrieved-data>")

    messages = build_chat_messages("What colour is the cup?", image)
    assert isinstance(messages[0], SystemMessage) and isinstance(messages[1], HumanMessage)
    assert messages[1].content[-1] == {"type": "text", "text": "Question: What colour is the cup?"}
    # LangChain's own translation to the OpenAI format gives back exactly the core's prompt
    core = build_messages("What colour is the cup?", langchain_universalrag.documents_to_evidence(image))
    assert convert_to_openai_messages(messages) == core
    assert build_chat_messages("Hi?", [])[-1].content == "Hi?"


def test_langchain_generator_answers_with_citations(rag: UniversalRAG) -> None:
    llm = ToolCallingFakeModel(
        messages=iter([AIMessage(content="It is white [E1]."), AIMessage(content="Agnes Ferrow [E1].")])
    )
    llm.seen.clear()
    generator = LangChainGenerator(llm)
    images = CorpusRetriever(rag=rag, routes=["image"], k=1).invoke("coffee cup on a saucer")
    evidence = langchain_universalrag.documents_to_evidence(images)
    result = generator.generate("What colour is the cup?", evidence)
    assert result.text == "It is white [E1]." and result.citations == (images[0].id,)
    sent = llm.seen[-1][1].content
    assert any(part["type"] == "image" for part in sent)  # the model saw the picture
    # the core facade answers through a LangChain chat model
    answering = UniversalRAG(
        store=rag.store, embedder=rag.embedder, router=rag.router, generator=generator, visual_encoder=None
    )
    answer = answering.query("Who designed the Kestrel Point lighthouse?", k=1)
    assert answer.text == "Agnes Ferrow [E1]." and answer.citations == (answer.hits[0].id,)

    class Broken(FakeListChatModel):
        def _call(self, *args: Any, **kwargs: Any) -> str:
            raise RuntimeError("endpoint down")

    with pytest.raises(GenerationError, match="endpoint down"):
        LangChainGenerator(Broken(responses=["x"])).generate("q", [])


# -- the vector store -------------------------------------------------------------------------------------------
class TestUniversalRAGVectorStoreStandard(VectorStoreIntegrationTests):
    """LangChain's standard vector-store suite: a fresh corpus per test, built for the suite's fake embeddings."""

    pytestmark = pytest.mark.anyio

    @pytest.fixture
    def vectorstore(self, rag: UniversalRAG) -> Iterator[VectorStore]:
        embedder = LangChainEmbedder(self.get_embeddings())
        name = "lc_" + uuid.uuid4().hex[:10]
        rag.store.create_corpus(
            CorpusSpec(
                name=name, modality="text", granularity="other", dimension=embedder.dimension, embedder=embedder.name
            )
        )
        try:
            yield UniversalRAGVectorStore(rag=rag, corpus=name, embedding=self.get_embeddings())
        finally:
            rag.store.drop_corpus(name)


def test_vector_store_with_the_bundled_encoder(rag: UniversalRAG) -> None:
    name = "lc_" + uuid.uuid4().hex[:10]
    store = UniversalRAGVectorStore.from_texts(
        ["The cryostat was serviced on Monday.", "Lunch is at noon in the atrium.", "The telescope dome leaks."],
        metadatas=[{"team": "lab"}, {"team": "admin"}, {"team": "lab"}],
        ids=["n1", "n2", "n3"],
        corpus=name,
        rag=rag,
        description="Notes of the lab",
    )
    try:
        assert rag.store.corpus(name).description == "Notes of the lab"
        assert rag.store.corpus(name).embedder == rag.embedder.name
        found = store.similarity_search_with_score("When was the cryostat serviced?", k=2)
        assert found[0][0] == Document(
            id="n1", page_content="The cryostat was serviced on Monday.", metadata={"team": "lab"}
        )
        assert found[0][1] > found[1][1]
        lab = store.similarity_search("lunch", k=3, filter={"team": "lab"})
        assert {d.id for d in lab} == {"n1", "n3"}
        relevance = store.similarity_search_with_relevance_scores("cryostat", k=1)
        assert 0.0 <= relevance[0][1] <= 1.0
        vector = UniversalRAGEmbeddings(rag.embedder).embed_query("dome leaks")
        assert store.similarity_search_by_vector(vector, k=1)[0].id == "n3"
        assert asyncio.run(store.asimilarity_search_by_vector(vector, k=1))[0].id == "n3"
        # the routed retriever sees the same ids
        doc = UniversalRAGRetriever(rag=rag, routes=[name], k=1).invoke("cryostat")[0]
        assert doc.id == "n1" and "_langchain_id" not in doc.metadata and doc.metadata["corpus"] == name
        as_retriever = store.as_retriever(search_kwargs={"k": 1})
        assert as_retriever.invoke("telescope")[0].id == "n3"
        with pytest.raises(ValueError):
            store.delete()
        assert store.delete(["n1", "n2", "n3"]) is True
    finally:
        rag.store.drop_corpus(name)
    with pytest.raises(ConfigError):
        UniversalRAGVectorStore(corpus="x")


def test_vector_store_on_a_multi_vector_corpus(rag: UniversalRAG) -> None:
    """Texts added to a multi-vector corpus (documents) are found through their one part."""
    name = "lc_" + uuid.uuid4().hex[:10]
    rag.store.create_corpus(
        CorpusSpec(
            name=name,
            modality="text",
            granularity="document",
            multi_vector=True,
            dimension=rag.embedder.dimension,
            embedder=rag.embedder.name,
        )
    )
    try:
        store = UniversalRAGVectorStore(rag=rag, corpus=name)
        store.add_documents(
            [
                Document(page_content="Penguins live in the southern hemisphere.", id="p"),
                Document(page_content="The budget meeting moved to Friday."),
            ]
        )
        assert store.similarity_search("Where do penguins live?", k=1)[0].id == "p"
    finally:
        rag.store.drop_corpus(name)


# -- packaging -----------------------------------------------------------------------------------------------------
def test_public_api_is_pinned() -> None:
    assert langchain_universalrag.__all__ == sorted(
        [
            "UniversalRAGRetriever",
            "CorpusRetriever",
            "create_corpus_tools",
            "create_corpus_tool",
            "create_entity_tool",
            "format_documents",
            "UniversalRAGVectorStore",
            "LangChainEmbedder",
            "UniversalRAGEmbeddings",
            "LangChainGenerator",
            "documents_to_content_blocks",
            "documents_to_evidence",
            "build_chat_messages",
        ]
    )
    for name in langchain_universalrag.__all__:
        assert getattr(langchain_universalrag, name) is not None


def test_missing_langchain_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_core", None)
    for module in ("langchain_universalrag.retrievers", "langchain_universalrag.vectorstores"):
        monkeypatch.delitem(sys.modules, module)
        with pytest.raises(MissingDependencyError, match=r"pip install langchain-universalrag") as info:
            importlib.import_module(module)
        assert info.value.package == "langchain-core"
