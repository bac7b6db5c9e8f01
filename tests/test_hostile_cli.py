"""The command line against a hostile local user and hostile clients: a home another user can write, a socket
planted by another user, a server answer full of terminal escapes, a client that connects and stalls. The
planted server is a real Unix socket server in a thread (the adversary); the stalled client a real socket; the
server under test the real `universalrag serve` process."""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from universalrag.cli.client import forward
from universalrag.cli.trust import strip_controls
from universalrag.errors import ConfigError

SCRIPT = str(Path(sys.executable).with_name("universalrag"))
PASSWORD = "hunter2-db-secret"
API_KEY = "sk-test-0123456789-planted"
HOSTILE = "answer \x1b]0;owned\x07\x1b[2J\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\ \x1b[31mred\x1b[0m\r\n"


class Planted:
    """A server another user planted: records every byte it is sent and answers with terminal escapes."""

    def __init__(self, path: Path) -> None:
        self.received = b""
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(4)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                data = b""
                while not data.endswith(b"\n"):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                self.received += data
                reply = {"v": 1, "code": 0, "stdout": HOSTILE, "stderr": "\x1b[?1049h"}
                conn.sendall(json.dumps(reply).encode() + b"\n")

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="urh-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.setenv("UNIVERSALRAG_HOME", str(home))
    monkeypatch.setenv("UNIVERSALRAG_DATABASE_URL", f"postgresql://app:{PASSWORD}@db.example:5432/rag")
    monkeypatch.setenv("UNIVERSALRAG_LLM_API_KEY", API_KEY)


def test_a_home_others_can_write_is_refused_and_nothing_is_sent(secret_env: None, home: Path) -> None:
    os.chmod(home, 0o777)
    planted = Planted(home / "serve.sock")
    try:
        with pytest.raises(ConfigError, match="can be written by other users"):
            forward(["search", "where is the budget"], stdout=io.StringIO(), stderr=io.StringIO())
    finally:
        planted.close()
    assert planted.received == b""


def test_a_socket_of_another_user_is_refused(secret_env: None, home: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a socket to another user needs root")
    planted = Planted(home / "serve.sock")
    os.chown(home / "serve.sock", 65534, 65534)
    try:
        with pytest.raises(ConfigError, match="belongs to another user"):
            forward(["search", "where is the budget"], stdout=io.StringIO(), stderr=io.StringIO())
    finally:
        planted.close()
    assert planted.received == b""


def test_no_secret_is_sent_and_the_answer_is_printed_without_escapes(secret_env: None, home: Path) -> None:
    planted = Planted(home / "serve.sock")  # our own socket, in our own home: trusted, but still never told secrets
    out, err = io.StringIO(), io.StringIO()
    try:
        code = forward(["search", "where is the budget"], stdout=out, stderr=err)
    finally:
        planted.close()
    assert code == 0
    sent = planted.received.decode()
    assert PASSWORD not in sent and API_KEY not in sent and "db.example" not in sent
    assert "UNIVERSALRAG_LLM_API_KEY" in json.loads(sent)["secrets"]  # a digest, so the server can compare
    assert "\x1b" not in out.getvalue() + err.getvalue() and "\r" not in out.getvalue()
    assert "answer" in out.getvalue() and "click" in out.getvalue() and "red" in out.getvalue()


def test_strip_controls_keeps_colours_only_when_asked() -> None:
    assert strip_controls("a\x1b[31mb\x1b[0mc") == "abc"
    assert strip_controls("a\x1b[31mb\x1b[0mc", keep_colours=True) == "a\x1b[31mb\x1b[0mc"
    assert strip_controls("x\x1b]8;;http://e/\x07y\x1b[2Jz\x9b31m", keep_colours=True) == "xyz"


def _env(cli_env: dict[str, str], home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNIVERSALRAG_")}
    return {**env, **cli_env, "UNIVERSALRAG_HOME": str(home)}


@pytest.mark.slow
def test_a_stalled_client_does_not_block_the_server(cli_env: dict[str, str], home: Path) -> None:
    env = _env(cli_env, home)
    server = subprocess.Popen(
        [SCRIPT, "serve", "--no-preload"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while not (home / "serve.sock").exists():
            assert server.poll() is None, server.stderr.read()  # type: ignore[union-attr]
            assert time.monotonic() < deadline
            time.sleep(0.1)
        stalled = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stalled.connect(str(home / "serve.sock"))
        stalled.sendall(b"{")  # one byte, then nothing
        started = time.monotonic()
        done = subprocess.run(
            [SCRIPT, "route", "--json", "when did Apollo 11 land"], env=env, capture_output=True, text=True, timeout=180
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)
        line = server.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("serving")
        assert server.stdout.readline().startswith("route: exit 0"), "the server answered it"  # type: ignore[union-attr]
        assert time.monotonic() - started < 170
        stalled.close()
    finally:
        server.terminate()
        server.wait(timeout=60)


def test_file_names_and_stored_text_reach_the_terminal_without_escapes(cli_env: dict[str, str], tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "report\x1b]0;owned\x07\x1b[2J.txt").write_text(
        "Budget \x1b]8;;http://evil.example/\x07review\x1b]8;;\x07 of the lighthouse keepers on Thursday.\n"
    )
    (folder / "two\nlines.txt").write_text("The ferry to the lighthouse leaves at nine.\n")
    env = {**os.environ, **cli_env}
    done = subprocess.run([SCRIPT, "ingest", str(folder)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    assert "\x1b" not in out and "\x07" not in out
    assert any(line.startswith("added: ") and line.endswith("two\\nlines.txt") for line in out.splitlines()), out
    found = subprocess.run(
        [SCRIPT, "search", "--no-server", "budget review lighthouse keepers"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert found.returncode == 0, found.stderr
    assert "Budget" in found.stdout and "\x1b" not in found.stdout + found.stderr and "\x07" not in found.stdout


def test_a_server_that_never_answers_is_passed_over(
    secret_env: None, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that takes the connection and never answers: the client gives up after its reply timeout and the
    command runs in the calling process (``forward`` returns ``None``)."""
    import universalrag.cli.client as client

    monkeypatch.setattr(client, "REPLY_TIMEOUT_S", 1.0)
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.bind(str(home / "serve.sock"))
    silent.listen(1)
    try:
        started = time.monotonic()
        assert forward(["route", "which corpus"], stdout=io.StringIO(), stderr=io.StringIO()) is None
        assert time.monotonic() - started < 10
    finally:
        silent.close()
