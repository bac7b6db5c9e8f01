"""A script that never calls ``close()`` ends quietly: the store's engines are disposed when it is collected or the
interpreter exits, without psycopg's "deleted while still open" warning, one per pooled connection. Real PostgreSQL, a
real interpreter in a subprocess."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
import sqlalchemy as sa
from universalrag.store import Store
store = Store(sys.argv[1], schema="public")
with store.engine.connect() as conn:
    assert conn.execute(sa.text("select 1")).scalar() == 1
print("done")
"""


def test_a_store_left_open_closes_its_connections_at_exit(database_url: str) -> None:
    result = subprocess.run(
        [sys.executable, "-X", "dev", "-c", SCRIPT, database_url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "done"
    assert "ResourceWarning" not in result.stderr
