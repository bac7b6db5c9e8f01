"""The knowledge graph: entities, relations and mentions in plain Postgres tables, joined to the units by the names
they share (docs/graph.md)."""

from __future__ import annotations

from .model import (
    ANCHOR,
    BELONGS_TO,
    CO_OCCURS,
    MENTION,
    EntityDraft,
    Extraction,
    Extractor,
    MentionDraft,
    RelationDraft,
    normalise_key,
)

__all__ = [
    "ANCHOR",
    "BELONGS_TO",
    "CO_OCCURS",
    "MENTION",
    "EntityDraft",
    "Extraction",
    "Extractor",
    "MentionDraft",
    "RelationDraft",
    "normalise_key",
]
