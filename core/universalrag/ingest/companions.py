"""Files that describe other files of the same run: alt text of local images in HTML pages, and the caption
and subtitle sidecars of images and videos (used as their text, not ingested on their own)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import IngestError
from .detect import IMAGE_EXTENSIONS, VIDEO_EXTENSIONS
from .text.document import TextDocument

__all__ = ["alt_texts", "sidecar_files"]


def alt_texts(files: Sequence[Path], parsed: dict[Path, TextDocument]) -> dict[Path, str]:
    """Alt text of local images referenced by the HTML pages of this run (image path → alt).

    Only images that are themselves part of the run are described: a page cannot reach outside the paths
    the user gave. Pages are read only when the run has images; each page read is kept in ``parsed`` so
    that ingesting it does not read it again.
    """
    from urllib.parse import unquote, urlparse

    from .text.document import read_text_file

    if not any(f.suffix.lower() in IMAGE_EXTENSIONS for f in files):
        return {}
    in_run = {f.resolve() for f in files}
    alts: dict[Path, str] = {}
    for page in files:
        if page.suffix.lower() not in (".html", ".htm"):
            continue
        try:
            parsed[page] = read_text_file(page)
        except IngestError:
            continue  # the page itself is reported when its turn comes
        images = parsed[page].metadata.get("images", [])
        for image in images:
            src, alt = urlparse(image.get("src", "")), image.get("alt", "")
            if not alt or src.scheme not in ("", "file") or not src.path:
                continue
            target = (page.parent / unquote(src.path)).resolve()
            if target in in_run:
                alts.setdefault(target, alt)
    return alts


def sidecar_files(files: Sequence[Path]) -> set[Path]:
    """Caption and subtitle files that belong to an image or video in the same run."""
    from .images.descriptions import sidecar_paths as image_sidecars
    from .video.subtitles import sidecar_paths as video_sidecars

    found: set[Path] = set()
    for f in files:
        suffix = f.suffix.lower()
        if suffix in IMAGE_EXTENSIONS:
            found.update(p.resolve() for p in image_sidecars(f))
        elif suffix in VIDEO_EXTENSIONS:
            found.update(p.resolve() for p in video_sidecars(f))
    return found
