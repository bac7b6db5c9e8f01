"""Generation against a real OpenAI-compatible HTTP server on 127.0.0.1 (tests/support/openai_server.py):
what the server receives (text, table Markdown, image and frame parts), citations mapped back to evidence
ids, the ``none`` route, and error translation. No mocks: the ``openai`` client speaks real HTTP."""

from __future__ import annotations

import ast
import asyncio
import base64
import io
import socket
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai")

from PIL import Image

import universalrag.generate as generate_pkg
from tests.support.openai_server import OpenAICompatServer
from universalrag.config import Settings
from universalrag.errors import GenerationError
from universalrag.generate import (
    DEFAULT_SYSTEM_PROMPT,
    Generation,
    Generator,
    OpenAIChatGenerator,
    build_messages,
    parse_citations,
    short_ids,
)
from universalrag.types import Evidence, Hit, Modality

SECRET = "sk-generate-secret-0123456789"
TABLE_MD = "| driver | points |\n| --- | --- |\n| Vettel | 392 |\n| Button | 270 |"
FRAME_TIMES = (6.0, 6.4, 6.8, 7.2, 7.6, 8.0, 8.4, 8.8)


def jpeg(color: tuple[int, int, int], size: tuple[int, int] = (32, 24)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="JPEG", quality=80)
    return buffer.getvalue()


def evidence() -> list[Evidence]:
    """A paragraph, a table, an image and a clip with 8 frames, as the pipeline builds them."""
    return [
        Evidence(
            id="p-111",
            corpus="paragraph",
            modality=Modality.TEXT,
            label="[paragraph 1] alhambra.md",
            text="The Alhambra is a palace and fortress in Granada, Spain.",
        ),
        Evidence(
            id="t-222",
            corpus="table",
            modality=Modality.TABLE,
            label="[table 2] standings_2011.csv",
            text=f"Matched rows (best first):\n- row 1: Vettel 392\n\n{TABLE_MD}",
        ),
        Evidence(
            id="i-333",
            corpus="image",
            modality=Modality.IMAGE,
            label="[image 3] domes.jpg",
            text="Onion domes of a church in Saint Petersburg.",
            images=(jpeg((200, 40, 40)),),
        ),
        Evidence(
            id="c-444",
            corpus="clip",
            modality=Modality.VIDEO,
            label="[clip 4] morning.mp4 00:06–00:09",
            text="Transcript of morning.mp4 from 00:06 to 00:09: the chef adds the garlic.",
            images=tuple(jpeg((10 * i, 90, 160)) for i in range(8)),
            frame_times=FRAME_TIMES,
        ),
    ]


def generator(server: OpenAICompatServer, **kwargs: Any) -> OpenAIChatGenerator:
    opts: dict[str, Any] = {"base_url": server.base_url, "api_key": SECRET, "timeout": 5.0, "max_retries": 0}
    opts.update(kwargs)
    return OpenAIChatGenerator("test-vlm", **opts)


def groups(parts: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The user message's parts grouped by evidence (each group starts with its ``[E<n>]`` text part)."""
    out: dict[str, list[dict[str, Any]]] = {}
    current: str | None = None
    for part in parts:
        if part["type"] == "text" and part["text"].startswith("[E"):
            current = part["text"][1 : part["text"].index("]")]
            out[current] = []
        elif current is not None and not (part["type"] == "text" and part["text"].startswith("Question:")):
            out[current].append(part)
    return out


def chat_bodies(server: OpenAICompatServer) -> list[dict[str, Any]]:
    return [r["body"] for r in server.requests_to("/v1/chat/completions")]


# -- what the server receives ----------------------------------------------------------------------------


def test_multimodal_request_and_citations_over_http() -> None:
    items = evidence()
    with OpenAICompatServer(chat_reply=lambda body: "The table says Vettel scored 392 points [E2].") as srv:
        result = generator(srv, max_tokens=200, temperature=0.3).generate("How many points did Vettel score?", items)
        (body,) = chat_bodies(srv)
    assert isinstance(result, Generation)
    assert result.text == "The table says Vettel scored 392 points [E2]."
    assert result.citations == (items[1].id,)
    assert result.model == "test-vlm" and result.usage["total_tokens"] > 0
    assert body["model"] == "test-vlm" and body["max_tokens"] == 200 and body["temperature"] == 0.3
    system, user = body["messages"]
    assert system == {"role": "system", "content": DEFAULT_SYSTEM_PROMPT} and "[E2]" in system["content"]
    assert user["role"] == "user" and isinstance(user["content"], list)
    assert user["content"][-1] == {"type": "text", "text": "Question: How many points did Vettel score?"}
    by_item = groups(user["content"])
    assert list(by_item) == ["E1", "E2", "E3", "E4"]
    texts = {p["text"] for p in user["content"] if p["type"] == "text"}
    assert (
        "[E1] [paragraph 1] alhambra.md\n<retrieved-data>\nThe Alhambra is a palace and fortress in Granada, Spain."
        "\n</retrieved-data>" in texts
    )
    assert any(TABLE_MD in t and t.startswith("[E2] [table 2] standings_2011.csv") for t in texts)
    assert by_item["E1"] == [] and by_item["E2"] == []
    # the image: exactly one image part, the JPEG bytes themselves
    (image_part,) = by_item["E3"]
    url = image_part["image_url"]["url"]
    assert image_part["type"] == "image_url" and url.startswith("data:image/jpeg;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == items[2].images[0]
    assert Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).size == (32, 24)
    # the clip: 8 frames, each preceded by its timestamp
    clip = by_item["E4"]
    assert len(clip) == 16 and [p["type"] for p in clip] == ["text", "image_url"] * 8
    assert [p["text"] for p in clip[::2]] == [f"t={t:.1f}s" for t in FRAME_TIMES]
    assert clip[0]["text"] == "t=6.0s" and clip[-2]["text"] == "t=8.8s"
    assert [base64.b64decode(p["image_url"]["url"].split(",", 1)[1]) for p in clip[1::2]] == list(items[3].images)
    assert sum(p["type"] == "image_url" for p in user["content"]) == 9
    assert any("00:06–00:09" in t and "chef adds the garlic" in t for t in texts)


def test_no_evidence_sends_the_bare_question() -> None:
    with OpenAICompatServer(chat_reply="Forty-two minus fifteen is 27.") as srv:
        result = generator(srv).generate("  A bus carries 42 people and 15 get off; how many are left? ", [])
        (body,) = chat_bodies(srv)
    assert body["messages"] == [
        {"role": "user", "content": "A bus carries 42 people and 15 get off; how many are left?"}
    ]
    assert result.text == "Forty-two minus fifteen is 27." and result.citations == ()


def test_custom_system_prompt_is_sent() -> None:
    with OpenAICompatServer(chat_reply="ok [E1]") as srv:
        generator(srv, system_prompt="Answer in French.").generate("Where is the Alhambra?", evidence()[:1])
        generator(srv, system_prompt="Answer in French.").generate("What is 2+2?", [])
        with_evidence, without = chat_bodies(srv)
    assert with_evidence["messages"][0] == {"role": "system", "content": "Answer in French."}
    assert without["messages"] == [
        {"role": "system", "content": "Answer in French."},
        {"role": "user", "content": "What is 2+2?"},
    ]


def test_async_twin_and_one_client_per_event_loop() -> None:
    items = evidence()
    with OpenAICompatServer(chat_reply=lambda body: "Red domes [E3], garlic at t=6.4s [E4][E3].") as srv:
        gen = generator(srv)

        async def run() -> tuple[Generation, Generation]:
            return tuple(await asyncio.gather(gen.agenerate("q1", items), gen.agenerate("q2", items)))  # type: ignore[return-value]

        first, second = asyncio.run(run())
        third = asyncio.run(gen.agenerate("q3", items))  # a new loop gets a new client and still works
        bodies = chat_bodies(srv)
    assert first.citations == second.citations == third.citations == ("i-333", "c-444")
    assert len(bodies) == 3 and all(
        sum(p["type"] == "image_url" for p in b["messages"][1]["content"]) == 9 for b in bodies
    )


# -- errors ----------------------------------------------------------------------------------------------


def test_http_500_becomes_generation_error() -> None:
    with OpenAICompatServer(status=500) as srv, pytest.raises(GenerationError, match="HTTP 500") as err:
        generator(srv).generate("q", evidence()[:1])
    assert "check its logs" in str(err.value) and SECRET not in str(err.value)


def test_http_401_error_never_carries_the_key() -> None:
    with OpenAICompatServer(api_key="sk-the-right-key-abcdef") as srv:
        gen = generator(srv)
        with pytest.raises(GenerationError, match="HTTP 401") as err:
            gen.generate("q", evidence())
    message = str(err.value)
    assert "API key" in message and "UNIVERSALRAG_LLM_API_KEY" in message
    assert SECRET not in message and SECRET[-4:] not in message and SECRET[:6] not in message
    assert SECRET not in repr(gen) and "***" in repr(gen)


def test_timeout_becomes_generation_error() -> None:
    with OpenAICompatServer(delay_s=1.5) as srv, pytest.raises(GenerationError, match="timeout="):
        generator(srv, timeout=0.3).generate("q", [])


def test_connection_refused_becomes_generation_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    gen = OpenAIChatGenerator(
        "m", base_url=f"http://user:pw@127.0.0.1:{port}/v1", api_key=SECRET, timeout=2, max_retries=0
    )
    with pytest.raises(GenerationError, match="cannot connect") as err:
        gen.generate("q", [])
    assert "pw" not in str(err.value) and "UNIVERSALRAG_LLM_BASE_URL" in str(err.value)


def test_empty_reply_becomes_generation_error() -> None:
    with OpenAICompatServer(chat_reply="   ") as srv:
        with pytest.raises(GenerationError, match="empty answer"):
            generator(srv).generate("q", evidence()[:1])

        async def run() -> None:
            await generator(srv).agenerate("q", [])

        with pytest.raises(GenerationError, match="empty answer"):
            asyncio.run(run())


def test_async_errors_are_translated() -> None:
    with OpenAICompatServer(status=503) as srv, pytest.raises(GenerationError, match="HTTP 503"):
        asyncio.run(generator(srv).agenerate("q", evidence()[:2]))


def test_bad_input_is_rejected_before_any_request() -> None:
    with OpenAICompatServer() as srv:
        gen = generator(srv)
        with pytest.raises(GenerationError, match="question is empty"):
            gen.generate("   ", [])
        with pytest.raises(GenerationError, match="build_evidence"):
            gen.generate("q", [Hit(corpus="paragraph", id="x", score=1.0, content="text")])  # type: ignore[list-item]
        broken = Evidence(
            id="c",
            corpus="clip",
            modality=Modality.VIDEO,
            label="clip",
            text="",
            images=(jpeg((0, 0, 0)),) * 3,
            frame_times=(1.0, 2.0),
        )
        with pytest.raises(GenerationError, match="3 images but 2 frame times"):
            gen.generate("q", [broken])
        assert srv.requests == []


# -- construction, settings, protocol ----------------------------------------------------------------------


def test_from_settings() -> None:
    assert OpenAIChatGenerator.from_settings(Settings()) is None
    gen = OpenAIChatGenerator.from_settings(
        Settings(llm_model="qwen2.5-vl", llm_base_url="http://localhost:8000/v1", llm_api_key=SECRET),
        max_tokens=64,
    )
    assert gen is not None and gen.model == "qwen2.5-vl" and gen.base_url == "http://localhost:8000/v1"
    assert gen.max_tokens == 64 and gen.name == "openai:qwen2.5-vl"
    assert isinstance(gen, Generator) and SECRET not in repr(gen)


def test_from_settings_reaches_the_server() -> None:
    with OpenAICompatServer(chat_reply="fine", api_key=SECRET) as srv:
        gen = OpenAIChatGenerator.from_settings(
            Settings(llm_model="test-vlm", llm_base_url=srv.base_url, llm_api_key=SECRET), max_retries=0
        )
        assert gen is not None and gen.generate("hello?", []).text == "fine"


def test_constructor_validates_and_does_no_io() -> None:
    from universalrag.errors import ConfigError

    for bad in ({"timeout": 0}, {"max_tokens": 0}, {"temperature": -1}):
        with pytest.raises(ConfigError):
            OpenAIChatGenerator("m", **bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="model name"):
        OpenAIChatGenerator(" ")
    OpenAIChatGenerator("m", base_url="http://127.0.0.1:9/v1")  # nothing listens there; no error yet


# -- pure helpers ----------------------------------------------------------------------------------------


def test_build_messages_is_pure_and_matches_what_is_sent() -> None:
    items = evidence()
    messages = build_messages("Which colour?", items)
    assert messages == build_messages("Which colour?", items)
    assert build_messages("Which colour?", []) == [{"role": "user", "content": "Which colour?"}]
    assert short_ids(items) == {"E1": "p-111", "E2": "t-222", "E3": "i-333", "E4": "c-444"}
    with OpenAICompatServer() as srv:
        generator(srv).generate("Which colour?", items)
        (body,) = chat_bodies(srv)
    assert body["messages"] == messages


def test_parse_citations() -> None:
    items = evidence()
    assert parse_citations("Blue [E2].", items) == ("t-222",)
    assert parse_citations("A [E3] then [e1], again [E3] and [E9].", items) == ("i-333", "p-111")
    assert parse_citations("See [E1, E4] and [E2; E3].", items) == ("p-111", "c-444", "t-222", "i-333")
    assert parse_citations("Range [E2-E4] plus [E1–E9].", items) == ("t-222", "i-333", "c-444", "p-111")
    assert parse_citations("By real id [c-444] or label tag [table 2].", items) == ("c-444", "t-222")
    assert parse_citations("No citation, E2 unbracketed, [note] and [].", items) == ()
    assert parse_citations("Anything [E1]", []) == ()
    assert parse_citations("", items) == ()


def test_public_api_and_layering() -> None:
    assert generate_pkg.__all__ == [
        "DEFAULT_SYSTEM_PROMPT",
        "Generation",
        "Generator",
        "OpenAIChatGenerator",
        "build_messages",
        "image_data_url",
        "parse_citations",
        "short_ids",
    ]
    forbidden = (
        "universalrag.ingest",
        "universalrag.store",
        "universalrag.routing",
        "universalrag.retrieve",
        "universalrag.pipeline",
        "universalrag.cli",
        "universalrag.embed",
        "langchain",
        "llama_index",
        "langgraph",
    )
    package = Path(generate_pkg.__file__).parent
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = ("universalrag.generate", "universalrag")[node.level - 1] if node.level else ""
                name = ".".join(x for x in (base, node.module or "") if x)
            elif isinstance(node, ast.Import):
                name = ",".join(a.name for a in node.names)
            else:
                continue
            assert not any(name.startswith(f) for f in forbidden), (path.name, name)
