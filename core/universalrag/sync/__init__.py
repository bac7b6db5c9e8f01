"""Corpora kept in sync from SQL: the worker that embeds ``sync_queue`` and the status of the queue.

Tables are attached with ``SELECT universalrag.attach_table(...)`` (migration 0004); units are queued from SQL with
``add_text``/``add_image``/``add_file``. See ``docs/sync.md``.
"""

from __future__ import annotations

from .content import ItemError
from .status import BackfillProgress, CorpusSyncStatus, sync_status
from .worker import BatchResult, Worker, WorkerOptions

__all__ = ["BackfillProgress", "BatchResult", "CorpusSyncStatus", "ItemError", "Worker", "WorkerOptions", "sync_status"]
