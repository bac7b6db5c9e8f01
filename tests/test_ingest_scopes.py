"""One file, several corpora: ingesting a file into a user corpus never removes it from the built-in corpora.

A source is identified by its URI and scope (``""`` for the default corpora of its kind, else the corpus
named). Real PostgreSQL, the real MiniLM encoder, a real HTML page written by the test; the migration that
introduced scopes (0005) is run down and up on a schema holding data.
"""

from __future__ import annotations

from pathlib import Path

from universalrag.ingest.pipeline import ingest_paths
from universalrag.store import Store
from universalrag.types import CorpusSpec, Granularity, Modality

PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>Thread Safety</title></head><body>
<div class="header"><p>Previous: <a href="a.html">Closure Example</a>, Up: <a href="b.html">Using libffi</a></p></div>
<h3>2.7 Thread Safety</h3>
<p>{sentence}</p>
<p>Only one thread should prepare a given call interface at a time; preparing it may modify the type objects.</p>
</body></html>
"""
OLD = "The library is not completely thread-safe, but many parts are when simple rules are followed."
NEW = "Since version 3.5 every preparation function takes a lock, so the library is now fully thread-safe."


def _manuals(store: Store, minilm) -> None:  # type: ignore[no-untyped-def]
    store.create_corpus(
        CorpusSpec(
            name="manuals",
            modality=Modality.TEXT,
            granularity=Granularity.PARAGRAPH,
            description="Library manuals",
            dimension=384,
            embedder=minilm.name,
        )
    )


def _texts(store: Store, corpus: str) -> str:
    """Every unit text of ``corpus``, joined (small corpora only)."""
    import sqlalchemy as sa

    table = store.tables.corpus(store.corpus(corpus)).units
    with store.transaction() as conn:
        return "\n".join(conn.execute(sa.select(table.c.content)).scalars())


def test_a_file_feeds_the_builtin_corpora_and_a_user_corpus(store: Store, minilm, tmp_path: Path) -> None:
    _manuals(store, minilm)
    page = tmp_path / "Thread-Safety.html"
    page.write_text(PAGE.format(sentence=OLD), encoding="utf-8")

    first = ingest_paths(store, minilm, [page])
    assert first.outcomes[0].status == "added"
    builtin = {c: n for c, n in store.counts().items() if c in ("document", "paragraph")}
    assert builtin["document"] == 1 and builtin["paragraph"] >= 1

    into_manuals = ingest_paths(store, minilm, [page], corpus="manuals")
    assert into_manuals.outcomes[0].status == "added"  # not "replaced": the default scope is another source
    counts = store.counts()
    assert {c: counts[c] for c in builtin} == builtin and counts["manuals"] >= 1
    scopes = sorted((s["uri"], s["scope"], tuple(s["corpora"])) for s in store.sources())
    uri = page.resolve().as_uri()
    assert scopes == [(uri, "", ("document", "paragraph")), (uri, "manuals", ("manuals",))]

    # Both scopes are unchanged on a second run.
    assert ingest_paths(store, minilm, [page]).outcomes[0].status == "unchanged"
    assert ingest_paths(store, minilm, [page], corpus="manuals").outcomes[0].status == "unchanged"

    # The file changes and is re-ingested into one corpus: only that corpus changes.
    page.write_text(PAGE.format(sentence=NEW), encoding="utf-8")
    again = ingest_paths(store, minilm, [page], corpus="manuals")
    assert again.outcomes[0].status == "replaced"
    assert NEW in _texts(store, "manuals") and OLD not in _texts(store, "manuals")
    assert OLD in _texts(store, "paragraph") and NEW not in _texts(store, "paragraph")
    assert {c: store.counts()[c] for c in builtin} == builtin
    assert ingest_paths(store, minilm, [page]).outcomes[0].status == "replaced"
    assert NEW in _texts(store, "paragraph") and OLD not in _texts(store, "paragraph")
    assert "Previous:" not in _texts(store, "paragraph") + _texts(store, "manuals")

    # Deleting one scope keeps the other; deleting the URI removes both.
    assert store.delete_source(uri, scope="manuals")
    assert store.counts()["manuals"] == 0 and store.counts()["paragraph"] == builtin["paragraph"]
    assert not store.delete_source(uri, scope="manuals")
    ingest_paths(store, minilm, [page], corpus="manuals")
    assert store.delete_source(uri) and store.sources() == []
    assert all(n == 0 for n in store.counts().values())


def test_naming_a_default_corpus_is_the_default_scope(store: Store, minilm, tmp_path: Path) -> None:
    table = tmp_path / "ferries.csv"
    table.write_text("route,minutes\nSandwick - Gull Island,40\n", encoding="utf-8")
    assert ingest_paths(store, minilm, [table]).outcomes[0].status == "added"
    # --corpus table is where a CSV goes anyway: the same source, not a second copy of its rows
    assert ingest_paths(store, minilm, [table], corpus="table").outcomes[0].status == "unchanged"
    assert [s["scope"] for s in store.sources()] == [""] and store.counts()["table"] == 1


def test_migration_0005_down_and_up_keeps_one_source_per_uri(store: Store, minilm, tmp_path: Path) -> None:
    _manuals(store, minilm)
    both, only_manuals = tmp_path / "both.html", tmp_path / "only.html"
    both.write_text(PAGE.format(sentence=OLD), encoding="utf-8")
    only_manuals.write_text(PAGE.format(sentence=NEW), encoding="utf-8")
    ingest_paths(store, minilm, [both])
    ingest_paths(store, minilm, [both, only_manuals], corpus="manuals")
    assert len(store.sources()) == 3

    store.downgrade("0002")  # one source per URI: the default scope wins, the other goes with its units
    store.migrate("head")
    found = sorted((Path(s["uri"]).name, s["scope"], tuple(s["corpora"])) for s in store.sources())
    # a source that fed only a user corpus was ingested with --corpus: it gets that scope back
    assert found == [("both.html", "", ("document", "paragraph")), ("only.html", "manuals", ("manuals",))]
    assert OLD not in _texts(store, "manuals") and NEW in _texts(store, "manuals")
    assert ingest_paths(store, minilm, [only_manuals], corpus="manuals").outcomes[0].status == "unchanged"
