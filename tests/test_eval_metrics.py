"""Evaluation metrics against hand-checked examples, and the evaluation data reader's errors (no database)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from universalrag.errors import InvalidInputError
from universalrag.eval import (
    GoldEvidence,
    average_by_source,
    choice_of,
    exact_match,
    first_gold_rank,
    normalize_answer,
    read_examples,
    rouge_l,
    routes_match,
    token_f1,
)
from universalrag.types import Hit


@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        ("The Eiffel Tower", "eiffel tower"),
        ("  An apple, a day! ", "apple day"),
        ("Eiffel-Tower.", "eiffeltower"),  # SQuAD drops punctuation without a space
        ("THEATRE the", "theatre"),  # articles only as whole words
        ("Mr. O'Neil's 1,000 cats", "mr oneils 1000 cats"),
        ("a an the", ""),
    ],
)
def test_squad_normalisation(text: str, normalised: str) -> None:
    assert normalize_answer(text) == normalised


def test_exact_match_is_the_best_over_aliases_after_normalisation() -> None:
    assert exact_match("the Eiffel Tower.", ["Eiffel Tower"]) == 1.0
    assert exact_match("Eiffel", ["Eiffel Tower"]) == 0.0
    assert exact_match("Paris, France", ["Paris", "paris france"]) == 1.0
    assert exact_match("anything", []) == 0.0


def test_token_f1_hand_checked() -> None:
    # prediction tokens: cat sat on mat (4); gold: cat on mat (3); common 3 -> P 3/4, R 1, F1 6/7
    assert token_f1("the cat sat on the mat", ["a cat on a mat"]) == pytest.approx(6 / 7)
    # best alias wins; repeated tokens count once per occurrence (Counter intersection)
    assert token_f1("new york new york", ["new york"]) == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert token_f1("Rome", ["Paris", "rome"]) == 1.0
    assert token_f1("Rome", ["Paris"]) == 0.0
    assert token_f1("the", ["a"]) == 1.0  # both empty after normalisation
    assert token_f1("", ["Paris"]) == 0.0


def test_rouge_l_hand_checked() -> None:
    # LCS "the cat on the mat" = 5 of 6 tokens on both sides
    assert rouge_l("the cat was on the mat", ["the cat sat on the mat"]) == pytest.approx(5 / 6)
    assert rouge_l("completely different words", ["the cat sat on the mat", "different words"]) == pytest.approx(0.8)
    assert rouge_l("x", ["y"]) == 0.0


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        ("B", "B"),
        ("(B) Paris", "B"),
        ("C. Rome, of course", "C"),
        ("The answer is C.", "C"),
        ("answer: (a)", "A"),
        ("I think it is Rome.", "C"),  # the one option the reply names
        ("A city on the Seine: Paris", "B"),  # "A" is a word here, not a letter
        ("Both London and Paris", None),
        ("D", None),  # not among three choices
    ],
)
def test_choice_of_reads_the_letter(reply: str, letter: str | None) -> None:
    assert choice_of(reply, ["London", "Paris", "Rome"]) == letter


def _hit(
    unit: str,
    *,
    uri: str = "file:///v.mp4",
    start: float | None = None,
    end: float | None = None,
    table: int | None = None,
) -> Hit:
    return Hit(
        corpus="c",
        id=unit,
        score=1.0,
        content="",
        uri=uri,
        start_s=start,
        end_s=end,
        metadata={} if table is None else {"index_in_file": table},
    )


def test_gold_evidence_matching_and_rank() -> None:
    hits = [
        _hit("u1", uri="file:///a.html", table=0),
        _hit("u2", uri="file:///a.html", table=2),
        _hit("u3", start=10, end=20),
        _hit("u4", uri="file:///b.txt"),
    ]
    assert first_gold_rank(hits, [GoldEvidence(uri="file:///a.html", table=2)]) == 2
    assert first_gold_rank(hits, [GoldEvidence(uri="file:///a.html")]) == 1
    assert first_gold_rank(hits, [GoldEvidence(uri="file:///v.mp4", start_s=19.5, end_s=30)]) == 3
    assert first_gold_rank(hits, [GoldEvidence(uri="file:///v.mp4", start_s=20, end_s=30)]) is None  # touching only
    assert first_gold_rank(hits, [GoldEvidence(id="u4"), GoldEvidence(id="nope")]) == 4
    assert first_gold_rank(hits, [GoldEvidence(uri="file:///c.txt")]) is None
    whole_video = _hit("v", start=None, end=None)
    assert GoldEvidence(uri="file:///v.mp4", start_s=5, end_s=8).matches(whole_video)


def test_routes_match_is_set_equality_with_none_for_nothing() -> None:
    assert routes_match(["table", "none"], ["table"])
    assert routes_match([], ["none"]) and routes_match(["none"], ["none"])
    assert routes_match(["table", "paragraph"], ["paragraph", "table"])
    assert not routes_match(["paragraph", "table"], ["table"])
    assert not routes_match(["table"], ["none"])


def test_averages_within_each_source_then_across() -> None:
    rows = [("a", {"recall": 1.0, "f1": None}), ("a", {"recall": 0.0, "f1": None}), ("b", {"recall": 1.0, "f1": 0.5})]
    out = average_by_source(rows)
    assert out["per_source"] == {"a": {"recall": 0.5}, "b": {"f1": 0.5, "recall": 1.0}}
    assert out["overall"]["recall"] == pytest.approx(0.75)  # not 2/3: each source weighs the same
    assert out["overall"]["f1"] == pytest.approx(0.5) and out["n"] == {"a": 2, "b": 1}


def _write(tmp_path: Path, *rows: object) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_reading_every_kind_of_answer_and_evidence(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    path = _write(
        tmp_path,
        {"query": "Who?", "answer": "Agnes Ferrow", "routes": "paragraph", "evidence": ["docs/a.txt"]},
        "",
        {
            "query": "Which?",
            "answer": ["NYC", "New York"],
            "source": "s2",
            "evidence": [{"uri": "https://x.org/p.html", "table": 2}, "0b4c7c1e-5d6a-4f8e-9a1b-2c3d4e5f6a7b"],
        },
        {
            "query": "Pick",
            "choices": ["London", "Paris"],
            "answer": "b",
            "routes": ["none"],
            "evidence": [{"uri": "/abs/v.mp4", "start_s": 1, "end_s": 2.5}],
        },
    )
    a, b, c = read_examples(path)
    assert a.answers == ("Agnes Ferrow",) and a.routes == ("paragraph",) and a.source == "default"
    assert a.evidence == (GoldEvidence(uri=(tmp_path / "docs" / "a.txt").resolve().as_uri()),)
    assert a.line == 1 and b.line == 3 and c.line == 4
    assert b.answers == ("NYC", "New York") and b.source == "s2"
    assert b.evidence == (
        GoldEvidence(uri="https://x.org/p.html", table=2),
        GoldEvidence(id="0b4c7c1e-5d6a-4f8e-9a1b-2c3d4e5f6a7b"),
    )
    assert c.multiple_choice and c.choice == "B" and c.answers == ()
    assert c.evidence == (GoldEvidence(uri="file:///abs/v.mp4", start_s=1.0, end_s=2.5),)
    assert "(A) London" in c.prompt and "(B) Paris" in c.prompt


@pytest.mark.parametrize(
    ("row", "fragment"),
    [
        ('{"query": "ok"}\n{"query": ', "line 2: not valid JSON"),
        ({"answer": "x"}, "'query' must be a non-empty string"),
        ({"query": "q", "answer": []}, "'answer' is empty"),
        ({"query": "q", "choices": ["a", "b", "c"], "answer": "D"}, "one letter among A, B, C"),
        ({"query": "q", "routes": []}, "'routes' is empty"),
        ({"query": "q", "evidence": [{"id": "0b4c7c1e-5d6a-4f8e-9a1b-2c3d4e5f6a7b", "uri": "x"}]}, "exactly one of"),
        ({"query": "q", "evidence": [{"uri": "x", "start_s": 5, "end_s": 2}]}, "must be after"),
        ({"query": "q", "evidence": [{"uri": "x", "table": -1}]}, "0-based index"),
        ({"query": "q", "evidence": [{"id": "unit-7"}]}, "a unit id (a UUID)"),
        ({"query": "q", "anwser": "typo"}, "unknown field(s) ['anwser']"),
        (["not", "an", "object"], "expected a JSON object"),
    ],
)
def test_bad_lines_name_the_line_and_the_rule(tmp_path: Path, row: object, fragment: str) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(row if isinstance(row, str) else json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(InvalidInputError) as err:
        read_examples(path)
    assert fragment in str(err.value) and str(path) in str(err.value)
    if not isinstance(row, str):
        assert "line 1" in str(err.value)


def test_missing_empty_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="is not a file"):
        read_examples(tmp_path / "absent.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="holds no questions"):
        read_examples(empty)
    binary = tmp_path / "b.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InvalidInputError, match="not UTF-8"):
        read_examples(binary)


def test_missing_optional_packages_name_the_eval_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from universalrag.errors import MissingDependencyError
    from universalrag.eval import check_plot_target

    monkeypatch.setitem(sys.modules, "rouge_score", None)  # import fails as if not installed
    with pytest.raises(MissingDependencyError, match=r"universalrag-postgres\[eval\]"):
        rouge_l("a", ["a"])
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingDependencyError, match=r"'matplotlib'.*\[eval\]"):
        check_plot_target(tmp_path / "plot.png")
    with pytest.raises(InvalidInputError, match="ending in .png"):
        check_plot_target(tmp_path / "plot.svg")
