"""Generation through the whole pipeline, against an OpenAI-compatible server started on 127.0.0.1: what the
model receives for each kind of evidence (the real HTTP path of the `openai` client, no patched client)."""

from __future__ import annotations

import json

import pytest
from support.kb import build_rag
from support.openai_server import OpenAICompatServer

from universalrag.generate import OpenAIChatGenerator
from universalrag.pipeline import UniversalRAG


@pytest.fixture(scope="module")
def server():  # type: ignore[no-untyped-def]
    def reply(body: dict) -> str:
        return "From the evidence [E1]." if len(body["messages"]) > 1 else "51"

    with OpenAICompatServer(chat_reply=reply) as srv:
        yield srv


@pytest.fixture(scope="module")
def answering_rag(database_url: str, tmp_path_factory: pytest.TempPathFactory, server: OpenAICompatServer):  # type: ignore[no-untyped-def]
    generator = OpenAIChatGenerator("test-vlm", base_url=server.base_url, api_key="sk-test-123456")
    instance = build_rag(database_url, tmp_path_factory.mktemp("kb") / "kb", generator=generator)
    yield instance
    instance.store.downgrade("base")
    instance.close()


def _last(server: OpenAICompatServer) -> dict:
    return [r for r in server.requests if r["path"].endswith("/chat/completions")][-1]["body"]


def _parts(body: dict) -> list[dict]:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


def _images(body: dict) -> int:
    return sum(1 for p in _parts(body) if p["type"] == "image_url")


def _text(body: dict) -> str:
    return "\n".join(p["text"] for p in _parts(body) if p["type"] == "text")


def test_an_image_hit_sends_one_image(answering_rag: UniversalRAG, server: OpenAICompatServer) -> None:
    answer = answering_rag.query("Show me the coffee cup on the saucer", k=1, routes=["image"])
    body = _last(server)
    assert _images(body) == 1 and body["model"] == "test-vlm"
    assert answer.text == "From the evidence [E1]." and answer.citations == (answer.hits[0].id,)


def test_a_clip_hit_sends_eight_frames_with_timestamps_and_its_transcript(
    answering_rag: UniversalRAG, server: OpenAICompatServer
) -> None:
    answer = answering_rag.query("the moment when the cat sleeps on the sofa", k=1, routes=["clip"])
    clip = answer.hits[0]
    body = _last(server)
    assert _images(body) == 8
    times = [float(p["text"][2:-1]) for p in _parts(body) if p["type"] == "text" and p["text"].startswith("t=")]
    assert len(times) == 8 and all(clip.start_s <= t <= clip.end_s for t in times)
    assert "Chelsea" in _text(body)


def test_a_video_hit_sends_thirty_two_frames(answering_rag: UniversalRAG, server: OpenAICompatServer) -> None:
    answering_rag.query("What happens over the whole morning video?", k=1, routes=["video"])
    assert _images(_last(server)) == 32


def test_a_table_hit_sends_markdown_with_matched_rows(answering_rag: UniversalRAG, server: OpenAICompatServer) -> None:
    answering_rag.query("What is the win-loss record of the Quarry Lions?", k=1, routes=["table"])
    text = _text(_last(server))
    assert "| team | city | wins | losses |" in text and "Matched rows" in text and "Quarry Lions" in text
    assert _images(_last(server)) == 0


def test_none_sends_only_the_question(answering_rag: UniversalRAG, server: OpenAICompatServer) -> None:
    before = len(server.requests)
    answer = answering_rag.query("What is 17 times 3?", routes=["none"])
    body = _last(server)
    assert len(server.requests) == before + 1
    assert body["messages"] == [{"role": "user", "content": "What is 17 times 3?"}]
    assert answer.text == "51" and answer.hits == ()


def test_multi_route_evidence_reaches_the_model_fused(answering_rag: UniversalRAG, server: OpenAICompatServer) -> None:
    answer = answering_rag.query("Quarry Lions record and the cup of coffee photo", k=2, routes=["table", "image"])
    assert {h.corpus for h in answer.hits} == {"table", "image"}
    body = _last(server)
    assert _images(body) == 1 and "Quarry Lions" in _text(body)
    assert json.dumps(answer.to_dict())  # JSON-ready
