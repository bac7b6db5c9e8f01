"""Model answers kept by the hash of what was asked, so that asking again costs no call.

:class:`ResponseCache` is a small SQLite file (the standard library's ``sqlite3``; by default
``<UNIVERSALRAG_HOME>/cache/model-answers.sqlite3``) mapping a key to a JSON value. :func:`request_key` makes the
key: SHA-256 over the model, the prompt version and the request itself (its texts and the bytes of its pictures),
so a changed picture, neighbourhood, prompt or model asks again and nothing else does. The file holds at most
``max_entries`` answers (the oldest go first); a cache that cannot be read or written is logged and skipped, never
fatal: it only saves calls.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["ResponseCache", "cache_path", "request_key"]

_log = logging.getLogger(__name__)

#: Answers beyond ``max_entries`` are dropped at the first write of a cache object, then every this many writes.
_PRUNE_EVERY = 256


def cache_path(settings: Settings) -> Path:
    """Where model answers are cached for ``settings``: ``<UNIVERSALRAG_HOME>/cache/model-answers.sqlite3``."""
    return Path(settings.home_dir) / "cache" / "model-answers.sqlite3"


def request_key(*, model: str, prompt_version: str, kind: str, payload: Any) -> str:
    """The cache key of one request: SHA-256 (hex) of the model, prompt version, kind and the JSON of ``payload``
    (bytes in it are hashed first, so a picture counts by its content)."""

    def plain(value: Any) -> Any:
        if isinstance(value, bytes):
            return {"sha256": hashlib.sha256(value).hexdigest()}
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    text = json.dumps([model, prompt_version, kind, plain(payload)], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class ResponseCache:
    """Answers by key in the SQLite file at ``path`` (created on first use; the constructor does no I/O).
    Thread-safe: one connection, one lock."""

    def __init__(self, path: str | Path, *, max_entries: int = 200_000) -> None:
        self.path = Path(path)
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._broken = False
        self.hits = 0
        self._puts = 0

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is None and not self._broken:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, check_same_thread=False, timeout=10)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, value TEXT NOT NULL, at REAL)")
                db.execute("CREATE INDEX IF NOT EXISTS answers_at ON answers (at)")
                db.commit()
                self._db = db
            except (OSError, sqlite3.Error) as e:
                _log.warning(
                    "The model answer cache %s cannot be opened (%s); every answer is asked for.", self.path, e
                )
                self._broken = True
        return self._db

    def get(self, key: str) -> Any | None:
        """The value stored under ``key``, or ``None``."""
        with self._lock:
            db = self._connect()
            if db is None:
                return None
            try:
                row = db.execute("SELECT value FROM answers WHERE key = ?", (key,)).fetchone()
            except sqlite3.Error as e:
                _log.warning("The model answer cache %s cannot be read (%s).", self.path, e)
                return None
        if row is None:
            return None
        try:
            value = json.loads(row[0])
        except ValueError:
            return None
        self.hits += 1
        return value

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON-ready) under ``key``, dropping the oldest answers beyond ``max_entries``."""
        data = json.dumps(value, ensure_ascii=False)
        with self._lock:
            db = self._connect()
            if db is None:
                return
            try:
                db.execute("INSERT OR REPLACE INTO answers (key, value, at) VALUES (?, ?, ?)", (key, data, time.time()))
                self._puts += 1
                if self._puts % _PRUNE_EVERY == 1:  # the first put of a run, then every so often
                    db.execute(
                        "DELETE FROM answers WHERE key IN (SELECT key FROM answers ORDER BY at DESC LIMIT -1 OFFSET ?)",
                        (self.max_entries,),
                    )
                db.commit()
            except sqlite3.Error as e:
                _log.warning("The model answer cache %s cannot be written (%s).", self.path, e)

    def close(self) -> None:
        """Close the file (it is opened again on the next use)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
