"""The knowledge graph's plain data: what an extractor finds in the units of one source, before it is stored.

An extractor reads the units of one source (every corpus, already with their ids) and returns an
:class:`Extraction`: entities (named things), relations between them (by name) and mentions (which unit names which
entity). The store aligns entities across sources by :func:`normalise_key`, so "Marie Curie", "marie  curie" and
"Marie Curie." are one entity. Extractors do no database I/O; :class:`~universalrag.graph.store.GraphStore` writes
what they return inside the transaction that writes the source's units.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..types import Unit

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

#: The relation keyword linking an entity found inside a non-text unit to that unit's anchor entity.
BELONGS_TO = "belongs_to"
#: The relation keyword between two names one passage or row holds (weighted by how many do).
CO_OCCURS = "co_occurs"
#: Mention roles: the entity *is* the unit (an image, a table, a figure, a clip, a page's title) …
ANCHOR = "anchor"
#: … or the unit names it.
MENTION = "mention"

_PUNCTUATION = re.compile(r"[\s\W_]+", re.UNICODE)


def normalise_key(name: str) -> str:
    """The alignment key of an entity name: Unicode NFKC, case folded, every run of white space, punctuation and
    underscores made one space, trimmed (``"Marie  Curie."`` and ``"marie curie"`` → ``"marie curie"``). A name
    with no letter or digit keys to ``""``."""
    return _PUNCTUATION.sub(" ", unicodedata.normalize("NFKC", name).casefold()).strip()


@dataclass(frozen=True, slots=True)
class EntityDraft:
    """A named thing: a person, a page, a table row, a figure, a code. ``type`` is a short lowercase word
    (``"concept"``, ``"page"``, ``"figure"``, ``"row"``, …); ``aliases`` are other names it goes by."""

    name: str
    type: str = "concept"
    description: str = ""
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RelationDraft:
    """A relation between two entities named as in :class:`EntityDraft` (the store resolves them by
    :func:`normalise_key`); ``keywords`` says what kind (``"links_to"``, ``"belongs_to"``, a column name, …)."""

    source: str
    target: str
    keywords: str
    description: str = ""
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class MentionDraft:
    """Unit ``unit_id`` of ``corpus`` names ``entity`` (``role`` :data:`MENTION`) or is it (:data:`ANCHOR`); ``page``
    and ``start_s``/``end_s`` say where in the source, where that is known."""

    entity: str
    corpus: str
    unit_id: str
    role: str = MENTION
    weight: float = 1.0
    page: int | None = None
    start_s: float | None = None
    end_s: float | None = None


@dataclass(frozen=True, slots=True)
class Extraction:
    """What an extractor found in one source."""

    entities: tuple[EntityDraft, ...] = ()
    relations: tuple[RelationDraft, ...] = ()
    mentions: tuple[MentionDraft, ...] = ()

    def merged(self, other: Extraction) -> Extraction:
        """This extraction followed by ``other`` (the store aligns repeated names; nothing is dropped here)."""
        return Extraction(
            entities=self.entities + other.entities,
            relations=self.relations + other.relations,
            mentions=self.mentions + other.mentions,
        )


@runtime_checkable
class Extractor(Protocol):
    """Finds entities, relations and mentions in the units of one source; no database I/O."""

    @property
    def name(self) -> str:
        """A short name for logs and settings (``"structural"``, ``"model"``)."""
        ...

    def extract(self, units: Sequence[Unit], *, source_uri: str) -> Extraction:
        """The :class:`Extraction` of ``units`` (one source's, every corpus, with their ids)."""
        ...
