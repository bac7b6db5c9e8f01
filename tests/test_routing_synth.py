"""Training queries written from ingested units: real files (text, CSV, Excel, captioned photo, subtitled video)
ingested into a real Postgres, queries built by templates (and by a chat model behind a local
OpenAI-compatible server), checked against the units they came from."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from tests.support.openai_server import OpenAICompatServer
from universalrag.errors import ConfigError, CorpusNotFoundError, RoutingError
from universalrag.routing.synth import MODALITY_WORDS, STYLES, SynthQuery, llm_queries, synthesize_queries
from universalrag.store.sample import count_units, sample_parts, sample_units


@pytest.fixture(scope="module")
def queries(rag):  # type: ignore[no-untyped-def]
    return synthesize_queries(rag.store, per_corpus=60, seed=0)


def _unit(rag, q: SynthQuery):  # type: ignore[no-untyped-def]
    found = rag.store.get_units(q.corpus, [q.unit_id])
    assert found, f"{q} names a unit that is not in {q.corpus!r}"
    return found[0]


def test_sample_units_is_deterministic_and_a_prefix(rag) -> None:  # type: ignore[no-untyped-def]
    store = rag.store
    total = count_units(store, "paragraph")
    every = sample_units(store, "paragraph", total + 5, seed=3)
    assert len(every) == total and len({h.id for h in every}) == total
    assert [h.id for h in sample_units(store, "paragraph", 2, seed=3)] == [h.id for h in every[:2]]
    assert [h.id for h in sample_units(store, "paragraph", total, seed=4)] != [h.id for h in every]
    assert sample_units(store, "paragraph", 0) == []
    with pytest.raises(ValueError, match="non-negative"):
        sample_units(store, "paragraph", -1)
    with pytest.raises(CorpusNotFoundError):
        sample_units(store, "no_such_corpus", 3)


def test_sample_parts_reads_table_rows(rag) -> None:  # type: ignore[no-untyped-def]
    store = rag.store
    league = next(h for h in sample_units(store, "table", 10) if "Harbour Herons" in h.content)
    rows = sample_parts(store, "table", league.id, 10, seed=1)
    assert sorted(i for i, _ in rows) == [0, 1, 2]
    assert any("Harbour Herons" in text and "wins: 31" in text for _, text in rows)
    assert sample_parts(store, "paragraph", sample_units(store, "paragraph", 1)[0].id, 5) == []  # one vector a unit


def test_every_corpus_with_units_gets_queries_of_every_style(rag, queries) -> None:  # type: ignore[no-untyped-def]
    per_corpus = Counter(q.corpus for q in queries)
    assert set(per_corpus) == set(rag.store.nonempty())
    assert all(0 < n <= 60 for n in per_corpus.values())
    for corpus in ("paragraph", "table", "clip"):
        styles = {q.style for q in queries if q.corpus == corpus}
        assert styles == set(STYLES), (corpus, styles)
    assert len({(q.corpus, q.query.lower()) for q in queries}) == len(queries)  # no duplicates


def test_queries_name_the_unit_they_were_written_from(rag, queries) -> None:  # type: ignore[no-untyped-def]
    for q in queries:
        unit = _unit(rag, q)
        assert unit.corpus == q.corpus
    table = [q for q in queries if q.corpus == "table"]
    # built from real cells: a team or a ferry route with one of its own columns
    assert any("Harbour Herons" in q.query or "Quarry Lions" in q.query or "Mill Town Rovers" in q.query for q in table)
    assert any(re.search(r"\b(wins|losses|city|crossing minutes|departures per day)\b", q.query) for q in table)
    image = [q for q in queries if q.corpus == "image"]
    assert any("cup" in q.query.lower() or "coffee" in q.query.lower() for q in image)
    for q in (q for q in queries if q.corpus == "clip" and q.style == "question"):
        unit = _unit(rag, q)
        words = [w for w in re.findall(r"[a-z]{5,}", unit.content.lower())]
        assert any(w in q.query.lower() for w in words), (q.query, unit.content)


def test_implicit_queries_never_name_a_modality(queries) -> None:  # type: ignore[no-untyped-def]
    implicit = [q for q in queries if q.style == "implicit"]
    assert len(implicit) >= 10
    for q in implicit:
        assert not set(re.findall(r"[a-z]+", q.query.lower())) & MODALITY_WORDS, q.query


def test_typo_queries_differ_from_every_clean_one(queries) -> None:  # type: ignore[no-untyped-def]
    clean = {re.sub(r"[^a-z ]", "", q.query.lower()) for q in queries if q.style != "typo"}
    typos = [q for q in queries if q.style == "typo"]
    assert typos and all(re.sub(r"[^a-z ]", "", q.query.lower()) not in clean for q in typos)


def test_same_seed_same_queries_other_seed_other_queries(rag, queries) -> None:  # type: ignore[no-untyped-def]
    assert synthesize_queries(rag.store, per_corpus=60, seed=0) == queries
    assert synthesize_queries(rag.store, per_corpus=60, seed=1) != queries


def test_corpora_and_count_are_checked(rag) -> None:  # type: ignore[no-untyped-def]
    only = synthesize_queries(rag.store, corpora=["table", "image"], per_corpus=5)
    assert {q.corpus for q in only} == {"table", "image"} and len(only) <= 10
    with pytest.raises(CorpusNotFoundError):
        synthesize_queries(rag.store, corpora=["nope"])
    with pytest.raises(ConfigError, match="list of corpus names"):
        synthesize_queries(rag.store, corpora="table")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="positive integer"):
        synthesize_queries(rag.store, per_corpus=0)


def test_question_queries_find_their_own_unit(rag, queries) -> None:  # type: ignore[no-untyped-def]
    """The queries are answerable: searching their corpus finds the unit they were written from."""
    asked = [q for q in queries if q.corpus in ("paragraph", "table", "clip") and q.style in ("question", "implicit")]
    found = sum(q.unit_id in {h.id for h in rag.retrieve(q.query, routes=[q.corpus], k=3)} for q in asked)
    assert len(asked) >= 15 and found / len(asked) >= 0.7, (found, len(asked))


def _reply(body: dict) -> str:
    content = body["messages"][1]["content"]
    first = re.findall(r"[A-Za-z]{5,}", content.split("Content:\n", 1)[1])[:2]
    return "Sure!\n```json\n" + json.dumps([f"what about {' '.join(first)}?", "tell me more", "x", 7]) + "\n```"


def test_llm_queries_through_an_openai_compatible_server(rag) -> None:  # type: ignore[no-untyped-def]
    with OpenAICompatServer(chat_reply=_reply) as server:
        written = llm_queries(
            rag.store,
            model="test-model",
            base_url=server.base_url,
            corpora=["paragraph", "image"],
            per_corpus=4,
            per_unit=2,
            timeout=5.0,
        )
        bodies = [r["body"] for r in server.requests_to("/v1/chat/completions")]
    assert bodies and all(b["model"] == "test-model" for b in bodies)
    assert {q.style for q in written} == {"llm"} and {q.corpus for q in written} == {"paragraph", "image"}
    for q in written:
        unit = _unit(rag, q)
        assert q.query in ("tell me more",) or all(w in unit.content for w in q.query[11:-1].split()), q
    assert "x" not in {q.query for q in written}  # one-word and non-string items are dropped


def test_llm_queries_fail_with_a_routing_error_or_need_a_model(rag) -> None:  # type: ignore[no-untyped-def]
    with OpenAICompatServer(chat_reply="not json at all") as server:
        assert llm_queries(rag.store, model="m", base_url=server.base_url, corpora=["image"], per_corpus=2) == []
        server.status = 500
        with pytest.raises(RoutingError, match="Writing routing queries"):
            llm_queries(rag.store, model="m", base_url=server.base_url, corpora=["image"], max_retries=0)
    with pytest.raises(ConfigError, match="UNIVERSALRAG_LLM_MODEL"):
        llm_queries(rag.store, corpora=["image"])
