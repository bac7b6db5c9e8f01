"""The LLM router against a real OpenAI-compatible HTTP server on 127.0.0.1 (tests/support/openai_server.py)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence

import pytest

pytest.importorskip("openai")

from tests.support.openai_server import OpenAICompatServer
from universalrag.errors import RoutingError
from universalrag.routing import EnsembleRouter, LLMRouter, ScoringRouter, build_prompt, parse_routes
from universalrag.routing.base import ROUTES


class Constant(ScoringRouter):
    """A real scoring router that always prefers one route."""

    def __init__(self, route: str, p: float = 0.95, name: str = "trained") -> None:
        super().__init__(name=name)
        self._route_name, self._p = route, p

    @property
    def routes(self) -> tuple[str, ...]:
        return ROUTES

    def score_many(self, queries: Sequence[str]) -> list[dict[str, float]]:
        return [{r: (self._p if r == self._route_name else 0.01) for r in ROUTES} for _ in queries]


def router(srv: OpenAICompatServer, **kwargs: object) -> LLMRouter:
    opts: dict[str, object] = {
        "base_url": srv.base_url,
        "api_key": "sk-secret-123456789",
        "timeout": 5.0,
        "max_retries": 0,
    }
    opts.update(kwargs)
    return LLMRouter("test-model", **opts)  # type: ignore[arg-type]


def test_valid_answer_and_request_shape() -> None:
    with OpenAICompatServer(chat_reply='{"routes": ["table", "paragraph"]}') as srv:
        d = router(srv).route("Which team finished third in 2010?")
        body = srv.requests_to("/v1/chat/completions")[0]["body"]
    assert d.routes == ("table", "paragraph") and d.router == "llm" and d.latency_ms > 0
    assert d.scores["table"] == 1.0 and d.scores["image"] == 0.0
    system, user = body["messages"]
    assert body["model"] == "test-model" and body["temperature"] == 0.0
    assert "Which team finished third in 2010?" in user["content"]
    for name in ROUTES:
        assert f"- {name}:" in system["content"]
    assert "→ document" in system["content"] and "→ video" in system["content"]  # contrasting examples


def test_single_selection_and_exclusion_rules() -> None:
    with OpenAICompatServer(chat_reply='{"routes": ["clip", "video", "none"]}') as srv:
        assert router(srv).route("q").routes == ("clip",)
        assert router(srv, multi=False).route("q").routes == ("clip",)
        system = srv.requests[-1]["body"]["messages"][0]["content"]
    assert "exactly one source" in system


@pytest.mark.parametrize(
    "reply, expected",
    [
        ('```json\n{"routes": ["image"]}\n```', ("image",)),
        ("Sure! Here is my answer: {'routes': ['video',]} Hope it helps.", ("video",)),
        ('{routes: ["document"]}', ("document",)),
        ('["Table"]', ("table",)),
        ("none", ("none",)),
        ('{"route": "paragraph"}', ("paragraph",)),
    ],
)
def test_malformed_json_is_repaired(reply: str, expected: tuple[str, ...]) -> None:
    with OpenAICompatServer(chat_reply=reply) as srv:
        assert router(srv).route("q").routes == expected


def test_garbage_raises_routing_error_or_uses_the_fallback(caplog: pytest.LogCaptureFixture) -> None:
    with OpenAICompatServer(chat_reply="I am not sure what you mean.") as srv:
        with pytest.raises(RoutingError, match="not the expected JSON"):
            router(srv).route("q")
        with pytest.raises(RoutingError, match="names no allowed route"):
            srv.chat_reply = '{"routes": ["spreadsheets"]}'
            router(srv).route("q")
        with caplog.at_level(logging.WARNING):
            d = router(srv, fallback=Constant("image")).route("q")
    assert d.routes == ("image",) and d.router == "llm->trained"
    assert "sk-secret" not in caplog.text


def test_http_500_and_auth_errors_never_show_the_key() -> None:
    with OpenAICompatServer(status=500) as srv:
        with pytest.raises(RoutingError, match="HTTP 500") as err:
            router(srv).route("q")
        assert "sk-secret" not in str(err.value)
        assert router(srv, fallback=Constant("table")).route("q").routes == ("table",)
    with OpenAICompatServer(chat_reply='{"routes": ["none"]}', api_key="right-key") as srv:
        r = router(srv)
        with pytest.raises(RoutingError, match="HTTP 401") as err:
            r.route("q")
        assert "sk-secret" not in str(err.value) and "6789" not in str(err.value)
        assert "sk-secret" not in repr(r)


def test_timeout() -> None:
    with OpenAICompatServer(chat_reply='{"routes": ["none"]}', delay_s=2.0) as srv:
        with pytest.raises(RoutingError, match="timed out"):
            router(srv, timeout=0.3).route("q")
        d = router(srv, timeout=0.3, fallback=Constant("video")).route("q")
    assert d.routes == ("video",)


def test_connection_refused_is_a_routing_error() -> None:
    with OpenAICompatServer() as srv:
        url = srv.base_url
    with pytest.raises(RoutingError, match="could not connect"):
        LLMRouter("m", base_url=url, timeout=2, max_retries=0).route("q")


def test_candidates_and_user_defined_corpora_in_prompt() -> None:
    corpora = {
        "none": "No retrieval.",
        "recipes": "Cooking recipes with ingredients and steps.",
        "paragraph": "Short passages.",
    }
    with OpenAICompatServer(chat_reply='{"routes": ["recipes"]}') as srv:
        r = router(srv, corpora=corpora, examples={"recipes": ["How long do I bake focaccia?"]})
        assert r.route("How do I make pesto?").routes == ("recipes",)
        system = srv.requests[-1]["body"]["messages"][0]["content"]
        assert "- recipes: Cooking recipes" in system and "How long do I bake focaccia? → recipes" in system
        srv.chat_reply = '{"routes": ["recipes"]}'
        with pytest.raises(RoutingError, match="names no allowed route"):
            r.route("q", candidates=["paragraph"])  # recipes is not a candidate here
        system = srv.requests[-1]["body"]["messages"][0]["content"]
        assert "recipes" not in system


def test_async_and_concurrency() -> None:
    def reply(body: dict) -> str:
        q = body["messages"][-1]["content"]
        return json.dumps({"routes": ["image" if "look" in q else "none"]})

    with OpenAICompatServer(chat_reply=reply) as srv:
        r = router(srv)
        one = asyncio.run(r.aroute("what does it look like"))
        many = asyncio.run(r.aroute_many(["look at this", "2+2", "looks?"]))
    assert one.routes == ("image",)
    assert [d.routes for d in many] == [("image",), ("none",), ("image",)]


def test_confidence_ensemble_with_llm_over_http() -> None:
    with OpenAICompatServer(chat_reply='{"routes": ["video"]}') as srv:
        llm = router(srv)
        sure = EnsembleRouter.confident(Constant("table", 0.97), llm, tau=0.9)
        assert sure.route("q").routes == ("table",) and not srv.requests
        unsure = EnsembleRouter.confident(Constant("table", 0.6), llm, tau=0.9)
        assert unsure.route("q").routes == ("video",) and len(srv.requests) == 1
        srv.status = 500  # the LLM failing keeps the trained decision
        assert unsure.route("q").routes == ("table",)


def test_parse_and_prompt_helpers() -> None:
    assert parse_routes('{"routes": ["IMAGE", "nope", "image"]}', ROUTES) == ["image"]
    with pytest.raises(RoutingError):
        parse_routes("", ROUTES)
    prompt = build_prompt({"none": "a", "clip": "b"}, multi=True)
    assert "→ clip" not in prompt  # the clip/video contrast needs both
