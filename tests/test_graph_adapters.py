"""The knowledge graph through the adapters: LangChain's entity tool, LlamaIndex's graph retriever and the MCP
server's ``explore_entity``, over a small invented world (structures, the firms that built them, a table of
engineers) ingested with the bundled MiniLM, its graph built by the structural extractor."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from llama_index.core.schema import QueryBundle

from langchain_universalrag.entity_tools import create_entity_tool
from llama_index.retrievers.universalrag.graph_retriever import UniversalRAGGraphRetriever
from universalrag.errors import InvalidInputError

STRUCTURES = [
    ("Varnholt Bridge", "steel arch bridge", "Quellmark", "Ilse Kadrow", "Halvorsen Works", 1921),
    ("Brennlid Tower", "granite tower", "Ostervik", "Tomas Ekrin", "Sorgan & Pell", 1898),
    ("Dromol Dam", "concrete dam", "Lunholm", "Maren Solvik", "Halvorsen Works", 1934),
]
ENGINEERS = [
    ("Ilse Kadrow", "Ostermark", 1879),
    ("Tomas Ekrin", "Brennvik", 1851),
    ("Maren Solvik", "Gardholm", 1890),
]


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")


def _world(root: Path) -> Path:
    for sub in ("structures", "firms"):
        (root / sub).mkdir(parents=True)
    for name, kind, town, designer, firm, year in STRUCTURES:
        (root / "structures" / f"{_slug(name)}.md").write_text(
            f"# {name}\n\nThe {name} is a {kind} in {town}. It was designed by {designer} and built by "
            f"[{firm}](../firms/{_slug(firm)}.md); work on it was completed in {year}.\n",
            encoding="utf-8",
        )
    for firm in ("Halvorsen Works", "Sorgan & Pell"):
        (root / "firms" / f"{_slug(firm)}.md").write_text(
            f"# {firm}\n\n{firm} is a construction firm with its head office in Brennvik.\n", encoding="utf-8"
        )
    rows = "\n".join(f"{n},{b},{y}" for n, b, y in ENGINEERS)
    (root / "engineers.csv").write_text(f"Engineer,Birthplace,Born\n{rows}\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def world(database_url: str, minilm: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from universalrag.config import Settings
    from universalrag.graph.store import GraphStore
    from universalrag.graph.structural import StructuralExtractor
    from universalrag.pipeline import UniversalRAG

    settings = Settings(database_url=database_url, schema="ga_" + uuid.uuid4().hex[:12], query_vectors=0)
    common: dict[str, Any] = {"settings": settings, "embedder": minilm, "generator": None, "visual_encoder": None}
    rag = UniversalRAG(log_decisions=False, **common)
    assert rag.ingest([_world(tmp_path_factory.mktemp("world"))]).ok
    bare = UniversalRAG(log_decisions=False, **{**common, "settings": settings.with_(schema=settings.schema + "_bare")})
    bare.init()
    try:
        yield {"rag": rag, "bare": bare, "build": lambda: GraphStore(rag.store, minilm).rebuild(StructuralExtractor())}
    finally:
        bare.store.downgrade("base")
        bare.close()
        rag.store.downgrade("base")
        rag.close()


@pytest.fixture(scope="module")
def rag(world: dict[str, Any]) -> Any:
    assert world["build"]().mentions > 0
    world["rag"].graph_retrieval.invalidate()
    return world["rag"]


def _call(tool: Any, **args: Any) -> ToolMessage:
    message = tool.invoke({"type": "tool_call", "name": tool.name, "args": args, "id": "call-1"})
    assert isinstance(message, ToolMessage)
    return message


def test_the_entity_tool_shows_a_name_its_neighbours_and_the_units_that_mention_it(rag: Any) -> None:
    tool = create_entity_tool(rag, max_units=3)
    message = _call(tool, name="Varnholt Bridge", hops=1)
    assert message.status == "success", message.content
    text = str(message.content)
    assert text.startswith("Entity: Varnholt Bridge")
    related = text.split("Related entities (nearest first):", 1)[1].split("\n\n", 1)[0]
    assert "Ilse Kadrow" in related or "Halvorsen Works" in related, related
    assert message.artifact and any("Varnholt Bridge" in doc.page_content for doc in message.artifact)
    assert "Units that mention it:" in text


def test_the_entity_tool_answers_what_to_do_instead_of_failing(rag: Any, world: dict[str, Any]) -> None:
    tool = create_entity_tool(rag)
    unknown = _call(tool, name="Zzyzx Quarry")
    assert unknown.status == "error" and "no entity called 'Zzyzx Quarry'" in str(unknown.content)
    empty = _call(tool, name="  ")
    assert empty.status == "error" and "empty" in str(empty.content)
    bare = _call(create_entity_tool(world["bare"]), name="Varnholt Bridge")
    assert bare.status == "error" and "no knowledge graph" in str(bare.content)
    with pytest.raises(InvalidInputError, match="max_related"):
        create_entity_tool(rag, max_related=0)


def test_the_graph_retriever_reaches_the_row_a_name_links_to(rag: Any) -> None:
    retriever = UniversalRAGGraphRetriever(rag=rag, similarity_top_k=5, hops=2)
    nodes = retriever.retrieve(QueryBundle("Where was the designer of the Varnholt Bridge born?"))
    assert nodes and all("graph_path" in n.node.metadata for n in nodes)
    assert any("Ostermark" in n.node.get_content() for n in nodes), [n.node.get_content()[:80] for n in nodes]
    assert {n.node.metadata["graph_path"]["seed"].casefold() for n in nodes} >= {"varnholt bridge"}
    assert "graph_path" not in nodes[0].node.get_content(metadata_mode="llm")  # bookkeeping, not for the model
    assert asyncio.run(retriever.aretrieve("Who designed the Varnholt Bridge?"))
    assert retriever.retrieve("what is the weather like today") == []  # names nothing the graph holds
    with pytest.raises(InvalidInputError, match="hops"):
        UniversalRAGGraphRetriever(rag=rag, hops=9)


def test_the_mcp_server_explores_entities(rag: Any, world: dict[str, Any]) -> None:
    pytest.importorskip("mcp")
    from mcp import types

    from universalrag.mcp import build_server

    def result(server: Any, args: dict[str, Any]) -> tuple[list[Any], bool]:
        out = asyncio.run(server.call_tool("explore_entity", args))
        if isinstance(out, tuple):  # SDK 1.x may hand back (content, structured)
            out = out[0]
        if isinstance(out, types.CallToolResult):
            return list(out.content), bool(getattr(out, "is_error", None) or getattr(out, "isError", None))
        return list(out), False

    server = build_server(rag)
    content, failed = result(server, {"name": "Varnholt Bridge", "hops": 1})
    texts = [b.text for b in content if isinstance(b, types.TextContent)]
    assert not failed and any("Entity: Varnholt Bridge" in t and "<retrieved-data" in t for t in texts)
    assert any(isinstance(b, types.ResourceLink) for b in content)
    content, failed = result(server, {"name": "Zzyzx Quarry"})
    assert failed and "No entity is called 'Zzyzx Quarry'" in content[0].text
    content, failed = result(build_server(world["bare"]), {"name": "Varnholt Bridge"})
    assert failed and "no knowledge graph" in content[0].text
