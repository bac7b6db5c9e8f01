"""The UniversalRAG facade end to end on a real database with the real encoder and the shipped router."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from universalrag.config import Settings
from universalrag.errors import ConfigError, CorpusNotFoundError
from universalrag.fusion import TABLE_OFFSET
from universalrag.pipeline import UniversalRAG, fuse
from universalrag.types import Granularity, Hit


@pytest.mark.parametrize(
    ("question", "route", "expected"),
    [
        ("What is the win-loss record of the Quarry Lions?", "table", "Quarry Lions"),
        ("Show me what the coffee cup on the saucer looks like", "image", "saucer"),
        ("In the morning video, what happens in the moment when the cat is sleeping?", "clip", "Chelsea"),
        ("Who designed the Kestrel Point lighthouse?", "paragraph", "Agnes Ferrow"),
    ],
)
def test_query_routes_to_the_corpus_that_holds_the_answer(
    rag: UniversalRAG, question: str, route: str, expected: str
) -> None:
    answer = rag.query(question, k=3)
    assert answer.text is None  # no model configured: evidence only
    assert answer.decision.primary == route, answer.decision
    assert set(answer.decision.scores) <= {"none", "paragraph", "document", "table", "image", "clip", "video"}
    top = answer.hits[0]
    assert top.corpus == route
    assert expected in top.content or any(expected in text for _, text, _ in top.matched_parts)
    assert {"route", "retrieve"} <= set(answer.timings)
    data = answer.to_dict()
    assert data["answer"] is None and data["routes"][0] == route and data["hits"][0]["corpus"] == route


def test_none_searches_nothing(rag: UniversalRAG) -> None:
    assert rag.retrieve("What is 17 times 3?", routes=["none"]) == []
    answer = rag.query("What is 17 times 3?", routes=["none"])
    assert answer.hits == () and answer.decision.routes == ("none",)


def test_routes_override_the_router_and_fuse_several_corpora(rag: UniversalRAG) -> None:
    hits = rag.retrieve("Quarry Lions wins and the lighthouse keepers", k=4, routes=["table", "paragraph"])
    corpora = [h.corpus for h in hits]
    # k is what comes back: the best 4 of both corpora's (two tables exist, up to 4 paragraphs)
    assert set(corpora) == {"table", "paragraph"} and len(hits) == 4
    # both corpora share the MiniLM space, so they merge by similarity (tables lifted by TABLE_OFFSET)
    assert all(h.score == h.channel_scores["similarity"] for h in hits)
    lifted = [h.score + (TABLE_OFFSET if h.corpus == "table" else 0.0) for h in hits]
    assert lifted == sorted(lifted, reverse=True)
    every = rag.retrieve("Quarry Lions wins and the lighthouse keepers", k=6, routes=["table", "paragraph"])
    assert [h.id for h in every[:4]] == [h.id for h in hits]  # cutting to k loses nothing that ranks higher
    by_rank = UniversalRAG(store=rag.store, embedder=rag.embedder, router=rag.router, fusion="rrf")
    ranked = by_rank.retrieve("Quarry Lions wins and the lighthouse keepers", k=4, routes=["table", "paragraph"])
    assert {ranked[0].corpus, ranked[1].corpus} == {"table", "paragraph"}  # reciprocal rank interleaves the lists
    alone = {
        h.id
        for c in ("table", "paragraph")
        for h in rag.retrieve("Quarry Lions wins and the lighthouse keepers", k=4, routes=[c])
    }
    assert len(ranked) == 4 and {h.id for h in ranked} <= alone  # the same searches, fused otherwise
    with pytest.raises(CorpusNotFoundError):
        rag.retrieve("x", routes=["nope"])


def test_fusion_methods() -> None:
    a = [Hit(corpus="a", id=f"a{i}", score=s, content="") for i, s in enumerate([0.9, 0.5, 0.4])]
    b = [Hit(corpus="b", id=f"b{i}", score=s, content="") for i, s in enumerate([0.3, 0.2])]
    assert [h.id for h in fuse([a, b])] == ["a0", "b0", "a1", "b1", "a2"]
    minmax = fuse([a, b], method="minmax")
    assert [h.score for h in minmax][:2] == [1.0, 1.0] and minmax[-1].score == 0.0
    assert fuse([a, []]) == a  # one ranking: unchanged
    one_space = fuse([a, b], spaces=["minilm/384", "minilm/384"])  # auto: comparable scores merge by similarity
    assert [h.id for h in one_space] == ["a0", "a1", "a2", "b0", "b1"]
    assert [h.id for h in fuse([a, b], spaces=["minilm/384", "clip/512"])][:2] == ["a0", "b0"]  # two spaces: rrf
    weighted_b = [replace(h, channel_scores={"text": 0.1, "visual": 0.5}) for h in b]
    assert [h.id for h in fuse([a, weighted_b], spaces=["m", "m"])][:2] == ["a0", "b0"]  # visual weighting: rrf
    assert [h.id for h in fuse([a, b], method="similarity")] == ["a0", "a1", "a2", "b0", "b1"]
    # a table's rows sit further from a question than prose: merged by similarity, a table is lifted by
    # TABLE_OFFSET and keeps its own score
    passage = Hit(corpus="paragraph", id="p", score=0.63, content="", granularity=Granularity.PARAGRAPH)
    table = Hit(corpus="table", id="t", score=0.63 - TABLE_OFFSET / 2, content="", granularity=Granularity.TABLE)
    far = replace(table, id="far", score=0.63 - 2 * TABLE_OFFSET)
    merged = fuse([[passage], [table, far]], method="similarity")
    assert [h.id for h in merged] == ["t", "p", "far"] and merged[0].score == table.score
    with pytest.raises(ConfigError):
        fuse([a, b], method="borda")
    with pytest.raises(ConfigError, match="one each"):
        fuse([a, b], spaces=["minilm/384"])


def test_hybrid_search_fuses_full_text_ranking(rag: UniversalRAG) -> None:
    hybrid = UniversalRAG(
        settings=rag.settings,
        store=rag.store,
        embedder=rag.embedder,
        router=rag.router,
        generator=None,
        visual_encoder=None,
        hybrid=True,
    )
    # A surname: the full-text index matches it exactly, wherever the encoder puts it.
    hits = hybrid.retrieve("Osei", k=2, routes=["paragraph"])
    assert "Osei" in hits[0].content
    assert hits[0].channel_scores["lexical"] > 0 and "dense" in hits[0].channel_scores
    assert hits[0].score == pytest.approx(sum(1 / (60 + r) for r in _ranks(rag, hits[0].id)), abs=1e-9)


def _ranks(rag: UniversalRAG, unit_id: str) -> list[int]:
    """Where a unit stands in the dense and the full-text ranking of the paragraph corpus for "Osei"."""
    import sqlalchemy as sa

    dense = [h.id for h in rag.retrieve("Osei", k=20, routes=["paragraph"])]
    with rag.store.transaction() as conn:
        lexical = [
            str(r[0])
            for r in conn.execute(
                sa.text(
                    f"SELECT id FROM {rag.store.schema}.corpus_paragraph "
                    "WHERE tsv @@ websearch_to_tsquery('english', 'Osei') "
                    "ORDER BY ts_rank_cd(tsv, websearch_to_tsquery('english', 'Osei')) DESC"
                )
            )
        ]
    return [ranking.index(unit_id) + 1 for ranking in (dense, lexical) if unit_id in ranking]


def test_async_twins(rag: UniversalRAG) -> None:
    async def main() -> tuple:
        return await asyncio.gather(
            rag.aroute("Show me a photo of a rocket"),
            rag.aretrieve("ferry crossing minutes", routes=["table"], k=1),
            rag.aquery("What is 2 + 2?", routes=["none"]),
        )

    decision, hits, answer = asyncio.run(main())
    assert decision.primary == "image"
    assert "Gull Island" in hits[0].matched_parts[0][1] or "Northmere" in hits[0].matched_parts[0][1]
    assert answer.hits == ()


def test_a_pipeline_refuses_pickling_and_says_what_to_do(tmp_path: Path) -> None:
    """A pipeline holds a connection pool, threads and locks: pickling it (or a retriever holding it) fails with the
    reason and the way out, not with "cannot pickle '_thread.lock' object"."""
    import pickle

    with pytest.raises(TypeError, match="live database pipeline.*one per process"):
        pickle.dumps(UniversalRAG(settings=Settings(home=tmp_path)))


def test_unknown_fusion_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="fusion"):
        UniversalRAG(settings=Settings(home=tmp_path), fusion="borda")


def test_corpus_holdings_names_the_latest_sources(database_url: str, minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """What a corpus holds, for an agent tool's description: how many sources and the latest by name."""
    from support.schemas import ingested_store

    folder = tmp_path / "notes"
    folder.mkdir()
    for name in ("alpha.txt", "beta notes.txt", "gamma.txt"):
        (folder / name).write_text(f"{name}: a few words about {name.split('.')[0]} for the test.", encoding="utf-8")
    with ingested_store(database_url, minilm, [folder]) as store:
        rag = UniversalRAG(store=store, embedder=minilm, generator=None, visual_encoder=None, log_decisions=False)
        try:
            everything = rag.corpus_holdings("paragraph")
            assert everything.startswith("It holds 3 sources: ") and "beta notes.txt" in everything
            assert "among them" not in everything
            latest = rag.corpus_holdings("paragraph", limit=2)
            assert latest.startswith("It holds 3 sources, among them the latest: ") and latest.count(",") == 2
            assert rag.corpus_holdings("image") == ""  # nothing ingested there
        finally:
            rag.close()


def test_a_filter_on_source_names_the_file_in_the_python_api(rag: UniversalRAG) -> None:
    """LangChain's documents show a unit's file as ``source``, and the README filters on it; in the Python API and the
    CLI ``{"source": "lighthouse.txt"}`` found nothing for text, PDF, image and video files (no unit holds a
    ``source`` field; only tables held one, their file's name). A file name, a path and a ``file://`` URI now name
    the file; a unit's own ``source`` field still matches."""
    question = "Who designed the lighthouse?"
    for source in ("lighthouse.txt", {"$in": ["lighthouse.txt", "nowhere.md"]}):
        hits = rag.retrieve(question, filter={"source": source})
        assert hits and all(h.uri and h.uri.endswith("/lighthouse.txt") for h in hits), source
    path = next(h.uri for h in rag.retrieve(question, filter={"source": "lighthouse.txt"}))
    assert rag.retrieve(question, filter={"source": path})  # the file:// URI as the hit shows it
    assert not rag.retrieve(question, filter={"source": "elsewhere.txt"})
    others = rag.retrieve(question, filter={"source": {"$ne": "lighthouse.txt"}})
    assert others and not any(h.uri.endswith("/lighthouse.txt") for h in others if h.uri)
    table = rag.retrieve("Quarry Lions record", filter={"source": "league.csv"}, routes=["table"])
    assert table and table[0].metadata.get("source") == "league.csv"  # a table's own field, as before


def test_paths_as_uris_keeps_a_units_own_field_when_asked() -> None:
    from universalrag.store.filters import paths_as_uris

    assert paths_as_uris({"source": "a.md"}, "source", keep=True) == {
        "$and": [{"$or": [{"source": "a.md"}, {"uri": {"$like": "%/a.md"}}]}]
    }
    assert paths_as_uris({"source": {"$ne": "a.md"}}, "source", keep=True) == {
        "$and": [{"$and": [{"source": {"$ne": "a.md"}}, {"$not": {"uri": {"$like": "%/a.md"}}}]}]
    }
