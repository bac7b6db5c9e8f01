"""The chat endpoint hung, failing (HTTP 500) or answering malformed output: nothing waits past the timeout
(retries included), routers fall back to the trained router, ``ask`` shows the evidence and says what happened.

The endpoint is a real HTTP server on 127.0.0.1 (tests/support/hostile_openai.py); the database is the real
PostgreSQL, the encoder the bundled MiniLM. Nothing times the machine: the deadline is checked with an injected
clock (``OpenAIClients(clock=..., sleep=...)``: each attempt's timeout and each pause are what the clock allows) and
by how many requests the server received.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from support.hostile_openai import HostileServer
from typer.testing import CliRunner

from universalrag.cli import app
from universalrag.errors import ConfigError, GenerationError, RoutingError
from universalrag.openai_client import OpenAIClients

runner = CliRunner()
MESSAGES = [{"role": "user", "content": "why?"}]


class FakeClock:
    """Seconds that pass only when the code waits (``sleep``) or an attempt uses its timeout up (``spend``)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.pauses: list[float] = []
        self.given: list[float] = []  # each attempt's timeout, as the deadline allowed it

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)

    def clients(self, server: HostileServer, *, timeout: float, max_retries: int) -> OpenAIClients:
        return OpenAIClients(
            server.base_url,
            api_key="sk-test",
            timeout=timeout,
            max_retries=max_retries,
            feature="the test",
            error_type=GenerationError,
            no_key="no key",
            clock=self,
            sleep=self.sleep,
            asleep=self.asleep,
        )

    def request(self, client: Any) -> Any:
        """One chat request; a timed-out attempt took its whole timeout on this clock."""
        import openai

        self.given.append(float(client.timeout))
        try:
            return client.chat.completions.create(model="m", messages=MESSAGES)
        except openai.APITimeoutError:
            self.now += float(client.timeout)
            raise

    def arequest(self, client: Any) -> Callable[[], Awaitable[Any]]:
        import openai

        async def run() -> Any:
            self.given.append(float(client.timeout))
            try:
                return await client.chat.completions.create(model="m", messages=MESSAGES)
            except openai.APITimeoutError:
                self.now += float(client.timeout)
                raise

        return run


def test_a_hung_model_costs_the_timeout_once_not_per_retry() -> None:
    import openai

    from universalrag.generate import OpenAIChatGenerator

    clock = FakeClock()
    with HostileServer("hang", hang_s=30) as server:
        with pytest.raises(openai.APITimeoutError):
            clock.clients(server, timeout=1.5, max_retries=3).call(clock.request)
        assert clock.given == [1.5] and clock.pauses == [] and server.requests == 1  # not 4 attempts of 1.5 s
        generator = OpenAIChatGenerator("m", base_url=server.base_url, timeout=1.5, max_retries=3)
        with pytest.raises(GenerationError, match="timed out after 1.5 s"):
            generator.generate("why?", [])
        assert server.requests == 2  # the generator's one attempt


def test_retries_on_500_stay_inside_the_deadline() -> None:
    import openai

    from universalrag.generate import OpenAIChatGenerator

    clock = FakeClock()
    with HostileServer("echo500") as server:
        with pytest.raises(openai.InternalServerError):
            clock.clients(server, timeout=2.0, max_retries=2).call(clock.request)
        # Three attempts (the retries did happen), each given what was left of the 2 s after the pauses.
        assert server.requests == 3 and clock.pauses == [0.5, 1.0] and clock.given == [2.0, 1.5, 0.5]
        generator = OpenAIChatGenerator("m", base_url=server.base_url, timeout=2.0, max_retries=2)
        with pytest.raises(GenerationError, match="HTTP 500"):
            generator.generate("why?", [])
        assert server.requests == 6


def test_no_retry_starts_that_the_deadline_could_not_hold() -> None:
    import openai

    clock = FakeClock()
    with HostileServer("echo500") as server:
        with pytest.raises(openai.InternalServerError):
            clock.clients(server, timeout=1.0, max_retries=5).call(clock.request)
    # After the first pause (0.5 s) the next (1 s) would end past the deadline: two attempts, not six.
    assert server.requests == 2 and clock.pauses == [0.5] and clock.given == [1.0, 0.5]


@pytest.mark.asyncio
async def test_async_generation_has_the_same_deadline() -> None:
    import openai

    from universalrag.generate import OpenAIChatGenerator

    clock = FakeClock()
    with HostileServer("hang", hang_s=30) as server:
        with pytest.raises(openai.APITimeoutError):
            await clock.clients(server, timeout=1.0, max_retries=3).acall(lambda client: clock.arequest(client)())
        assert clock.given == [1.0] and clock.pauses == [] and server.requests == 1
        generator = OpenAIChatGenerator("m", base_url=server.base_url, timeout=1.0, max_retries=3)
        with pytest.raises(GenerationError, match="timed out"):
            await generator.agenerate("why?", [])
        assert server.requests == 2


@pytest.mark.parametrize("mode", ["garbage", "bad_reply"])
def test_malformed_replies_name_the_endpoint(mode: str) -> None:
    from universalrag.routing.llm import LLMRouter

    with HostileServer(mode) as server:
        with pytest.raises(RoutingError) as info:
            LLMRouter("m", base_url=server.base_url, max_retries=0, timeout=5).route("which corpus?")
        message = str(info.value)
        assert server.base_url.removesuffix("/v1") in message and "Unterminated" not in message.split(":")[0]
    if mode == "garbage":
        from universalrag.generate import OpenAIChatGenerator

        with HostileServer(mode) as server, pytest.raises(GenerationError, match="malformed JSON") as info:
            OpenAIChatGenerator("m", base_url=server.base_url, max_retries=0).generate("why?", [])
        assert server.base_url.removesuffix("/v1") in str(info.value)


@pytest.mark.parametrize("mode", ["hang", "echo500", "garbage", "bad_reply"])
def test_llm_and_ensemble_routers_fall_back_to_the_trained_router(mode: str) -> None:
    from universalrag.routing import EnsembleRouter, LLMRouter, TrainedRouter

    query = "What was the population of Lisbon in 1900 according to the census table?"
    trained = TrainedRouter.default()
    # At most one attempt per retry; a hung model gets one attempt, its timeout spent, not one per retry.
    most = 1 if mode == "hang" else 3
    with HostileServer(mode, hang_s=30) as server:
        llm = LLMRouter("m", base_url=server.base_url, timeout=1.0, max_retries=2, fallback=trained)
        decision = llm.route(query)
        assert decision.router.startswith("llm->") and decision.routes
        assert 1 <= server.requests <= most
        asked = server.requests
        ensemble = EnsembleRouter.confident(
            trained, LLMRouter("m", base_url=server.base_url, timeout=1.0, max_retries=2), tau=1.0
        )  # asks the model unless the trained router is certain
        assert ensemble.route(query).routes
        assert 1 <= server.requests - asked <= most


def test_llm_timeout_setting_is_read_and_checked() -> None:
    from universalrag.config import Settings
    from universalrag.generate import OpenAIChatGenerator

    settings = Settings.from_env({"UNIVERSALRAG_LLM_TIMEOUT": "7.5", "UNIVERSALRAG_LLM_MODEL": "m"})
    assert settings.llm_timeout == 7.5
    generator = OpenAIChatGenerator.from_settings(settings)
    assert generator is not None and generator.timeout == 7.5
    with pytest.raises(ConfigError, match="UNIVERSALRAG_LLM_TIMEOUT"):
        Settings.from_env({"UNIVERSALRAG_LLM_TIMEOUT": "0"})
    with pytest.raises(ConfigError, match="must be a number"):
        Settings.from_env({"UNIVERSALRAG_LLM_TIMEOUT": "soon"})


@pytest.fixture
def kb_env(cli_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "lighthouse.txt").write_text(
        "Kestrel Point lighthouse was first lit in 1889. Its lamp is visible for 22 nautical miles.", "utf-8"
    )
    result = runner.invoke(app, ["ingest", str(folder), "--json"], env=cli_env)
    assert result.exit_code == 0, result.stdout + result.stderr
    return cli_env


@pytest.mark.parametrize("mode", ["hang", "echo500", "garbage"])
def test_ask_on_a_failing_model_shows_the_evidence_and_says_why(kb_env: dict[str, str], mode: str) -> None:
    with HostileServer(mode, hang_s=30) as server:
        env = {**kb_env, "UNIVERSALRAG_LLM_MODEL": "m", "UNIVERSALRAG_LLM_BASE_URL": server.base_url}
        result = runner.invoke(
            app,
            ["ask", "When was Kestrel Point lighthouse first lit?", "-k", "2", "--timeout", "1.5", "--no-server"],
            env=env,
        )
        out, err = result.stdout, result.stderr
        assert result.exit_code == 0, out + err
        assert "first lit in 1889" in out  # the evidence is shown
        assert "warning:" in err and "no answer" in err and server.base_url.removesuffix("/v1") in err
        if mode == "hang":
            assert "timed out after 1.5 s" in err and server.requests == 1  # one attempt: the model's share is bounded
        as_json = runner.invoke(
            app,
            ["ask", "When was Kestrel Point lighthouse first lit?", "--json", "--timeout", "1.5", "--no-server"],
            env=env,
        )
        data = json.loads(as_json.stdout)
        assert data["answer"] is None and data["warning"] and any("1889" in h["content"] for h in data["hits"])


def test_ask_timeout_comes_from_the_environment(kb_env: dict[str, str]) -> None:
    with HostileServer("hang", hang_s=30) as server:
        env = {
            **kb_env,
            "UNIVERSALRAG_LLM_MODEL": "m",
            "UNIVERSALRAG_LLM_BASE_URL": server.base_url,
            "UNIVERSALRAG_LLM_TIMEOUT": "1",
        }
        result = runner.invoke(app, ["ask", "When was the lighthouse lit?", "--no-server"], env=env)
    assert result.exit_code == 0 and "timed out after 1 s" in result.stderr


def test_queries_from_stdin_and_files(kb_env: dict[str, str], tmp_path: Path) -> None:
    query_file = tmp_path / "q.txt"
    query_file.write_text("When was Kestrel Point lighthouse first lit?\n", "utf-8")
    for args, stdin in (
        (["search", "-", "--json"], "When was Kestrel Point lighthouse first lit?"),
        (["search", "--query-file", str(query_file), "--json"], None),
        (["ask", "-", "--json"], "lighthouse lamp range"),
        (["route", "--query-file", str(query_file), "--json"], None),
        (["route", "-", "--json"], "sales figures per quarter in a table"),
    ):
        result = runner.invoke(app, [*args, "--no-server"], env=kb_env, input=stdin)
        assert result.exit_code == 0, (args, result.stdout, result.stderr)
        assert json.loads(result.stdout)
    big = tmp_path / "big.txt"
    big.write_bytes(b"lighthouse " * 100_000)  # 1.1 MB
    result = runner.invoke(app, ["search", "--query-file", str(big), "--no-server"], env=kb_env)
    assert result.exit_code == 1 and "longer than 1 MB" in result.stderr
    result = runner.invoke(app, ["search", "--no-server"], env=kb_env)
    assert result.exit_code == 2 and "Missing argument" in result.stderr
    result = runner.invoke(app, ["search", "x", "--query-file", str(query_file), "--no-server"], env=kb_env)
    assert result.exit_code == 2 and "not both" in result.stderr
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"\xff\xfe\x00\x81 query")
    result = runner.invoke(app, ["route", "--query-file", str(binary), "--no-server"], env=kb_env)
    assert result.exit_code == 1 and "not UTF-8" in result.stderr


def test_query_on_a_failing_model_returns_the_evidence_and_the_reason(rag) -> None:  # type: ignore[no-untyped-def]
    """The Python API behaves like ``ask``: a model answering HTTP 500 gives an answer without text, with the
    evidence and a warning naming what happened, instead of an exception that throws the evidence away."""
    from universalrag.generate import OpenAIChatGenerator
    from universalrag.pipeline import UniversalRAG

    with HostileServer("echo500") as server:
        generator = OpenAIChatGenerator("m", base_url=server.base_url, api_key="sk-test-not-a-secret", timeout=5)
        answering = UniversalRAG(
            store=rag.store, embedder=rag.embedder, router=rag.router, generator=generator, visual_encoder=None
        )
        answer = answering.query("Who designed the Kestrel Point lighthouse?", k=2)
    assert answer.text is None and answer.warning and "500" in answer.warning
    assert answer.hits and "Agnes Ferrow" in answer.hits[0].content
    assert answer.to_dict()["warning"] == answer.warning and "generate" in answer.timings
    assert "sk-test-not-a-secret" not in answer.warning
