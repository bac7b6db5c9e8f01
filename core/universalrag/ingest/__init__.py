"""Ingestion: files → units → embeddings → one transaction per source.

Readers by kind live in :mod:`.text`, :mod:`.tables`, :mod:`.images`, :mod:`.video` and :mod:`.documents`;
the checks every reader shares (existence, size, content hash, gzip, encodings) in :mod:`.files`; kind
detection (content first, extension second) in :mod:`.detect`; HTML layout tables and navigation in
:mod:`.html_clean`; units and their embeddings in :mod:`.units`; sidecars and alt texts in
:mod:`.companions`; the run itself in :mod:`.pipeline` and its outcomes in :mod:`.report`.
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
