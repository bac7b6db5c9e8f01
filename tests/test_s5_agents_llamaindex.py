"""What a LlamaIndex user met with Debian's documentation folders (text manuals and one table, no pictures or
videos), pinned on a real database with the real encoder: ``UniversalRAGSelector`` mapped a tool described as
"the compression library manuals" to the empty ``video`` corpus, so ``RouterQueryEngine`` never selected it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RouterQueryEngine
from llama_index.core.tools import QueryEngineTool, ToolMetadata

from llama_index.retrievers.universalrag import UniversalRAGQueryEngine, UniversalRAGSelector
from universalrag.pipeline import UniversalRAG

MANUALS = "Search the compression library manuals"


@pytest.fixture(scope="module")
def text_only(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UniversalRAG]:
    """A manual, a FAQ and a CSV of timings: text and table corpora hold units; image, clip and video are empty."""
    from support.s5_agents import folder_rag

    folder = tmp_path_factory.mktemp("doc")
    (folder / "FAQ").write_text(
        "Frequently asked questions\n\n5. deflate() or inflate() returns Z_BUF_ERROR.\n\n"
        "Before making the call, make sure that avail_in and avail_out are not zero. A "
        "Z_BUF_ERROR is not fatal: call again with more input or output space.\n"
    )
    (folder / "manual.txt").write_text(
        "Recovering data from damaged files\n\nThe recovery tool searches for blocks "
        "in compressed files and writes each block out into its own file, which can "
        "then be tested and decompressed one by one.\n"
    )
    (folder / "timings.csv").write_text("algorithm,64,1K,1M\nSarwate,6.61,6.70,6.75\nSlicing,2.15,2.09,2.10\n")
    with folder_rag(database_url, folder) as rag:
        yield rag


def test_a_described_choice_maps_to_a_corpus_that_holds_units(text_only: UniversalRAG) -> None:
    """Before: "Search the compression library manuals" mapped to ``video`` (p=0.72 against 0.03 for ``document``),
    a corpus with nothing in it, so that choice could never be selected."""
    selector = UniversalRAGSelector(rag=text_only)
    (mapped,) = selector.map_choices([ToolMetadata(name="manuals", description=MANUALS)])
    assert mapped.how == "description"
    assert mapped.route in text_only.store.nonempty(), mapped


def test_router_query_engine_selects_the_manuals_tool_for_a_manual_question(text_only: UniversalRAG) -> None:
    """Before: every question went to the other tool (the timings), the only choice standing for a corpus with
    units, and answered "what does Z_BUF_ERROR mean" from a table of CRC timings."""
    tools = [
        QueryEngineTool(
            query_engine=UniversalRAGQueryEngine(rag=text_only, routes=[route], llm=None),
            metadata=ToolMetadata(name=name, description=description),
        )
        for name, description, route in (
            ("manuals", MANUALS, "paragraph"),
            ("timings", "Performance tables of CRC algorithms", "table"),
        )
    ]
    engine = RouterQueryEngine(selector=UniversalRAGSelector(rag=text_only), query_engine_tools=tools, llm=MockLLM())
    response = engine.query("what does Z_BUF_ERROR mean")
    assert response.metadata["selector_result"].inds == [0]
    assert any(Path(n.metadata["file_path"]).name == "FAQ" for n in response.source_nodes)
