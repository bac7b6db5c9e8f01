"""The other PostgreSQL servers of a federated store: one handle per server alias, built on first use.

The corpus registry stores a server *alias* (``corpora.server``), never a URL: the alias is resolved here from
``Settings.servers`` (``UNIVERSALRAG_SERVERS='alias=postgresql://...;...'``), so passwords stay in the
environment or the caller's settings. Each member server has the same schema name as the home database and
its own registry, where its corpora are local.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Generic, TypeVar

from ..config import Settings, validate_server_alias
from ..errors import ConfigError

__all__ = ["ServerPool", "member_settings"]

T = TypeVar("T")


def member_settings(settings: Settings, alias: str) -> Settings:
    """The settings of the member server ``alias``: its URL (and read URL) in place of the home database's, and
    no members of its own (a federation is one level deep)."""
    validate_server_alias(alias)
    url = settings.servers.get(alias)
    if url is None:
        known = ", ".join(sorted(settings.servers)) or "none"
        raise ConfigError(
            f"The server alias {alias!r} is not configured (configured: {known}); add it to UNIVERSALRAG_SERVERS "
            f"as '{alias}=postgresql://USER:PASSWORD@HOST:PORT/DBNAME' (or to Settings.servers)."
        )
    return replace(
        settings, database_url=url, read_database_url=settings.read_servers.get(alias), servers={}, read_servers={}
    )


class ServerPool(Generic[T]):
    """Lazily built handles (stores) of member servers, by alias; ``factory`` builds one and does no I/O."""

    def __init__(self, factory: Callable[[str], T], close: Callable[[T], None]) -> None:
        self._factory, self._close = factory, close
        self._members: dict[str, T] = {}
        self._lock = threading.Lock()

    def get(self, alias: str) -> T:
        """The handle of ``alias`` (built on first use; raises ``ConfigError`` for an unknown alias)."""
        with self._lock:
            member = self._members.get(alias)
            if member is None:
                member = self._members[alias] = self._factory(alias)
            return member

    def close(self) -> None:
        """Close every handle built so far."""
        with self._lock:
            members, self._members = list(self._members.values()), {}
        for member in members:
            self._close(member)
