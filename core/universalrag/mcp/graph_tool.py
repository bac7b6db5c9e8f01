"""The ``explore_entity`` tool: a name's entity in the knowledge graph, what it is related to and the units that
mention it. Registered when the pipeline walks a graph (``UniversalRAG(walk_graph=True)``, the default); a database
whose corpora were ingested without one answers with a tool error saying how to build it."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from mcp import types
from pydantic import Field

from ..errors import InvalidInputError
from ..graph.records import Entity, Neighbour
from ..graph.store import GraphStore
from ..pipeline import UniversalRAG
from .content import MCP_BUDGET, delimited, hit_blocks

__all__ = ["describe_neighbourhood", "register_graph_tool"]


def _entity_line(entity: Entity) -> str:
    aliases = f" (also: {', '.join(entity.aliases[:5])})" if entity.aliases else ""
    about = f": {entity.description.strip()[:300]}" if entity.description.strip() else ""
    return f"{entity.name} [{entity.type}]{aliases}{about}"


def describe_neighbourhood(entity: Entity, neighbours: list[Neighbour]) -> str:
    """The entity and its neighbours as lines a model reads: ``- Name [type] (2 hops, via built by → founded)``."""
    lines = [f"Entity: {_entity_line(entity)}"]
    if neighbours:
        lines.append("Related entities (nearest first):")
        for n in neighbours:
            via = f", via {' → '.join(v for v in n.via if v)}" if any(n.via) else ""
            lines.append(f"- {_entity_line(n.entity)} ({n.hops} hop{'s' if n.hops != 1 else ''}{via})")
    else:
        lines.append("No related entities.")
    return "\n".join(lines)


def _explore(rag: UniversalRAG, graph: GraphStore, name: str, hops: int, limit: int, units: int) -> dict[str, Any]:
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError("The name was empty: call explore_entity again with the name of a thing to look up.")
    if rag.graph_retrieval is None or not rag.graph_retrieval.present(rag.store):
        raise InvalidInputError(
            "This database holds no knowledge graph yet: build it from the stored units with "
            "GraphStore(rag.store, rag.embedder).rebuild(StructuralExtractor()), or ingest with "
            "IngestOptions(graph=GraphStore(...).for_ingest(StructuralExtractor()))."
        )
    found = graph.entities(name, limit=5)
    if not found:
        vector = rag.embedder.embed([name])[0]
        near = [entity.name for entity, score in graph.similar(vector, limit=5) if score >= 0.5]
        hint = f" Entities with similar names: {', '.join(near)}." if near else ""
        raise InvalidInputError(f"No entity is called {name!r}.{hint} Call explore_entity with one of them.")
    entity = found[0]
    neighbours = graph.neighbours(entity, hops=hops, limit=limit)
    return {
        "entity": entity,
        "neighbours": neighbours,
        "others": [e.name for e in found[1:]],
        "hits": graph.units([entity.id], limit=units),
    }


def register_graph_tool(server: Any, rag: UniversalRAG, *, annotations: Any, answering: Any) -> bool:
    """Add ``explore_entity`` to ``server`` when ``rag`` walks a knowledge graph; whether it was added."""
    if rag.graph_retrieval is None:
        return False
    graph = GraphStore(rag.store, rag.embedder)

    @server.tool(
        name="explore_entity",
        description="Look a name up in the knowledge graph built from the corpora (people, places, works, tables, "
        "figures): what it is, the entities related to it within a few hops and how, and the units that mention "
        "it. Use it for questions about how things are connected.",
        annotations=annotations,
    )
    async def explore_entity(
        name: Annotated[str, Field(description="The name of a person, place, thing, table or figure.")],
        hops: Annotated[int, Field(ge=1, le=3, description="How far to follow relations (1-3).")] = 1,
        limit: Annotated[int, Field(ge=1, le=100, description="Most related entities to list.")] = 20,
    ) -> types.CallToolResult:
        async def work() -> Any:
            found = await asyncio.to_thread(_explore, rag, graph, name, hops, limit, 4)
            text = describe_neighbourhood(found["entity"], found["neighbours"])
            if found["others"]:
                text += "\nOther entities matching the name: " + ", ".join(found["others"])
            blocks, listed = hit_blocks(found["hits"], budget=MCP_BUDGET, media=False)
            blocks.insert(1, types.TextContent(type="text", text=delimited(text, source="knowledge graph")))
            entity: Entity = found["entity"]
            data = {
                "entity": {"id": entity.id, "name": entity.name, "type": entity.type},
                "neighbours": [
                    {"name": n.entity.name, "type": n.entity.type, "hops": n.hops, "via": list(n.via)}
                    for n in found["neighbours"]
                ],
                "hits": listed,
            }
            return types.CallToolResult(content=blocks, structuredContent=data)

        return await answering("explore_entity", work)

    return True
