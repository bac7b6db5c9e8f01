"""``universalrag db``: the embedded database as a database a user can reach from another shell — started and left
running by ``db start``, its URL from ``db url`` (no password), psql through ``db psql``, stopped by ``db stop``,
and a clear line (exit 1) when it is not running. Real processes, a real embedded server in a home of its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

pytestmark = pytest.mark.slow  # starts and stops a server of its own (a few seconds)


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNIVERSALRAG_")}
    env["UNIVERSALRAG_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "universalrag.cli", *args], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def home() -> Iterator[Path]:
    # outside pytest's temp tree, which the server's system user may not enter when the tests run as root
    path = Path(tempfile.mkdtemp(prefix="universalrag-db-"))
    yield path
    _cli(path, "db", "stop", "--force")
    shutil.rmtree(path, ignore_errors=True)


def test_start_url_psql_stop(home: Path) -> None:
    before = _cli(home, "db", "url")
    assert before.returncode == 1 and "not running" in before.stderr and "universalrag db start" in before.stderr
    assert "not running" in _cli(home, "db", "status").stdout

    started = _cli(home, "db", "start")
    assert started.returncode == 0, started.stderr
    assert "stays up until `universalrag db stop`" in started.stdout
    # the process that started it has exited: the server is still there, reachable from this process
    url = _cli(home, "db", "url").stdout.strip()
    assert "host=" in url and "port=" in url and ":@" not in url  # socket directory and port, no password
    with psycopg.connect(url, connect_timeout=10) as conn:
        assert conn.execute("SELECT 6 * 7").fetchone() == (42,)
    status = _cli(home, "db", "status", "--json")
    assert '"running": true' in status.stdout and '"kept_running": true' in status.stdout
    assert _cli(home, "db", "start").returncode == 0  # starting a running server is harmless

    psql = _cli(home, "db", "psql", "--", "-At", "-c", "SELECT 'from ' || 'psql'")
    assert psql.returncode == 0 and "from psql" in psql.stdout, psql.stderr
    # a command run in between does not stop the server when it exits
    assert _cli(home, "db", "url").stdout.strip() == url

    stopped = _cli(home, "db", "stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(url, connect_timeout=3)
    assert _cli(home, "db", "url").returncode == 1


def test_a_configured_url_is_printed_with_its_password_hidden_unless_asked(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNIVERSALRAG_")}
    env.update(UNIVERSALRAG_HOME=str(tmp_path), UNIVERSALRAG_DATABASE_URL="postgresql://app:s3cret@db.example:5433/kb")
    run = [sys.executable, "-m", "universalrag.cli", "db", "url"]
    hidden = subprocess.run(run, env=env, capture_output=True, text=True, timeout=60)
    assert hidden.stdout.strip() == "postgresql://***@db.example:5433/kb"
    shown = subprocess.run([*run, "--show-password"], env=env, capture_output=True, text=True, timeout=60)
    assert shown.stdout.strip() == "postgresql://app:s3cret@db.example:5433/kb"
