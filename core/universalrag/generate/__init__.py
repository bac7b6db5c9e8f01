"""Generation: the :class:`Generator` protocol, the OpenAI-compatible chat generator, and the prompt
(:func:`build_messages`) and citation parsing (:func:`parse_citations`) it uses.

Nothing heavy is imported here: the ``openai`` package loads on first use.
"""

from __future__ import annotations

from .base import Generation, Generator
from .openai_chat import OpenAIChatGenerator
from .prompt import DEFAULT_SYSTEM_PROMPT, build_messages, image_data_url, parse_citations, short_ids

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "Generation",
    "Generator",
    "OpenAIChatGenerator",
    "build_messages",
    "image_data_url",
    "parse_citations",
    "short_ids",
]
