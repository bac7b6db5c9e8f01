"""The structural extractor's rules on real files ingested into a real PostgreSQL: links between HTML pages, a CSV's
rows and column values, a PDF's figure, table, captions and the passages citing them, a subtitled video's clips, and
names with their co-occurrence."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from universalrag.graph import ANCHOR, BELONGS_TO, Extractor
from universalrag.graph.names import find_names
from universalrag.graph.store import GraphStore
from universalrag.graph.structural import CO_OCCURS, LINKS_TO, StructuralExtractor
from universalrag.ingest import IngestOptions, ingest_paths
from universalrag.types import Unit


def _ingest(store: Any, minilm: Any, paths: list[Path], **kwargs: Any) -> GraphStore:
    graph = GraphStore(store, minilm)
    report = ingest_paths(
        store, minilm, paths, options=IngestOptions(graph=graph.for_ingest(StructuralExtractor()), **kwargs)
    )
    assert all(o.status == "added" for o in report.outcomes), report.outcomes
    return graph


def _related(graph: GraphStore, name: str) -> set[tuple[str, str]]:
    """(keywords, other entity's name) of every relation of ``name``."""
    entity = graph.entity(name)
    assert entity is not None, name
    others = {e.id: e.name for e in graph.by_ids([r.source for r in graph.relations([entity.id])])}
    others.update({e.id: e.name for e in graph.by_ids([r.target for r in graph.relations([entity.id])])})
    return {(r.keywords, others[r.target if r.source == entity.id else r.source]) for r in graph.relations([entity.id])}


def test_names_in_text() -> None:
    text = (
        '1 Introduction\n\nThe Kestrel Company ran ships out of Brass Harbour and "Northmere Yard" in 1801. '
        "Its code was KC-1801; see Figure 2. Harbour Herons and Quarry Lions played in Ashford on Monday, "
        "as the Royal Academy of Music noted."
    )
    assert find_names(text) == [
        "Kestrel Company",
        "Brass Harbour",
        "Northmere Yard",
        "KC-1801",
        "Harbour Herons",
        "Quarry Lions",
        "Ashford",
        "Royal Academy of Music",
    ]
    assert len(find_names(" ".join(f"Name{i} Place{i} went." for i in range(100)), limit=5)) == 5


def test_extractor_caps_pairs_and_ties_citing_passages_to_figures() -> None:
    extractor: Extractor = StructuralExtractor(max_pairs_per_unit=3)
    doc = Unit(id=str(uuid.uuid4()), corpus="document", content="", metadata={"title": "Harbour Report", "chunks": 1})
    figure = Unit(
        id=str(uuid.uuid4()),
        corpus="image",
        content="",
        metadata={"label": "Figure 2", "caption": "Figure 2: The Gull Queen at Brass Harbour."},
    )
    passage = Unit(
        id=str(uuid.uuid4()),
        corpus="paragraph",
        content="As Figure 2 shows, Alder Quay, Birch Quay, Cedar Quay and Dune Quay face the sea.",
        parent_id=doc.id,
    )
    out = extractor.extract([doc, figure, passage], source_uri="file:///r.pdf")
    assert sum(r.keywords == CO_OCCURS for r in out.relations) == 3 + 1  # three in the passage, one in the caption
    fig = "Figure 2 (Harbour Report)"
    assert (fig, figure.id, ANCHOR) in {(m.entity, m.unit_id, m.role) for m in out.mentions}
    assert (fig, passage.id) in {(m.entity, m.unit_id) for m in out.mentions}
    assert {(r.source, r.target) for r in out.relations if r.keywords == BELONGS_TO} >= {
        ("Gull Queen", fig),
        ("Brass Harbour", fig),
        (fig, "Harbour Report"),
    }


def test_a_figure_goes_with_the_names_of_the_sentences_citing_it() -> None:
    """A note citing a figure ("Figure 2 was taken by Maren Holt") ties its names to the figure and, through what the
    ingest joined to the figure's caption, to the names the caption says: the photographer and the bridge are one hop
    apart, though no sentence names both."""
    caption = "Figure 2: The Varnholt Bridge seen from the east bank."
    note = "Figure 2 was taken by Maren Holt during the survey."
    doc = Unit(id=str(uuid.uuid4()), corpus="document", content="", metadata={"title": "Harbour Survey", "chunks": 2})
    figure = Unit(
        id=str(uuid.uuid4()),
        corpus="image",
        content=f"{caption}\n{note}",
        metadata={"label": "Figure 2", "caption": caption},
    )
    notes = Unit(
        id=str(uuid.uuid4()),
        corpus="paragraph",
        content=f"3 Notes on the photographs\n\n{note} Ilse Brenn kept the plates at Ostvik Hall.",
        parent_id=doc.id,
    )
    out = StructuralExtractor().extract([doc, figure, notes], source_uri="file:///survey.pdf")
    fig = "Figure 2 (Harbour Survey)"
    relations = {(r.source, r.target, r.keywords) for r in out.relations}
    assert {("Varnholt Bridge", fig, BELONGS_TO), ("Maren Holt", fig, BELONGS_TO)} <= relations
    assert ("Varnholt Bridge", "Maren Holt", CO_OCCURS) in relations
    assert not {("Ilse Brenn", fig, BELONGS_TO), ("Ostvik Hall", fig, BELONGS_TO)} & relations  # not citing it
    mentioned = {(m.entity, m.unit_id) for m in out.mentions}
    assert ("Maren Holt", notes.id) in mentioned and ("Maren Holt", figure.id) not in mentioned  # the note says it
    assert ("Varnholt Bridge", figure.id) in mentioned and (fig, notes.id) in mentioned
    capped = StructuralExtractor(max_pairs_per_unit=1).extract([doc, figure, notes], source_uri="file:///survey.pdf")
    assert sum(r.keywords == CO_OCCURS and r.target == "Maren Holt" for r in capped.relations) == 1


def test_links_between_pages_in_either_order(store: Any, minilm: Any, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    a, b = site / "a.html", site / "b.html"
    a.write_text(
        "<html><head><title>Brass Harbour</title></head><body><h1>Brass Harbour</h1>"
        '<p>Brass Harbour was founded by the <a href="b.html">Kestrel Company</a>. '
        '<a href="https://example.org/elsewhere">Elsewhere</a>.</p></body></html>',
        encoding="utf-8",
    )
    b.write_text(
        "<html><head><title>Kestrel Company</title></head><body><h1>Kestrel Company</h1>"
        '<p>A shipping firm of <a href="a.html#history">Brass Harbour</a>.</p></body></html>',
        encoding="utf-8",
    )
    graph = _ingest(store, minilm, [a])  # b is not ingested yet: the link names it by its URI
    placeholder = graph.entity(b.resolve().as_uri())
    assert placeholder is not None and placeholder.type == "page"
    assert (LINKS_TO, placeholder.name) in _related(graph, "Brass Harbour")
    _ingest(store, minilm, [b])
    company = graph.entity("Kestrel Company")
    assert company is not None and graph.entity(b.resolve().as_uri()) == company  # the URI is now its alias
    assert {(LINKS_TO, "Kestrel Company")} <= _related(graph, "Brass Harbour")
    assert (LINKS_TO, "Brass Harbour") in _related(graph, "Kestrel Company")
    assert graph.entities("example org elsewhere") == []  # links to other sites are not followed
    assert graph.paths("Kestrel Company", "Brass Harbour")[0].via in (("links_to",), ("co_occurs",))
    assert {h.corpus for h in graph.units([company.id])} >= {"document", "paragraph"}


def test_csv_rows_are_entities_related_by_their_columns(store: Any, minilm: Any, tmp_path: Path) -> None:
    csv = tmp_path / "league.csv"
    csv.write_text("team,city,wins\nHarbour Herons,Kestrel Bay,31\nMill Town Rovers,Ashford,12\n", encoding="utf-8")
    graph = _ingest(store, minilm, [csv])
    herons = graph.entity("Harbour Herons")
    assert herons is not None and herons.type == "team" and "wins: 31" in herons.description
    assert _related(graph, "Harbour Herons") == {("city", "Kestrel Bay"), (BELONGS_TO, "league")}
    table = graph.entity("league")
    assert table is not None and table.type == "table"
    assert [h.corpus for h in graph.units([table.id])] == ["table"]
    assert graph.entity("31") is None  # numbers are values, not entities
    assert [n.entity.name for n in graph.neighbours("Kestrel Bay", hops=2)][:1] == ["Harbour Herons"]


@pytest.mark.slow
def test_pdf_figure_table_and_the_passages_that_cite_them(store: Any, minilm: Any, tmp_path: Path) -> None:
    from support.documents import write_report_pdf

    graph = _ingest(store, minilm, [write_report_pdf(tmp_path / "report.pdf")])
    title = "Kestrel Point Lighthouse"
    figure, table = graph.entity(f"Figure 1 ({title})"), graph.entity(f"Table 1 ({title})")
    assert figure is not None and figure.type == "figure" and "coffee" in figure.description
    assert table is not None and graph.entity("Table 1: Keepers and lamp fuel by decade.") == table  # caption alias
    cited = graph.units([figure.id])
    assert cited[0].corpus == "image" and any(h.corpus == "paragraph" and "Figure 1" in h.content for h in cited)
    assert any(h.corpus == "paragraph" and "Table 1" in h.content for h in graph.units([table.id]))
    assert (BELONGS_TO, title) in _related(graph, f"Figure 1 ({title})")
    assert ("Lamp fuel", "Whale oil") in _related(graph, "1890s")
    sections = [n.entity.name for n in graph.neighbours(title, hops=1, limit=50) if n.entity.type == "section"]
    assert f"2 Keepers ({title})" in sections


@pytest.mark.slow
def test_video_clips_belong_to_the_video_and_transcript_names_to_clips(store: Any, minilm: Any, tmp_path: Path) -> None:
    pytest.importorskip("av")
    from support.video import write_video

    from universalrag.ingest.video import VideoOptions

    cues = [
        (0.2, 2.8, "Captain Ada Lovelace waves from the deck."),
        (3.2, 5.8, "The ferry reaches Gull Island at dawn."),
    ]
    written = write_video(tmp_path / "trip.mp4", [("astronaut", 3.0), ("coffee", 3.0)], cues=cues, sidecar="srt")
    graph = _ingest(store, minilm, [written.path], video=VideoOptions(min_clip_s=1.0))
    video = graph.entity("trip")
    assert video is not None and video.type == "video"
    clips = [n.entity for n in graph.neighbours(video, hops=1) if n.entity.type == "clip"]
    assert clips and all(c.name.startswith("trip, clip") for c in clips)
    island = graph.entity("Gull Island")
    assert island is not None
    units = graph.units([island.id])
    assert units and units[0].corpus == "clip" and "Gull Island" in units[0].content
    assert any(kw == BELONGS_TO and other.startswith("trip, clip") for kw, other in _related(graph, "Gull Island"))


def test_the_setting_names_the_extractor() -> None:
    from universalrag.config import Settings
    from universalrag.errors import ConfigError
    from universalrag.graph.extractors import Combined, extractor_from_settings

    assert Settings.from_env({"UNIVERSALRAG_GRAPH": "0"}).graph == "off"
    assert Settings.from_env({"UNIVERSALRAG_GRAPH": "Yes"}).graph == "structural"
    assert Settings.from_env({}).graph == "structural"
    assert extractor_from_settings(Settings(graph="off")) is None
    structural = extractor_from_settings(Settings(graph="structural"))
    assert structural is not None and structural.name == "structural"
    with pytest.raises(ConfigError, match="Unknown knowledge-graph extractor 'spacy'"):
        extractor_from_settings(Settings(graph="spacy"))
    with pytest.raises(ConfigError, match="needs a chat model"):
        extractor_from_settings(Settings(graph="model", llm_model=None, llm_base_url=None))
    doc = Unit(id=str(uuid.uuid4()), corpus="paragraph", content="Alder Quay faces Birch Quay.")
    both = Combined([StructuralExtractor(), StructuralExtractor()]).extract([doc], source_uri="file:///q.txt")
    assert len(both.mentions) == 2 * len(StructuralExtractor().extract([doc], source_uri="file:///q.txt").mentions)
