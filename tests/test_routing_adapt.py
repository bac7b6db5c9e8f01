"""Adapting routing to a database's content: labelled questions go through the live probe path, the combiner is
retrained, held-out accuracy is reported before and after, and the adapted combiner is stored in the database,
where a new ``UniversalRAG()`` picks it up. Real database, real MiniLM, the shipped trained router as prior."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import numpy as np
import pytest
from test_routing_evidence import write_reference

from universalrag.adapt import Example, labelled_evidence
from universalrag.config import Settings
from universalrag.pipeline import UniversalRAG
from universalrag.routing.combiner import Combiner, Logistic
from universalrag.routing.features import QUERY_FEATURES

TABLE = [
    "Which planet has the longest day?",
    "how far is neptune from the sun",
    "How many moons does Jupiter have?",
    "what is the diameter of mars in km",
    "Which planets have no moons at all?",
    "Uranus moons count",
    "Is Venus bigger than Earth?",
    "tell me how long a day lasts on Mercury",
    "Which is the largest planet?",
    "distance from the sun of mars",
    "How many moons orbit Neptune?",
    "earth diameter",
    "which planet is closest to the sun",
    "how many moons does mars have",
    "What's the day length on Saturn?",
]
TEXT = [
    "What happens to an exception raised inside a with block?",
    "when does a finally clause run",
    "What does an else clause on a for loop do?",
    "are tuples mutable",
    "what does range use memory for",
    "Which special methods make a class behave like a sequence?",
    "How are except clauses matched?",
    "what is a descriptor",
    "can several context managers share one with statement",
    "How does list.sort differ from sorted?",
    "what three things does every object have",
]
NONE = [
    "What is 17 times 3?",
    "hi, how are you?",
    "What is 2 to the power of 10?",
    "Write a limerick about cats",
    "thanks!",
    "What's 15% of 80?",
    "Translate 'thank you' into French",
    "What is the capital of Italy?",
]


def prior_only_combiner() -> Combiner:
    """A combiner that only echoes the trained router (evidence weighs nothing; the shipped feature scaling): a
    router that gets the corpora of this database wrong, which adaptation must fix."""
    shipped = Combiner.default()

    def model(base: Logistic, features: tuple[str, ...], weights: dict[str, float]) -> Logistic:
        return Logistic(features, np.array([weights.get(f, 0.0) for f in features]), 0.0, base.mean, base.scale)

    return Combiner(
        model(shipped.corpus_model, shipped.corpus_model.features, {"prior_logit": 3.0}),
        model(shipped.answerable_model, QUERY_FEATURES, {"prior_none_logit": -3.0}),
        {"trained_by": "test: prior only"},
    )


@pytest.fixture(scope="module")
def settings_with_content(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    from universalrag.embed import bundled_minilm

    settings = Settings(database_url=database_url, schema="ad_" + uuid.uuid4().hex[:12])
    with UniversalRAG(settings=settings, embedder=bundled_minilm(), generator=None, visual_encoder=None) as rag:
        assert rag.ingest([write_reference(tmp_path_factory.mktemp("ad") / "reference")]).ok
        yield settings
        rag.store.downgrade("base")


def test_adapt_fixes_what_the_prior_gets_wrong_and_is_used_by_default(settings_with_content: Settings, minilm) -> None:  # type: ignore[no-untyped-def]
    rag = UniversalRAG(settings=settings_with_content, embedder=minilm, generator=None, visual_encoder=None)
    rag.use_combiner(prior_only_combiner())
    examples = [(q, "table") for q in TABLE] + [(q, "paragraph") for q in TEXT] + [(q, "none") for q in NONE]
    report = rag.adapt_router(examples, holdout=0.35, seed=1, use_feedback=False)
    assert report.heldout >= 10 and report.train >= 20
    assert report.before["accuracy"] < 0.75  # the prior alone sends table and reference questions elsewhere
    assert report.after["accuracy"] >= report.before["accuracy"] + 0.2 and report.after["false_none"] <= 0.1
    assert report.saved
    rag.close()

    fresh = UniversalRAG(settings=settings_with_content, embedder=minilm, generator=None, visual_encoder=None)
    assert fresh.combiner.version == report.combiner.version  # stored in the database, used by default
    assert fresh.route("how many moons does saturn have").primary == "table"
    assert fresh.route("What is 9 times 7?").primary == "none"
    fresh.close()


def test_a_query_written_from_a_unit_is_kept_only_when_its_corpus_finds_the_unit(
    settings_with_content: Settings, minilm
) -> None:  # type: ignore[no-untyped-def]
    """Retrieval-aware labels: a synthesised query names the unit it was written from; its label trains only
    when the labelled corpus's probe finds that unit (what retrieval can deliver, not what the template meant)."""
    with UniversalRAG(settings=settings_with_content, embedder=minilm, generator=None, visual_encoder=None) as rag:
        query = "when does a finally clause run"
        found = rag.retrieve(query, routes=["paragraph"], k=5)
        assert found
        examples = [
            Example(query, "paragraph", "synth", unit_id=found[0].id),
            Example(query, "paragraph", "synth", unit_id="not-a-unit-of-this-corpus"),
            Example(query, "paragraph", "handwritten"),
        ]
        kept = labelled_evidence(rag, examples)
        assert [q.source for q in kept] == ["synth", "handwritten"]
        assert all(q.gold == frozenset({"paragraph"}) for q in kept)
