"""Driver errors → typed store errors, in one place, by SQLSTATE code and exception class (never by the
text of the server's message, which depends on its version and language)."""

from __future__ import annotations

import psycopg
from sqlalchemy import exc as sa_exc

from ..errors import CorpusExistsError, StoreError

__all__ = ["INSUFFICIENT_PRIVILEGE", "UNDEFINED_TABLE", "sqlstate", "store_error"]

#: SQLSTATE codes the store reacts to.
UNDEFINED_TABLE = "42P01"
INSUFFICIENT_PRIVILEGE = "42501"
_DUPLICATE_TABLE = "42P07"
#: "stack depth limit exceeded" (a huge full-text query or expression) and "program limit exceeded" (a word
#: or tsvector too long): the input is too large, whatever the server's hint says about its settings.
_TOO_COMPLEX = frozenset({"54001", "54000"})

_SQLSTATE_ERRORS: dict[str, type[StoreError]] = {_DUPLICATE_TABLE: CorpusExistsError}


def sqlstate(e: BaseException) -> str | None:
    """The SQLSTATE code of a driver error (wrapped by SQLAlchemy or not), or of the one a StoreError came from."""
    while e is not None:
        if isinstance(e, sa_exc.DBAPIError):
            e = e.orig  # type: ignore[assignment]
            continue
        if isinstance(e, psycopg.Error):
            return e.sqlstate
        e = e.__cause__  # type: ignore[assignment]
    return None


def store_error(e: sa_exc.DBAPIError | psycopg.Error, action: str, url: str) -> StoreError:
    """The typed error for a driver error raised while trying to ``action`` on the database at ``url``."""
    orig = e.orig if isinstance(e, sa_exc.DBAPIError) else e
    code = sqlstate(e)
    diag = getattr(orig, "diag", None)
    primary = (getattr(diag, "message_primary", None) or str(orig)).strip().splitlines()[0]
    hint = getattr(diag, "message_hint", None)
    if isinstance(e, (sa_exc.OperationalError, psycopg.OperationalError)) and code is None:
        return StoreError(
            f"Could not connect to the database at {url} ({primary}); check that it is running "
            "and that UNIVERSALRAG_DATABASE_URL is right."
        )
    if code == UNDEFINED_TABLE:
        return StoreError(
            f"Could not {action}: {primary}. A corpus may have been dropped meanwhile "
            "(`universalrag corpora list`), or the schema needs `universalrag init`."
        )
    if code in _TOO_COMPLEX:
        return StoreError(
            f"Could not {action}: the query or filter is too large for Postgres to run ({primary}); "
            "shorten it (a question of a few sentences is enough) or narrow the filter."
        )
    cls = _SQLSTATE_ERRORS.get(code or "", StoreError)
    return cls(f"Could not {action}: {primary}" + (f" ({hint})" if hint else ""))
