"""A long document's matching passage reaches the model and the screen: when the budget cuts a document's text
(from its end), its matched passages go first; a document longer than the default budget leads with them in its
text too (a LangChain Document's ``page_content``). Real texts, the real bundled MiniLM, a real PostgreSQL."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pytest

from universalrag.cli.context import Output
from universalrag.cli.output import print_hits
from universalrag.errors import InvalidInputError
from universalrag.evidence import (
    UNIT_TEXT_TOKENS,
    EvidenceBudget,
    build_evidence,
    hit_content,
    hit_text,
    text_shares,
    unit_text,
)
from universalrag.ingest.pipeline import ingest_paths
from universalrag.retrieve import search_corpus
from universalrag.store import Store

CORPUS = Path(__file__).parent / "data" / "corpus"
#: The last chapter of the handbook, about 4,400 words in: past any first-pages budget.
LAST = (
    "## Visiting the tide mill\n\nThe tide mill at Sandwick grinds oats on the ebb twice a day from April to "
    "October. Visitors buy tickets at the granary door; a family ticket costs 14 euros and the miller shows the "
    "wheel turning at every low water.\n"
)


def _handbook(tmp_path: Path) -> Path:
    chapters = [p.read_text(encoding="utf-8") for p in sorted(CORPUS.iterdir()) if p.suffix in (".md", ".txt")]
    path = tmp_path / "docs" / "handbook.md"
    path.parent.mkdir()
    path.write_text("# Island handbook\n\n" + "\n\n".join(chapters) + "\n\n" + LAST, encoding="utf-8")
    return path


def test_a_documents_matched_passage_survives_the_budget(store: Store, minilm, tmp_path: Path) -> None:
    path = _handbook(tmp_path)
    assert len(path.read_text(encoding="utf-8").split()) > 2500
    assert ingest_paths(store, minilm, [path.parent]).ok
    hit = search_corpus(store, minilm, "document", "How much is a family ticket for the tide mill?", k=1)[0]
    assert hit.uri.endswith("handbook.md") and hit.matched_parts
    # a budget of ~600 words cuts the handbook long before its last chapter: what matched goes first
    evidence = build_evidence([hit], budget=EvidenceBudget(max_text_tokens=800), with_media=False)[0]
    assert evidence.text.startswith("Matched passages (best first):\n- part ")
    assert "family ticket costs 14 euros" in evidence.text
    assert "family ticket costs 14 euros" not in " ".join(hit.content.split()[:600])
    # within the default budget the handbook is given whole, once
    assert build_evidence([hit], with_media=False)[0].text == hit_text(hit) == hit.content
    out = io.StringIO()
    print_hits(Output(terminal=True, width=200, color=False, stdout=out, stderr=io.StringIO()), [hit])
    index, passage, _ = hit.matched_parts[0]  # the CLI shows the matched passage, not the handbook's first lines
    assert f"matched part {index + 1}: {' '.join(passage.split()[:8])}" in out.getvalue()
    # longer than the default budget (two editions bound together), the text itself leads with what matched:
    # LangChain's page_content and LlamaIndex's node text are this text
    bound = replace(hit, content=hit.content + "\n\n" + hit.content)
    text = hit_text(bound)
    listed = text[: len(text) - len(bound.content)]
    assert text.startswith("Matched passages (best first):\n- part ") and text.endswith(bound.content)
    assert "family ticket costs 14 euros" in listed
    assert hit_content(text, bound) == bound.content  # the adapters strip it back


def test_a_short_document_is_not_repeated(store: Store, minilm, tmp_path: Path) -> None:
    """A document of one chunk matches as a whole: its text is given once."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "mill.md").write_text("# Tide mill\n\n" + LAST, encoding="utf-8")
    assert ingest_paths(store, minilm, [tmp_path / "docs"]).ok
    hit = search_corpus(store, minilm, "document", "tide mill family ticket", k=1)[0]
    assert hit_text(hit) == hit.content and hit.content.count("family ticket costs 14 euros") == 1


def test_a_units_text_for_a_retriever_is_bounded_and_leads_with_what_matched(
    store: Store, minilm, tmp_path: Path
) -> None:
    """A retriever's document holds at most ``UNIT_TEXT_TOKENS`` of a unit (a whole manual was 80,000 characters, and
    a chain joining four sent 250,000 to the model): the handbook's matched chapter first, the cut marked."""
    path = _handbook(tmp_path)
    assert ingest_paths(store, minilm, [path.parent]).ok
    hit = search_corpus(store, minilm, "document", "How much is a family ticket for the tide mill?", k=1)[0]
    text, cut = unit_text(hit)
    assert cut and text.endswith(" […]") and len(text.split()) <= UNIT_TEXT_TOKENS * 0.75 + 1
    assert text.startswith("Matched passages (best first):\n- part ") and "family ticket costs 14 euros" in text
    assert unit_text(hit, max_tokens=None) == (hit_text(hit), False)  # whole, when asked
    short = replace(hit, content=LAST, matched_parts=())
    assert unit_text(short) == (LAST, False)
    with pytest.raises(InvalidInputError, match="at least 1"):
        unit_text(hit, max_tokens=0)


@pytest.mark.parametrize(
    ("needs", "total", "shares"),
    [
        ([100, 200], 1000, [100, 200]),  # everything fits
        ([5000, 40, 60], 600, [500, 40, 60]),  # the short ones whole, the long one what they leave
        ([900, 900, 30], 630, [300, 300, 30]),
        ([10, 10], 0, [0, 0]),
        ([], 100, []),
    ],
)
def test_text_shares_give_every_hit_its_need_up_to_an_even_share(
    needs: list[int], total: int, shares: list[int]
) -> None:
    assert text_shares(needs, total) == shares
    assert sum(text_shares(needs, total)) <= total


def test_a_long_first_hit_leaves_the_hits_after_it_their_text(store: Store, minilm, tmp_path: Path) -> None:
    """Found on bzip2's docs: the whole Texinfo manual (86,261 characters) came first and took the whole budget;
    the answering passage after it reached the model as a bare label. Now the passage is whole, the manual cut."""
    path = _handbook(tmp_path)
    assert ingest_paths(store, minilm, [path.parent]).ok
    query = "How much is a family ticket for the tide mill?"
    document = search_corpus(store, minilm, "document", query, k=1)[0]
    passage = search_corpus(store, minilm, "paragraph", query, k=1)[0]
    assert "family ticket costs 14 euros" in passage.content
    budget = EvidenceBudget(max_text_tokens=800)  # less than the handbook alone
    first, second = build_evidence([document, passage], budget=budget, with_media=False)
    assert second.text == passage.content  # whole
    assert first.text.endswith(" […]") and first.text.startswith("Matched passages (best first):")
    assert len(first.text.split()) + len(second.text.split()) <= 800 * 0.75 + 10
