"""Entity alignment by embedding similarity on a real PostgreSQL with the bundled MiniLM: two sources naming one thing
differently end as one entity (mentions, relations, aliases, description), other types and less alike names stay
apart, and re-ingesting, deleting and rebuilding after a merge keep the graph consistent."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from universalrag.cli import app
from universalrag.graph import EntityDraft, Extraction, MentionDraft, RelationDraft
from universalrag.graph.align import SAME_ENTITY_THRESHOLD, numbers, qualifies, same_entity
from universalrag.graph.store import GraphStore
from universalrag.types import Modality, SourceRecord, Unit


class LineExtractor:
    """Reads ``type: Name | description`` items separated by ``;`` from each unit; the names one unit holds are
    related by ``co_occurs`` in the order written."""

    name = "lines"

    def extract(self, units: Sequence[Unit], *, source_uri: str) -> Extraction:
        out = Extraction()
        for u in units:
            items = [i.strip() for i in u.content.split(";") if ":" in i]
            names = []
            entities = []
            for item in items:
                type_, rest = (x.strip() for x in item.split(":", 1))
                name, _, description = (x.strip() for x in rest.partition("|"))
                names.append(name)
                entities.append(EntityDraft(name, type_, description))
            out = out.merged(
                Extraction(
                    entities=tuple(entities),
                    relations=tuple(RelationDraft(a, b, "co_occurs") for a, b in zip(names, names[1:], strict=False)),
                    mentions=tuple(MentionDraft(n, u.corpus, u.id) for n in names),
                )
            )
        return out


def _ingest(store: Any, graph: GraphStore, uri: str, minilm: Any, *texts: str) -> None:
    """Write a source of paragraphs ``texts`` and its graph in one transaction (as ingestion does)."""
    vectors = minilm.embed(list(texts))
    units = [
        Unit(id=str(uuid.uuid4()), corpus="paragraph", content=t, embedding=v)
        for t, v in zip(texts, vectors, strict=True)
    ]
    source = SourceRecord(uri=uri, content_hash=str(hash(texts)), modality=Modality.TEXT, corpora=("paragraph",))
    extraction = LineExtractor().extract(units, source_uri=uri)

    def hook(conn: sa.Connection, record: SourceRecord, source_id: str, written: Any) -> None:
        graph.write(conn, extraction, source_id=source_id, units=written, vectors=True)

    store.write_source(source, units, hook=hook)


def _snapshot(store: Any) -> dict[str, Any]:
    """Every graph row without the ids of mentions and relations (a rebuild writes those anew)."""
    t = GraphStore(store).tables
    e, r, m = t.entities, t.relations, t.mentions
    with store.transaction() as conn:
        return {
            "entities": sorted(
                tuple(x)
                for x in conn.execute(
                    sa.select(e.c.id, e.c.key, e.c.name, e.c.type, e.c.description, e.c.aliases, e.c.alias_keys)
                )
            ),
            "relations": sorted(
                tuple(x)
                for x in conn.execute(
                    sa.select(r.c.source_entity, r.c.target_entity, r.c.keywords, r.c.weight, r.c.source_id)
                )
            ),
            "mentions": sorted(
                tuple(x)
                for x in conn.execute(sa.select(m.c.entity_id, m.c.unit_id, m.c.role, m.c.weight, m.c.source_id))
            ),
        }


def test_the_rule_needs_the_threshold_and_the_same_numbers() -> None:
    assert numbers("Apollo 011 (1969)") == ("11", "1969")
    assert same_entity("Harbour Herons", "Harbour Herons F.C.", SAME_ENTITY_THRESHOLD)
    assert not same_entity("Harbour Herons", "Harbour Herons F.C.", SAME_ENTITY_THRESHOLD - 0.01)
    assert not same_entity("2010 Harbour Cup", "2014 Harbour Cup", 0.99)
    assert qualifies("The Kestrel Company", "Kestrel Company") and qualifies("West Columbia", "West Columbia, SC")
    assert qualifies("Earl Edwards", "Earl Edwards (American football)") and qualifies("Fulham", "Fulham F.C.")
    assert not qualifies("Charleston", "North Charleston") and not qualifies("Ada", "Adams")
    assert not qualifies("Ohio", "Ohio State") and not qualifies("PGA", "PGA Championship")
    assert not same_entity("University of Washington", "Washington University", 0.99)


def test_two_sources_naming_one_thing_differently_merge(store: Any, minilm: Any) -> None:
    graph = GraphStore(store, minilm)
    _ingest(
        store,
        graph,
        "mem://a",
        minilm,
        "team: Scunthorpe United F.C. | Football club; city: Lincoln",
        "team: Scunthorpe United F.C.; team: Lincoln City",
    )
    _ingest(
        store,
        graph,
        "mem://b",
        minilm,
        "team: Scunthorpe United | Plays at Glanford Park; city: Lincoln",
        "team: Scunthorpe United; team: Lincoln City",
        "team: Scunthorpe United F.C.; team: Lincoln City",
        "team: Scunthorpe United; team: Scunthorpe United F.C.; team: Scunthorpe United",
    )
    # of another type, however alike: its own entity
    _ingest(store, graph, "mem://c", minilm, "place: The Scunthorpe United | A spot", "place: Kestrel Bay")
    # alike but neither name the other with a qualifier, or with other numbers: two things
    _ingest(
        store,
        graph,
        "mem://d",
        minilm,
        "place: Kestrel Point",
        "event: Harbour Cup; event: Harbour Cup (2014)",
        "company: Penrose; company: Penrose Bridge Railway Society",
    )
    before = graph.stats()
    assert before.entities == 11 and before.embedded == 11
    snapshot = _snapshot(store)
    # below the threshold nothing merges ("Scunthorpe United" / "Scunthorpe United F.C." have a cosine of 0.93)
    assert graph.align(threshold=0.95).merged == 0 and _snapshot(store) == snapshot

    report = graph.align()
    assert [(m.kept_name, m.merged_name) for m in report.merges] == [("Scunthorpe United F.C.", "Scunthorpe United")]
    assert report.merges[0].similarity >= SAME_ENTITY_THRESHOLD and report.candidates >= 3
    after = graph.stats()
    assert after.entities == 10 and after.embedded == 10
    assert graph.entity("Penrose").id != graph.entity("Penrose Bridge Railway Society").id  # type: ignore[union-attr]

    club = graph.entity("Scunthorpe United")  # the merged name is an alias now
    assert club is not None and club.name == "Scunthorpe United F.C." and club.type == "team"
    assert "Scunthorpe United" in club.aliases
    assert club.description == "Football club | Plays at Glanford Park"
    # one mention per unit that named it (the unit naming both keeps one, weights summed)
    mentions = graph.mentions([club.id])
    assert sorted(m.weight for m in mentions) == [1.0, 1.0, 1.0, 1.0, 1.0, 3.0]
    # the relation between the two names is gone (a self-loop now); source b's two edges to Lincoln City are one
    relations = graph.relations([club.id])
    assert relations and all(r.source != r.target for r in relations)
    lincoln = graph.entity("Lincoln City")
    assert lincoln is not None
    assert sorted(r.weight for r in relations if r.target == lincoln.id) == [1.0, 2.0]
    place = [e for e in graph.entities("Scunthorpe United", limit=5) if e.type == "place"]
    assert len(place) == 1 and place[0].name == "The Scunthorpe United"
    assert graph.entity("Kestrel Point") is not None and graph.entity("Kestrel Bay") is not None
    assert graph.entity("Harbour Cup").id != graph.entity("Harbour Cup (2014)").id  # type: ignore[union-attr]
    # the kept entity's vector is computed again from its merged text
    with store.transaction() as conn:
        t = graph.tables.entities
        assert conn.execute(sa.select(t.c.embedding.is_(None)).where(t.c.id == club.id)).scalar() is False

    # nothing more to merge: a second run changes no row
    snapshot = _snapshot(store)
    assert graph.align().merged == 0 and _snapshot(store) == snapshot


def test_reingest_and_delete_after_a_merge_stay_consistent(store: Any, minilm: Any) -> None:
    graph = GraphStore(store, minilm)
    _ingest(
        store, graph, "mem://a", minilm, "team: Harbour Herons F.C.; team: Ashford Rovers", "team: Harbour Herons F.C."
    )
    _ingest(store, graph, "mem://b", minilm, "team: Harbour Herons; team: Mill Town Wanderers")
    assert graph.align().merged == 1
    club = graph.entity("Harbour Herons F.C.")
    assert club is not None and graph.entity("Harbour Herons").id == club.id  # type: ignore[union-attr]

    # re-ingesting the merged name's source (changed) aligns it by the alias key: no new entity
    _ingest(store, graph, "mem://b", minilm, "team: Harbour Herons; team: Gull Island Athletic")
    assert graph.entity("Harbour Herons").id == club.id  # type: ignore[union-attr]
    assert graph.entity("Mill Town Wanderers") is None
    assert graph.stats().entities == 3 and len(graph.mentions([club.id])) == 3
    assert graph.align().merged == 0

    # deleting the kept entity's own source leaves it to the other source's mentions
    assert store.delete_source("mem://a")
    kept = graph.entity("Harbour Herons")
    assert kept is not None and kept.id == club.id and len(graph.mentions([club.id])) == 1
    assert graph.entity("Ashford Rovers") is None
    # and deleting that one too removes it, its relations and the alias with it
    assert store.delete_source("mem://b")
    stats = graph.stats()
    assert (stats.entities, stats.relations, stats.mentions) == (0, 0, 0)
    assert graph.entity("Harbour Herons") is None


def test_build_aligns_and_a_second_build_changes_nothing(store: Any, minilm: Any) -> None:
    graph = GraphStore(store, minilm)
    _ingest(store, graph, "mem://a", minilm, "team: Harbour Herons F.C. | Founded 1901; team: Ashford Rovers")
    _ingest(store, graph, "mem://b", minilm, "team: Harbour Herons | Of Brass Harbour; team: Ashford Rovers")
    report = graph.rebuild(LineExtractor(), align=False)
    assert report.merged == 0 and graph.stats().entities == 3

    report = graph.rebuild(LineExtractor())
    assert report.sources == 2 and report.merged == 1 and graph.stats().entities == 2
    club = graph.entity("Harbour Herons")
    assert club is not None and club.description == "Founded 1901 | Of Brass Harbour"
    snapshot = _snapshot(store)
    report = graph.rebuild(LineExtractor())
    assert report.merged == 0 and _snapshot(store) == snapshot


@pytest.mark.slow
def test_graph_build_command_aligns_unless_told_not_to(cli_env: dict[str, str], tmp_path: Path) -> None:
    folder = tmp_path / "tables"
    folder.mkdir()
    (folder / "fixtures.csv").write_text("team,city\nScunthorpe United F.C.,Scunthorpe\n", encoding="utf-8")
    (folder / "grounds.csv").write_text("team,ground\nScunthorpe United,Glanford Park\n", encoding="utf-8")
    runner = CliRunner()

    def run(*args: str) -> Any:
        result = runner.invoke(app, list(args), env={**cli_env, "UNIVERSALRAG_GRAPH": "off"}, prog_name="universalrag")
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)

    run("ingest", str(folder), "--json")
    assert run("graph", "build", "--no-align", "--json")["merged"] == 0
    assert run("graph", "show", "Scunthorpe United", "--json")["entity"]["name"] == "Scunthorpe United"
    assert run("graph", "build", "--json")["merged"] == 1
    shown = run("graph", "show", "Scunthorpe United", "--json")["entity"]
    assert shown["name"] == "Scunthorpe United F.C." and shown["type"] == "team"
    assert run("graph", "build", "--json")["merged"] == 0
