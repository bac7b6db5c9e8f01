"""Text embedders: the :class:`Embedder` protocol, the bundled MiniLM / any local transformers encoder,
OpenAI-compatible endpoints, and :func:`make_embedder` for spec strings.

Nothing heavy is imported here: torch, transformers and openai load on first use.
"""

from __future__ import annotations

from .base import Embedder
from .factory import embedder_from_settings, embedder_specs, make_embedder, register_embedder
from .openai_encoder import OpenAIEmbedder
from .transformers_encoder import MINILM_NAME, TransformersEmbedder, bundled_minilm

__all__ = [
    "Embedder",
    "TransformersEmbedder",
    "OpenAIEmbedder",
    "MINILM_NAME",
    "bundled_minilm",
    "make_embedder",
    "embedder_from_settings",
    "embedder_specs",
    "register_embedder",
]
