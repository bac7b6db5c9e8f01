"""The LlamaIndex adapters on a real database with the real bundled encoder, the shipped router and LlamaIndex's
MockLLM (which answers with the prompt it was given, so a test can see the evidence that reached the model)."""

from __future__ import annotations

import asyncio
import base64
import subprocess
import sys
from collections.abc import Collection, Sequence
from pathlib import Path

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RouterQueryEngine
from llama_index.core.retrievers import RouterRetriever
from llama_index.core.schema import ImageNode, MetadataMode, NodeWithScore, TextNode
from llama_index.core.tools import QueryEngineTool, RetrieverTool, ToolMetadata

import llama_index.retrievers.universalrag as li_pkg
from llama_index.retrievers.universalrag import (
    UniversalRAGQueryEngine,
    UniversalRAGRetriever,
    UniversalRAGSelector,
    corpus_retriever_tools,
    hits_to_nodes,
)
from universalrag.errors import CorpusNotFoundError, RoutingError
from universalrag.generate import Generation
from universalrag.pipeline import UniversalRAG
from universalrag.types import Evidence, RouteDecision

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "integrations" / "llamaindex" / "llama_index" / "retrievers" / "universalrag"

TABLE_Q = "What is the win-loss record of the Quarry Lions?"
IMAGE_Q = "Show me what the coffee cup on the saucer looks like"
CLIP_Q = "In the morning video, what happens in the moment when the cat is sleeping?"
TEXT_Q = "Who designed the Kestrel Point lighthouse?"
NONE_Q = "What is 17 times 3?"


def _corpora(nodes: Sequence[NodeWithScore]) -> list[str]:
    return [n.node.metadata["corpus"] for n in nodes]


# -- package ----------------------------------------------------------------------------------------------------
def test_public_api_is_pinned_and_the_namespace_is_shared() -> None:
    assert sorted(li_pkg.__all__) == [
        "UniversalRAGGraphRetriever",
        "UniversalRAGQueryEngine",
        "UniversalRAGRetriever",
        "UniversalRAGSelector",
        "corpus_retriever_tools",
        "hits_to_nodes",
    ]
    for name in li_pkg.__all__:
        assert getattr(li_pkg, name) is not None
    # PEP 420: llama-index-core owns the `llama_index` namespace; our tree must not shadow it.
    assert not (PACKAGE.parents[1] / "__init__.py").exists() and not (PACKAGE.parent / "__init__.py").exists()
    import llama_index.core

    assert llama_index.core.__file__ and "site-packages" in llama_index.core.__file__


def test_missing_extra_names_the_package_and_the_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['llama_index.core'] = None  # as if llama-index-core were not installed\n"
        "import llama_index.retrievers.universalrag as pkg  # the package itself imports nothing heavy\n"
        "from universalrag.errors import MissingDependencyError\n"
        "for name in ('UniversalRAGRetriever', 'hits_to_nodes'):  # via a llama_index import, via base.py\n"
        "    try:\n"
        "        getattr(pkg, name)\n"
        "    except MissingDependencyError as e:\n"
        "        print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 2, out.stdout
    assert all(
        "'llama-index-core'" in line and "pip install llama-index-retrievers-universalrag" in line for line in lines
    )


def test_constructors_check_their_arguments(rag: UniversalRAG) -> None:
    with pytest.raises(TypeError, match="UniversalRAG"):
        UniversalRAGRetriever(rag=object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="list of corpus names"):
        UniversalRAGRetriever(rag=rag, routes="table")
    with pytest.raises(ValueError, match="similarity_top_k"):
        UniversalRAGRetriever(rag=rag, similarity_top_k=0)
    with pytest.raises(ValueError, match="rag= .* or router="):
        UniversalRAGSelector()
    with pytest.raises(ValueError, match="needs llm"):
        from llama_index.core.response_synthesizers import get_response_synthesizer

        UniversalRAGQueryEngine(rag=rag, response_synthesizer=get_response_synthesizer(llm=MockLLM()))


# -- retriever --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("question", "corpus", "node_type", "expected"),
    [
        (TABLE_Q, "table", TextNode, "team: Quarry Lions | city: Stonebridge | wins: 20 | losses: 18"),
        (IMAGE_Q, "image", ImageNode, "saucer"),
        (CLIP_Q, "clip", TextNode, "Chelsea"),
        (TEXT_Q, "paragraph", TextNode, "Agnes Ferrow"),
    ],
)
def test_retriever_returns_nodes_of_the_routed_corpus(
    rag: UniversalRAG, question: str, corpus: str, node_type: type, expected: str
) -> None:
    nodes = UniversalRAGRetriever(rag=rag, similarity_top_k=2).retrieve(question)
    top = nodes[0]
    meta = top.metadata
    # the routed corpus answers first; a sibling granularity the combiner also found likely may follow
    assert type(top.node) is node_type and _corpora(nodes)[0] == corpus and set(_corpora(nodes)) <= set(meta["routes"])
    assert expected in top.node.get_content() or any(
        expected in p["text"] for p in top.metadata.get("matched_parts", [])
    )
    assert meta["routes"][0] == corpus and meta["route_decision"]["router"] == "evidence(trained)"
    assert meta["route_decision"]["scores"][corpus] > 0.5
    assert meta["uri"].startswith("file://") and top.node.node_id == meta["unit_id"]
    assert top.score == pytest.approx(meta["score"]) and top.score > 0
    assert [n.score for n in nodes] == sorted((n.score for n in nodes), reverse=True)
    # What a language model sees: the text and a few useful keys, never ids, scores or the route decision.
    shown = top.node.get_content(metadata_mode=MetadataMode.LLM)
    assert f"corpus: {corpus}" in shown and "route_decision" not in shown and "unit_id" not in shown


def test_node_metadata_by_modality(rag: UniversalRAG) -> None:
    table = UniversalRAGRetriever(rag=rag, routes=["table"], similarity_top_k=1).retrieve("Quarry Lions")[0]
    assert table.metadata["modality"] == "table" and table.metadata["granularity"] == "table"
    assert "Quarry Lions" in table.metadata["matched_parts"][0]["text"]
    assert table.node.get_content().startswith("Matched rows (best first):")  # the core's evidence text

    image = UniversalRAGRetriever(rag=rag, routes=["image"], similarity_top_k=1).retrieve(IMAGE_Q)[0].node
    assert isinstance(image, ImageNode) and image.image_path and Path(image.image_path).is_file()
    assert image.image_mimetype == "image/jpeg" and image.metadata["modality"] == "image"
    assert image.text == "A white cup of black coffee on a saucer, seen from above."

    clip = UniversalRAGRetriever(rag=rag, routes=["clip"], similarity_top_k=1).retrieve(CLIP_Q)[0]
    assert (clip.metadata["start_s"], clip.metadata["end_s"]) == (6.0, 9.0)
    assert clip.metadata["modality"] == "video" and clip.metadata["granularity"] == "clip"
    assert clip.node.get_content().startswith("Transcript of A calm morning from 00:06 to 00:09")
    assert clip.metadata["route_decision"]["router"] == "caller" and clip.metadata["routes"] == ["clip"]
    assert clip.node.parent_node is not None and clip.node.source_node is not None  # video, source file


def test_base64_mode_carries_jpegs_for_images_and_clip_frames(rag: UniversalRAG) -> None:
    image = UniversalRAGRetriever(rag=rag, routes=["image"], similarity_top_k=1, image_mode="base64")
    node = image.retrieve(IMAGE_Q)[0].node
    assert isinstance(node, ImageNode) and node.image_path is None and node.image_mimetype == "image/jpeg"
    assert base64.b64decode(node.image).startswith(b"\xff\xd8")  # JPEG magic
    clip = UniversalRAGRetriever(rag=rag, routes=["clip"], similarity_top_k=1, image_mode="base64")
    frame = clip.retrieve(CLIP_Q)[0].node
    assert isinstance(frame, ImageNode) and base64.b64decode(frame.image).startswith(b"\xff\xd8")
    assert 6.0 <= frame.metadata["frame_time_s"] <= 9.0 and "Chelsea" in frame.text
    with pytest.raises(ValueError, match="image_mode"):
        hits_to_nodes([], image_mode="url")  # type: ignore[arg-type]


def test_fixed_routes_top_k_filters_and_none(rag: UniversalRAG) -> None:
    nodes = UniversalRAGRetriever(rag=rag, routes=["table", "paragraph"], similarity_top_k=2).retrieve(
        "Quarry Lions wins and the lighthouse keepers"
    )
    assert sorted(_corpora(nodes)) == ["paragraph", "table"]
    filtered = UniversalRAGRetriever(rag=rag, routes=["table"], filter={"format": "xlsx"}).retrieve("wins")
    assert [n.metadata["title"] for n in filtered] == ["Ferries"]
    # The router says `none`: nothing searched when the caller allows it; by default, the likeliest corpus is.
    assert UniversalRAGRetriever(rag=rag, allow_none=True).retrieve(NONE_Q) == []
    fallback = UniversalRAGRetriever(rag=rag, similarity_top_k=1).retrieve(NONE_Q)
    assert len(fallback) == 1 and fallback[0].metadata["route_decision"]["fallback"]
    with pytest.raises(CorpusNotFoundError):
        UniversalRAGRetriever(rag=rag, routes=["nope"]).retrieve("x")


def test_async_retrieval_matches_sync(rag: UniversalRAG) -> None:
    retriever = UniversalRAGRetriever(rag=rag, similarity_top_k=2)

    async def main() -> list[list[NodeWithScore]]:
        return list(await asyncio.gather(retriever.aretrieve(TABLE_Q), retriever.aretrieve(IMAGE_Q)))

    table, image = asyncio.run(main())
    assert [n.node_id for n in table] == [n.node_id for n in retriever.retrieve(TABLE_Q)]
    assert _corpora(table)[0] == "table" and isinstance(image[0].node, ImageNode)


# -- query engine -----------------------------------------------------------------------------------------------
def test_query_engine_with_a_llamaindex_llm(rag: UniversalRAG) -> None:
    engine = UniversalRAGQueryEngine(rag=rag, llm=MockLLM(), similarity_top_k=2)
    response = engine.query(TABLE_Q)
    # MockLLM echoes its prompt: the table's matched rows reached the model through the synthesizer.
    assert "team: Quarry Lions | city: Stonebridge | wins: 20 | losses: 18" in str(response) and TABLE_Q in str(
        response
    )
    assert _corpora(response.source_nodes) == ["table", "table"]
    assert response.metadata["routes"] == ["table"] and response.metadata["answered_by"] == "llamaindex:MockLLM"
    image = engine.query(IMAGE_Q)  # pictures enter the text-only synthesizer as their captions
    assert "A white cup of black coffee" in str(image) and isinstance(image.source_nodes[0].node, ImageNode)
    direct = engine.query(NONE_Q)  # `none`: the LLM answers the question itself
    assert str(direct) == NONE_Q and direct.source_nodes == [] and direct.metadata["routes"] == ["none"]


def test_query_engine_async_with_a_llamaindex_llm(rag: UniversalRAG) -> None:
    engine = UniversalRAGQueryEngine(rag=rag, llm=MockLLM(), similarity_top_k=1)

    async def main() -> tuple:
        return await asyncio.gather(engine.aquery(CLIP_Q), engine.aquery(NONE_Q))

    clip, direct = asyncio.run(main())
    assert "Chelsea" in str(clip) and _corpora(clip.source_nodes)[0] == "clip"
    assert str(direct) == NONE_Q and direct.source_nodes == []


def test_query_engine_sends_pictures_to_a_multimodal_synthesizer(rag: UniversalRAG) -> None:
    from llama_index.core.base.llms.types import ImageBlock
    from llama_index.core.llms.mock import MockLLMWithChatMemoryOfLastCall
    from llama_index.core.response_synthesizers import get_response_synthesizer

    llm = MockLLMWithChatMemoryOfLastCall(is_chat_model=True)
    engine = UniversalRAGQueryEngine(
        rag=rag,
        llm=llm,
        similarity_top_k=1,
        image_mode="base64",
        response_synthesizer=get_response_synthesizer(llm=llm, multimodal=True),
    )
    engine.query(CLIP_Q)
    blocks = [b for m in llm.last_chat_messages or [] for b in m.blocks]
    frames = [b for b in blocks if isinstance(b, ImageBlock)]
    assert len(frames) == 1 and frames[0].image_mimetype == "image/jpeg"
    # The clip's transcript still reaches the model, as the ImageNode's `description` metadata.
    assert any("description: Transcript of A calm morning" in getattr(b, "text", "") for b in blocks)


def test_query_engine_retrieval_only(rag: UniversalRAG) -> None:
    engine = UniversalRAGQueryEngine(rag=rag, similarity_top_k=2)
    response = engine.query(TEXT_Q)
    text = str(response)
    assert text.startswith("No language model is configured") and "UNIVERSALRAG_LLM_MODEL" in text
    assert "[paragraph 1]" in text and "evidence found in paragraph" in text
    assert _corpora(response.source_nodes)[0] == "paragraph"
    assert response.metadata["answered_by"] is None and response.metadata["routes"][0] == "paragraph"
    none = asyncio.run(engine.aquery(NONE_Q))
    assert "needs no retrieval" in str(none) and none.source_nodes == []


class EchoGenerator:
    """A core Generator that answers with the labels of its evidence (the protocol, no model)."""

    name = "echo"

    def generate(self, query: str, evidence: Sequence[Evidence]) -> Generation:
        return Generation(text="core: " + "; ".join(e.label for e in evidence), citations=tuple(e.id for e in evidence))

    async def agenerate(self, query: str, evidence: Sequence[Evidence]) -> Generation:
        return self.generate(query, evidence)


def test_query_engine_uses_the_core_generator_without_llm(rag: UniversalRAG) -> None:
    core = UniversalRAG(
        settings=rag.settings,
        store=rag.store,
        embedder=rag.embedder,
        router=rag.router,
        generator=EchoGenerator(),
        visual_encoder=None,
    )
    response = UniversalRAGQueryEngine(rag=core, similarity_top_k=1).query(IMAGE_Q)
    assert str(response) == "core: [image 1] A white cup of black coffee on a saucer, seen from above. (IMG_0042.jpg)"
    assert response.metadata["answered_by"] == "universalrag:echo"
    assert response.metadata["citations"] == [response.source_nodes[0].node_id]


# -- selector ---------------------------------------------------------------------------------------------------
def _engine_tools(rag: UniversalRAG) -> list[QueryEngineTool]:
    """Three one-corpus engines whose names say nothing: the selector maps them by their descriptions."""

    def tool(name: str, description: str, corpus: str) -> QueryEngineTool:
        engine = UniversalRAGQueryEngine(rag=rag, routes=[corpus], similarity_top_k=1)
        return QueryEngineTool(query_engine=engine, metadata=ToolMetadata(name=name, description=description))

    return [
        tool(
            "standings",
            "Tables of the sports league standings and of ferry timetables: figures, counts, records and comparisons.",
            "table",
        ),
        tool("photos", "Photographs and pictures, for questions about what something looks like.", "image"),
        tool("history", "Short passages from articles, each answering one specific factual question.", "paragraph"),
    ]


def test_selector_maps_choices_by_name_and_by_description(rag: UniversalRAG) -> None:
    selector = UniversalRAGSelector(rag=rag, choice_routes={"custom": "clip"})
    tools = _engine_tools(rag)
    mapped = selector.map_choices([t.metadata for t in tools])
    assert [(m.route, m.how) for m in mapped] == [
        ("table", "description"),
        ("image", "description"),
        ("paragraph", "description"),
    ]
    by_name = selector.map_choices(
        [
            ToolMetadata(name="search_video", description="anything"),
            ToolMetadata(name="Table", description="anything"),
            ToolMetadata(name="custom", description="anything"),
        ]
    )
    assert [(m.route, m.how) for m in by_name] == [("video", "name"), ("table", "name"), ("clip", "explicit")]


def test_selector_with_a_router_only_and_plain_string_choices(rag: UniversalRAG) -> None:
    # No UniversalRAG: the built-in route descriptions only, no database; choices may be bare descriptions.
    selector = UniversalRAGSelector(router=rag.router, embedder=rag.embedder)
    choices = [
        "Tables of figures and records, such as league standings.",
        "Photographs, for questions about what something looks like.",
    ]
    assert selector.select(choices, IMAGE_Q).inds == [1]
    assert asyncio.run(selector.aselect(choices, TABLE_Q)).inds == [0]
    result, decision = selector.select_with_decision(choices, TABLE_Q)
    assert result.inds == [0] and decision.routes == ("table",) and set(decision.scores) == {"none", "table", "image"}


def test_selector_routes_to_user_defined_corpora_with_an_example_router(rag: UniversalRAG) -> None:
    from universalrag.routing import ExampleRouter

    router = ExampleRouter(
        {
            "recipes": ["How long do I bake banana bread?", "What goes into a risotto?"],
            "table": ["How many wins did the team have?", "Which city has the most ferries?"],
        },
        embedder=rag.embedder,
    )
    selector = UniversalRAGSelector(router=router, embedder=rag.embedder)
    choices = [ToolMetadata(name="search_table", description="x"), ToolMetadata(name="recipes", description="y")]
    assert [m.how for m in selector.map_choices(choices)] == ["name", "name"]  # `recipes`: a route the router knows
    assert selector.select(choices, "How much flour goes into pancakes?").inds == [1]
    assert selector.select(choices, "How many losses did the Rovers have?").inds == [0]


@pytest.mark.parametrize(
    ("question", "index", "corpus"), [(TABLE_Q, 0, "table"), (IMAGE_Q, 1, "image"), (TEXT_Q, 2, "paragraph")]
)
def test_router_query_engine_with_our_selector(rag: UniversalRAG, question: str, index: int, corpus: str) -> None:
    engine = RouterQueryEngine(
        selector=UniversalRAGSelector(rag=rag), query_engine_tools=_engine_tools(rag), llm=MockLLM()
    )
    response = engine.query(question)
    result = response.metadata["selector_result"]
    assert result.inds == [index] and f"chose route {corpus!r}" in result.reason
    assert _corpora(response.source_nodes) == [corpus]


def test_router_query_engine_async(rag: UniversalRAG) -> None:
    engine = RouterQueryEngine(
        selector=UniversalRAGSelector(rag=rag), query_engine_tools=_engine_tools(rag), llm=MockLLM()
    )
    response = asyncio.run(engine.aquery(IMAGE_Q))
    assert response.metadata["selector_result"].inds == [1]


class FixedRouter:
    """A Router that always decides the given routes (restricted to the candidates, as routers are)."""

    name = "fixed"

    def __init__(self, *routes: str) -> None:
        self.routes = routes

    def route(self, query: str, *, candidates: Collection[str] | None = None) -> RouteDecision:
        chosen = tuple(r for r in self.routes if candidates is None or r in candidates) or ("none",)
        return RouteDecision(routes=chosen, scores={r: 0.9 for r in chosen}, router=self.name)


def test_multi_label_decision_selects_several_engines(rag: UniversalRAG) -> None:
    selector = UniversalRAGSelector(rag=rag, router=FixedRouter("table", "image"))
    engine = RouterQueryEngine(selector=selector, query_engine_tools=_engine_tools(rag), llm=MockLLM())
    response = engine.query("Quarry Lions wins, and a picture of the coffee")
    assert response.metadata["selector_result"].inds == [0, 1]
    assert sorted(_corpora(response.source_nodes)) == ["image", "table"]  # both engines' nodes, combined
    single = UniversalRAGSelector(rag=rag, router=FixedRouter("table", "image"), multi=False)
    assert single.select(_engine_tools(rag)[0:2] and [t.metadata for t in _engine_tools(rag)], "x").inds == [0]


def test_none_needs_a_none_choice_or_a_fallback(rag: UniversalRAG) -> None:
    tools = _engine_tools(rag)
    # Strict (fallback=None): a `none` decision that no choice stands for raises.
    strict = UniversalRAGSelector(rag=rag, router=rag.router, fallback=None)
    with pytest.raises(RoutingError, match="no choice stands for that route.*fallback=None"):
        RouterQueryEngine(selector=strict, query_engine_tools=tools, llm=MockLLM()).query(NONE_Q)
    # By default the best-scoring choice is selected (the question-only router says `none` here).
    best = UniversalRAGSelector(rag=rag, router=rag.router).select([t.metadata for t in tools], NONE_Q)
    assert len(best.inds) == 1 and best.reason.startswith("fallback")
    metas = [t.metadata for t in tools]
    assert UniversalRAGSelector(rag=rag, router=rag.router, fallback="photos").select(metas, NONE_Q).inds == [1]
    assert UniversalRAGSelector(rag=rag, router=rag.router, fallback=2).select(metas, NONE_Q).inds == [2]
    with pytest.raises(RoutingError, match="names no choice"):
        UniversalRAGSelector(rag=rag, router=rag.router, fallback="nope").select(metas, NONE_Q)
    # A choice that stands for `none` (an engine answering without retrieval) is selected instead.
    direct = QueryEngineTool(
        query_engine=UniversalRAGQueryEngine(rag=rag, llm=MockLLM(), routes=["none"]),
        metadata=ToolMetadata(name="none", description="Answers from the LLM alone."),
    )
    engine = RouterQueryEngine(
        selector=UniversalRAGSelector(rag=rag), query_engine_tools=[*tools, direct], llm=MockLLM()
    )
    response = engine.query(NONE_Q)
    assert response.metadata["selector_result"].inds == [3] and str(response) == NONE_Q


def test_router_retriever_with_our_selector_over_corpus_tools(rag: UniversalRAG) -> None:
    router = RouterRetriever(
        selector=UniversalRAGSelector(rag=rag), retriever_tools=corpus_retriever_tools(rag), llm=MockLLM()
    )
    assert set(_corpora(router.retrieve(TABLE_Q))) == {"table"}
    # evidence-aware routing may add the whole video to the clip (a multi-label decision): clip is among them
    clip = set(_corpora(router.retrieve(CLIP_Q)))
    assert "clip" in clip and clip <= {"clip", "video"}
    image = asyncio.run(router.aretrieve(IMAGE_Q))
    assert set(_corpora(image)) == {"image"} and isinstance(image[0].node, ImageNode)


# -- tools ------------------------------------------------------------------------------------------------------
def test_corpus_retriever_tools(rag: UniversalRAG) -> None:
    tools = corpus_retriever_tools(rag, similarity_top_k=1)
    assert all(isinstance(t, RetrieverTool) for t in tools)
    names = [t.metadata.name for t in tools]
    assert sorted(names) == sorted(f"search_{c}" for c in rag.store.nonempty())
    table = tools[names.index("search_table")]
    assert table.metadata.description.startswith(rag.store.corpus("table").description)
    assert "'table' corpus" in table.metadata.description
    assert "It holds 2 sources: " in table.metadata.description and "ferries.xlsx" in table.metadata.description
    output = table.call("Quarry Lions wins")
    assert "Quarry Lions" in output.content and _corpora(output.raw_output) == ["table"]
    image = asyncio.run(tools[names.index("search_image")].acall(IMAGE_Q))
    assert isinstance(image.raw_output[0].node, ImageNode) and "saucer" in image.content
    assert [t.metadata.name for t in corpus_retriever_tools(rag, corpora=["clip", "clip"])] == ["search_clip"]
    with pytest.raises(CorpusNotFoundError):
        corpus_retriever_tools(rag, corpora=["nope"])
