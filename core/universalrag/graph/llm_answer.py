"""What the model-based graph extractor asks a chat model, and the shape its answer must have.

One request covers a batch of pieces of one source, each labelled ``P1``, ``P2``…: passages of text, and the
descriptions a model wrote of images, figures, tables and scenes. The answer lists the entities and relations found,
each with the labels of the pieces that state it, so that every entity is tied to the units that mention it.
:data:`PROMPT_VERSION` is part of every cache key: changing the prompt must change it.
"""

from __future__ import annotations

from typing import Any

from ..errors import MissingDependencyError

try:
    from pydantic import BaseModel, ConfigDict, Field, field_validator
except ImportError as e:  # pragma: no cover - pydantic comes with the openai extra
    raise MissingDependencyError("pydantic", "openai", feature="graph extraction with a model") from e

__all__ = ["MAX_ENTITIES", "MAX_RELATIONS", "PROMPT_VERSION", "SYSTEM_PROMPT", "ExtractionAnswer"]

PROMPT_VERSION = "graph-extract-v1"
#: At most this many entities and relations are read from one answer (the rest is dropped).
MAX_ENTITIES = 60
MAX_RELATIONS = 90

SYSTEM_PROMPT = """\
You build a knowledge graph from pieces of one source. Each piece starts with a label in square brackets, such \
as [P1]; a piece is a passage of text, or the description of a picture, figure, table or video scene.

Find the named things the pieces state facts about (people, organisations, places, products, events, works, \
laws, diseases, chemicals, technical terms, codes, quantities worth looking up) and the relations the pieces \
state between them. Ignore generic words ("the system", "this figure") and things only mentioned in passing.

Reply with a single JSON object and nothing else:
{"entities": [{"name": "...", "type": "...", "description": "...", "aliases": ["..."], "pieces": ["P1"]}],
 "relations": [{"source": "...", "target": "...", "keywords": "...", "description": "...", "strength": 7, \
"pieces": ["P1"]}]}

- name: the fullest form the pieces use ("Marie Curie", not "Curie"); the same thing gets one entry, its other \
forms go in aliases.
- type: one lowercase word: person, organization, place, product, event, work, concept, date, quantity, or \
another fitting word.
- description: one sentence from what the pieces say.
- pieces: the labels of every piece that names it or states the relation.
- relations: source and target are names from your entities; keywords are one to three lowercase words for the \
kind of relation ("founded", "located in", "part of"); strength from 1 (weak) to 10 (stated outright).
- Use only what the pieces say. An empty list is a fine answer."""


def _strings(value: Any) -> Any:
    """A string or a list as at most ten short strings."""
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list):
        return [str(v).strip()[:200] for v in value[:10] if str(v).strip()]
    return value


def _named(value: Any, keys: tuple[str, ...], limit: int) -> Any:
    """The first ``limit`` items of a list that are objects with a non-blank string under each of ``keys`` (an item
    without them is dropped, not a reason to refuse the whole answer)."""
    if not isinstance(value, list):
        return value
    kept = [v for v in value if isinstance(v, dict) and all(isinstance(v.get(k), str) and v[k].strip() for k in keys)]
    return kept[:limit]


def _one_word(value: Any, default: str) -> Any:
    if isinstance(value, str):
        return "_".join(value.strip().lower().split())[:40] or default
    return value


class ExtractedEntity(BaseModel):
    """One entity of an answer."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    name: str = Field(min_length=1, max_length=200)
    type: str = "concept"
    description: str = Field(default="", max_length=2000)
    aliases: list[str] = Field(default_factory=list)
    pieces: list[str] = Field(default_factory=list)

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, value: Any) -> Any:
        return _one_word(value, "concept")

    @field_validator("aliases", "pieces", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        return _strings(value)


class ExtractedRelation(BaseModel):
    """One relation of an answer (its ends are entity names)."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    source: str = Field(min_length=1, max_length=200)
    target: str = Field(min_length=1, max_length=200)
    keywords: str = "related_to"
    description: str = Field(default="", max_length=2000)
    strength: float = 5.0
    pieces: list[str] = Field(default_factory=list)

    @field_validator("keywords", mode="before")
    @classmethod
    def _keywords(cls, value: Any) -> Any:
        if isinstance(value, list):
            value = ", ".join(map(str, value))
        if isinstance(value, str):
            return value.strip().lower()[:120] or "related_to"
        return value

    @field_validator("strength", mode="before")
    @classmethod
    def _strength(cls, value: Any) -> Any:
        try:
            return min(max(float(value), 1.0), 10.0)
        except (TypeError, ValueError):
            return 5.0

    @field_validator("pieces", mode="before")
    @classmethod
    def _pieces(cls, value: Any) -> Any:
        return _strings(value)


class ExtractionAnswer(BaseModel):
    """A model's answer for one batch of pieces."""

    model_config = ConfigDict(extra="ignore")

    entities: list[ExtractedEntity] = Field(default_factory=list)
    relations: list[ExtractedRelation] = Field(default_factory=list)

    @field_validator("entities", mode="before")
    @classmethod
    def _few_entities(cls, value: Any) -> Any:
        return _named(value, ("name",), MAX_ENTITIES)

    @field_validator("relations", mode="before")
    @classmethod
    def _few_relations(cls, value: Any) -> Any:
        return _named(value, ("source", "target"), MAX_RELATIONS)
