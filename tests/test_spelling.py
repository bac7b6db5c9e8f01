"""Typos corrected from the words of the user's own corpora (universalrag.spelling), on real content.

The knowledge base is a few topics of Python's own language reference (``pydoc_data.topics``, shipped with
Python), ingested as text files; the questions are the typo questions of ``benchmarks/data/pyref.jsonl``, which
routing concluded ``none`` for before the correction.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from universalrag.config import Settings
from universalrag.pipeline import UniversalRAG
from universalrag.spelling import Correction, accented, apply, correct, edits, suspect_words

TOPICS = ("assert", "raise", "try", "with", "for", "while", "import", "lambda", "del", "pass", "return", "global")
RAISE_Q = "what hapens if you call raise with no expression and there is no active exceptoin"
ASSERT_Q = "wat does the asert statement expand to"


# -- which words, which candidates ---------------------------------------------------------------------------
def test_only_words_the_encoder_does_not_know_are_suspect() -> None:
    words = suspect_words('Did Capriossi ride a Honda "Frnchitti" HTTPS max_retries dns.lookup PGVectorStore in 2008?')
    assert words == ["capriossi"]  # known words, quotes, capitals, joined names and camel case are left alone
    assert suspect_words("what is the exception raised by assert") == []
    assert suspect_words("teh cat") == []  # shorter than four letters
    assert suspect_words("meteors broadcasted realise studies") == []  # known words with an English ending
    assert suspect_words("meteorss") == ["meteorss"]


def test_edits_are_one_step_away_and_keep_the_first_letter() -> None:
    found = edits("asert")
    assert {"assert", "aesrt", "aset", "asserts"[:6]} <= set(found)
    assert "asert" not in found and all(w[0] == "a" for w in found)
    assert found.index("aesrt") < found.index("asrt") < found.index("asbert")  # swaps, drops, adds, changes
    assert len(found) == len(set(found))


def test_the_most_spelled_neighbour_wins_and_held_words_stay() -> None:
    spelled = {"assert": 12, "asset": 3, "assertion": 40, "nisiotis": 2}
    asked: list[list[str]] = []

    def lookup(words: list[str]) -> dict[str, int | None]:
        asked.append(list(words))
        return {w: None if w in {"should", "before"} else spelled.get(w, 0) for w in words}

    fixes = correct("wat does asert do for nisiotis", lookup)
    assert fixes == (Correction("asert", "assert"),)  # "asset" is spelled less; "assertion" is too far
    assert asked[0] == ["asert", "nisiotis"]  # "wat" is too short, the rest are known words
    assert "nisiotis" not in asked[1] and "assert" in asked[1]
    assert apply('Wat does Asert do? "asert"', fixes) == 'Wat does assert do? "asert"'
    assert correct("what does zzzzqx mean", lookup) == ()  # nothing one edit away is spelled: unchanged
    assert correct("shoud i prune befor winter", lookup) == ()  # one edit from a stop word: left as typed


def test_an_accent_comes_before_any_other_edit() -> None:
    assert "korać" in accented("korac") and "élan" in accented("elan")
    counts = {"korać": 5, "korvac": 40}
    assert correct("how many korac cup games", lambda words: {w: counts.get(w, 0) for w in words}) == (
        Correction("korac", "korać"),
    )  # the encoder reads "korać" as "korac": the same word, not a neighbour


# -- real content in PostgreSQL ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ref(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UniversalRAG]:
    from pydoc_data.topics import topics

    from universalrag.embed import bundled_minilm

    folder = tmp_path_factory.mktemp("pyref") / "reference"
    folder.mkdir()
    for name in TOPICS:
        (folder / f"{name}.txt").write_text(topics[name], encoding="utf-8")
    rag = UniversalRAG(
        settings=Settings(database_url=database_url, schema="sp_" + uuid.uuid4().hex[:12]),
        embedder=bundled_minilm(),
        generator=None,
        visual_encoder=None,
        log_decisions=False,
    )
    assert rag.ingest([folder]).ok
    yield rag
    rag.store.downgrade("base")
    rag.close()


def test_the_full_text_index_counts_the_words_units_hold(ref: UniversalRAG) -> None:
    corpora = list(ref.store.corpora())
    counts = ref.store.word_units(["exception", "exceptions", "exceptioned", "exceptoin", "the"], corpora)
    assert counts["exceptoin"] == 0 and counts["the"] is None  # a stop word: the index never holds it
    assert counts["exception"] > 0 and counts["exception"] == counts["exceptions"] == counts["exceptioned"]  # stems
    spelled = ref.store.word_units(["exception", "exceptioned", "the"], corpora, surface=True)
    assert 0 < spelled["exception"] <= counts["exception"] and spelled["exceptioned"] == 0  # no text spells it
    assert ref.store.word_units([], corpora) == {}


@pytest.mark.parametrize(
    ("question", "typo", "word", "file", "phrase"),
    [
        (RAISE_Q, "exceptoin", "exception", "raise.txt", "re-raises the exception that is currently being handled"),
        (ASSERT_Q, "asert", "assert", "assert.txt", "is equivalent to"),
    ],
)
def test_a_typo_is_corrected_and_its_passage_found(
    ref: UniversalRAG, question: str, typo: str, word: str, file: str, phrase: str
) -> None:
    plan = ref.plan(question)
    assert Correction(typo, word) in plan.corrections
    assert word in plan.text and plan.query == question  # the caller's text stays for a generator
    decision = ref.route(plan)
    assert decision.needs_retrieval, decision.to_dict()
    hits = ref.retrieve(plan, k=5)
    assert any(
        h.uri and h.uri.endswith(file) and phrase in (h.content + " ".join(t for _, t, _ in h.matched_parts))
        for h in hits
    ), [(h.uri, h.score) for h in hits]


def test_without_correction_the_typo_question_finds_less(ref: UniversalRAG) -> None:
    plain = UniversalRAG(
        settings=ref.settings,
        store=ref.store,
        embedder=ref.embedder,
        generator=None,
        visual_encoder=None,
        log_decisions=False,
        spelling=False,
    )
    plan = plain.plan(RAISE_Q)
    assert plan.corrections == () and plan.text == RAISE_Q
    best_without = max(h.score for h in plain.retrieve(RAISE_Q, k=5, routes=["paragraph"]))
    best_with = max(h.score for h in ref.retrieve(RAISE_Q, k=5, routes=["paragraph"]))
    assert best_with > best_without + 0.1, (best_with, best_without)  # measured: 0.75 against 0.50


def test_words_the_corpora_hold_are_not_corrected(ref: UniversalRAG) -> None:
    assert ref.plan("what does the nonlocal statement do").corrections == ()  # a known word
    assert ref.plan("when is __debug__ false").corrections == ()
    plan = ref.plan("what does AssertionError carry")  # camel case: a name, never corrected
    assert plan.corrections == ()


def test_the_cli_says_what_it_searched_for(cli_env: dict[str, str], tmp_path: Path) -> None:
    from pydoc_data.topics import topics

    from typer.testing import CliRunner

    from universalrag.cli import app

    (tmp_path / "raise.txt").write_text(topics["raise"], encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(tmp_path / "raise.txt")], env=cli_env).exit_code == 0
    result = runner.invoke(app, ["search", RAISE_Q], env=cli_env, terminal_width=200)
    assert result.exit_code == 0, result.stdout
    # "hapens" stays: this one file never spells "happens" (the index holds its stem, from "happened")
    assert (
        "searched for: what hapens if you call raise with no expression and there is no active exception"
        in result.stdout
    )
    result = runner.invoke(app, ["search", "what does raise do", "--json"], env=cli_env)
    assert result.exit_code == 0 and "searched for" not in result.stdout


def test_a_word_lookup_refuses_what_is_not_a_word(ref: UniversalRAG) -> None:
    from universalrag.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="single words"):
        ref.store.word_units(["exception", "a.*("], list(ref.store.corpora()), surface=True)


def test_a_failed_lookup_corrects_nothing_and_the_search_still_runs(
    ref: UniversalRAG, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from universalrag.errors import StoreError

    def down(*args: object, **kwargs: object) -> None:
        raise StoreError("the server went away")

    monkeypatch.setattr(ref.store, "word_units", down)  # fault injection: the lookup alone fails
    plan = ref.plan(ASSERT_Q)
    assert plan.corrections == () and plan.text == ASSERT_Q
    assert "Spelling correction skipped: the server went away" in caplog.text
    assert ref.retrieve(ASSERT_Q, k=3)  # routing and search do not depend on the correction
