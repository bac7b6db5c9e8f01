"""A tool that explores the knowledge graph: what a name is, what it is related to, the units that mention it."""

from __future__ import annotations

from ._deps import require_langchain

require_langchain()

from langchain_core.documents import Document  # noqa: E402
from langchain_core.tools import BaseTool, StructuredTool, ToolException  # noqa: E402
from pydantic import BaseModel, Field  # noqa: E402

from universalrag.errors import InvalidInputError  # noqa: E402
from universalrag.evidence import UNIT_TEXT_TOKENS  # noqa: E402
from universalrag.graph.records import Entity, Neighbour  # noqa: E402
from universalrag.graph.store import GraphStore  # noqa: E402
from universalrag.pipeline import UniversalRAG  # noqa: E402

from ._convert import hits_to_documents  # noqa: E402
from .tools import format_documents  # noqa: E402

__all__ = ["create_entity_tool", "describe_entity"]

#: Entities listed as related at most, whatever the model asks.
MAX_RELATED = 50


class EntityInput(BaseModel):
    """What an agent passes to the entity tool."""

    name: str = Field(description="The name of a person, place, organisation, work, table or figure.")
    hops: int = Field(default=1, ge=1, le=3, description="How far to follow relations (1-3).")


def _line(entity: Entity) -> str:
    aliases = f" (also: {', '.join(entity.aliases[:5])})" if entity.aliases else ""
    about = f": {entity.description.strip()[:300]}" if entity.description.strip() else ""
    return f"{entity.name} [{entity.type}]{aliases}{about}"


def describe_entity(entity: Entity, neighbours: list[Neighbour]) -> str:
    """The text a model reads for ``entity`` and its ``neighbours``: one line each, with the relations that lead
    to a neighbour (``via built by → founded``) and its distance in hops."""
    lines = [f"Entity: {_line(entity)}"]
    if not neighbours:
        return "\n".join([*lines, "No related entities."])
    lines.append("Related entities (nearest first):")
    for n in neighbours:
        via = f", via {' → '.join(v for v in n.via if v)}" if any(n.via) else ""
        lines.append(f"- {_line(n.entity)} ({n.hops} hop{'s' if n.hops != 1 else ''}{via})")
    return "\n".join(lines)


def create_entity_tool(
    rag: UniversalRAG,
    *,
    name: str = "explore_entity",
    max_related: int = 20,
    max_units: int = 4,
    max_unit_tokens: int | None = UNIT_TEXT_TOKENS,
) -> BaseTool:
    """A tool exploring the knowledge graph of ``rag``'s database: given a name, the entity so called (by name or
    alias, else the entities whose names hold its words), up to ``max_related`` entities within ``hops`` relations
    with the relations that lead there, and the ``max_units`` units that mention it most.

    It returns ``(text, documents)`` (``response_format="content_and_artifact"``): the model reads the entity, its
    neighbourhood and the units' text; the units reach the agent's state as ``Document``s. A name the graph does not
    hold, an empty name, or a database without a graph are answered as a ``ToolMessage`` (``status="error"``) saying
    what to do, with the entities of similar names when there are some. The constructor reads nothing; every call
    reads the graph as it is then.
    """
    if not 1 <= max_related <= MAX_RELATED:
        raise InvalidInputError(f"max_related must be between 1 and {MAX_RELATED}, got {max_related!r}.")
    graph = GraphStore(rag.store, rag.embedder)

    def explore(name: str, hops: int = 1) -> tuple[str, list[Document]]:
        if not isinstance(name, str) or not name.strip():
            raise ToolException(f"The name was empty. Call {tool_name} again with the name of a thing to look up.")
        if rag.graph_retrieval is None or not rag.graph_retrieval.present(rag.store):
            raise ToolException(
                "This database holds no knowledge graph yet, so entities cannot be explored; search the corpora "
                "instead."
            )
        found = graph.entities(name, limit=5)
        if not found:
            near = [e.name for e, score in graph.similar(rag.embedder.embed([name])[0], limit=5) if score >= 0.5]
            hint = f" Names it holds that look alike: {', '.join(near)}." if near else ""
            raise ToolException(f"The knowledge graph holds no entity called {name!r}.{hint}")
        entity = found[0]
        neighbours = graph.neighbours(entity, hops=hops, limit=max_related)
        documents = hits_to_documents(graph.units([entity.id], limit=max_units), max_tokens=max_unit_tokens)
        text = describe_entity(entity, neighbours)
        if len(found) > 1:
            text += "\nOther entities matching the name: " + ", ".join(e.name for e in found[1:])
        if documents:
            text += "\n\nUnits that mention it:\n" + format_documents(documents, rag=rag)
        return text, documents

    tool_name = name
    return StructuredTool.from_function(
        func=explore,
        name=name,
        description="Look a name up in the knowledge graph built from the user's corpora: what it is, the entities "
        "related to it (within 1-3 relations) and how, and the passages, tables or pictures that mention it. Use it "
        "for questions about how people, places and things are connected.",
        args_schema=EntityInput,
        response_format="content_and_artifact",
        handle_tool_error=True,
        handle_validation_error=True,
    )
