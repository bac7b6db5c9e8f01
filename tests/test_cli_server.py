"""`universalrag serve` and the command's use of it, with real processes, the real database and encoder.

The server is started as a subprocess on a Unix socket in a temporary UNIVERSALRAG_HOME; the commands are run
as the installed console script, as a user would.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import DATA

SCRIPT = str(Path(sys.executable).with_name("universalrag"))
QUESTION = "When did the Apollo 11 crew land on the Moon?"


def _env(cli_env: dict[str, str], home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNIVERSALRAG_")}
    return {**env, **cli_env, "UNIVERSALRAG_HOME": str(home)}


def cli(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SCRIPT, *args], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def home() -> Iterator[Path]:
    """A short home directory (Unix socket paths are limited to about 100 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="urs-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


class Served:
    """A running `universalrag serve` process; its stdout holds one line per request."""

    def __init__(self, env: dict[str, str], home: Path) -> None:
        self.proc = subprocess.Popen(
            [SCRIPT, "serve"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.socket = home / "serve.sock"
        deadline = time.monotonic() + 300
        while not self.socket.exists():
            assert self.proc.poll() is None, self.proc.stderr.read()  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "serve did not start"
            time.sleep(0.1)
        self.banner = self.proc.stdout.readline()  # type: ignore[union-attr]

    def request_line(self) -> str:
        return self.proc.stdout.readline().strip()  # type: ignore[union-attr]

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)


@pytest.fixture
def served(cli_env: dict[str, str], home: Path) -> Iterator[tuple[dict[str, str], Served]]:
    env = _env(cli_env, home)
    done = cli(env, "ingest", str(DATA / "corpus" / "apollo_11.txt"), str(DATA / "corpus" / "honeybee_behaviour.md"))
    assert done.returncode == 0, done.stderr
    server = Served(env, home)
    yield env, server
    server.stop()


def _without_timing(obj: object, *, key: str = "") -> object:
    """``obj`` without what differs between two runs of one command: timings, and the id each logged route
    decision gets."""
    if isinstance(obj, dict):
        dropped = ("latency_ms", "timings_ms", "id") if key == "decision" else ("latency_ms", "timings_ms")
        return {k: _without_timing(v, key=k) for k, v in obj.items() if k not in dropped}
    if isinstance(obj, list):
        return [_without_timing(v) for v in obj]
    return obj


def test_served_commands_give_the_same_results_as_in_process(served: tuple[dict[str, str], Served]) -> None:
    env, server = served
    assert str(server.socket) in server.banner
    for args in (
        ["search", QUESTION, "--json"],
        ["ask", QUESTION, "--json"],
        ["search", QUESTION, "-c", "paragraph", "-k", "3"],
        ["route", QUESTION, "--bound"],
    ):
        remote = cli(env, *args)
        assert remote.returncode == 0, remote.stderr
        assert server.request_line().startswith(f"{args[0]}: exit 0")  # the server answered it
        local = cli(env, *args, "--no-server")
        assert local.returncode == 0, local.stderr
        if "--json" in args:
            assert _without_timing(json.loads(remote.stdout)) == _without_timing(json.loads(local.stdout))
        elif args[0] == "search":
            assert remote.stdout == local.stdout
        else:  # the route line carries the router's latency; the scores below it match
            assert remote.stdout.splitlines()[1:] == local.stdout.splitlines()[1:]
    hits = json.loads(cli(env, "search", QUESTION, "--json").stdout)
    assert "apollo" in hits[0]["uri"] and hits[0]["rank"] == 1


def _scores(result: subprocess.CompletedProcess[str]) -> dict[str, float]:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["scores"]  # type: ignore[no-any-return]


def test_the_server_routes_with_the_combiner_adapted_or_reset_after_it_started(
    served: tuple[dict[str, str], Served],
) -> None:
    """`router adapt` and `router reset` (other processes) change the stored combiner; the running server notices
    before its next request and decides as `--no-server` does."""
    env, server = served
    shipped = _scores(cli(env, "ask", QUESTION, "--json"))
    assert server.request_line().startswith("ask: exit 0")
    adapted = cli(env, "router", "adapt", "--force", "--per-corpus", "6", "--json")
    assert adapted.returncode == 0 and json.loads(adapted.stdout)["saved"], adapted.stderr
    local = _scores(cli(env, "ask", QUESTION, "--json", "--no-server"))
    assert local != shipped  # the adapted combiner decides differently, so a stale server would show
    assert _scores(cli(env, "ask", QUESTION, "--json")) == local
    assert server.request_line().startswith("ask: exit 0")
    assert cli(env, "router", "reset").returncode == 0
    assert _scores(cli(env, "ask", QUESTION, "--json")) == _scores(cli(env, "ask", QUESTION, "--json", "--no-server"))
    assert _scores(cli(env, "ask", QUESTION, "--json")) == shipped


def test_the_server_searches_what_other_processes_ingest_and_create(served: tuple[dict[str, str], Served]) -> None:
    """A running server caches the corpus registry and corpus sizes; rows ingested into a corpus it knew as empty,
    and a corpus created after it started, by other processes, are searched within the caches' short lives (a
    corpus known empty: a second; the registry: two seconds), not after a restart."""
    from universalrag.store.row_estimates import EMPTY_TTL_S
    from universalrag.store.store import REGISTRY_TTL_S

    env, server = served
    table_question = "How many games did the Denver Nuggets win in the 2023 NBA season?"
    before = json.loads(cli(env, "search", table_question, "--json").stdout)
    assert server.request_line().startswith("search: exit 0") and not any(h["corpus"] == "table" for h in before)
    assert cli(env, "ingest", str(DATA / "tables" / "nba_2023.csv")).returncode == 0  # another process
    created = cli(
        env,
        "corpora",
        "create",
        "coast",
        "--modality",
        "text",
        "--granularity",
        "paragraph",
        "--description",
        "Guides to lighthouses and the coast",
    )
    assert created.returncode == 0, created.stderr
    lighthouse = DATA / "corpus" / "kestrel_point_lighthouse.txt"
    assert cli(env, "ingest", "--corpus", "coast", str(lighthouse)).returncode == 0
    time.sleep(max(EMPTY_TTL_S, REGISTRY_TTL_S) + 0.3)
    hits = json.loads(cli(env, "search", table_question, "--json").stdout)
    assert server.request_line().startswith("search: exit 0")
    assert hits and hits[0]["corpus"] == "table" and "nba_2023" in hits[0]["uri"]
    hits = json.loads(
        cli(env, "search", "What does the Kestrel Point lighthouse look like from the sea?", "--json").stdout
    )
    assert hits and hits[0]["corpus"] == "coast" and "kestrel" in hits[0]["uri"]


def test_served_errors_and_usage_look_like_in_process_ones(served: tuple[dict[str, str], Served]) -> None:
    env, server = served
    remote = cli(env, "search", "x", "--corpus", "nope")
    assert server.request_line().startswith("search: exit 1")
    local = cli(env, "search", "x", "--corpus", "nope", "--no-server")
    assert remote.returncode == local.returncode == 1
    assert remote.stderr == local.stderr and remote.stderr.startswith("error: No corpus named 'nope'")
    remote = cli(env, "search")
    assert server.request_line().startswith("search: exit 2")
    local = cli(env, "search", "--no-server")
    assert remote.returncode == local.returncode == 2 and remote.stderr == local.stderr
    assert "Usage: universalrag search" in remote.stderr and "Missing argument" in remote.stderr
    # other settings (another schema) are served too, initialised on first use
    other = cli(env, "--schema", env["UNIVERSALRAG_SCHEMA"] + "_b", "search", QUESTION, "--json")
    assert other.returncode == 0 and json.loads(other.stdout) == []
    assert server.request_line().startswith("search: exit 0")


def test_commands_run_in_process_when_the_server_is_gone(served: tuple[dict[str, str], Served]) -> None:
    env, server = served
    server.proc.kill()  # no clean-up: the socket file stays behind
    server.proc.wait(timeout=60)
    assert server.socket.exists()
    result = cli(env, "route", QUESTION, "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["routes"][0] == "paragraph"
    # a new server replaces the stale socket
    again = Served(env, server.socket.parent)
    try:
        assert cli(env, "route", QUESTION, "--json").returncode == 0
        assert again.request_line().startswith("route: exit 0")
    finally:
        assert again.stop() == 0
    assert not server.socket.exists()


def test_a_second_server_on_the_same_home_is_refused(served: tuple[dict[str, str], Served]) -> None:
    env, _ = served
    second = cli(env, "serve", "--no-preload", timeout=120)
    assert second.returncode == 1 and "already running" in second.stderr


def test_one_text_encoder_per_process_with_a_user_corpus(settings) -> None:  # type: ignore[no-untyped-def]
    """The example router that routes user-defined corpora reuses the pipeline's text encoder: routing to a
    user corpus loads at most one more MiniLM copy in this process (none when another test loaded it)."""
    import gc

    from universalrag.cli.context import Session
    from universalrag.embed import TransformersEmbedder
    from universalrag.routing.examples import default_embedder
    from universalrag.types import CorpusSpec, Granularity, Modality

    def loaded() -> int:
        return sum(1 for o in gc.get_objects() if isinstance(o, TransformersEmbedder) and "loaded=True" in repr(o))

    before = loaded()
    session = Session()
    rag = session.rag(settings)
    try:
        rag.init()
        rag.store.create_corpus(
            CorpusSpec(
                name="recipes",
                modality=Modality.TEXT,
                granularity=Granularity.PARAGRAPH,
                description="Cooking recipes",
                dimension=384,
                embedder=rag.embedder.name,
                metadata={"examples": ["How long do I bake sourdough?"]},
            )
        )
        recipe = DATA / "corpus" / "sourdough_baking.md"
        assert rag.ingest([recipe], corpus="recipes").ok
        decision = rag.route("How long should sourdough bread bake?")
        assert decision.routes[0] == "recipes"
        assert "recipes" in (decision.evidence or {})  # decided with the corpus's probe and its example queries
        assert rag.embedder is default_embedder() and loaded() - before <= 1
        # a second settings object (another schema) shares the same encoder
        other = session.rag(settings.with_(schema=settings.schema + "_x"))
        assert other.embedder is rag.embedder
    finally:
        session.close()
