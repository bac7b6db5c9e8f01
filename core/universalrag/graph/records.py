"""What the knowledge graph's read API returns: entities, relations, mentions, neighbours, paths and counts as
frozen dataclasses (plain data, no database handle)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BuildReport", "Entity", "GraphStats", "Mention", "Neighbour", "Path", "Relation", "WriteCounts"]


@dataclass(frozen=True, slots=True)
class Entity:
    """A stored entity: its id, alignment key, name, type, merged description and other names."""

    id: int
    key: str
    name: str
    type: str
    description: str = ""
    aliases: tuple[str, ...] = ()

    @classmethod
    def from_row(cls, row: Any) -> Entity:
        """An entity from a row with the columns of ``graph_entities``."""
        return cls(
            id=int(row.id),
            key=row.key,
            name=row.name,
            type=row.type,
            description=row.description,
            aliases=tuple(row.aliases or ()),
        )


@dataclass(frozen=True, slots=True)
class Relation:
    """A stored relation between two entities (ids), as one source stated it."""

    id: int
    source: int
    target: int
    keywords: str
    description: str = ""
    weight: float = 1.0
    source_id: str | None = None


@dataclass(frozen=True, slots=True)
class Mention:
    """Unit ``unit_id`` of ``corpus`` names entity ``entity_id`` (role ``mention``) or is it (``anchor``)."""

    entity_id: int
    corpus: str
    unit_id: str
    role: str
    weight: float
    source_id: str | None = None
    page: int | None = None
    start_s: float | None = None
    end_s: float | None = None


@dataclass(frozen=True, slots=True)
class Neighbour:
    """An entity reached from another in ``hops`` relations; ``via`` holds the keywords of the path's relations,
    ``weight`` the smallest weight along it."""

    entity: Entity
    hops: int
    via: tuple[str, ...] = ()
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class Path:
    """A chain of entities from one to another, each step a relation (its keywords in ``via``)."""

    entities: tuple[Entity, ...]
    via: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GraphStats:
    """How large the graph is."""

    entities: int
    relations: int
    mentions: int
    sources: int
    embedded: int
    types: Mapping[str, int] = field(default_factory=dict)
    keywords: Mapping[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return {
            "entities": self.entities,
            "relations": self.relations,
            "mentions": self.mentions,
            "sources": self.sources,
            "embedded": self.embedded,
            "types": dict(self.types),
            "keywords": dict(self.keywords),
        }


@dataclass(frozen=True, slots=True)
class WriteCounts:
    """What writing one source's extraction did: entities inserted or merged, relations and mentions written,
    entity vectors computed."""

    entities: int = 0
    relations: int = 0
    mentions: int = 0
    embedded: int = 0


@dataclass(frozen=True, slots=True)
class BuildReport:
    """What :meth:`GraphStore.rebuild` did: sources read, units read, the rows written, and the entities merged into
    another by embedding similarity afterwards (:mod:`universalrag.graph.align`)."""

    sources: int
    units: int
    entities: int
    relations: int
    mentions: int
    seconds: float
    merged: int = 0
