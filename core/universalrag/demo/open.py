"""Open the demo knowledge base: build its files (offline, byte-identical every time) and ingest what changed.

Used by ``universalrag demo`` and by every example in ``examples/``, so they all share one knowledge base per
schema (default ``universalrag_demo``) under ``UNIVERSALRAG_HOME``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ..errors import IngestError
from ..ingest.pipeline import FileOutcome, IngestReport
from ..pipeline import UniversalRAG

__all__ = ["DEMO_SCHEMA", "demo_arguments", "open_demo"]

DEMO_SCHEMA = "universalrag_demo"


def open_demo(
    *,
    database_url: str | None = None,
    schema: str = DEMO_SCHEMA,
    rag: UniversalRAG | None = None,
    on_file: Callable[[FileOutcome], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    strict: bool = True,
    **rag_kwargs: Any,
) -> tuple[UniversalRAG, IngestReport]:
    """The demo knowledge base as a :class:`UniversalRAG` (``rag``, or one built from the other arguments),
    with the report of this run's ingestion (nothing is re-ingested when the files are unchanged).

    With ``strict`` a failed file raises :class:`IngestError`.
    """
    from ..ingest.pipeline import IngestOptions
    from .build import DEMO_VIDEO_OPTIONS, build_demo_files

    rag = rag or UniversalRAG(database_url=database_url, schema=schema, **rag_kwargs)
    folder = rag.settings.home_dir / "demo" / rag.settings.schema
    folder.mkdir(parents=True, exist_ok=True)
    build_demo_files(folder)
    options = IngestOptions(visual_encoder=rag.visual_encoder, video=DEMO_VIDEO_OPTIONS)
    report = rag.ingest([folder], options=options, on_file=on_file, on_start=on_start)
    if strict and not report.ok:
        failed = report.failed[0]
        raise IngestError(failed.path, failed.error or "could not be ingested")
    return rag, report


def demo_arguments(description: str) -> argparse.ArgumentParser:
    """The command-line options every example takes: ``--database-url`` and ``--schema``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--database-url", help="PostgreSQL URL (default: UNIVERSALRAG_DATABASE_URL, else embedded)")
    parser.add_argument("--schema", default=DEMO_SCHEMA, help="schema of the demo knowledge base")
    return parser
