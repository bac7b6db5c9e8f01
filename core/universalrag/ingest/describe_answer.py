"""What a chat model is asked about a non-text unit, and the shape its answer must have.

One request per unit (a picture, a document's figure, a table, a scene of a video) asks for two texts at once: a
detailed **description** that is embedded and searched with the unit, and an **entity summary** (name, type, one
sentence, key attributes) that the knowledge graph uses as the unit's anchor entity. :data:`PROMPT_VERSION` is part
of every cache key: changing the prompt below must change it.
"""

from __future__ import annotations

from typing import Any

from ..errors import MissingDependencyError

try:
    from pydantic import BaseModel, ConfigDict, Field, field_validator
except ImportError as e:  # pragma: no cover - pydantic comes with the openai extra
    raise MissingDependencyError("pydantic", "openai", feature="model descriptions") from e

__all__ = ["PROMPT_VERSION", "SYSTEM_PROMPT", "EntitySummary", "UnitDescription"]

#: Changes whenever :data:`SYSTEM_PROMPT` or the request layout changes (so cached answers are not reused).
PROMPT_VERSION = "describe-v1"

SYSTEM_PROMPT = """\
You help a search engine index the parts of documents that are not running text: photographs, figures, \
charts, diagrams, tables and scenes of videos. For each part you are given the part itself (pictures, \
video frames or a table) and the text that surrounds it in its source: a caption, nearby paragraphs, the \
title of its page, slide or video, a transcript.

Reply with a single JSON object and nothing else, exactly of this form:
{"description": "...", "entity": {"name": "...", "type": "...", "description": "...", "attributes": {"...": "..."}}}

description: three to eight plain sentences a searcher could match. Say what the part shows or holds: the \
objects, people, places, text, labels and numbers you can see or read, trends in a chart, what the rows and \
columns of a table cover, what happens in a scene. Use the surrounding text to say what the part is about and \
why it is there. State only what the part or its context supports; never invent names, dates or figures.

entity: the part as one node of a knowledge graph.
- name: a short, specific name a reader would use (for example "Figure 3: revenue by region 2019-2023", \
"Golden Gate Bridge in fog", "Table 2: patient outcomes by dose"); keep a label such as "Figure 3" when the \
source gives one.
- type: one lowercase word: photo, figure, chart, diagram, screenshot, map, table, scene, or another fitting word.
- description: one sentence.
- attributes: up to eight key facts as short strings (a table's columns, period and unit; a chart's axes and \
series; a photo's place, subject and time of day; a scene's speakers and setting)."""


class EntitySummary(BaseModel):
    """The unit as a graph entity: ``name``, ``type``, one-sentence ``description``, key ``attributes``."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    name: str = Field(min_length=1, max_length=200)
    type: str = Field(default="concept", max_length=40)
    description: str = Field(default="", max_length=1000)
    attributes: dict[str, str] = Field(default_factory=dict)

    @field_validator("type", mode="before")
    @classmethod
    def _one_word(cls, value: Any) -> Any:
        if isinstance(value, str):
            return "_".join(value.strip().lower().split()) or "concept"
        return value

    @field_validator("attributes", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> Any:
        """Numbers, booleans and lists become text; at most eight attributes are kept."""
        if isinstance(value, dict):
            pairs = [(str(k).strip(), v) for k, v in value.items() if str(k).strip() and v is not None]
            return {k: ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v) for k, v in pairs[:8]}
        return value


class UnitDescription(BaseModel):
    """A model's answer about one unit: the searchable ``description`` and the ``entity`` summary."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    description: str = Field(min_length=1, max_length=6000)
    entity: EntitySummary
