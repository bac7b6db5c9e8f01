"""The LlamaIndex adapters as a user running LlamaIndex agents met them: one test per reported defect, on a real
database with the real bundled encoder and the shipped router.

The knowledge base is text only (a long manual, a short article, a table), so the image, clip and video corpora
are registered but empty — as in a user's schema where some built-in corpora were never filled."""

from __future__ import annotations

import asyncio
import copy
import json
import pickle
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.base.llms.types import CompletionResponse
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
from llama_index.core.llms import MockLLM
from llama_index.core.postprocessor import LongContextReorder
from llama_index.core.query_engine import RouterQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore
from llama_index.core.tools import QueryEngineTool, ToolMetadata
from llama_index.core.vector_stores.types import (
    ExactMatchFilter,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from llama_index.retrievers.universalrag import (
    UniversalRAGQueryEngine,
    UniversalRAGRetriever,
    UniversalRAGSelector,
    corpus_retriever_tools,
)
from universalrag.errors import FilterError, InvalidInputError
from universalrag.pipeline import UniversalRAG

DATA = Path(__file__).resolve().parent / "data" / "corpus"
FS_Q = "How do I read a file line by line with the fs module?"
GZIP_Q = "zlib gzip options"
TOPICS = ["buffers", "streams", "timers", "paths", "events", "processes", "sockets", "workers"]


def _manual() -> str:
    """A long manual (about 2,000 words): generic sections, then the one about reading files line by line and
    the one about gzip, far past the first pages (as in the Node.js manual that filled an agent's context)."""
    sections = []
    for topic in TOPICS:
        body = " ".join(
            f"The {topic} interface keeps its state in plain objects and reports progress through "
            f"callbacks, so that every {topic} operation can be cancelled or retried safely."
            for _ in range(10)
        )
        sections.append(f"## Working with {topic}\n\n{body}")
    sections.append(
        "## Reading a file line by line\n\nTo read a file line by line, create a read stream with "
        "fs.createReadStream and pass it to readline.createInterface; then iterate the interface with "
        "for await, one line per iteration, without loading the whole file into memory."
    )
    sections.append(
        "## Compressing with zlib\n\nzlib.createGzip accepts options such as level, memLevel, "
        "windowBits, strategy and chunkSize; gzip output is written with a header and a CRC32 trailer."
    )
    return "# The runtime manual\n\n" + "\n\n".join(sections) + "\n"


@pytest.fixture(scope="module")
def text_rag(database_url: str, minilm: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UniversalRAG]:
    """A UniversalRAG over a text-only knowledge base in a schema of its own (dropped afterwards)."""
    import uuid

    from universalrag.config import Settings

    folder = tmp_path_factory.mktemp("userkb")
    (folder / "manual.md").write_text(_manual(), encoding="utf-8")
    (folder / "lighthouse.txt").write_text(
        (DATA / "kestrel_point_lighthouse.txt").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (folder / "league.csv").write_text(
        "team,city,wins,losses\nHarbour Herons,Kestrel Bay,31,7\nQuarry Lions,Stonebridge,20,18\n", encoding="utf-8"
    )
    instance = UniversalRAG(
        settings=Settings(database_url=database_url, schema="liu_" + uuid.uuid4().hex[:12]),
        embedder=minilm,
        generator=None,
        visual_encoder=None,
        log_decisions=False,
    )
    report = instance.ingest([folder])
    assert report.ok, report.failed
    yield instance
    instance.store.downgrade("base")
    instance.close()


def _corpora(nodes: Sequence[NodeWithScore]) -> list[str]:
    return [n.node.metadata["corpus"] for n in nodes]


def _empty(text_rag: UniversalRAG) -> set[str]:
    return set(text_rag.store.corpora()) - set(text_rag.store.nonempty())


# -- 1: the selector routes with the pipeline's evidence-aware routing -------------------------------------------
def _corpus_engines(text_rag: UniversalRAG) -> list[QueryEngineTool]:
    """One engine per registered corpus, empty ones included, named after its corpus."""
    return [
        QueryEngineTool(
            query_engine=UniversalRAGQueryEngine(rag=text_rag, routes=[name], similarity_top_k=1),
            metadata=ToolMetadata(name=name, description=f"Searches the {name} corpus."),
        )
        for name in text_rag.store.corpora()
    ]


@pytest.mark.parametrize("question", [FS_Q, GZIP_Q])
def test_selector_routes_with_evidence_and_never_to_an_empty_corpus(text_rag: UniversalRAG, question: str) -> None:
    empty = _empty(text_rag)
    assert {"image", "clip", "video"} <= empty  # the situation the user met
    tools = _corpus_engines(text_rag)
    engine = RouterQueryEngine(selector=UniversalRAGSelector(rag=text_rag), query_engine_tools=tools, llm=MockLLM())
    response = engine.query(question)  # the question-only router said `none` or `video`: RoutingError, or nothing
    chosen = [tools[i].metadata.name for i in response.metadata["selector_result"].inds]
    assert chosen and not set(chosen) & empty
    assert all("evidence(" in reason for reason in response.metadata["selector_result"].reasons)
    assert chosen[0] == text_rag.route(question, allow_none=False).routes[0] in ("document", "paragraph")
    assert set(_corpora(response.source_nodes)) <= {"document", "paragraph"}


def test_selector_falls_back_to_the_best_choice_of_a_filled_corpus(text_rag: UniversalRAG) -> None:
    # Only empty corpora and one filled one: the filled one, whatever the question.
    metas = [ToolMetadata(name=n, description="x") for n in ("video", "image", "paragraph")]
    selector = UniversalRAGSelector(rag=text_rag)
    result, decision = selector.select_with_decision(metas, "Show me the video of the launch")
    assert result.inds == [2] and decision.routes[0] == "paragraph"


# -- 2: similarity_top_k is the total number of nodes ------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 3])
def test_similarity_top_k_is_the_total_over_all_corpora(text_rag: UniversalRAG, k: int) -> None:
    routes = ["document", "paragraph", "table"]
    retriever = UniversalRAGRetriever(rag=text_rag, routes=routes, similarity_top_k=k)
    nodes = retriever.retrieve(FS_Q)
    _, hits = text_rag.search(FS_Q, k=k, routes=routes)
    assert len(hits) == k  # the core gives the best k of every corpus's k ...
    assert [n.node.node_id for n in nodes] == [h.id for h in hits]  # ... and the adapter those, in order
    filtered = UniversalRAGRetriever(
        rag=text_rag, routes=routes, similarity_top_k=k, filter={"title": {"$exists": True}}
    ).retrieve(FS_Q)
    assert len(filtered) <= k
    engine = UniversalRAGQueryEngine(rag=text_rag, routes=routes, similarity_top_k=k)
    assert len(engine.query(FS_Q).source_nodes) == k
    assert len(asyncio.run(engine.aquery(FS_Q)).source_nodes) == k
    tool = corpus_retriever_tools(text_rag, corpora=["paragraph"], similarity_top_k=k)[0]
    assert len(tool.call(FS_Q).raw_output) == k


# -- 3: node texts are cut at max_unit_tokens --------------------------------------------------------------------
class PromptRecordingLLM(MockLLM):
    """A MockLLM that records every prompt and answers "ok" (an echo would snowball through refine)."""

    prompts: ClassVar[list[str]] = []

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        return CompletionResponse(text="ok")


def test_node_text_is_cut_at_max_unit_tokens(text_rag: UniversalRAG) -> None:
    cut = corpus_retriever_tools(text_rag, corpora=["document"], similarity_top_k=1)[0].call(FS_Q)
    whole = corpus_retriever_tools(text_rag, corpora=["document"], similarity_top_k=1, max_unit_tokens=None)[0].call(
        FS_Q
    )
    (node,), (full,) = cut.raw_output, whole.raw_output
    assert len(full.node.get_content()) > 12_000 and len(node.node.get_content()) < 8_000
    assert len(cut.content) < len(whole.content) / 2
    # The matched passage leads the cut text; the bookkeeping key stays out of what the model reads.
    assert "readline.createInterface" in node.node.get_content()[:2_000]
    assert node.metadata["truncated"] is True and "truncated" not in full.metadata
    assert "truncated" not in node.node.get_content(metadata_mode=MetadataMode.LLM)
    json.dumps(node.metadata)
    small = UniversalRAGRetriever(rag=text_rag, routes=["document"], similarity_top_k=1, max_unit_tokens=50)
    assert len(small.retrieve(FS_Q)[0].node.get_content().split()) < 60
    with pytest.raises(InvalidInputError, match="max_unit_tokens"):
        UniversalRAGRetriever(rag=text_rag, max_unit_tokens=0)

    def sent(**kwargs: Any) -> int:
        PromptRecordingLLM.prompts.clear()
        engine = UniversalRAGQueryEngine(
            rag=text_rag, llm=PromptRecordingLLM(), routes=["document"], similarity_top_k=1, **kwargs
        )
        engine.query(FS_Q)
        return sum(map(len, PromptRecordingLLM.prompts))

    assert sent() < sent(max_unit_tokens=None) / 2


# -- 4: callback events ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("llm", [None, "mock"])
def test_query_engine_emits_query_and_retrieve_events(text_rag: UniversalRAG, llm: str | None) -> None:
    handler = LlamaDebugHandler()
    engine = UniversalRAGQueryEngine(
        rag=text_rag, llm=MockLLM() if llm else None, similarity_top_k=2, callback_manager=CallbackManager([handler])
    )
    response = engine.query(FS_Q)
    (query,) = handler.get_event_pairs(CBEventType.QUERY)
    (retrieve,) = handler.get_event_pairs(CBEventType.RETRIEVE)
    assert query[0].payload is not None and FS_Q in str(query[0].payload.values())
    nodes = retrieve[1].payload["nodes"] if retrieve[1].payload else None
    assert nodes is not None and [n.node.node_id for n in nodes] == [n.node.node_id for n in response.source_nodes]
    handler.flush_event_logs()
    asyncio.run(engine.aquery(FS_Q))
    assert len(handler.get_event_pairs(CBEventType.QUERY)) == len(handler.get_event_pairs(CBEventType.RETRIEVE)) == 1


def test_query_engine_emits_instrumentation_events(text_rag: UniversalRAG) -> None:
    import llama_index.core.instrumentation as instrument
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler
    from llama_index.core.instrumentation.events import BaseEvent

    seen: list[str] = []

    class Recorder(BaseEventHandler):
        def handle(self, event: BaseEvent, **kwargs: Any) -> None:
            seen.append(event.class_name())

    root = instrument.get_dispatcher()
    recorder = Recorder()
    root.add_event_handler(recorder)
    try:
        UniversalRAGQueryEngine(rag=text_rag, similarity_top_k=1).query(FS_Q)
    finally:
        root.event_handlers.remove(recorder)
    assert {"QueryStartEvent", "RetrievalStartEvent", "RetrievalEndEvent", "QueryEndEvent"} <= set(seen)


# -- 5: LlamaIndex filters; k >= 1 -------------------------------------------------------------------------------
def test_llamaindex_filters_convert_to_core_filters() -> None:
    from llama_index.retrievers.universalrag.filters import to_core_filter

    f = MetadataFilters(
        filters=[
            MetadataFilter(key="year", value=2020, operator=FilterOperator.GTE),
            MetadataFilters(
                filters=[
                    ExactMatchFilter(key="lang", value="en"),
                    MetadataFilter(key="tag", value=["a", "b"], operator=FilterOperator.IN),
                ],
                condition=FilterCondition.OR,
            ),
        ]
    )
    assert to_core_filter(f) == {
        "$and": [{"year": {"$gte": 2020}}, {"$or": [{"lang": {"$eq": "en"}}, {"tag": {"$in": ["a", "b"]}}]}]
    }
    one = MetadataFilters(filters=[MetadataFilter(key="title", value="50%_off", operator=FilterOperator.TEXT_MATCH)])
    assert to_core_filter(one) == {"title": {"$like": "%50\\%\\_off%"}}
    anyf = MetadataFilter(key="tags", value=["x", "y"], operator=FilterOperator.ANY)
    assert to_core_filter(anyf) == {"$or": [{"tags": {"$contains": "x"}}, {"tags": {"$contains": "y"}}]}
    neg = MetadataFilters(filters=[MetadataFilter(key="lang", value="en")], condition=FilterCondition.NOT)
    assert to_core_filter(neg) == {"$not": {"lang": {"$eq": "en"}}}
    with pytest.raises(FilterError, match="IS_EMPTY"):
        to_core_filter(MetadataFilters(filters=[MetadataFilter(key="t", value=None, operator=FilterOperator.IS_EMPTY)]))
    with pytest.raises(FilterError, match="MetadataFilters"):
        to_core_filter(["title"])  # type: ignore[arg-type]


def test_retriever_and_engine_accept_llamaindex_filters(text_rag: UniversalRAG) -> None:
    title = UniversalRAGRetriever(rag=text_rag, routes=["document"]).retrieve(FS_Q)[0].metadata["title"]
    others = MetadataFilters(filters=[MetadataFilter(key="title", value=title, operator=FilterOperator.NE)])
    assert title not in [
        n.metadata.get("title")
        for n in UniversalRAGRetriever(rag=text_rag, routes=["document"], filter=others).retrieve(FS_Q)
    ]
    exact = MetadataFilters(filters=[MetadataFilter(key="title", value=title)])
    nodes = UniversalRAGRetriever(rag=text_rag, routes=["document", "paragraph"], filter=exact).retrieve(FS_Q)
    assert nodes and {n.metadata["title"] for n in nodes} == {title}
    insensitive = MetadataFilters(
        filters=[MetadataFilter(key="title", value=title.upper()[2:8], operator=FilterOperator.TEXT_MATCH_INSENSITIVE)]
    )
    engine = UniversalRAGQueryEngine(rag=text_rag, routes=["document"], filter=insensitive)
    assert {n.metadata["title"] for n in engine.query(FS_Q).source_nodes} == {title}


def test_similarity_top_k_below_one_is_rejected(text_rag: UniversalRAG) -> None:
    for make in (
        lambda: UniversalRAGRetriever(rag=text_rag, similarity_top_k=0),
        lambda: UniversalRAGQueryEngine(rag=text_rag, similarity_top_k=0),
        lambda: corpus_retriever_tools(text_rag, similarity_top_k=0),
    ):
        with pytest.raises(InvalidInputError, match="similarity_top_k must be an integer of at least 1"):
            make()


# -- 6: rank records the library's order -------------------------------------------------------------------------
def test_nodes_carry_their_rank(text_rag: UniversalRAG) -> None:
    nodes = UniversalRAGRetriever(rag=text_rag, routes=["document", "paragraph", "table"], similarity_top_k=5).retrieve(
        FS_Q
    )
    assert [n.metadata["rank"] for n in nodes] == list(range(1, len(nodes) + 1))
    assert all(
        "rank" not in n.node.get_content(metadata_mode=m) for n in nodes for m in (MetadataMode.LLM, MetadataMode.EMBED)
    )
    reordered = LongContextReorder().postprocess_nodes(list(nodes))
    assert [n.node.node_id for n in sorted(reordered, key=lambda n: n.metadata["rank"])] == [
        n.node.node_id for n in nodes
    ]


# -- 7: deepcopy shares the pipeline; pickling says why it cannot ------------------------------------------------
def test_deepcopy_shares_rag_and_pickle_explains(text_rag: UniversalRAG) -> None:
    retriever = UniversalRAGRetriever(rag=text_rag, routes=["document"], similarity_top_k=2)
    clone = copy.deepcopy(retriever)
    assert clone is not retriever and clone.rag is text_rag and clone.routes == retriever.routes
    clone.similarity_top_k = 1
    assert retriever.similarity_top_k == 2 and len(clone.retrieve(FS_Q)) == 1
    assert copy.copy(retriever).rag is text_rag
    engine = UniversalRAGQueryEngine(rag=text_rag, llm=MockLLM(), routes=["document"], filter={"title": "x"})
    engine_clone = copy.deepcopy(engine)
    assert engine_clone.rag is text_rag and engine_clone.llm is engine.llm and engine_clone.filter == engine.filter
    assert engine_clone.filter is not engine.filter
    for obj in (retriever, engine):
        with pytest.raises(TypeError, match="live database pipeline.*in each process"):
            pickle.dumps(obj)


def test_a_nodes_file_path_filters_its_file(text_rag: UniversalRAG) -> None:
    """A node shows its file as ``file_path``; filtering on that path keeps that file's units (no unit held the key,
    so the filter found nothing)."""
    path = UniversalRAGRetriever(rag=text_rag, routes=["document", "paragraph"]).retrieve(FS_Q)[0].metadata["file_path"]
    only = MetadataFilters(filters=[MetadataFilter(key="file_path", value=path)])
    kept = UniversalRAGRetriever(rag=text_rag, routes=["document", "paragraph"], filter=only).retrieve(FS_Q)
    assert kept and {n.metadata["file_path"] for n in kept} == {path}
    missing = UniversalRAGRetriever(rag=text_rag, routes=["paragraph"], filter={"file_path": path + ".missing"})
    assert missing.retrieve(FS_Q) == []
    # a node's file_name (the name alone) matches that file in whatever folder it was ingested from
    name = MetadataFilters(filters=[MetadataFilter(key="file_name", value=Path(path).name)])
    kept = UniversalRAGRetriever(rag=text_rag, routes=["document", "paragraph"], filter=name).retrieve(FS_Q)
    assert kept and {n.metadata["file_path"] for n in kept} == {path}
