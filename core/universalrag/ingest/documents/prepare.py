"""One document file → a :class:`~universalrag.ingest.units.Prepared` source ready for one transaction.

The ingest pipeline calls :func:`prepare_document` with the corpora the file goes to; everything the file
yields (the document, its passages, tables and figures) is written together, so a failure stores nothing.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from ...types import Modality
from ..units import Prepared, source_record
from .model import DocumentOptions
from .reader import read_document
from .units import DocumentTargets, document_units

if TYPE_CHECKING:
    from ...embed.base import Embedder
    from ...embed.visual import VisualEncoder

__all__ = ["figure_folder", "prepare_document"]

_log = logging.getLogger(__name__)


def figure_folder(home: Path, schema: str, content_hash: str) -> Path:
    """Where the pictures of one document version are kept: ``<home>/figures/<schema>/<hash prefix>``."""
    return Path(home) / "figures" / schema / content_hash[:24]


def prepare_document(
    path: Path,
    targets: DocumentTargets,
    embedder: Embedder,
    *,
    uri: str,
    content_hash: str,
    figure_dir: Path | None = None,
    visual: VisualEncoder | None = None,
    options: DocumentOptions | None = None,
    batch_rows: int = 1024,
) -> Prepared:
    """Read ``path`` (PDF, .docx or .pptx) and build its units for ``targets``; raises
    :class:`~universalrag.errors.IngestError` for unreadable files."""
    doc = read_document(path, options=options)
    for warning in doc.warnings:
        _log.warning("%s: %s", path, warning)
    units, parts = document_units(
        doc, targets, embedder, uri=uri, source=str(path), figure_dir=figure_dir, visual=visual, batch_rows=batch_rows
    )
    meta = {
        "title": doc.title,
        "format": doc.info.format,
        "path": path.name,
        "pages": len(doc.pages),
        "warnings": list(doc.warnings),
        "navigation_removed": doc.navigation,
    }
    return Prepared(source_record(uri, content_hash, Modality.TEXT, units, metadata=meta), units, parts)
