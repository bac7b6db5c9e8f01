"""API keys and database passwords appear in no message, traceback, chained cause or ``--debug`` output.

The endpoint is a real HTTP server on 127.0.0.1 (tests/support/hostile_openai.py) that echoes the sent key in
full in its 401/500 error bodies; the database is unreachable on a closed port. The key deliberately does not
look like an API key (no ``sk-``), so only redaction of the configured secret can hide it.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from typing import Any

import pytest
from support.hostile_openai import HostileServer
from typer.testing import CliRunner

from universalrag.cli import app
from universalrag.errors import EmbeddingError, GenerationError, RoutingError, UniversalRAGError

KEY = "Zq8Hunter2PlainSecretValue77"
PASSWORD = "Hunter2DbPassword99"


def _everything_about(error: BaseException) -> str:
    """What an application may log: the message, the full traceback with its chain, every repr in the chain."""
    parts = [str(error), "".join(traceback.format_exception(error))]
    seen = set()
    current: BaseException | None = error
    stack = [error]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        parts += [
            repr(current),
            str(current),
            repr(current.args),
            repr(getattr(current, "body", None)),
            str(getattr(current, "message", "")),
        ]
        stack += [e for e in (current.__cause__, current.__context__) if e is not None]
    return "\n".join(parts)


def _embed(url: str) -> None:
    from universalrag.embed import OpenAIEmbedder

    OpenAIEmbedder("m", base_url=url, api_key=KEY, dimension=8, max_retries=0, timeout=5).embed(["hello"])


def _generate(url: str) -> None:
    from universalrag.generate import OpenAIChatGenerator

    OpenAIChatGenerator("m", base_url=url, api_key=KEY, max_retries=0, timeout=5).generate("why?", [])


def _route(url: str) -> None:
    from universalrag.routing.llm import LLMRouter

    LLMRouter("m", base_url=url, api_key=KEY, max_retries=0, timeout=5).route("which corpus?")


CALLS: list[tuple[Callable[[str], None], type[UniversalRAGError]]] = [
    (_embed, EmbeddingError),
    (_generate, GenerationError),
    (_route, RoutingError),
]


@pytest.mark.parametrize("mode", ["echo401", "echo500"])
@pytest.mark.parametrize("call,error_type", CALLS, ids=["embed", "generate", "route"])
def test_an_echoed_key_is_in_no_message_traceback_or_cause(
    mode: str, call: Callable[[str], None], error_type: type[UniversalRAGError], caplog: pytest.LogCaptureFixture
) -> None:
    with HostileServer(mode) as server, pytest.raises(error_type) as info:
        call(server.base_url)
    assert server.requests >= 1
    error = info.value
    assert error.__cause__ is not None  # the chain is kept for debugging, only scrubbed
    text = _everything_about(error)
    assert KEY not in text and KEY[:12] not in text
    assert server.base_url.removesuffix("/v1") in str(error)  # the message still names the endpoint
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("app").exception("request failed", exc_info=error)
    assert KEY not in caplog.text


def test_cli_debug_traceback_hides_the_echoed_key(cli_env: dict[str, str]) -> None:
    runner = CliRunner()
    with HostileServer("echo500") as server:
        env = {
            **cli_env,
            "UNIVERSALRAG_EMBEDDER": "openai:m",
            "UNIVERSALRAG_EMBED_BASE_URL": server.base_url,
            "UNIVERSALRAG_EMBED_API_KEY": KEY,
            "UNIVERSALRAG_EMBED_DIMENSIONS": "8",
        }
        result = runner.invoke(app, ["--debug", "search", "hello", "-c", "paragraph"], env=env)
    everything = result.stdout + result.stderr + repr(result.exception)
    assert result.exit_code == 1 and "Traceback" in everything and "HTTP 500" in everything, everything
    assert KEY not in everything


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://ann:{PASSWORD}@127.0.0.1:1/x",
        f"postgresql+psycopg://ann:{PASSWORD}@127.0.0.1:1/x?sslmode=disable",
        f"postgresql://ann@127.0.0.1:1/x?password={PASSWORD}",
    ],
)
def test_database_password_never_shown_with_debug(cli_env: dict[str, str], url: str) -> None:
    runner = CliRunner()
    for args in (["--debug", "status"], ["status", "--json"], ["--debug", "search", "x"]):
        result = runner.invoke(app, args, env={**cli_env, "UNIVERSALRAG_DATABASE_URL": url})
        everything = result.stdout + result.stderr + repr(result.exception)
        assert result.exit_code == 1, everything
        assert PASSWORD not in everything, args


def test_database_password_not_in_python_traceback(tmp_path: Any) -> None:
    from universalrag.store import Store

    store = Store(f"postgresql://ann:{PASSWORD}@127.0.0.1:1/x", schema="s")
    with pytest.raises(UniversalRAGError) as info:
        store.server_info()
    assert PASSWORD not in _everything_about(info.value)
    assert PASSWORD not in repr(store)
