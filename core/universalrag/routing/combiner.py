"""The learned combiner: the router's prior and the probe evidence → route probabilities (NumPy only).

Two logistic regressions, stored as JSON:

- **corpus model** — one row per (query, candidate corpus) pair (:data:`CORPUS_FEATURES`): the probability
  that this corpus holds what answers the query. It does not read the prior's ``none`` probability: whether
  the question needs retrieval at all is the answerable model's question (counting the prior's ``none`` in both
  models made strong evidence lose to a confident ``none`` prior twice);
- **answerable model** — one row per query (:data:`~.features.QUERY_FEATURES`): the probability that any
  corpus answers it at all.

The decision (:meth:`Combiner.decide`): ``none`` when the answerable model puts the chance that some corpus answers
below one half. That model weighs the prior's view (its ``none`` log-odds and their margin over the likeliest
corpus's) against the evidence (the best corpus probability, similarity and margin, the share of the query's content
words found in one probed unit and their count, by stem) and the query's shape (how many content words, their share
of its words, the share of numbers). The prior is an input, not a gate: the earlier rule that it must also rank
``none`` above every corpus kept chit-chat the trained router gives to a corpus out of ``none`` whatever the
evidence said. Chosen on the tune split of ``benchmarks/routing_e2e.py`` and the held-out questions of
``scripts/train_combiner.py`` (tune: correct ``none`` 19 of 20 with the rule, 20 without; false ``none`` 4 of 225
either way; held-out written chit-chat 91.9 % against 98.4 %, false ``none`` 2 of 236 either way). Without the rule,
an answerable model that counted words found only by exact spelling sent "can a tuple be changed after it is made"
to ``none`` over a store whose text says "Tuples are immutable": words are now matched by stem. Otherwise every
corpus whose probability reaches one half is searched, best first (at least the best one), and while the chance that
one of the searched corpora holds the answer (``1 - prod(1 - p)``) stays below :data:`COVERAGE` (one half), the next
likeliest is added, up to :data:`MAX_ROUTES` corpora (:func:`covering`). When that leaves room, the best corpus's
sibling granularity (the passages of a chosen whole text, the scenes of a chosen whole video, and the other way
round) joins it from :data:`SIBLING_FLOOR` (10 %): the combiner tells a passage question from a whole-text one less
surely than text from a table, and in the routing benchmark's tune split the answering unit came back for 168 of 220
questions with this rule against 166 without (the held-out split: 171 against 169 of 226; floors of 10 % and
15 % gave the same, 5 % one fewer on tune). A ``none`` conclusion overridden by ``allow_none=False`` (what agent
tools do) searches what the same rule chooses — with every corpus unlikely, the two likeliest: asked "do I need
approval for a 700 euro expense" over an employee handbook and a price table, ``none`` 0.52, table 0.20 and
passages 0.16, the likeliest corpus alone missed the handbook's passage. One half is the decision boundary of a
calibrated probability; the cap of two was chosen on
the tune split of ``benchmarks/paper.py``'s 40-page knowledge base (top-5 recall of the fused hits, macro over the
question sets: 0.815 with the best corpus alone, 0.837 with this rule; crowd-written table questions 0.645 → 0.693):
a table question whose table and paragraph corpora stood at 0.37 and 0.40 was answered from paragraphs alone. It
costs no search (every candidate corpus was probed already), and it keeps the hits a caller gets to at most ``2 k``
for such questions. Unlike a router that reads the question alone, the combiner does not apply the paper's exclusive
pairs (:data:`~.base.EXCLUSIVE_PAIRS`: a passage *or* the whole document, a scene *or* the whole video): when the
evidence makes both granularities likely, both are searched — their probes are already there — and the fused top
hits hold the best of each (on the routing benchmark's tune split this found the gold for more questions than
keeping only the likelier granularity). A store of long manuals may have a whole text chosen first bring its passages
along, however unlikely the combiner finds them, when their best probe hit is about as near (:func:`finer_sibling`; off
by default: it did not hold on held-out questions; the rules and the measurements that chose them are
:class:`DecisionRules`). Last, a text corpus left out whose best probe hit beats the best hit of every chosen one by a
margin is searched as well (:func:`dominant`; a third corpus at most, so up to ``3 k`` hits): the combiner learned to
trust a table's margin over its other rows, and two npm pages of generic "Flags" tables took "how do workspaces work in
npm" (table 0.52, passages 0.16) from a passage of similarity 0.80 against the table row's 0.69. The weights are what is
learned, by :func:`train_combiner` (Newton's method, L2 penalty pulling towards a base model's weights when adapting).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, RoutingError
from ..fusion import lifted
from ..types import NO_RETRIEVAL
from .features import PAIR_FEATURES, QUERY_FEATURES, QUERY_ONLY, query_features, sibling_corpora

__all__ = [
    "COMBINER_FORMAT",
    "CORPUS_FEATURES",
    "COVERAGE",
    "DEFAULT_COMBINER",
    "DOMINANCE_MARGIN",
    "MAX_ROUTES",
    "RULES",
    "SIBLING_FLOOR",
    "SIBLING_TIE",
    "DecisionRules",
    "CombinedDecision",
    "Combiner",
    "Logistic",
    "TrainingQuery",
    "combiner_accuracy",
    "covering",
    "dominant",
    "finer_sibling",
    "fit_logistic",
    "naming",
    "train_combiner",
]

#: Version tag of the JSON format.
COMBINER_FORMAT = "universalrag-combiner/1"

#: The pair features the corpus model is trained on: every :data:`~.features.PAIR_FEATURES` but ``prior_none``
#: and those that serve the ``none`` decision (the query's shape, the count of its words found), which say
#: nothing about one corpus against another.
CORPUS_FEATURES: tuple[str, ...] = tuple(
    f for f in PAIR_FEATURES if f not in {"prior_none", "matched", "named", *QUERY_ONLY}
)

#: The shipped combiner (trained by ``scripts/train_combiner.py``).
DEFAULT_COMBINER = Path(__file__).resolve().parent / "combiner.json"


#: The decision searches corpora, likeliest first, until one of them holds the answer with this probability...
COVERAGE = 0.5
#: ... or this many corpora are searched (every corpus reaching one half is searched in any case).
MAX_ROUTES = 2
#: ... and the best corpus's sibling granularity (a passage or the whole text, a scene or the whole video) is searched
#: beside it, room permitting, from this probability up.
SIBLING_FLOOR = 0.1

#: The :attr:`DecisionRules.sibling_tie` chosen on long manuals (off in :data:`RULES`: see there).
SIBLING_TIE = 0.05
#: The shipped :attr:`DecisionRules.dominance_margin`.
DOMINANCE_MARGIN = 0.03


@dataclass(frozen=True)
class DecisionRules:
    """The rules :meth:`Combiner.decide` applies to the learned probabilities, after :func:`covering`. Each reads
    only the probe evidence (similarities), never a query's words; ``None`` turns one off. The shipped values are
    :data:`RULES`; a :class:`Combiner` decides with its ``rules`` (``dataclasses.replace(combiner, rules=...)``, then
    :meth:`UniversalRAG.use_combiner <universalrag.pipeline.UniversalRAG.use_combiner>`).
    ``benchmarks/decision_rules.py`` replays the decisions of a question set with each rule off and at other values
    (the probes are gathered once per question). The held-out figures below are its run on the ``report`` split (270
    questions, 250 answerable: the own corpora of ``routing_e2e.py`` and 60 Wikipedia pages), which none of these
    rules was chosen on; unit@5 is the share of answering units in the top 5.
    """

    #: Whatever its probability, the passage corpus beside a whole-text corpus chosen first is searched when its best
    #: probe hit is at most this much less similar than the whole text's best part (:func:`finer_sibling`). The best
    #: part of a whole text is about as near as the passage cut like it, and the passage is then the hit to return,
    #: not the manual around it: terse questions about a function of a 230,000-character manual ("pbkdf2 with hmac
    #: sha256", prior ``none`` 0.99) went to the whole manuals alone (document 0.66, passages 0.02). Chosen on users'
    #: manuals (Nettle, bzip2, zlib and GnuPG: 34 of 46 answering passages in the top 5 without the rule, 37 at 0.02,
    #: 39 at 0.05; libtasn1 and shared-mime-info PDFs 34 → 37 of 42; pip's and libffi's pages 44 of 50 either way);
    #: Held out it does not hold: unit@5 80.8 % without it, 80.4 % at 0.02, 0.05 and 0.10 (the same 3 decisions
    #: changed, none for the better; hit@5 87.2 % either way), and on the 250-page held-out split 60.7 → 60.6 %. Off
    #: by default; a store of long manuals asked terse questions may turn it on
    #: (``DecisionRules(sibling_tie=SIBLING_TIE)``).
    sibling_tie: float | None = None
    #: A text corpus left out is searched too when its best probe hit is more similar to the query than the best hit
    #: of every chosen corpus by this much (tables lifted by :data:`~universalrag.fusion.TABLE_OFFSET`, as merging
    #: ranks them; :func:`dominant`): the hit that merging every corpus would put first is never hidden by the
    #: decision. Chosen on the 250-page tune split (routed unit@5 58.9 % without the rule, 58.6 % at 0, 59.0 % at 0.03)
    #: and on npm's 92 Markdown pages (13 of 20 user questions answered in the top 5 without it, 16 at 0, 15 at 0.03:
    #: two pages' "Flags" tables matched every question about npm's settings, and the combiner trusted their margin);
    #: Held out it holds, if narrowly: unit@5 80.8 % at 0, 0.03 and 0.06 against 80.0 % without the rule (4 decisions
    #: changed; with the sibling tie on, 80.4 % at 0 and 0.03 and 80.0 % at 0.06); on the 250-page held-out split
    #: 60.9 → 61.1 %.
    dominance_margin: float | None = DOMINANCE_MARGIN


#: The shipped decision rules.
RULES = DecisionRules()
_TEXT_GRANULARITIES = ("is_paragraph", "is_document", "is_table")


def covering(
    probs: Mapping[str, float],
    *,
    ranked: Sequence[str] | None = None,
    siblings: Mapping[str, Sequence[str]] | None = None,
) -> tuple[str, ...]:
    """The corpora to search from each corpus's probability of holding the answer (``ranked``: the corpora by
    falling probability, computed when not given): every corpus of at least one half, at least the best one, then
    the next likeliest while ``1 - prod(1 - p)`` over the chosen stays below :data:`COVERAGE` and fewer than
    :data:`MAX_ROUTES` are chosen. When that leaves room, the likeliest corpus of the best one's sibling
    granularity (``siblings``: corpus → corpora of its sibling granularity) joins it if its probability reaches
    :data:`SIBLING_FLOOR`."""
    order = list(ranked) if ranked is not None else sorted(probs, key=lambda c: -probs[c])
    chosen = [c for c in order if probs[c] >= 0.5] or order[:1]
    missed = float(np.prod([1.0 - probs[c] for c in chosen]))
    for name in order[len(chosen) :]:
        if 1.0 - missed >= COVERAGE or len(chosen) >= MAX_ROUTES:
            break
        chosen.append(name)
        missed *= 1.0 - probs[name]
    partners = set((siblings or {}).get(chosen[0], ())) if chosen else set()
    sibling = next((c for c in order if c in partners and c not in chosen), None)
    if sibling is not None and len(chosen) < MAX_ROUTES and probs[sibling] >= SIBLING_FLOOR:
        chosen.append(sibling)
    return tuple(chosen)


def _lifted(row: Mapping[str, float]) -> float:
    return lifted(float(row["best"]), table=bool(row.get("is_table")))


def finer_sibling(
    pairs: Mapping[str, Mapping[str, float]],
    chosen: Sequence[str],
    *,
    room: int = MAX_ROUTES,
    tie: float | None = SIBLING_TIE,
) -> str | None:
    """The passage corpus to search beside a whole-text corpus chosen first (``chosen[0]``), when its best probe
    hit comes within ``tie`` (:attr:`DecisionRules.sibling_tie`) of that corpus's best, and fewer than ``room``
    corpora are chosen; else ``None`` (always when ``tie`` is ``None``). The best part of a whole text is about as near
    as the passage it was cut like, and then the passage is the hit to return (merging ranks it first): the whole
    manual's 200,000 characters are not. A ``none`` conclusion overridden (``allow_none=False``) leaves one more route:
    its two likeliest corpora are guesses ("append a new element to a SEQUENCE OF": the libtasn1 manual and a table, the
    answering passage first among passages)."""
    if tie is None or not chosen or len(chosen) >= room or not pairs.get(chosen[0], {}).get("is_document"):
        return None
    top = float(pairs[chosen[0]]["best"])
    finer = [c for c in sibling_corpora(pairs).get(chosen[0], ()) if c not in chosen and not pairs[c].get("empty")]
    best = max(finer, key=lambda c: float(pairs[c]["best"]), default=None)
    return best if best is not None and float(pairs[best]["best"]) >= top - tie else None


def dominant(
    pairs: Mapping[str, Mapping[str, float]], chosen: Sequence[str], *, margin: float | None = DOMINANCE_MARGIN
) -> str | None:
    """The text corpus outside ``chosen`` whose best probe hit beats every chosen corpus's by ``margin``
    (:attr:`DecisionRules.dominance_margin`), if any; ``None`` when ``margin`` is ``None``, when a chosen corpus is
    not a text corpus (its similarity is on another scale) or no such corpus exists."""

    def text(name: str) -> bool:
        row = pairs[name]
        return any(row.get(flag) for flag in _TEXT_GRANULARITIES) and not row.get("empty")

    if margin is None or not chosen or not all(c in pairs and text(c) for c in chosen):
        return None
    top = max(_lifted(pairs[c]) for c in chosen)
    best = max((c for c in pairs if c not in chosen and text(c)), key=lambda c: _lifted(pairs[c]), default=None)
    return best if best is not None and _lifted(pairs[best]) >= top + margin else None


def naming(pairs: Mapping[str, Mapping[str, float]]) -> list[str]:
    """The corpora whose probe hits hold a name the query typed (feature ``named``: "CMAKE_BUILD_TYPE", "E0382",
    "dns.lookup"; see :func:`~universalrag.exact_terms.identifiers`), best probe hit first (tables lifted as
    :func:`dominant` lifts them). The decision searches the first of them when it chose none of them, and never
    concludes ``none`` while there is one: on CMake's help, "CMAKE_BUILD_TYPE" went to an 8-table corpus whose rows
    resembled it (best 0.742 against the variable's own page at 0.719), and none of them held the name."""
    return sorted(
        (c for c, row in pairs.items() if row.get("named") and not row.get("empty")), key=lambda c: -_lifted(pairs[c])
    )


@dataclass(frozen=True)
class Logistic:
    """A logistic regression over named features, standardised with the stored mean and scale."""

    features: tuple[str, ...]
    weights: np.ndarray
    bias: float
    mean: np.ndarray
    scale: np.ndarray

    def matrix(self, rows: Sequence[Mapping[str, float]]) -> np.ndarray:
        """The standardised design matrix of ``rows`` (missing features raise :class:`RoutingError`)."""
        try:
            x = np.array([[float(r[f]) for f in self.features] for r in rows], dtype=np.float64)
        except KeyError as e:
            raise RoutingError(f"The combiner needs feature {e.args[0]!r}, which the evidence lacks.") from e
        return (x.reshape(len(rows), len(self.features)) - self.mean) / self.scale

    def predict(self, rows: Sequence[Mapping[str, float]]) -> np.ndarray:
        """The probability of the positive class for each row."""
        if not rows:
            return np.zeros(0)
        return _sigmoid(self.matrix(rows) @ self.weights + self.bias)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return {
            "features": list(self.features),
            "weights": [round(float(w), 6) for w in self.weights],
            "bias": round(float(self.bias), 6),
            "mean": [round(float(m), 6) for m in self.mean],
            "scale": [round(float(s), 6) for s in self.scale],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Logistic:
        """Read :meth:`to_dict`'s form."""
        features = tuple(data["features"])
        arrays = [np.asarray(data[k], dtype=np.float64) for k in ("weights", "mean", "scale")]
        if any(a.shape != (len(features),) for a in arrays):
            raise ConfigError("A combiner model's weights, mean and scale must have one value per feature.")
        return cls(features, arrays[0], float(data["bias"]), arrays[1], arrays[2])


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def fit_logistic(
    rows: Sequence[Mapping[str, float]],
    labels: Sequence[float],
    *,
    features: Sequence[str],
    l2: float = 1.0,
    base: Logistic | None = None,
    sample_weight: Sequence[float] | None = None,
    iterations: int = 50,
) -> Logistic:
    """Fit a logistic regression by Newton's method with an L2 penalty ``l2 · |w − w_base|²``.

    Without ``base`` the features are standardised on ``rows`` and the penalty pulls towards zero; with it,
    ``base``'s standardisation is kept and the penalty pulls towards ``base``'s weights (adaptation from few
    examples stays close to the shipped model).
    """
    features = tuple(features)
    if not rows:
        raise RoutingError("Cannot train a combiner on no examples.")
    x = np.array([[float(r[f]) for f in features] for r in rows], dtype=np.float64).reshape(len(rows), -1)
    y = np.asarray(labels, dtype=np.float64)
    if base is not None and base.features == features:
        mean, scale, w0, b0 = base.mean, base.scale, base.weights.copy(), float(base.bias)
    else:
        mean = x.mean(axis=0)
        scale = np.where(x.std(axis=0) > 1e-9, x.std(axis=0), 1.0)
        w0, b0 = np.zeros(len(features)), 0.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    sw = np.ones(len(x)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    theta = np.append(w0, b0)
    anchor = np.append(w0, b0)
    penalty = np.full(len(theta), float(l2))
    penalty[-1] = 1e-3  # the bias is barely penalised

    def loss(t: np.ndarray) -> float:
        margin = z @ t
        nll = np.logaddexp(0.0, margin) - y * margin
        return float(sw @ nll + 0.5 * penalty @ (t - anchor) ** 2)

    current = loss(theta)
    for _ in range(iterations):
        p = _sigmoid(z @ theta)
        grad = z.T @ (sw * (p - y)) + penalty * (theta - anchor)
        hess = (z * (sw * p * (1 - p))[:, None]).T @ z + np.diag(penalty)
        step = np.linalg.solve(hess, grad)
        scale_step = 1.0
        while scale_step > 1e-6:  # backtracking: Newton steps from a far-off start can overshoot
            candidate = theta - scale_step * step
            value = loss(candidate)
            if value <= current:
                break
            scale_step /= 2
        else:
            break
        theta, improvement, current = candidate, current - value, value
        if improvement < 1e-10 * max(1.0, abs(current)):
            break
    return Logistic(features, theta[:-1], float(theta[-1]), mean, scale)


@dataclass(frozen=True)
class CombinedDecision:
    """The combiner's decision: routes (primary first), a probability per corpus and for ``none``, and
    whether ``none`` was concluded."""

    routes: tuple[str, ...]
    scores: dict[str, float]
    answerable: float
    none: bool
    best: str | None


@dataclass(frozen=True)
class TrainingQuery:
    """One labelled query with its evidence: features per candidate corpus, the prior's ``none`` probability,
    the gold corpora (empty for a question that needs no retrieval), where it comes from and its text (for
    reports; the models read only the features)."""

    pairs: Mapping[str, Mapping[str, float]]
    prior_none: float
    gold: frozenset[str]
    source: str = ""
    query: str = ""

    @property
    def answerable(self) -> bool:
        """Whether some corpus answers it."""
        return bool(self.gold - {NO_RETRIEVAL})


@dataclass(frozen=True)
class Combiner:
    """Prior + probe evidence → route probabilities and the decision (see the module docstring)."""

    corpus_model: Logistic
    answerable_model: Logistic
    info: Mapping[str, Any] = field(default_factory=dict)
    #: The rules the decision applies after the learned probabilities (not stored with the weights).
    rules: DecisionRules = RULES

    @functools.cached_property
    def version(self) -> str:
        """A short content hash of the weights (recorded with every logged decision; computed once: the weights
        are frozen, and writing them out as JSON took ~0.3 ms of every routed query)."""
        blob = json.dumps([self.corpus_model.to_dict(), self.answerable_model.to_dict()], sort_keys=True)
        return "combiner-" + hashlib.sha256(blob.encode()).hexdigest()[:10]

    # -- decisions -----------------------------------------------------------------------------------------
    def corpus_probabilities(self, pairs: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
        """The probability that each corpus answers the query."""
        names = list(pairs)
        return {n: float(p) for n, p in zip(names, self.corpus_model.predict([pairs[n] for n in names]), strict=True)}

    def decide(
        self,
        pairs: Mapping[str, Mapping[str, float]],
        *,
        prior_none: float,
        allow_none: bool = True,
        rules: DecisionRules | None = None,
    ) -> CombinedDecision:
        """Routes for one query from its per-corpus features and the prior's ``none`` probability, the learned
        probabilities read by ``rules`` (:class:`DecisionRules`; default: the combiner's own) after :func:`covering`."""
        rules = rules if rules is not None else self.rules
        probs = self.corpus_probabilities(pairs)
        top_prior = max((float(r["prior"]) for r in pairs.values()), default=0.0)
        qf = query_features(pairs, probs, prior_none=prior_none, prior_top_corpus=top_prior)
        answerable = float(self.answerable_model.predict([qf])[0])
        ranked = sorted(probs, key=lambda c: -probs[c])
        scores = {**probs, NO_RETRIEVAL: 1.0 - answerable}
        if not ranked:
            return CombinedDecision((NO_RETRIEVAL,), scores, answerable, True, None)
        named = naming(pairs)
        concluded_none = answerable < 0.5 and not named
        if concluded_none and allow_none:
            return CombinedDecision((NO_RETRIEVAL,), scores, answerable, True, ranked[0])
        # Overridden by allow_none=False, a `none` searches what any other decision would: a question judged
        # unanswerable with every corpus unlikely is exactly where one corpus alone is the weakest bet.
        chosen = covering(probs, ranked=ranked, siblings=sibling_corpora(pairs))
        if named and not set(named) & set(chosen):
            chosen = (*chosen, named[0])
        room = MAX_ROUTES + 1 if concluded_none else MAX_ROUTES
        finer = finer_sibling(pairs, chosen, room=room, tie=rules.sibling_tie)
        if finer is not None:
            chosen = (*chosen, finer)
        extra = dominant(pairs, chosen, margin=rules.dominance_margin)
        return CombinedDecision((*chosen, extra) if extra else chosen, scores, answerable, concluded_none, ranked[0])

    # -- storage -------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The JSON form (format tag, both models, how it was trained)."""
        return {
            "format": COMBINER_FORMAT,
            "version": self.version,
            "corpus": self.corpus_model.to_dict(),
            "answerable": self.answerable_model.to_dict(),
            "info": dict(self.info),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Combiner:
        """Read :meth:`to_dict`'s form; raises :class:`ConfigError` naming what is wrong."""
        if data.get("format") != COMBINER_FORMAT:
            raise ConfigError(f"Not a {COMBINER_FORMAT} combiner (format={data.get('format')!r}).")
        try:
            corpus, answerable = Logistic.from_dict(data["corpus"]), Logistic.from_dict(data["answerable"])
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(f"The combiner JSON is incomplete or malformed: {e!r}.") from e
        if set(corpus.features) - set(PAIR_FEATURES) or set(answerable.features) - set(QUERY_FEATURES):
            raise ConfigError("The combiner uses features this version does not compute; retrain it.")
        return cls(corpus, answerable, dict(data.get("info", {})))

    def save(self, path: str | Path) -> Path:
        """Write the JSON to ``path``."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")
        return out

    @classmethod
    def load(cls, path: str | Path) -> Combiner:
        """Read a combiner JSON file."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as e:
            raise ConfigError(f"Cannot read the combiner {str(path)!r}: {e.strerror or e}.") from e
        except ValueError as e:
            raise ConfigError(f"{str(path)!r} is not valid JSON: {e}.") from e
        return cls.from_dict(data)

    @classmethod
    def default(cls) -> Combiner:
        """The shipped combiner."""
        return cls.load(DEFAULT_COMBINER)


def train_combiner(
    queries: Sequence[TrainingQuery],
    *,
    base: Combiner | None = None,
    l2: float = 1.0,
    info: Mapping[str, Any] | None = None,
    corpus_model: Logistic | None = None,
    answerable_weight: float = 1.0,
) -> Combiner:
    """Fit both models on labelled queries (``base``: pull the weights towards that combiner's;
    ``corpus_model``: keep this corpus model as it is and fit only the answerable model — which corpora a
    question is sent to stays exactly as before, only whether it needs retrieval at all is learned again;
    ``answerable_weight``: how much an answerable question counts against one that needs no retrieval in the
    answerable model — above 1 when sending a real question to ``none``, which returns nothing, should cost more
    than searching for a greeting, which only costs a search)."""
    if corpus_model is not None:
        answerable = _fit_answerable(queries, corpus_model, base=base, l2=l2, weight=answerable_weight)
        return Combiner(corpus_model, answerable, dict(info or {}))
    rows, labels, weights = [], [], []
    for q in queries:
        positives = q.gold & set(q.pairs)
        for name, feats in q.pairs.items():
            rows.append(feats)
            labels.append(1.0 if name in positives else 0.0)
            weights.append(1.0)
    if not rows or not any(labels):
        raise RoutingError("Training the combiner needs examples whose gold corpus is among the candidates.")
    corpus = fit_logistic(
        rows, labels, features=CORPUS_FEATURES, l2=l2, base=base.corpus_model if base else None, sample_weight=weights
    )
    answerable = _fit_answerable(queries, corpus, base=base, l2=l2, weight=answerable_weight)
    return Combiner(corpus, answerable, dict(info or {}))


def _fit_answerable(
    queries: Sequence[TrainingQuery], corpus: Logistic, *, base: Combiner | None, l2: float, weight: float
) -> Logistic:
    qrows, qlabels = [], []
    for q in queries:
        probs = dict(zip(q.pairs, corpus.predict(list(q.pairs.values())), strict=True))
        top_prior = max((float(r["prior"]) for r in q.pairs.values()), default=0.0)
        qrows.append(query_features(q.pairs, probs, prior_none=q.prior_none, prior_top_corpus=top_prior))
        qlabels.append(1.0 if q.answerable else 0.0)
    if len(set(qlabels)) < 2:
        raise RoutingError(
            "Training the combiner needs both answerable questions and questions that need no "
            "retrieval (label some 'none')."
        )
    return fit_logistic(
        qrows,
        qlabels,
        features=QUERY_FEATURES,
        l2=l2,
        base=base.answerable_model if base else None,
        sample_weight=[weight if y else 1.0 for y in qlabels],
    )


def combiner_accuracy(combiner: Combiner, queries: Sequence[TrainingQuery]) -> dict[str, float]:
    """Primary-route accuracy on labelled queries: overall, on answerable ones, false ``none`` (answerable
    questions sent to ``none``) and correct ``none``."""
    hits = answerable_ok = false_none = none_ok = n_answerable = n_none = 0
    for q in queries:
        decision = combiner.decide(q.pairs, prior_none=q.prior_none)
        primary = decision.routes[0]
        if q.answerable:
            n_answerable += 1
            ok = primary in q.gold
            answerable_ok += ok
            false_none += primary == NO_RETRIEVAL
        else:
            n_none += 1
            ok = primary == NO_RETRIEVAL
            none_ok += ok
        hits += ok
    n = max(len(queries), 1)
    return {
        "n": len(queries),
        "accuracy": hits / n,
        "answerable_accuracy": answerable_ok / max(n_answerable, 1),
        "false_none": false_none / max(n_answerable, 1),
        "correct_none": none_ok / max(n_none, 1),
    }
