"""Descriptions written by a chat model at ingestion, against the OpenAI-compatible test server (the real HTTP path):
real photographs and a real PDF, the real bundled encoder, a real PostgreSQL. What is sent is inspected (the picture
as a data URL, the neighbourhood in the prompt); failures (malformed JSON, HTTP 500, a timeout) cost the unit its
description, never the ingest; answers are cached, calls budgeted."""

from __future__ import annotations

import base64
import io
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from support.documents import FIGURE_CAPTION, TABLE_CAPTION, write_report_pdf
from support.media import write_photo
from support.openai_server import ChatFailure, OpenAICompatServer

from universalrag.config import Settings
from universalrag.errors import ConfigError
from universalrag.generate.call_limits import CallLimits
from universalrag.generate.response_cache import ResponseCache
from universalrag.generate.structured import JsonChat, parse_json_object
from universalrag.ingest.describe import Describer, UnitDescription, cache_path
from universalrag.ingest.pipeline import IngestOptions, ingest_paths
from universalrag.retrieve import search_corpus
from universalrag.store import Store

CAT: dict[str, Any] = {
    "description": "A ginger tabby cat lies curled up asleep on a knitted blanket, its eyes closed and its striped "
    "tail wrapped around its paws.",
    "entity": {"name": "Sleeping ginger tabby cat", "type": "Photo", "description": "A cat asleep.", "attributes": {}},
}
ROCKET: dict[str, Any] = {
    "description": "A white space rocket stands on its launch pad beside the service tower under a clear sky.",
    "entity": {"name": "Rocket on the launch pad", "type": "photo", "attributes": {"subject": "rocket", "stage": 2}},
}


def prompt_text(body: dict[str, Any]) -> str:
    """Every text part of the request's messages, joined."""
    texts = []
    for message in body["messages"]:
        content = message["content"]
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        texts += [p["text"] for p in parts if p["type"] == "text"]
    return "\n".join(texts)


def images_sent(body: dict[str, Any]) -> list[str]:
    return [
        p["image_url"]["url"]
        for m in body["messages"]
        if isinstance(m["content"], list)
        for p in m["content"]
        if p["type"] == "image_url"
    ]


def describer(server: OpenAICompatServer, home: Path, **limits: Any) -> Describer:
    chat = JsonChat("vision-test", base_url=server.base_url, timeout=limits.pop("timeout", 10.0), max_retries=0)
    return Describer(chat, cache=ResponseCache(home / "answers.sqlite3"), limits=CallLimits(**limits))


def by_file(reply: dict[str, Any] | None = None, **replies: Any) -> Any:
    """A chat reply chosen by the file name the prompt shows (a value that is an exception is raised)."""

    def answer(body: dict[str, Any]) -> str:
        text = prompt_text(body)
        for name, value in replies.items():
            if f"File name: {name}" in text:
                if isinstance(value, Exception):
                    raise value
                return value if isinstance(value, str) else json.dumps(value)
        return json.dumps(reply or ROCKET)

    return answer


def test_a_photo_without_a_caption_is_found_by_what_the_model_saw(store: Store, minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "photos"
    cat = write_photo(folder / "IMG_2031.jpg", name="chelsea", size=(1600, 1200))
    write_photo(folder / "launch.png", name="rocket")
    (folder / "launch.png.txt").write_text("The rocket before lift-off.", encoding="utf-8")
    with OpenAICompatServer(chat_reply=by_file(**{"IMG_2031.jpg": CAT})) as server:
        options = IngestOptions(describer=describer(server, tmp_path))
        report = ingest_paths(store, minilm, [folder], options=options)
        assert report.ok, report.failed
        requests = server.requests_to("/v1/chat/completions")
    assert len(requests) == 2
    body = next(r["body"] for r in requests if "IMG_2031.jpg" in prompt_text(r["body"]))
    assert body["model"] == "vision-test" and body["messages"][0]["role"] == "system"
    (url,) = images_sent(body)
    assert url.startswith("data:image/jpeg;base64,")
    sent = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert sent.format == "JPEG" and max(sent.size) == 1024  # shrunk from 1600 x 1200
    rocket_prompt = next(prompt_text(r["body"]) for r in requests if "launch.png" in prompt_text(r["body"]))
    assert "The rocket before lift-off." in rocket_prompt  # the sidecar caption is its neighbourhood

    hit = search_corpus(store, minilm, "image", "a cat asleep on a blanket", k=2)[0]
    assert hit.uri == cat.resolve().as_uri()
    assert hit.metadata["description_sources"] == ["filename", "model"]
    assert hit.metadata["model_description"] == CAT["description"] and CAT["description"] in hit.content
    assert hit.metadata["entity"]["name"] == "Sleeping ginger tabby cat" and hit.metadata["entity"]["type"] == "photo"
    assert hit.metadata["description_model"] == "openai:vision-test"
    assert hit.metadata["title"] == "Sleeping ginger tabby cat"  # the file name said nothing
    rocket = search_corpus(store, minilm, "image", "rocket launch pad", k=2)[0]
    assert rocket.metadata["description_sources"] == ["sidecar", "model"]
    assert rocket.metadata["entity"]["attributes"] == {"subject": "rocket", "stage": "2"}
    assert rocket.metadata["title"].startswith("The rocket before lift-off")  # a caption stays the title


def test_a_reingest_reads_the_cache_and_makes_no_call(store: Store, minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    image = write_photo(tmp_path / "photos" / "IMG_2031.jpg", name="chelsea")
    with OpenAICompatServer(chat_reply=json.dumps(CAT)) as server:
        assert ingest_paths(store, minilm, [image], options=IngestOptions(describer=describer(server, tmp_path))).ok
        assert len(server.requests_to("/v1/chat/completions")) == 1
        store.delete_source(image.resolve().as_uri())
        again = describer(server, tmp_path)  # a new run: only the file on disk remembers
        report = ingest_paths(store, minilm, [image], options=IngestOptions(describer=again))
        assert report.count("added") == 1
        assert len(server.requests_to("/v1/chat/completions")) == 1
    assert again.stats.cached == 1 and again.stats.described == 0
    hit = search_corpus(store, minilm, "image", "a cat asleep on a blanket", k=1)[0]
    assert hit.metadata["model_description"] == CAT["description"]


def test_failed_calls_cost_the_unit_its_description_not_the_ingest(  # type: ignore[no-untyped-def]
    store: Store, minilm, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "photos"
    for name, photo in (("a.jpg", "coffee"), ("b.jpg", "camera"), ("c.jpg", "astronaut"), ("d.jpg", "rocket")):
        write_photo(folder / name, name=photo)
    replies: dict[str, Any] = {
        "a.jpg": "Sure! The picture shows a cup of coffee.",  # no JSON at all
        "b.jpg": ChatFailure(500),
        "c.jpg": '```json\n{"description": "An astronaut in a white suit."}\n```',  # no entity
    }
    with OpenAICompatServer(chat_reply=by_file(**replies)) as server:
        describing = describer(server, tmp_path)
        with caplog.at_level(logging.WARNING, logger="universalrag.ingest.describe"):
            report = ingest_paths(store, minilm, [folder], options=IngestOptions(describer=describing))
    assert report.ok and report.count("added") == 4
    assert describing.stats.failed == 3 and describing.stats.described == 1
    warned = "\n".join(r.getMessage() for r in caplog.records)
    assert "a.jpg" in warned and "no JSON object" in warned
    assert "b.jpg" in warned and "HTTP 500" in warned
    assert "c.jpg" in warned and "entity" in warned
    rows = {Path(h.uri or "").name: h for h in search_corpus(store, minilm, "image", "photo", k=4)}
    assert set(rows) == {"a.jpg", "b.jpg", "c.jpg", "d.jpg"}
    for name in ("a.jpg", "b.jpg", "c.jpg"):
        assert "model_description" not in rows[name].metadata and rows[name].metadata["description_source"]
    assert rows["d.jpg"].metadata["description_sources"] == ["filename", "model"]


def test_a_timeout_leaves_the_text_and_the_run_goes_on(store: Store, minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    image = write_photo(tmp_path / "IMG_2031.jpg", name="chelsea")
    with OpenAICompatServer(chat_reply=json.dumps(CAT), delay_s=3.0) as server:
        describing = describer(server, tmp_path, timeout=0.5)
        report = ingest_paths(store, minilm, [image], options=IngestOptions(describer=describing))
    assert report.ok and describing.stats.failed == 1
    (hit,) = search_corpus(store, minilm, "image", "cat", k=1)
    assert "model_description" not in hit.metadata and hit.content == "IMG 2031"


def test_the_budget_bounds_the_calls_of_a_run(store: Store, minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "photos"
    for i, photo in enumerate(("coffee", "camera", "astronaut")):
        write_photo(folder / f"p{i}.jpg", name=photo)
    with OpenAICompatServer(chat_reply=json.dumps(ROCKET)) as server:
        describing = describer(server, tmp_path, max_calls=2)
        events: list[Any] = []
        report = ingest_paths(
            store, minilm, [folder], options=IngestOptions(describer=describing), on_progress=events.append
        )
        assert len(server.requests_to("/v1/chat/completions")) == 2
    described = [(Path(e.path).name, e.done, e.total) for e in events if e.stage == "described by the model"]
    assert described == [("p0.jpg", 1, 1), ("p1.jpg", 1, 1), ("p2.jpg", 1, 1)]  # shown beside the ingest bar
    assert report.ok and report.count("added") == 3
    assert describing.stats.described == 2 and describing.stats.skipped == 1
    hits = [h for h in search_corpus(store, minilm, "image", "rocket", k=3) if "model_description" in h.metadata]
    assert len(hits) == 2


def test_a_documents_figure_and_table_are_described_in_their_neighbourhood(  # type: ignore[no-untyped-def]
    store: Store, minilm, tmp_path: Path
) -> None:
    pdf = write_report_pdf(tmp_path / "report.pdf")
    table_reply = {
        "description": "Keepers of the light and the lamp fuel they burned, decade by decade.",
        "entity": {"name": "Table 1: Keepers and lamp fuel", "type": "table", "attributes": {"columns": "decade"}},
    }
    figure_reply = {
        "description": "A white cup of black coffee on a saucer, photographed from above on a table.",
        "entity": {"name": "Figure 1: the keeper's coffee", "type": "figure"},
    }

    def reply(body: dict[str, Any]) -> str:
        return json.dumps(table_reply if "This is a table." in prompt_text(body) else figure_reply)

    with OpenAICompatServer(chat_reply=reply) as server:
        report = ingest_paths(store, minilm, [pdf], options=IngestOptions(describer=describer(server, tmp_path)))
        assert report.ok, report.failed
        bodies = [r["body"] for r in server.requests_to("/v1/chat/completions")]
    assert len(bodies) == 2
    figure = next(b for b in bodies if "a figure of a document" in prompt_text(b))
    text = prompt_text(figure)
    assert FIGURE_CAPTION.split(": ", 1)[1] in text and "Kestrel Point Lighthouse" in text and "lamp room" in text
    assert "Page: 2" in text and len(images_sent(figure)) == 1
    table = next(b for b in bodies if "This is a table." in prompt_text(b))
    assert TABLE_CAPTION.split(": ", 1)[1] in prompt_text(table) and "|" in prompt_text(table)
    assert not images_sent(table)
    hit = search_corpus(store, minilm, "table", "lamp fuel burned by each keeper", k=1)[0]
    assert hit.metadata["model_description"] == table_reply["description"]
    assert hit.metadata["description_sources"] == ["model"]
    image = search_corpus(store, minilm, "image", "coffee cup seen from above", k=1)[0]
    assert image.metadata["description_sources"] == ["caption", "model"]


def test_settings_switch_it_on_and_a_missing_model_is_a_config_error(tmp_path: Path) -> None:
    env = {"UNIVERSALRAG_DESCRIBE": "yes", "UNIVERSALRAG_DESCRIBE_MAX_CALLS": "7", "UNIVERSALRAG_DESCRIBE_RATE": "0"}
    settings = Settings.from_env(env).with_(home=tmp_path)
    assert settings.describe and settings.describe_max_calls == 7 and settings.describe_rate == 0
    with pytest.raises(ConfigError, match="UNIVERSALRAG_LLM_MODEL"):
        IngestOptions.from_settings(settings)
    assert IngestOptions.from_settings(settings, describe=False).describer is None
    with pytest.raises(ConfigError, match="UNIVERSALRAG_DESCRIBE"):
        Settings.from_env({"UNIVERSALRAG_DESCRIBE": "maybe"})
    on = IngestOptions.from_settings(settings.with_(llm_model="vlm", llm_base_url="http://127.0.0.1:9/v1"))
    assert on.describer is not None and on.describer.limits.max_calls == 7 and on.describer.limits.per_minute is None
    assert on.describer.cache is not None and on.describer.cache.path == cache_path(settings)
    assert IngestOptions.from_settings(Settings().with_(home=tmp_path)).describer is None  # off by default


def test_json_is_read_from_fences_and_prose() -> None:
    assert parse_json_object('{"a": 1}') == {"a": 1}
    assert parse_json_object('Here it is:\n```json\n{"a": [1, 2]}\n```\nDone.') == {"a": [1, 2]}
    assert parse_json_object('The answer is {"a": "b"} as asked.') == {"a": "b"}
    for bad, why in (("no json here", "no JSON object"), ('{"a": ', "not valid JSON")):
        with pytest.raises(ValueError, match=why):
            parse_json_object(bad)


def test_call_limits_space_the_calls_and_stop_at_the_budget_or_deadline() -> None:
    now = [0.0]
    waits: list[float] = []
    limits = CallLimits(max_calls=3, per_minute=30, clock=lambda: now[0], sleep=waits.append)
    assert [limits.acquire() for _ in range(4)] == [True, True, True, False]
    assert waits == [2.0, 4.0] and limits.exhausted == "budget" and limits.refused == 1
    late = CallLimits(max_seconds=10, clock=lambda: now[0])
    assert late.acquire()
    now[0] = 11.0
    assert not late.acquire() and late.exhausted == "deadline"


def test_the_cache_survives_a_broken_file(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / "answers.sqlite3").write_text("this is not a database", encoding="utf-8")
    cache = ResponseCache(folder / "answers.sqlite3")
    cache.put("k", {"v": 1})  # logged, not raised
    assert cache.get("k") is None
    fresh = ResponseCache(tmp_path / "fresh" / "answers.sqlite3", max_entries=2)
    for i in range(3):
        fresh.put(f"k{i}", i)
    assert fresh.get("k2") == 2 and fresh.get("k0") == 0


@pytest.mark.slow
def test_a_video_scene_is_described_from_its_frames_and_transcript(store: Store, minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from support.kb import CUES, VIDEO_OPTIONS
    from support.video import write_video

    video = write_video(
        tmp_path / "morning.mp4", [("astronaut", 3.0), ("coffee", 3.0), ("chelsea", 3.0)], cues=CUES, sidecar="srt"
    )
    scene = {
        "description": "A ginger cat sleeps curled on a sofa cushion while the narrator names her Chelsea.",
        "entity": {"name": "Chelsea the cat asleep", "type": "scene"},
    }
    with OpenAICompatServer(chat_reply=json.dumps(scene)) as server:
        options = IngestOptions(video=VIDEO_OPTIONS, describer=describer(server, tmp_path))
        report = ingest_paths(store, minilm, [video.path], options=options)
        assert report.ok, report.failed
        bodies = [r["body"] for r in server.requests_to("/v1/chat/completions")]
    clips = store.counts()["clip"]
    assert clips == 3 and len(bodies) == clips  # the scenes, not the whole video
    cat = next(b for b in bodies if "Transcript of the scene: A ginger cat" in prompt_text(b))
    text = prompt_text(cat)
    assert "This is a scene of a video" in text and "Transcript of the scene: A ginger cat named Chelsea" in text
    assert "Transcript just before: A cup of hot coffee" in text and "Video: " in text
    assert len(images_sent(cat)) == VIDEO_OPTIONS.frames_per_clip and text.count("Frame at ") == len(images_sent(cat))
    hit = search_corpus(store, minilm, "clip", "cat asleep on the sofa", k=1)[0]
    assert hit.metadata["entity"]["type"] == "scene" and hit.metadata["description_sources"][-1] == "model"


def test_the_facade_turns_it_on_with_a_keyword(settings: Settings, minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from universalrag.pipeline import UniversalRAG

    image = write_photo(tmp_path / "IMG_2031.jpg", name="chelsea")
    with OpenAICompatServer(chat_reply=json.dumps(CAT)) as server:
        configured = settings.with_(llm_model="vision-test", llm_base_url=server.base_url)
        with UniversalRAG(settings=configured, embedder=minilm, visual_encoder=None, generator=None) as rag:
            assert rag.ingest([image]).count("added") == 1  # off by default
            assert not server.requests_to("/v1/chat/completions")
            # turning it on replaces the file's units with described ones
            assert rag.ingest([image], options=IngestOptions(), describe=True).count("replaced") == 1
            assert len(server.requests_to("/v1/chat/completions")) == 1
            hit = search_corpus(rag.store, minilm, "image", "a cat asleep", k=1)[0]
            assert rag.ingest([image], describe=True).count("unchanged") == 1
            assert rag.ingest([image]).count("replaced") == 1  # and off again: the file's own text only
            plain = search_corpus(rag.store, minilm, "image", "a cat asleep", k=1)[0]
            assert rag.ingest([image], describe=True).count("replaced") == 1  # on again: from the cache
            assert len(server.requests_to("/v1/chat/completions")) == 1
    assert hit.metadata["model_description"] == CAT["description"]
    assert "model_description" not in plain.metadata and plain.content == "IMG 2031"
    assert (tmp_path / "home" / "cache" / "model-answers.sqlite3").is_file()  # UNIVERSALRAG_HOME's cache


def test_the_command_line_switch(cli_env: dict[str, str], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from universalrag.cli import app

    image = write_photo(tmp_path / "photos" / "IMG_2031.jpg", name="chelsea")
    with OpenAICompatServer(chat_reply=json.dumps(CAT)) as server:
        env = {**cli_env, "UNIVERSALRAG_LLM_MODEL": "vision-test", "UNIVERSALRAG_LLM_BASE_URL": server.base_url}
        result = CliRunner().invoke(app, ["ingest", str(image.parent), "--describe"], env=env)
        assert result.exit_code == 0, result.output
        assert f"{image}: 1/1 units described by the model" in result.stdout + result.stderr  # progress
        assert f"added: {image}" in result.stdout
        assert len(server.requests_to("/v1/chat/completions")) == 1
        no_model = {k: v for k, v in env.items() if k != "UNIVERSALRAG_LLM_MODEL"}
        refused = CliRunner().invoke(app, ["ingest", str(image.parent), "--describe"], env=no_model)
        assert refused.exit_code != 0 and "UNIVERSALRAG_LLM_MODEL" in refused.output
        off = CliRunner().invoke(app, ["ingest", str(image.parent), "--no-describe"], env=env)
        assert off.exit_code == 0 and len(server.requests_to("/v1/chat/completions")) == 1


def test_without_the_openai_package_the_run_fails_at_its_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from universalrag.errors import MissingDependencyError

    monkeypatch.setitem(sys.modules, "openai", None)
    settings = Settings(home=tmp_path, llm_model="vlm", llm_base_url="http://127.0.0.1:9/v1")
    with pytest.raises(MissingDependencyError, match=r"universalrag-postgres\[openai\]"):
        IngestOptions.from_settings(settings, describe=True)


def test_a_stop_asked_for_leaves_the_source_unwritten_and_its_answers_cached(  # type: ignore[no-untyped-def]
    store: Store, minilm, tmp_path: Path
) -> None:
    pdf = write_report_pdf(tmp_path / "report.pdf")
    asked: list[str] = []

    def reply(body: dict[str, Any]) -> str:
        asked.append(prompt_text(body))
        return json.dumps(ROCKET)

    with OpenAICompatServer(chat_reply=reply) as server:
        chat = JsonChat("vision-test", base_url=server.base_url, max_retries=0)
        stopping = Describer(chat, cache=ResponseCache(tmp_path / "answers.sqlite3"), concurrency=1)
        options = IngestOptions(describer=stopping, should_stop=lambda: bool(asked))  # Ctrl-C during the first call
        with pytest.raises(KeyboardInterrupt):
            ingest_paths(store, minilm, [pdf], options=options)
        assert len(asked) == 1 and store.sources() == []  # nothing half written
        again = Describer(chat, cache=ResponseCache(tmp_path / "answers.sqlite3"))
        assert ingest_paths(store, minilm, [pdf], options=IngestOptions(describer=again)).count("added") == 1
    assert len(asked) == 2 and again.stats.cached == 1 and again.stats.described == 1


def test_an_answer_cut_at_max_tokens_says_so(tmp_path: Path) -> None:
    from universalrag.errors import GenerationError

    cut = json.dumps(CAT)[:60]
    with OpenAICompatServer(chat_reply=cut, finish_reason="length") as server:
        chat = JsonChat("vision-test", base_url=server.base_url, max_tokens=20, max_retries=0)
        with pytest.raises(GenerationError, match=r"not valid JSON .* stopped at max_tokens=20"):
            chat.ask([{"role": "user", "content": "describe"}], UnitDescription)


def test_the_api_key_never_shows(store: Store, minilm, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    image = write_photo(tmp_path / "IMG_2031.jpg", name="chelsea")
    secret = "sk-describe-secret-0123456789"
    with OpenAICompatServer(chat_reply=json.dumps(CAT), api_key="sk-the-right-one-0000") as server:
        chat = JsonChat("vision-test", base_url=server.base_url, api_key=secret, max_retries=0)
        describing = Describer(chat, cache=None)
        with caplog.at_level(logging.DEBUG):
            report = ingest_paths(store, minilm, [image], options=IngestOptions(describer=describing))
    assert report.ok and describing.stats.failed == 1
    assert "HTTP 401" in caplog.text and secret not in caplog.text and secret[-8:] not in caplog.text
    assert secret not in repr(describing) and "***" in repr(describing)


def test_a_web_pages_table_is_described_and_its_prose_is_not(store: Store, minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page = tmp_path / "ferries.html"
    page.write_text(
        "<html><head><title>Island ferries</title></head><body><h1>Island ferries</h1>"
        "<p>Ferries leave Kestrel Bay for the islands every morning in summer and twice a week in winter.</p>"
        "<h2>Timetable</h2><table><tr><th>Island</th><th>Crossing</th></tr><tr><td>Gull Island</td><td>40 min</td></tr>"
        "<tr><td>Heron Rock</td><td>25 min</td></tr></table></body></html>",
        encoding="utf-8",
    )
    answer: dict[str, Any] = {
        "description": "Crossing times of the ferries from Kestrel Bay: Gull Island takes forty minutes.",
        "entity": {"name": "Ferry crossing times", "type": "table", "attributes": {"columns": "Island, Crossing"}},
    }
    with OpenAICompatServer(chat_reply=json.dumps(answer)) as server:
        report = ingest_paths(store, minilm, [page], options=IngestOptions(describer=describer(server, tmp_path)))
        assert report.ok, report.failed
        (body,) = [r["body"] for r in server.requests_to("/v1/chat/completions")]
    text = prompt_text(body)
    assert "This is a table." in text and "Gull Island" in text and not images_sent(body)
    around = next(line for line in text.splitlines() if line.startswith("Text around it: "))
    assert "Document: Island ferries" in text and "Ferries leave Kestrel Bay" in around  # the page's prose
    hit = search_corpus(store, minilm, "table", "how long is the ferry crossing to Gull Island", k=1)[0]
    assert hit.metadata["entity"]["name"] == "Ferry crossing times" and answer["description"] in hit.content
