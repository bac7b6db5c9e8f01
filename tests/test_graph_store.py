"""The knowledge graph's storage on a real PostgreSQL: alignment by name and alias, one transaction with the source's
units, cascades on delete and re-ingest, idempotence, bounded reads, and the SQL functions for database users."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from universalrag.errors import InvalidInputError, StoreError
from universalrag.graph import EntityDraft, Extraction, MentionDraft, RelationDraft, normalise_key
from universalrag.graph.store import GraphStore
from universalrag.graph.structural import StructuralExtractor
from universalrag.graph.write import MAX_DESCRIPTION
from universalrag.ingest import IngestOptions, ingest_paths
from universalrag.types import Modality, SourceRecord, Unit


def _unit(corpus: str, content: str, vector: Any) -> Unit:
    return Unit(id=str(uuid.uuid4()), corpus=corpus, content=content, embedding=vector)


def _write(store: Any, graph: GraphStore, uri: str, extraction_of: Any, minilm: Any, texts: list[str]) -> str:
    """Write a source of paragraphs ``texts`` whose graph is ``extraction_of(units)``, in one transaction."""
    vectors = minilm.embed(texts)
    units = [_unit("paragraph", t, v) for t, v in zip(texts, vectors, strict=True)]
    source = SourceRecord(uri=uri, content_hash=str(hash(tuple(texts))), modality=Modality.TEXT, corpora=("paragraph",))

    def hook(conn: sa.Connection, record: SourceRecord, source_id: str, written: Any) -> None:
        graph.write(conn, extraction_of(written), source_id=source_id, units=written)

    return store.write_source(source, units, hook=hook).source_id


def _rows(store: Any) -> dict[str, list[tuple[Any, ...]]]:
    t = GraphStore(store).tables
    with store.transaction() as conn:
        return {
            name: [tuple(r) for r in conn.execute(sa.select(table).order_by(table.c.id))]
            for name, table in (("entities", t.entities), ("relations", t.relations), ("mentions", t.mentions))
        }


def test_normalise_key_aligns_spellings() -> None:
    assert normalise_key("Marie  Curie.") == normalise_key("marie curie") == "marie curie"
    assert normalise_key("ＫＣ－１８０１") == "kc 1801"  # NFKC: full-width forms
    assert normalise_key("max_connections") == "max connections"
    assert normalise_key("…") == ""


def test_init_types_the_vector_column_and_sql_key_matches(store: Any) -> None:
    graph = GraphStore(store)
    assert graph.dimension() == 384
    with store.transaction() as conn:
        key = conn.execute(sa.select(getattr(sa.func, store.schema).graph_key("Marie  Curie.-Skłodowska"))).scalar()
        indexes = set(
            conn.execute(
                sa.text("SELECT indexname FROM pg_indexes WHERE schemaname = :s AND tablename LIKE 'graph_%'"),
                {"s": store.schema},
            ).scalars()
        )
    assert key == normalise_key("Marie  Curie.-Skłodowska")
    assert {
        "graph_entities_hnsw",
        "graph_relations_source_entity_idx",
        "graph_relations_target_entity_idx",
        "graph_mentions_unit_idx",
        "graph_entities_name_tsv_idx",
    } <= indexes


def test_alignment_by_key_and_alias_merges_descriptions(store: Any, minilm: Any) -> None:
    graph = GraphStore(store, minilm)

    def first(units: Any) -> Extraction:
        u = units[0]
        return Extraction(
            entities=(EntityDraft("Marie Curie", "person", "Physicist.", aliases=("Maria Skłodowska",)),),
            mentions=(MentionDraft("Marie Curie", u.corpus, u.id),),
        )

    def second(units: Any) -> Extraction:
        u = units[0]
        return Extraction(
            entities=(EntityDraft("maria  skłodowska", "concept", "Chemist, twice a Nobel laureate."),),
            mentions=(MentionDraft("maria  skłodowska", u.corpus, u.id),),
        )

    _write(store, graph, "mem://a", first, minilm, ["Marie Curie studied radioactivity."])
    _write(store, graph, "mem://b", second, minilm, ["Maria Skłodowska was born in Warsaw."])
    found = graph.entity("Maria Skłodowska")
    assert found is not None and found.name == "Marie Curie" and found.type == "person"
    assert found.description == "Physicist. | Chemist, twice a Nobel laureate."
    assert graph.stats().entities == 1 and len(graph.mentions([found.id])) == 2
    assert graph.stats().embedded == 1
    vector = minilm.embed_query("Marie Curie (person): Physicist.")
    assert graph.similar(vector, limit=1)[0][0].id == found.id

    long = "x" * 3000
    _write(
        store,
        graph,
        "mem://c",
        lambda units: Extraction(
            entities=(EntityDraft("Marie Curie", description=long),),
            mentions=(MentionDraft("Marie Curie", units[0].corpus, units[0].id),),
        ),
        minilm,
        ["Curie again."],
    )
    assert len(graph.entity("marie curie").description) <= MAX_DESCRIPTION  # type: ignore[union-attr]


def test_delete_and_replace_cascade_in_the_sources_transaction(store: Any, minilm: Any) -> None:
    graph = GraphStore(store, minilm)

    def names(*entities: str) -> Any:
        def extraction(units: Any) -> Extraction:
            u = units[0]
            return Extraction(
                entities=tuple(EntityDraft(n) for n in entities),
                relations=(RelationDraft(entities[0], entities[1], "co_occurs"),),
                mentions=tuple(MentionDraft(n, u.corpus, u.id) for n in entities),
            )

        return extraction

    _write(store, graph, "mem://a", names("Gull Island", "Kestrel Bay"), minilm, ["Gull Island lies off Kestrel Bay."])
    _write(store, graph, "mem://b", names("Kestrel Bay", "Ashford"), minilm, ["Kestrel Bay is near Ashford."])
    bay = graph.entity("Kestrel Bay")
    assert bay is not None and graph.stats().entities == 3 and graph.stats().relations == 2

    # a failing hook leaves nothing behind: the source, its units and its graph are one transaction
    def broken(units: Any) -> Extraction:
        raise StoreError("extractor failed")

    with pytest.raises(StoreError):
        _write(store, graph, "mem://c", broken, minilm, ["Nothing of this is kept."])
    assert store.source_state("mem://c") is None and graph.stats().entities == 3

    # replacing a source keeps the ids of the entities it names again, and drops what it no longer names
    _write(store, graph, "mem://a", names("Kestrel Bay", "Mill Town"), minilm, ["Kestrel Bay and Mill Town."])
    assert graph.entity("Gull Island") is None
    assert graph.entity("Kestrel Bay").id == bay.id  # type: ignore[union-attr]

    assert store.delete_source("mem://a")
    assert graph.entity("Mill Town") is None and graph.entity("Kestrel Bay") is not None
    assert graph.stats().relations == 1
    assert store.delete_source("mem://b")
    assert graph.stats().entities == 0 and graph.stats().mentions == 0


def test_deleting_units_forgets_their_mentions(store: Any, minilm: Any) -> None:
    graph = GraphStore(store)
    holder: list[str] = []

    def extraction(units: Any) -> Extraction:
        holder.extend(u.id for u in units)
        return Extraction(mentions=tuple(MentionDraft("Harbour Herons", u.corpus, u.id) for u in units))

    _write(store, graph, "mem://a", extraction, minilm, ["Harbour Herons won.", "Harbour Herons lost."])
    assert store.delete_units("paragraph", holder[:1]) == 1
    herons = graph.entity("Harbour Herons")
    assert herons is not None and [m.unit_id for m in graph.mentions([herons.id])] == holder[1:]
    store.delete_units("paragraph", holder[1:])
    assert graph.entity("Harbour Herons") is None  # no mention left: gone at commit


def _pages(folder: Path) -> list[Path]:
    folder.mkdir()
    (folder / "a.html").write_text(
        "<html><head><title>Brass Harbour</title></head><body><h1>Brass Harbour</h1>"
        '<p>Brass Harbour was founded by the <a href="b.html">Kestrel Company</a> in 1801.</p></body></html>',
        encoding="utf-8",
    )
    (folder / "b.html").write_text(
        "<html><head><title>Kestrel Company</title></head><body><h1>Kestrel Company</h1>"
        '<p>The Kestrel Company ran ships out of <a href="a.html#history">Brass Harbour</a> and '
        '"Northmere Yard".</p></body></html>',
        encoding="utf-8",
    )
    return [folder / "a.html", folder / "b.html"]


def test_second_ingest_changes_no_row_and_rebuild_gives_the_same_graph(store: Any, minilm: Any, tmp_path: Path) -> None:
    graph = GraphStore(store, minilm)
    options = IngestOptions(graph=graph.for_ingest(StructuralExtractor()))
    pages = _pages(tmp_path / "site")
    report = ingest_paths(store, minilm, pages, options=options)
    assert [o.status for o in report.outcomes] == ["added", "added"]
    before = _rows(store)
    assert before["entities"] and before["relations"] and before["mentions"]
    report = ingest_paths(store, minilm, pages, options=options)
    assert [o.status for o in report.outcomes] == ["unchanged", "unchanged"]
    assert _rows(store) == before

    keys = {r[1] for r in before["entities"]}
    built = graph.rebuild(StructuralExtractor())
    assert built.sources == 2 and built.units >= 4
    after = _rows(store)
    assert {r[1] for r in after["entities"]} == keys
    assert len(after["relations"]) == len(before["relations"]) and len(after["mentions"]) == len(before["mentions"])
    assert [r[0] for r in after["entities"]] == [r[0] for r in before["entities"]]  # the same ids


def test_reads_are_bounded_and_sql_functions_answer(store: Any, minilm: Any) -> None:
    graph = GraphStore(store)
    spokes = [f"Spoke {chr(65 + i)}" for i in range(10)]

    def star(units: Any) -> Extraction:
        u = units[0]
        return Extraction(
            relations=(
                *(RelationDraft("Hub Town", s, "road", weight=i + 1.0) for i, s in enumerate(spokes)),
                RelationDraft("Spoke A", "Far Point", "ferry"),
            ),
            mentions=tuple(MentionDraft(n, u.corpus, u.id) for n in ("Hub Town", "Far Point", *spokes)),
        )

    _write(store, graph, "mem://star", star, minilm, ["Roads from Hub Town."])
    near = graph.neighbours("Hub Town", hops=1, max_fanout=3)
    assert [n.entity.name for n in near] == ["Spoke J", "Spoke I", "Spoke H"]  # the heaviest three
    two = graph.neighbours("hub town", hops=2)
    assert {n.entity.name: n.hops for n in two}["Far Point"] == 2
    assert graph.neighbours("Nowhere") == []
    with pytest.raises(InvalidInputError):
        graph.neighbours("Hub Town", hops=4)
    with pytest.raises(InvalidInputError):
        graph.neighbours("Hub Town", max_fanout=0)
    paths = graph.paths("Far Point", "Hub Town")
    assert [[e.name for e in p.entities] for p in paths] == [["Far Point", "Spoke A", "Hub Town"]]
    assert paths[0].via == ("ferry", "road")
    assert [h.content for h in graph.units([graph.entity("Far Point").id])] == ["Roads from Hub Town."]  # type: ignore[union-attr]
    assert [e.name for e in graph.entities("spoke", limit=3)] and graph.entities("") == []

    fn = getattr(sa.func, store.schema)
    with store.transaction() as conn:
        rows = conn.execute(sa.select(fn.graph_neighbours("HUB  town", 2, 2, 50).table_valued("name", "hops"))).all()
        units = conn.execute(sa.select(fn.graph_units("Far Point").table_valued("corpus", "role"))).all()
        capped = conn.execute(sa.select(fn.graph_neighbours("Hub Town", 9, 1000, 5).table_valued("hops"))).all()
    assert ("Hub Town", 0) in rows and ("Spoke J", 1) in rows and len(rows) == 3
    assert units == [("paragraph", "mention")]
    assert len(capped) == 5 and max(r[0] for r in capped) <= 3


def test_the_sync_workers_delete_forgets_mentions_too(store: Any, minilm: Any) -> None:
    from universalrag.sync import queue

    graph = GraphStore(store)
    ids: list[str] = []

    def extraction(units: Any) -> Extraction:
        ids.extend(u.id for u in units)
        return Extraction(mentions=tuple(MentionDraft("Quarry Lions", u.corpus, u.id) for u in units))

    _write(store, graph, "mem://sync", extraction, minilm, ["Quarry Lions drew."])
    raw = store.engine.raw_connection()
    try:
        assert queue.delete_units(raw.driver_connection, store.schema, "paragraph", ids) == 1
        raw.commit()
    finally:
        raw.close()
    assert graph.entity("Quarry Lions") is None and graph.stats().mentions == 0
