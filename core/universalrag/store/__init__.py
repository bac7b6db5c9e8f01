"""Postgres + pgvector storage: schema, query builders, bulk writes, the embedded server."""

from .filters import Filter, compile_filter
from .store import ServerInfo, Store, WriteResult

__all__ = ["Store", "ServerInfo", "WriteResult", "Filter", "compile_filter"]
