"""Ingestion: files → units → embeddings → one transaction per source.

Readers by kind live in :mod:`.text`, :mod:`.tables`, :mod:`.images` and :mod:`.video`; the checks every
reader shares (existence, size, content hash, text decoding) in :mod:`.files`; kind detection in
:mod:`.detect`; units and their embeddings in :mod:`.units`; the run itself in :mod:`.pipeline`.
"""

from __future__ import annotations

from .detect import detect_kind, iter_files
from .pipeline import DEFAULT_CORPORA, FileOutcome, IngestOptions, IngestReport, ingest_paths, ingest_tables

__all__ = [
    "DEFAULT_CORPORA",
    "FileOutcome",
    "IngestOptions",
    "IngestReport",
    "detect_kind",
    "ingest_paths",
    "ingest_tables",
    "iter_files",
]
