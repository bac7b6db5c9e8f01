"""Driver errors → typed store errors, in one place."""

from __future__ import annotations

import psycopg
from sqlalchemy import exc as sa_exc

from ..errors import CorpusExistsError, StoreError

__all__ = ["store_error"]

_SQLSTATE_ERRORS: dict[str, type[StoreError]] = {"42P07": CorpusExistsError}


def store_error(e: sa_exc.DBAPIError | psycopg.Error, action: str, url: str) -> StoreError:
    orig = e.orig if isinstance(e, sa_exc.DBAPIError) else e
    sqlstate = getattr(orig, "sqlstate", None)
    diag = getattr(orig, "diag", None)
    primary = (getattr(diag, "message_primary", None) or str(orig)).strip().splitlines()[0]
    hint = getattr(diag, "message_hint", None)
    if isinstance(e, (sa_exc.OperationalError, psycopg.OperationalError)) and sqlstate is None:
        return StoreError(f"Could not connect to the database at {url} ({primary}); check that it is running "
                          "and that UNIVERSALRAG_DATABASE_URL is right.")
    if sqlstate == "42P01" and "corpus" not in primary:
        return StoreError(f"Could not {action}: {primary}. The corpus may have been dropped meanwhile "
                          "(`universalrag corpora list`), or the schema needs `universalrag init`.")
    cls = _SQLSTATE_ERRORS.get(sqlstate or "", StoreError)
    return cls(f"Could not {action}: {primary}" + (f" ({hint})" if hint else ""))

