"""Evaluation of retrieval-augmented generation: questions with gold answers, routes and evidence; strategies as
comparable modes (routed, unified, all, oracle, random, none, one corpus); metrics averaged within each source,
then across. This module only re-exports; ``universalrag eval rag`` is its command."""

from __future__ import annotations

from .data import EvalExample, GoldEvidence, examples_from, parse_example, read_examples
from .metrics import (
    average_by_source,
    choice_of,
    exact_match,
    first_gold_rank,
    normalize_answer,
    rouge_l,
    routes_match,
    token_f1,
)
from .plot import check_plot_target, plot_report
from .runner import EvalReport, QuestionResult, StrategyReport, evaluate, score
from .strategies import (
    STRATEGIES,
    AllStrategy,
    CorpusStrategy,
    NoneStrategy,
    OracleStrategy,
    RandomStrategy,
    Retrieval,
    RoutedStrategy,
    Strategy,
    UnifiedStrategy,
    build_strategy,
    strategy_names,
)
from .unified import UnifiedIndex, UnifiedState

__all__ = [
    "STRATEGIES",
    "AllStrategy",
    "CorpusStrategy",
    "EvalExample",
    "EvalReport",
    "GoldEvidence",
    "NoneStrategy",
    "OracleStrategy",
    "QuestionResult",
    "RandomStrategy",
    "Retrieval",
    "RoutedStrategy",
    "Strategy",
    "StrategyReport",
    "UnifiedIndex",
    "UnifiedState",
    "UnifiedStrategy",
    "average_by_source",
    "build_strategy",
    "check_plot_target",
    "choice_of",
    "evaluate",
    "exact_match",
    "examples_from",
    "first_gold_rank",
    "normalize_answer",
    "parse_example",
    "plot_report",
    "read_examples",
    "rouge_l",
    "routes_match",
    "score",
    "strategy_names",
    "token_f1",
]
