"""Routers: pick, per query, the corpora to search (or none).

- :class:`TrainedRouter` — MiniLM with a multi-label head; ``TrainedRouter.default()`` is shipped.
- :class:`LLMRouter` — training-free, any OpenAI-compatible chat endpoint.
- :class:`EnsembleRouter` — confidence-based or majority vote.
- :class:`ExampleRouter` — similarity to example queries registered per route (user-defined corpora).
- :class:`Combiner` — the learned combiner of evidence-aware routing: a router's prior plus probe features of
  every corpus (:mod:`.features`) → route probabilities; ``Combiner.default()`` is shipped.

All follow the :class:`Router` protocol and share the decision rules of :func:`decide`. This module only
re-exports; torch, transformers and openai are imported on first use.
"""

from __future__ import annotations

from .base import (
    DEFAULT_THRESHOLD,
    EXCLUSIVE_PAIRS,
    ROUTE_DESCRIPTIONS,
    ROUTES,
    BaseRouter,
    Router,
    ScoringRouter,
    apply_exclusions,
    decide,
    resolve_candidates,
)
from .combiner import CombinedDecision, Combiner, TrainingQuery, combiner_accuracy, train_combiner
from .composite import CompositeRouter
from .dataset import LabelledQuery, bundled_heldout, bundled_queries, read_jsonl, split_by_source, wikitables_split
from .ensemble import EnsembleRouter, vote
from .examples import ExampleRouter
from .llm import LLMRouter, build_prompt, parse_routes
from .metrics import EVAL_KEYS, evaluate, score_decisions
from .trained_router import DEFAULT_ARTEFACT, TrainedRouter
from .training import TrainConfig, TrainResult, train_router

__all__ = [
    "DEFAULT_ARTEFACT",
    "DEFAULT_THRESHOLD",
    "EVAL_KEYS",
    "EXCLUSIVE_PAIRS",
    "ROUTES",
    "ROUTE_DESCRIPTIONS",
    "BaseRouter",
    "CombinedDecision",
    "Combiner",
    "CompositeRouter",
    "EnsembleRouter",
    "ExampleRouter",
    "LLMRouter",
    "LabelledQuery",
    "Router",
    "ScoringRouter",
    "TrainConfig",
    "TrainResult",
    "TrainedRouter",
    "TrainingQuery",
    "apply_exclusions",
    "build_prompt",
    "bundled_heldout",
    "bundled_queries",
    "combiner_accuracy",
    "decide",
    "evaluate",
    "parse_routes",
    "read_jsonl",
    "resolve_candidates",
    "score_decisions",
    "split_by_source",
    "train_combiner",
    "train_router",
    "vote",
    "wikitables_split",
]
