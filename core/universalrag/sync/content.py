"""Queue items → what gets embedded: the text channel, and the pixels of an image for the visual channel.

An item's content is a text (attached row's expression, ``add_text``), image bytes (a ``bytea`` column,
``add_image``) or a path/URL (a path column, ``add_file``). Files are read only under the roots the worker was
started with; URLs only when the worker allows them (http and https, size-limited). Every failure is an
:class:`ItemError` whose message is stored with the queue item.
"""

from __future__ import annotations

import io
import re
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import IngestError, MissingDependencyError
from ..media import FRAMES_PER_VIDEO, frame_times, import_pil, iter_frames
from ..types import CorpusSpec, Modality

__all__ = ["ItemError", "Loaded", "ContentLoader", "MAX_TEXT_CHARS", "clip_text"]

_IMAGE_FORMATS = ("JPEG", "PNG", "WEBP", "GIF", "BMP", "TIFF")
_TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".rst", ".csv", ".tsv", ".json", ".log")
_HTML_SUFFIXES = (".html", ".htm")
_OFFICE_SUFFIXES = (".pdf", ".docx", ".pptx")
_MAX_PIXELS = 64_000_000

#: The most characters of one item's text the worker stores and embeds (the rest is cut, after a whole word where
#: one ends near the cut). PostgreSQL refuses a full-text vector over 1 MB, which a few megabytes of distinct words
#: exceed, and the encoders read only their first few hundred tokens anyway (docs/reliability.md).
MAX_TEXT_CHARS = 100_000


class ItemError(Exception):
    """One queue item cannot be embedded; the message is stored as its ``last_error``."""


@dataclass(frozen=True, slots=True)
class Loaded:
    """The text channel of a unit, and its image for the visual channel (images only)."""

    text: str
    uri: str | None
    metadata: dict[str, Any] = field(default_factory=dict)
    image: Any = None  # PIL.Image.Image
    frames: tuple[Any, ...] = ()  # a video's sampled frames, when the worker has a visual encoder


def clip_text(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters, after the last whole word when one ends in the last 200."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = max(cut.rfind(" ", limit - 200), cut.rfind("\n", limit - 200))
    return cut[:space].rstrip() if space > 0 else cut


def _words(name: str) -> str:
    return re.sub(r"[_\-.]+", " ", Path(name).stem).strip()


def decode_image(data: bytes) -> Any:
    """Decode image bytes fully into an RGB Pillow image, or raise :class:`ItemError` saying why."""
    Image = import_pil("image corpora")
    try:
        with Image.open(io.BytesIO(data), formats=_IMAGE_FORMATS) as img:
            if img.width * img.height > _MAX_PIXELS:
                raise ItemError(
                    f"the image is too large to decode safely ({img.width}x{img.height}); store a downscaled copy."
                )
            img.load()
            return img.convert("RGB")
    except ItemError:
        raise
    except Image.UnidentifiedImageError as e:
        raise ItemError(
            "the bytes are not a decodable image (JPEG, PNG, WebP, GIF, BMP or TIFF); store the "
            "original image file's bytes."
        ) from e
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as e:
        raise ItemError(f"the image is damaged and could not be decoded ({e}); store the original image.") from e


class ContentLoader:
    """Reads the content of queue items for one worker (file roots and URL policy fixed at construction)."""

    def __init__(
        self,
        *,
        file_roots: Sequence[Path] = (),
        allow_urls: bool = False,
        max_bytes: int = 50 << 20,
        url_timeout: float = 20.0,
        video_frames: bool = False,
    ) -> None:
        self.file_roots = tuple(Path(r).expanduser().resolve() for r in file_roots)
        self.video_frames = video_frames
        self.allow_urls = allow_urls
        self.max_bytes = max_bytes
        self.url_timeout = url_timeout

    # -- files and URLs ---------------------------------------------------------------------------------------
    def _path(self, locator: str) -> Path:
        if not self.file_roots:
            raise ItemError(
                f"{locator}: the worker reads no files; start it with --files-root DIR naming the "
                "folder that holds them."
            )
        raw = Path(locator).expanduser()
        candidate = (raw if raw.is_absolute() else self.file_roots[0] / raw).resolve()
        if not any(candidate.is_relative_to(root) for root in self.file_roots):
            raise ItemError(
                f"{locator}: outside the folders this worker may read ({', '.join(map(str, self.file_roots))})."
            )
        if not candidate.is_file():
            raise ItemError(f"{locator}: no such file under {', '.join(map(str, self.file_roots))}.")
        return candidate

    def read_bytes(self, locator: str) -> bytes:
        """The bytes behind a path (under the roots) or an http(s) URL (when allowed), size-limited."""
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", locator):
            if not locator.lower().startswith(("http://", "https://")):
                raise ItemError(f"{locator}: only http and https URLs are supported.")
            if not self.allow_urls:
                raise ItemError(f"{locator}: the worker fetches no URLs; start it with --allow-urls.")
            try:
                with urllib.request.urlopen(locator, timeout=self.url_timeout) as response:  # noqa: S310 - checked
                    data = response.read(self.max_bytes + 1)
            except (urllib.error.URLError, OSError, ValueError) as e:
                raise ItemError(f"{locator}: could not be fetched ({e}).") from e
        else:
            path = self._path(locator)
            if path.stat().st_size > self.max_bytes:
                raise ItemError(f"{locator}: larger than {self.max_bytes >> 20} MB.")
            try:
                data = path.read_bytes()
            except OSError as e:
                raise ItemError(f"{locator}: could not be read ({e.strerror or e}).") from e
        if len(data) > self.max_bytes:
            raise ItemError(f"{locator}: larger than {self.max_bytes >> 20} MB.")
        return data

    def _document(self, locator: str) -> str:
        suffix = Path(locator.split("?", 1)[0]).suffix.lower()
        if suffix in _OFFICE_SUFFIXES:
            return self._office_document(locator)
        data = self.read_bytes(locator)
        if suffix in _HTML_SUFFIXES:
            from bs4 import BeautifulSoup

            text = BeautifulSoup(data, "html.parser").get_text(" ", strip=True)
        elif suffix in _TEXT_SUFFIXES or not suffix:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ItemError(f"{locator}: not UTF-8 text ({e.reason} at byte {e.start}).") from e
        else:
            raise ItemError(
                f"{locator}: {suffix} documents are not read by the worker; store PDF, Word, "
                "PowerPoint, text, Markdown or HTML files (or queue the extracted text with add_text)."
            )
        if not text.strip():
            raise ItemError(f"{locator}: the document holds no text.")
        return text

    def _office_document(self, locator: str) -> str:
        """The text of a PDF, Word or PowerPoint file (through :mod:`universalrag.ingest.documents`)."""
        from ..ingest.documents import read_document

        if "://" in locator:
            raise ItemError(
                f"{locator}: PDF, Word and PowerPoint documents are read from files only; store them "
                "under the worker's --files-root."
            )
        path = self._path(locator)
        if path.stat().st_size > self.max_bytes:
            raise ItemError(f"{locator}: larger than {self.max_bytes >> 20} MB.")
        try:
            return read_document(path).text
        except IngestError as e:
            raise ItemError(f"{locator}: {e.reason}") from e
        except MissingDependencyError as e:
            raise ItemError(f"{locator}: {e}") from e

    def _frames(self, locator: str) -> tuple[Any, ...]:
        """Frames spread over a video file (one per second, at most FRAMES_PER_VIDEO), for the visual channel."""
        from ..ingest.video import probe_video

        if "://" in locator:
            raise ItemError(
                f"{locator}: video frames are read from files only; store the video under the worker's --files-root."
            )
        path = self._path(locator)
        try:
            duration = probe_video(path).duration_s
            times = frame_times(0.0, duration, min(FRAMES_PER_VIDEO, max(1, int(duration))))
            return tuple(image for _, image in iter_frames(path, times))
        except IngestError as e:
            raise ItemError(f"{locator}: {e.reason}") from e

    # -- items --------------------------------------------------------------------------------------------------
    def load(
        self,
        spec: CorpusSpec,
        *,
        kind: str,
        body: str | None,
        data: bytes | None,
        caption: str | None,
        uri: str | None,
        metadata: dict[str, Any],
    ) -> Loaded | None:
        """What to embed for one item, its text cut to :data:`MAX_TEXT_CHARS`; ``None`` when the content
        expression gave NULL (the unit is removed)."""
        loaded = self._load(spec, kind=kind, body=body, data=data, caption=caption, uri=uri, metadata=metadata)
        if loaded is None or len(loaded.text) <= MAX_TEXT_CHARS:
            return loaded
        return replace(loaded, text=clip_text(loaded.text))

    def _load(
        self,
        spec: CorpusSpec,
        *,
        kind: str,
        body: str | None,
        data: bytes | None,
        caption: str | None,
        uri: str | None,
        metadata: dict[str, Any],
    ) -> Loaded | None:
        if kind == "text":
            return None if body is None else Loaded(text=body, uri=uri, metadata=metadata)
        if kind == "bytes":
            if data is None:
                return None
            return Loaded(text=caption or "", uri=uri, metadata=metadata, image=decode_image(data))
        locator = body if body is not None else uri
        if not locator:
            return None
        uri = uri or locator
        name_words = _words(locator.split("?", 1)[0])
        if spec.modality is Modality.IMAGE:
            return Loaded(
                text=caption or name_words, uri=uri, metadata=metadata, image=decode_image(self.read_bytes(locator))
            )
        if spec.modality is Modality.VIDEO:
            frames = self._frames(locator) if self.video_frames else ()
            if not frames and "://" not in locator:
                self._path(locator)  # the file must exist where this worker may read it
            return Loaded(text=caption or name_words, uri=uri, metadata=metadata, frames=frames)
        text = self._document(locator)
        return Loaded(text=f"{caption}\n{text}" if caption else text, uri=uri, metadata=metadata)
