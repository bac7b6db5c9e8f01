"""Which extractor writes the graph at ingestion, by name (``UNIVERSALRAG_GRAPH``): a registry, not an if/elif.

- ``structural`` (default): :class:`~universalrag.graph.structural.StructuralExtractor`, no model;
- ``model``: :class:`~universalrag.graph.llm_extractor.ModelExtractor` with the configured chat model;
- ``both``: the two merged (their entities align by name, as RAG-Anything merges its two graphs);
- ``off``: no graph.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..config import Settings
from ..errors import ConfigError
from ..types import Unit
from .model import Extraction, Extractor
from .structural import StructuralExtractor

__all__ = ["EXTRACTORS", "Combined", "extractor_from_settings", "register_extractor"]


class Combined:
    """Several extractors' results merged into one extraction."""

    def __init__(self, extractors: Sequence[Extractor]) -> None:
        self.extractors = tuple(extractors)
        self.name = "+".join(e.name for e in self.extractors)

    def extract(self, units: Sequence[Unit], *, source_uri: str) -> Extraction:
        """Every extractor's extraction, merged in order."""
        out = Extraction()
        for extractor in self.extractors:
            out = out.merged(extractor.extract(units, source_uri=source_uri))
        return out


def _model(settings: Settings) -> Extractor:
    from .llm_extractor import model_extractor_from_settings

    extractor = model_extractor_from_settings(settings)
    if extractor is None:
        raise ConfigError(
            "UNIVERSALRAG_GRAPH=model needs a chat model: set UNIVERSALRAG_LLM_MODEL and UNIVERSALRAG_LLM_BASE_URL, "
            "or use UNIVERSALRAG_GRAPH=structural."
        )
    return extractor


#: Extractor name → factory from the settings.
EXTRACTORS: dict[str, Callable[[Settings], Extractor]] = {
    "structural": lambda settings: StructuralExtractor(),
    "model": _model,
    "both": lambda settings: Combined([StructuralExtractor(), _model(settings)]),
}


def register_extractor(name: str, factory: Callable[[Settings], Extractor]) -> None:
    """Make ``UNIVERSALRAG_GRAPH=name`` use the extractor ``factory(settings)`` builds."""
    EXTRACTORS[name.strip().lower()] = factory


def extractor_from_settings(settings: Settings) -> Extractor | None:
    """The extractor ``settings.graph`` names (``None`` for ``off``); ConfigError for an unknown name."""
    name = settings.graph.strip().lower()
    if name == "off":
        return None
    factory = EXTRACTORS.get(name)
    if factory is None:
        raise ConfigError(
            f"Unknown knowledge-graph extractor {settings.graph!r} (UNIVERSALRAG_GRAPH); choose one of "
            f"{', '.join(sorted(EXTRACTORS))} or 'off'."
        )
    return factory(settings)
