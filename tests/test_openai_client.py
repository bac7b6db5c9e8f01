"""The shared ``openai`` client helpers against a real OpenAI-compatible HTTP server on 127.0.0.1
(tests/support/openai_server.py): key choice, client reuse per thread and per event loop, redaction, and the
translation of SDK errors. No mocks: the ``openai`` client speaks real HTTP."""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
from typing import Any

import pytest

pytest.importorskip("openai")

import openai

from tests.support.openai_server import OpenAICompatServer
from universalrag import openai_client
from universalrag.errors import ConfigError, EmbeddingError, IngestError, MissingDependencyError
from universalrag.openai_client import (
    PLACEHOLDER_KEY,
    OpenAIClients,
    redact,
    redact_url,
    translate_error,
)

SECRET = "sk-wrong-key-0123456789abcdef"


def clients(base_url: str | None, api_key: str | None = None, **kwargs: Any) -> OpenAIClients:
    opts: dict[str, Any] = {
        "timeout": 5.0,
        "max_retries": 0,
        "feature": "tests",
        "error_type": ConfigError,
        "no_key": "No API key for the tests.",
    }
    opts.update(kwargs)
    return OpenAIClients(base_url, api_key=api_key, **opts)


def failure(call: Any) -> BaseException:
    """The SDK's exception raised by ``call``, to translate."""
    with pytest.raises(openai.OpenAIError) as info:
        call()
    return info.value


def translate(e: BaseException, base_url: str | None, **kwargs: Any) -> EmbeddingError | None:
    return translate_error(
        e, error_type=EmbeddingError, what="The test request", base_url=base_url, api_key=SECRET, **kwargs
    )


def test_public_api_is_pinned() -> None:
    assert sorted(openai_client.__all__) == [
        "OpenAIClients",
        "PLACEHOLDER_KEY",
        "chat_endpoint",
        "redact",
        "redact_url",
        "translate_error",
    ]


# -- keys and clients ------------------------------------------------------------------------------------


def test_placeholder_key_only_when_no_key_is_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with OpenAICompatServer() as srv:
        clients(srv.base_url).sync().models.list()
        monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
        clients(srv.base_url).sync().models.list()
        clients(srv.base_url, "sk-given").sync().models.list()
        sent = [r["headers"]["authorization"] for r in srv.requests]
    assert sent == [f"Bearer {PLACEHOLDER_KEY}", "Bearer sk-from-the-environment", "Bearer sk-given"]


def test_no_key_and_no_base_url_raises_the_callers_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    none = clients(None, error_type=EmbeddingError, no_key="No API key: set OPENAI_API_KEY.")  # no I/O yet
    with pytest.raises(EmbeddingError, match="set OPENAI_API_KEY") as err:
        none.sync()
    assert isinstance(err.value.__cause__, Exception)


def test_missing_package_names_the_extra_and_the_feature(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # what an environment without the extra looks like
    with pytest.raises(MissingDependencyError, match=r"for tests.*universalrag-postgres\[openai\]"):
        clients("http://127.0.0.1:9/v1", "k").sync()


def test_sync_client_is_created_once_for_all_threads() -> None:
    c = clients("http://127.0.0.1:9/v1", "k")
    seen: list[Any] = []
    threads = [threading.Thread(target=lambda: seen.append(c.sync())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 8 and all(client is seen[0] for client in seen)
    assert type(seen[0]).__name__ == "OpenAI"


def test_one_async_client_per_event_loop() -> None:
    with OpenAICompatServer() as srv:
        c = clients(srv.base_url, "k")

        async def use() -> Any:
            first, again = c.async_(), c.async_()
            assert first is again
            assert [m.id async for m in first.models.list()] == ["test-model"]
            return first

        one = asyncio.run(use())
        two = asyncio.run(use())  # a new loop: a new client, which works
    assert one is not two and type(one).__name__ == "AsyncOpenAI"
    assert len(srv.requests) == 2
    with pytest.raises(RuntimeError):
        c.async_()  # only inside a running event loop


def test_repr_hides_the_key_and_url_credentials() -> None:
    text = repr(clients("http://user:pw@127.0.0.1:9/v1?api-key=abc", SECRET))
    assert SECRET not in text and "pw" not in text and "abc" not in text and "***" in text


# -- redaction -------------------------------------------------------------------------------------------


def test_redact_removes_secrets_and_key_like_tokens() -> None:
    text = f"Bad key {SECRET}; the server saw sk-************cdef and pk_live_abcdef12, token hunter2."
    out = redact(text, [None, "hunter2"])
    assert SECRET not in out and "cdef" not in out and "abcdef12" not in out and "hunter2" not in out
    assert out.startswith("Bad key ***;") and out.count("***") == 4
    assert redact("x" * 500, limit=50) == "x" * 47 + "..."


def test_redact_url() -> None:
    assert redact_url(None) is None
    assert redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert redact_url("https://user:pw@api.example.com/v1?api-key=abc#frag") == "https://***@api.example.com/v1"
    assert redact_url("http://[::1]:11434/v1") == "http://[::1]:11434/v1"
    assert redact_url("http://host:notaport/v1") == "http://host/v1"


# -- error translation -----------------------------------------------------------------------------------


def test_401_never_shows_the_key_nor_the_servers_echo_of_it() -> None:
    with OpenAICompatServer(api_key="sk-the-right-key-abcdef") as srv:
        url = srv.base_url
        e = failure(lambda: clients(url, SECRET).sync().models.list())
    error = translate(e, url)
    assert isinstance(error, EmbeddingError)
    message = str(error)
    assert message.startswith(f"The test request to {url} failed (HTTP 401): the endpoint refused")
    assert "API key" in message
    assert SECRET not in message and SECRET[-4:] not in message and SECRET[:6] not in message


def test_status_errors_carry_the_servers_message_and_the_callers_hint() -> None:
    with OpenAICompatServer(status=500) as srv:
        url = srv.base_url
        e = failure(lambda: clients(url, SECRET).sync().models.list())
    default = str(translate(e, url))
    custom = str(translate(e, url, hints={"server": "Restart the test server."}))
    assert "(HTTP 500): Test server configured to answer with status 500." in default
    assert default.endswith("check its logs and retry.") and custom.endswith("Restart the test server.")
    with pytest.raises(ValueError, match="Unknown hint kinds"):
        translate(e, url, hints={"servr": "typo"})


def test_timeout_and_refused_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    with OpenAICompatServer(delay_s=1.5) as srv:
        e = failure(lambda: clients(srv.base_url, "k", timeout=0.2).sync().models.list())
        assert "timed out after 0.2 s. Raise timeout=" in str(translate(e, srv.base_url, timeout=0.2))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://user:pw@127.0.0.1:{port}/v1"
    e = failure(lambda: clients(url, "k", timeout=2).sync().models.list())
    message = str(translate(e, url, hints={"connection": "Start the server."}))
    assert f"to http://***@127.0.0.1:{port}/v1 failed: " in message and message.endswith("Start the server.")
    assert "pw" not in message


def test_other_exceptions_are_left_to_the_caller_and_error_types_may_take_more_arguments() -> None:
    assert translate(ValueError("not from the SDK"), None) is None
    with OpenAICompatServer(status=404) as srv:
        e = failure(lambda: clients(srv.base_url, "k").sync().models.list())
        error = translate_error(
            e,
            error_type=lambda reason: IngestError("talk.mp4", reason),
            what="the transcription request",
            base_url=None,
            api_key=None,
        )
    assert isinstance(error, IngestError) and error.path == "talk.mp4"
    assert str(error).startswith("talk.mp4: the transcription request to the OpenAI API failed (HTTP 404)")
