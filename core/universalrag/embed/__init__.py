"""Encoders: the :class:`Embedder` protocol for text (the bundled MiniLM / any local transformers encoder,
OpenAI-compatible endpoints, :func:`make_embedder` for spec strings) and the :class:`VisualEncoder` protocol
with a CLIP-style implementation for the visual channel of images and videos.

Nothing heavy is imported here: torch, transformers and openai load on first use.
"""

from __future__ import annotations

from .base import Embedder, check_embedder
from .factory import embedder_from_settings, embedder_specs, make_embedder, register_embedder
from .openai_encoder import OpenAIEmbedder
from .transformers_encoder import MINILM_NAME, TransformersEmbedder, bundled_minilm
from .vectors import normalised_mean
from .visual import CLIPVisualEncoder, VisualEncoder, visual_encoder_from_settings

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
    "check_embedder",
    "VisualEncoder",
    "CLIPVisualEncoder",
    "visual_encoder_from_settings",
    "normalised_mean",
]
