"""Answer and retrieval metrics, one number per question, and their averages (within each source, then across).

Answers: exact match and token F1 after SQuAD's normalisation (lower case, punctuation and the articles a/an/the
removed, whitespace collapsed), the best over the accepted aliases; ROUGE-L F-measure (``rouge-score``, the
``eval`` extra); accuracy for multiple choice (the letter read from the model's reply). Retrieval: the rank of
the first gold evidence among the hits gives recall@k (gold in the top ``k``) and the reciprocal rank (MRR);
routing accuracy is the chosen set of corpora equal to the gold set (``none`` for no retrieval).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import MissingDependencyError
from ..routing.metrics import percentile
from ..types import NO_RETRIEVAL, Hit
from .data import GoldEvidence

__all__ = [
    "average_by_source",
    "choice_of",
    "exact_match",
    "first_gold_rank",
    "normalize_answer",
    "percentile",
    "rouge_l",
    "routes_match",
    "token_f1",
]

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces."""
    lowered = text.lower()
    no_punct = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", no_punct).split())


def exact_match(prediction: str, answers: Sequence[str]) -> float:
    """1.0 when the normalised prediction equals one normalised answer, else 0.0."""
    predicted = normalize_answer(prediction)
    return float(any(predicted == normalize_answer(a) for a in answers))


def _f1(prediction: str, answer: str) -> float:
    predicted, gold = normalize_answer(prediction).split(), normalize_answer(answer).split()
    if not predicted or not gold:
        return float(predicted == gold)
    common = sum((Counter(predicted) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, answers: Sequence[str]) -> float:
    """Token-overlap F1 of the normalised texts, the best over ``answers``."""
    return max((_f1(prediction, a) for a in answers), default=0.0)


def rouge_l(prediction: str, answers: Sequence[str]) -> float:
    """ROUGE-L F-measure (longest common subsequence, ``rouge-score`` with stemming), the best over ``answers``."""
    try:
        from rouge_score import rouge_scorer
    except ImportError as e:
        raise MissingDependencyError("rouge-score", "eval", feature="ROUGE-L") from e
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    return max((scorer.score(a, prediction)["rougeL"].fmeasure for a in answers), default=0.0)


def choice_of(reply: str, choices: Sequence[str]) -> str | None:
    """The option letter a model's ``reply`` picks among ``choices`` (lettered A, B, …), or ``None``.

    Read, in order: a letter at the start ("B", "(B) …", "B. …", "B) …"; not a word such as "A cup"), a phrase
    such as "answer is B"
    or "option (C)", then the one option whose normalised text the reply contains.
    """
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[: len(choices)]
    if not letters:
        return None
    text = reply.strip()
    start = re.match(rf"^(?:[\(\[]([{letters}])[\)\]]|([{letters}])(?:[\)\.:]|$))", text)
    if start:
        return start.group(1) or start.group(2)
    phrase = re.search(rf"\b(?:answer|option|choice)\s*(?:is|:)?\s*[\(\[]?([{letters}])\b", text, re.IGNORECASE)
    if phrase and phrase.group(1).upper() in letters:
        return phrase.group(1).upper()
    said = normalize_answer(text)
    contained = [
        letters[i] for i, option in enumerate(choices) if normalize_answer(option) and normalize_answer(option) in said
    ]
    return contained[0] if len(contained) == 1 else None


def first_gold_rank(hits: Sequence[Hit], gold: Sequence[GoldEvidence]) -> int | None:
    """The 1-based rank of the first hit that is gold evidence, or ``None``."""
    for rank, hit in enumerate(hits, 1):
        if any(g.matches(hit) for g in gold):
            return rank
    return None


def routes_match(chosen: Iterable[str], gold: Iterable[str]) -> bool:
    """Whether the chosen corpora are exactly the gold ones (an empty choice is ``none``; ``none`` beside a
    corpus is ignored)."""

    def norm(routes: Iterable[str]) -> frozenset[str]:
        named = {r for r in routes if r != NO_RETRIEVAL}
        return frozenset(named) if named else frozenset({NO_RETRIEVAL})

    return norm(chosen) == norm(gold)


def average_by_source(rows: Iterable[tuple[str, Mapping[str, float | None]]]) -> dict[str, Any]:
    """``{"overall": {metric: mean}, "per_source": {source: {metric: mean}}, "n": {source: count}}`` from
    ``(source, {metric: value or None})`` rows: a metric is averaged over the questions that have it within
    each source, and ``overall`` is the mean of the source means (every source weighs the same)."""
    sums: dict[str, dict[str, list[float]]] = {}
    counts: Counter[str] = Counter()
    for source, values in rows:
        counts[source] += 1
        bucket = sums.setdefault(source, {})
        for metric, value in values.items():
            if value is not None:
                bucket.setdefault(metric, []).append(float(value))
    per_source = {s: {m: sum(v) / len(v) for m, v in sorted(ms.items())} for s, ms in sorted(sums.items())}
    metrics = sorted({m for ms in per_source.values() for m in ms})
    overall = {}
    for metric in metrics:
        means = [ms[metric] for ms in per_source.values() if metric in ms]
        overall[metric] = sum(means) / len(means)
    return {"overall": overall, "per_source": per_source, "n": dict(sorted(counts.items()))}
