"""The model-based graph extractor against the OpenAI-compatible test server (the real HTTP path). The "model" finds
the names of a fixed list in the pieces it is sent and cites the pieces, as a real one is asked to; what is sent,
how answers become entities, mentions, anchors and ``belongs_to`` relations, and what failures, the cache and the
budget do are checked. Extractors do no database I/O, so only the last test, which ingests a PDF with descriptions
and the graph into a real PostgreSQL, needs one."""

from __future__ import annotations

import json
import logging
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from support.openai_server import ChatFailure, OpenAICompatServer

from universalrag.config import Settings
from universalrag.generate.call_limits import CallLimits
from universalrag.generate.response_cache import ResponseCache, cache_path
from universalrag.generate.structured import JsonChat
from universalrag.graph.llm_extractor import ModelExtractor, model_extractor_from_settings
from universalrag.graph.model import ANCHOR, BELONGS_TO, MENTION, Extractor
from universalrag.types import Unit

KNOWN = {"Marie Curie": "person", "Paris": "place", "radium": "chemical", "Sorbonne": "organization"}
PIECE = re.compile(r"\[(P\d+)\] (.*?)(?=\n\n\[P\d+\] |\n\nReply with the JSON object\.$)", re.DOTALL)


def pieces(body: dict[str, Any]) -> dict[str, str]:
    return dict(PIECE.findall(body["messages"][-1]["content"]))


def finder(body: dict[str, Any]) -> str:
    """Every known name, with the pieces that hold it; a relation when Marie Curie and Paris share a piece."""
    found = pieces(body)
    entities = [
        {"name": name, "type": kind, "description": f"{name}.", "pieces": [p for p, t in found.items() if name in t]}
        for name, kind in KNOWN.items()
        if any(name in t for t in found.values())
    ]
    relations = [
        {"source": "Marie Curie", "target": "Paris", "keywords": "Worked In", "strength": 8, "pieces": [p]}
        for p, t in found.items()
        if "Marie Curie" in t and "Paris" in t
    ]
    return json.dumps({"entities": entities, "relations": relations})


def unit(corpus: str, content: str, **fields: Any) -> Unit:
    return Unit(id=str(uuid.uuid4()), corpus=corpus, content=content, **fields)


def source() -> list[Unit]:
    doc = unit("document", "The whole document: Marie Curie, Paris, radium and the Sorbonne, said once more.")
    passages = [
        unit("paragraph", "Marie Curie moved to Paris in 1891 to study.", parent_id=doc.id, metadata={"page": 1}),
        unit("paragraph", "She discovered radium with Pierre in a shed.", parent_id=doc.id, metadata={"page": 2}),
        unit("paragraph", "Too short.", parent_id=doc.id),
    ]
    figure = unit(
        "image",
        "Figure 2: the laboratory",
        metadata={
            "page": 2,
            "label": "Figure 2",
            "caption": "Figure 2: the laboratory",
            "model_description": "A photograph of Marie Curie at a bench holding a vial of radium.",
            "entity": {
                "name": "Marie Curie in her laboratory",
                "type": "photo",
                "description": "A period photograph.",
                "attributes": {"place": "Paris"},
            },
        },
    )
    return [doc, *passages, figure]


def extractor(server: OpenAICompatServer, home: Path, **options: Any) -> ModelExtractor:
    chat = JsonChat("graph-test", base_url=server.base_url, timeout=options.pop("timeout", 10.0), max_retries=0)
    limits = CallLimits(max_calls=options.pop("max_calls", None))
    return ModelExtractor(chat, cache=ResponseCache(home / "answers.sqlite3"), limits=limits, **options)


def test_entities_mentions_anchors_and_belongs_to(tmp_path: Path) -> None:
    units = source()
    doc, marie, radium, short, figure = units
    with OpenAICompatServer(chat_reply=finder) as server:
        found = extractor(server, tmp_path)
        assert isinstance(found, Extractor) and found.name == "model:graph-test"
        extraction = found.extract(units, source_uri="file:///nobel-lecture.pdf")
        (request,) = server.requests_to("/v1/chat/completions")
    sent = pieces(request["body"])
    assert sorted(sent.values()) == sorted(
        [
            marie.content,
            radium.content,
            "Marie Curie in her laboratory (nobel-lecture)\nFigure 2: the laboratory\n"
            + figure.metadata["model_description"],
        ]
    )  # not the document (its passages are there), not a piece of three words
    assert "The whole document" not in json.dumps(request["body"]) and short.content not in json.dumps(request["body"])

    names = {e.name: e for e in extraction.entities}
    # the anchor's name is qualified by its source's (the figure has no document title here: the file's name), its
    # label so qualified is an alias: the name the structural extractor gives the figure
    assert set(names) == {"Marie Curie in her laboratory (nobel-lecture)", "Marie Curie", "Paris", "radium"}
    anchor = names["Marie Curie in her laboratory (nobel-lecture)"]
    assert (
        anchor.type == "photo"
        and anchor.aliases == ("Figure 2 (nobel-lecture)",)
        and "place: Paris" in anchor.description
    )
    by_role = {(m.entity, m.unit_id, m.role) for m in extraction.mentions}
    assert (anchor.name, figure.id, ANCHOR) in by_role
    assert {("Marie Curie", marie.id, MENTION), ("Marie Curie", figure.id, MENTION)} <= by_role
    assert ("radium", radium.id, MENTION) in by_role and ("radium", figure.id, MENTION) in by_role
    assert not any(m.unit_id == doc.id for m in extraction.mentions)
    pages = {(m.entity, m.unit_id): m.page for m in extraction.mentions}
    assert pages[("Marie Curie", marie.id)] == 1 and pages[("radium", radium.id)] == 2
    belongs = {(r.source, r.target) for r in extraction.relations if r.keywords == BELONGS_TO}
    assert belongs == {("Marie Curie", anchor.name), ("radium", anchor.name)}
    (worked,) = [r for r in extraction.relations if r.keywords != BELONGS_TO]
    assert (worked.source, worked.target, worked.keywords, worked.weight) == ("Marie Curie", "Paris", "worked in", 0.8)


def test_pieces_are_batched_and_a_long_text_cut_into_windows(tmp_path: Path) -> None:
    sentence = "Marie Curie lectured at the Sorbonne in Paris on radium and its rays. "
    units = [unit("paragraph", sentence * 4) for _ in range(9)] + [unit("document", sentence * 60)]
    with OpenAICompatServer(chat_reply=finder) as server:
        extraction = extractor(server, tmp_path, batch_chars=1200, piece_chars=600, max_pieces=4).extract(
            units, source_uri="file:///talks"
        )
        bodies = [r["body"] for r in server.requests_to("/v1/chat/completions")]
    sent = [p for b in bodies for p in pieces(b).values()]
    assert all(len(p) <= 600 for p in sent) and len(sent) == 9 + len(sentence * 60) // 600 + 1
    assert all(sum(len(p) for p in pieces(b).values()) <= 1200 and len(pieces(b)) <= 4 for b in bodies)
    # four 284-character passages a call, twice; the ninth with the first window; then the windows two by two
    assert sorted(len(pieces(b)) for b in bodies) == [1, 2, 2, 2, 2, 4, 4]  # calls run concurrently
    assert {m.unit_id for m in extraction.mentions if m.entity == "Sorbonne"} == {u.id for u in units}


def test_failures_are_logged_and_anchors_remain(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    units = source()
    for i, reply in enumerate(("I found Marie Curie and Paris.", ChatFailure(500), '{"entities": "none"}')):

        def answer(body: dict[str, Any], reply: Any = reply) -> str:
            if isinstance(reply, Exception):
                raise reply
            return reply

        with OpenAICompatServer(chat_reply=answer) as server, caplog.at_level(logging.WARNING):
            caplog.clear()
            found = extractor(server, tmp_path / str(i))
            extraction = found.extract(units, source_uri="file:///nobel-lecture.pdf")
        assert found.failed == 1
        assert [e.name for e in extraction.entities] == ["Marie Curie in her laboratory (nobel-lecture)"]
        assert [(m.unit_id, m.role) for m in extraction.mentions] == [(units[-1].id, ANCHOR)]
        assert "file:///nobel-lecture.pdf: graph extraction of 3 pieces failed" in caplog.text


def test_items_without_a_name_are_dropped_not_the_answer(tmp_path: Path) -> None:
    reply = {"entities": [{"type": "person"}, {"name": " "}, {"name": "Paris", "pieces": "P1"}], "relations": [{}]}
    with OpenAICompatServer(chat_reply=json.dumps(reply)) as server:
        extraction = extractor(server, tmp_path).extract(
            [unit("paragraph", "Marie Curie moved to Paris in 1891.")], source_uri="u"
        )
    assert [e.name for e in extraction.entities] == ["Paris"] and not extraction.relations


def test_the_cache_answers_again_and_the_budget_bounds_the_calls(tmp_path: Path) -> None:
    units = [unit("paragraph", f"Marie Curie gave lecture number {i} in Paris at length. " * 8) for i in range(6)]
    with OpenAICompatServer(chat_reply=finder) as server:
        first = extractor(server, tmp_path, batch_chars=1000).extract(units, source_uri="u")
        calls = len(server.requests_to("/v1/chat/completions"))
        assert calls == 3
        again = extractor(server, tmp_path, batch_chars=1000).extract(units, source_uri="u")
        assert len(server.requests_to("/v1/chat/completions")) == calls  # all from the cache
        assert again == first

        budget = extractor(server, tmp_path / "other", batch_chars=1000, max_calls=2)
        partial = budget.extract(units, source_uri="u")
        assert len(server.requests_to("/v1/chat/completions")) == calls + 2
    assert budget.calls_skipped == 1
    assert len({m.unit_id for m in partial.mentions}) == 4


def test_from_settings(tmp_path: Path) -> None:
    assert model_extractor_from_settings(Settings(home=tmp_path)) is None
    settings = Settings(home=tmp_path, llm_model="m", llm_base_url="http://127.0.0.1:9/v1", describe_max_calls=5)
    made = model_extractor_from_settings(settings)
    assert made is not None and made.name == "model:m" and made.limits.max_calls == 5
    assert made.cache is not None and made.cache.path == cache_path(settings)


def test_a_described_figure_joins_the_graph_through_what_the_model_saw(  # type: ignore[no-untyped-def]
    store, minilm, tmp_path: Path
) -> None:
    """End to end: a PDF ingested with descriptions and the model extractor; the figure's anchor is reached from
    an entity its description names, and leads back to the figure's unit."""
    from support.documents import write_report_pdf

    from universalrag.graph.store import GraphStore
    from universalrag.ingest.describe import Describer
    from universalrag.ingest.pipeline import IngestOptions, ingest_paths

    figure = {
        "description": "A white enamel mug of black coffee on the cottage table of Kestrel Point Lighthouse.",
        "entity": {"name": "Figure 1: the keeper's morning coffee", "type": "figure"},
    }
    table = {"description": "Keepers and lamp fuel by decade.", "entity": {"name": "Table 1: keepers and fuel"}}
    names = {"Kestrel Point Lighthouse": "place", "enamel mug": "object", "lamp fuel": "concept"}

    def reply(body: dict[str, Any]) -> str:
        if "knowledge graph from pieces" not in body["messages"][0]["content"]:  # a description
            text = json.dumps(body["messages"][-1]["content"])
            return json.dumps(table if "This is a table." in text else figure)
        found = pieces(body)
        return json.dumps(
            {
                "entities": [
                    {"name": n, "type": t, "pieces": [p for p, s in found.items() if n in s]}
                    for n, t in names.items()
                    if any(n in s for s in found.values())
                ]
            }
        )

    pdf = write_report_pdf(tmp_path / "report.pdf")
    graph = GraphStore(store, minilm)
    with OpenAICompatServer(chat_reply=reply) as server:
        chat = JsonChat("vlm", base_url=server.base_url, max_retries=0)
        cache = ResponseCache(tmp_path / "answers.sqlite3")
        options = IngestOptions(
            describer=Describer(chat, cache=cache), graph=graph.for_ingest(ModelExtractor(chat, cache=cache))
        )
        report = ingest_paths(store, minilm, [pdf], options=options)
    assert report.ok, report.failed
    mug = graph.entity("enamel mug")
    assert mug is not None and mug.type == "object"
    (anchor,) = [n.entity for n in graph.neighbours(mug, hops=1) if n.via == (BELONGS_TO,)]
    assert anchor.name == "Figure 1: the keeper's morning coffee (Kestrel Point Lighthouse)"
    assert anchor.aliases == ("Figure 1 (Kestrel Point Lighthouse)",)
    (hit,) = [h for h in graph.units([anchor.id]) if h.corpus == "image"]
    assert hit.metadata["model_description"] == figure["description"]
    place = graph.entity("Kestrel Point Lighthouse")
    assert place is not None
    reached = {h.corpus for h in graph.units([place.id], limit=20)}
    assert {"paragraph", "image"} <= reached  # named in the passages and seen in the figure


def test_the_facade_builds_the_graph_with_the_model_when_asked(settings, minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """UNIVERSALRAG_GRAPH=model with descriptions on: a photo with no caption is an anchor, tied to what it shows."""
    from support.media import write_photo

    from universalrag.pipeline import UniversalRAG

    scene = {
        "description": "Marie Curie sits at a laboratory bench in Paris, a vial of radium in her hand.",
        "entity": {"name": "Portrait at the bench", "type": "photo"},
    }

    def reply(body: dict[str, Any]) -> str:
        return finder(body) if "knowledge graph from pieces" in body["messages"][0]["content"] else json.dumps(scene)

    image = write_photo(tmp_path / "IMG_2031.jpg", name="astronaut")
    with OpenAICompatServer(chat_reply=reply) as server:
        configured = settings.with_(graph="model", describe=True, llm_model="vlm", llm_base_url=server.base_url)
        with UniversalRAG(settings=configured, embedder=minilm, visual_encoder=None, generator=None) as rag:
            assert rag.ingest([image]).ok
            assert len(server.requests_to("/v1/chat/completions")) == 2  # one description, one extraction
            anchor = rag.graph.entity("Portrait at the bench (IMG_2031)")
            assert anchor is not None and anchor.type == "photo"
            around = {n.entity.name for n in rag.graph.neighbours(anchor, hops=1)}
            assert {"Marie Curie", "Paris", "radium"} <= around
            (hit,) = rag.graph.units("radium")
    assert hit.uri == image.resolve().as_uri() and hit.metadata["description_sources"] == ["filename", "model"]
