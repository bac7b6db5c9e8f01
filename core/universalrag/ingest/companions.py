"""Files that describe other files of the same run: alt text of local images in HTML pages, and the caption
and subtitle sidecars of images and videos (used as their text, not ingested on their own). What a source is
made of, its own bytes and these companions, is its :func:`fingerprint`."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from ..errors import IngestError
from .detect import IMAGE_EXTENSIONS, VIDEO_EXTENSIONS
from .files import hash_file
from .text.document import TextDocument

__all__ = ["alt_texts", "companion_files", "fingerprint", "sidecar_files"]


def alt_texts(files: Sequence[Path], parsed: dict[Path, TextDocument]) -> dict[Path, str]:
    """Alt text of local images referenced by the HTML pages of this run (image path → alt).

    Only images that are themselves part of the run are described: a page cannot reach outside the paths
    the user gave. Pages are parsed only when the run has images and their bytes name one of them (a page
    that never spells an image's file name cannot show it: re-ingesting an unchanged folder of 15 Wikipedia
    pages and 4 images parsed every page for alt text, 5.7-8.6 s against 2.3 s for the pages alone); each
    page parsed is kept in ``parsed`` so that ingesting it does not parse it again.
    """
    from urllib.parse import unquote, urlparse

    from .text.document import read_text_file

    images = [f for f in files if f.suffix.lower() in IMAGE_EXTENSIONS]
    if not images:
        return {}
    spellings = {form for image in images for form in _spellings(image.name)}
    in_run = {f.resolve() for f in files}
    alts: dict[Path, str] = {}
    for page in files:
        if page.suffix.lower() not in (".html", ".htm"):
            continue
        try:
            raw = page.read_bytes()
        except OSError:
            continue  # the page itself is reported when its turn comes
        if not any(form in raw for form in spellings):
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


def _spellings(name: str) -> set[bytes]:
    """How a page's bytes may spell the file name ``name`` in an ``src``: as it is, percent-encoded, with HTML's
    entities (UTF-8; a page in another encoding names an ASCII file the same way)."""
    import html
    from urllib.parse import quote

    return {name.encode(), quote(name).encode(), html.escape(name).encode()}


def companion_files(path: Path) -> list[Path]:
    """The sidecar files read with the image or video at ``path`` (caption and JSON files of an image, subtitle
    files of a video), in the order they are used; none for other files. Links out of the folder are left out."""
    from .images.descriptions import sidecar_paths as image_sidecars
    from .video.subtitles import sidecar_paths as video_sidecars

    suffix = path.suffix.lower()
    if suffix in IMAGE_EXTENSIONS:
        return image_sidecars(path)
    if suffix in VIDEO_EXTENSIONS:
        return video_sidecars(path)
    return []


def sidecar_files(files: Sequence[Path]) -> set[Path]:
    """Caption and subtitle files that belong to an image or video in the same run."""
    return {p.resolve() for f in files for p in companion_files(f)}


def fingerprint(path: Path, content_hash: str, *, texts: Sequence[str | None] = ()) -> str:
    """The identity of the source at ``path`` for idempotent ingestion, so that a re-ingest sees every change.

    ``content_hash`` (the SHA-256 of the file's own bytes) when nothing else is read with the file; otherwise
    the SHA-256 of it, the name and SHA-256 of each of its :func:`companion_files` and the ``texts`` given
    with it (an alt text from an HTML page of the run, a caption option). Editing only a video's ``.srt`` or an
    image's caption file therefore changes the source, which is then replaced. IngestError (naming the
    sidecar) when a companion cannot be read.
    """
    companions = companion_files(path)
    given = [t for t in texts if t]
    if not companions and not given:
        return content_hash
    digest = hashlib.sha256(f"universalrag-source-v1\0{content_hash}\0".encode())
    for companion in companions:
        digest.update(f"file\0{companion.name}\0{hash_file(companion)}\0".encode())
    for text in given:
        digest.update(b"text\0" + text.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()
