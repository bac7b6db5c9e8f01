"""Ctrl-C during a folder ingest: the command stops within seconds, keeps every file whose passages were embedded
(written before it stops), says how many, and the same command continues. A real subprocess, a real SIGINT, real
pages of the PostgreSQL manual Debian ships (postgresql-doc-15; skipped where it is not installed)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from universalrag.cli import app

MANUAL = Path("/usr/share/doc/postgresql-doc-15/html")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not MANUAL.is_dir(), reason="the PostgreSQL 15 manual (apt install postgresql-doc-15) is absent"
    ),
]


def _pages(folder: Path, n: int) -> None:
    folder.mkdir()
    for page in sorted(MANUAL.glob("runtime-config-*.html"))[:n] + sorted(MANUAL.glob("sql-*.html"))[: n - 18]:
        shutil.copy(page, folder / page.name)


def test_one_ctrl_c_stops_within_seconds_and_keeps_every_embedded_file(cli_env: dict[str, str], tmp_path: Path) -> None:
    folder = tmp_path / "manual"
    _pages(folder, 40)
    files = len(list(folder.iterdir()))
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNIVERSALRAG_")} | cli_env
    proc = subprocess.Popen(
        [sys.executable, "-m", "universalrag.cli", "ingest", str(folder)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:  # progress within the group: passages embedded, named by their file
        seen.append(line)
        if " passages embedded" in line:
            break
    assert any(" passages embedded" in line for line in seen), "".join(seen)
    proc.send_signal(signal.SIGINT)
    asked = time.monotonic()
    out, err = proc.communicate(timeout=300)
    took = time.monotonic() - asked
    assert proc.returncode == 130, err
    assert took < 10, f"stopping took {took:.1f} s"  # one embedding call and the writes of the files it completed
    assert "interrupted: stopped after" in err and "Run the same command again to continue" in err
    kept = int(err.split("files: ", 1)[1].split(" sources were committed")[0])
    assert kept == out.count("added: ")  # every file reported as added is committed, and no other
    assert kept < files

    result = CliRunner().invoke(app, ["ingest", str(folder), "--json"], env=cli_env)
    report = json.loads(result.stdout)
    assert result.exit_code == 0 and report["unchanged"] == kept and report["added"] == files - kept
