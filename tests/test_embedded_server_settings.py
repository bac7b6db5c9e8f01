"""The embedded PostgreSQL is sized for vector search: its first start sets ``shared_buffers`` (effective from the
next start), and a value the user set is kept. Real server processes in a temporary home of their own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

SHOW = """
import sys
from pathlib import Path
import psycopg
from universalrag.store.embedded import embedded_url
with psycopg.connect(embedded_url(Path(sys.argv[1])), autocommit=True) as conn:
    if len(sys.argv) > 2:
        conn.execute("ALTER SYSTEM SET shared_buffers = '" + sys.argv[2] + "'")
    print(conn.execute("SHOW shared_buffers").fetchone()[0], flush=True)
"""


def _mb(value: str) -> int:
    """A size as SHOW prints it (``128MB``, ``2GB``) in megabytes."""
    return int(value[:-2]) * (1024 if value.endswith("GB") else 1)


def _show(home: Path, *set_to: str) -> str:
    """``SHOW shared_buffers`` in a process of its own, which starts the server and stops it on exit."""
    out = subprocess.run(
        [sys.executable, "-c", SHOW, str(home), *set_to], capture_output=True, text=True, timeout=180, check=True
    )
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_the_first_start_sizes_shared_buffers_and_a_user_value_is_kept() -> None:
    from universalrag.store.embedded import shared_buffers_size

    home = Path(tempfile.mkdtemp(prefix="universalrag-buffers-"))  # the server's system user must enter it
    os.chmod(home, 0o755)
    try:
        assert _show(home) == "128MB"  # PostgreSQL's default on the very first start...
        wanted = shared_buffers_size()
        assert _mb(_show(home)) == _mb(wanted)  # ...ours from the next start on
        assert (home / "pgdata" / "postgresql.auto.conf").read_text().count("shared_buffers") == 1
        _show(home, "256MB")  # the user's own value, set with ALTER SYSTEM
        assert _show(home) == "256MB"
        assert _show(home) == "256MB"  # kept: not overwritten by ours
    finally:
        shutil.rmtree(home, ignore_errors=True)
