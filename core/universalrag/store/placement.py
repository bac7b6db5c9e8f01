"""Where each corpus lives: this database, or a member server named by an alias (docs/scaling.md).

:class:`Placement` is the part of :class:`~universalrag.store.Store` that answers "which store holds this
corpus?" from the registry's ``server`` column, so that every Store method can hand a remote corpus to the store
of its server. It keeps no state of its own beyond what ``Store`` gives it: ``_where`` (remote corpus → alias,
refreshed with the registry) and ``_members`` (a :class:`~universalrag.store.member_servers.ServerPool`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Self

import psycopg
from sqlalchemy import exc as sa_exc

from ..config import Settings
from ..errors import InvalidInputError, StoreError
from ..types import CorpusSpec
from .member_servers import ServerPool, member_settings
from .translate import sqlstate

_log = logging.getLogger("universalrag.store")

__all__ = ["Placement"]


class Placement:
    """Mixin of ``Store``: the store that holds each corpus, and the member stores of other servers."""

    settings: Settings
    schema: str
    _where: dict[str, str]
    _members: ServerPool[Any]

    if TYPE_CHECKING:

        def __init__(
            self, url: str | None = None, *, schema: str | None = None, settings: Settings | None = None
        ) -> None: ...
        def corpus(self, name: str) -> CorpusSpec: ...
        def corpora(self, *, refresh: bool = False) -> dict[str, CorpusSpec]: ...

    def _member_store(self, alias: str) -> Self:
        return type(self)(schema=self.schema, settings=member_settings(self.settings, alias))

    def member(self, alias: str) -> Self:
        """The store of the server ``alias`` (from ``settings.servers``), same schema; no I/O until used."""
        return self._members.get(alias)

    def server_of(self, corpus: str) -> str | None:
        """The alias of the server holding ``corpus``, ``None`` for this database."""
        self.corpus(corpus)
        return self._where.get(corpus)

    def remote_corpora(self, corpora: Iterable[str] | None = None) -> dict[str, list[str]]:
        """The corpora (of ``corpora``; default: every registered corpus) that live on other servers, by server
        alias in alias order; corpora of this database are left out."""
        groups: dict[str, list[str]] = {}
        for name in self.corpora() if corpora is None else corpora:
            alias = self.server_of(name)
            if alias is not None:
                groups.setdefault(alias, []).append(name)
        return dict(sorted(groups.items()))

    def owner(self, corpus: str) -> Self:
        """The store holding ``corpus``'s table: this one, or the :meth:`member` of its server."""
        alias = self.server_of(corpus)
        return self if alias is None else self.member(alias)

    def _owners(self, corpora: Iterable[str]) -> dict[Self, list[str]]:
        groups: dict[Self, list[str]] = {}
        for name in corpora:
            groups.setdefault(self.owner(name), []).append(name)
        return groups

    def _one_owner(self, corpora: Iterable[str], what: str) -> Self:
        groups = self._owners(dict.fromkeys(corpora))
        if len(groups) > 1:
            where = "; ".join(
                f"{', '.join(names)} on {self.server_of(names[0]) or 'the home database'}" for names in groups.values()
            )
            raise InvalidInputError(
                f"{what} spans corpora on different servers ({where}); write to the corpora "
                "of one server at a time (ingest with corpus=NAME)."
            )
        return next(iter(groups), self)

    def _scope_owner(self, scope: str) -> Self:
        return self.owner(scope) if scope and scope in self.corpora() else self

    def skip_unreachable(self, owner: Placement, corpora: Sequence[str], error: StoreError) -> None:
        """Let routing go on without the corpora of a member server that cannot be reached (logged as a
        warning); re-raise ``error`` when ``owner`` is this database or the failure is not a connection failure."""
        code = sqlstate(error)
        lost = (code is None and isinstance(error.__cause__, (sa_exc.OperationalError, psycopg.OperationalError))) or (
            code or ""
        ).startswith(("08", "57P"))
        if owner is self or not lost:
            raise error
        _log.warning(
            "Skipping corpora %s: their server %r cannot be reached (%s).",
            ", ".join(corpora),
            self.server_of(corpora[0]),
            error,
        )

    def _used_members(self) -> list[Self]:
        self.corpora()
        return [self.member(alias) for alias in sorted(set(self._where.values()))]
