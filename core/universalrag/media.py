"""Media that ingestion and evidence both read: format signatures, pictures as upright RGB, video frames.

Below ingestion in the layering (it imports only :mod:`universalrag.errors`): :mod:`universalrag.evidence`
loads the pictures and frames it sends to a model from here, and the ingestion readers validate and embed
with the same functions. Pillow (``images`` extra) and PyAV (``video`` extra) are imported on first use;
without them :class:`MissingDependencyError` names the extra. Failures to read a file raise
:class:`IngestError` naming the path and what to do.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .errors import ConfigError, IngestError, MissingDependencyError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from PIL.Image import Image

__all__ = [
    "FRAMES_PER_CLIP",
    "FRAMES_PER_VIDEO",
    "Sniffed",
    "frame_times",
    "import_av",
    "import_pil",
    "iter_frames",
    "load_rgb",
    "open_image",
    "open_video",
    "ratio",
    "sniff",
]


# --------------------------------------------------------------------------- optional libraries


def import_av(feature: str = "reading videos") -> Any:
    """The ``av`` (PyAV) module, or MissingDependencyError naming the ``video`` extra."""
    try:
        import av
    except ImportError as e:
        raise MissingDependencyError("av", "video", feature=feature) from e
    return av


def import_pil(feature: str = "reading images") -> Any:
    """The ``PIL.Image`` module, or MissingDependencyError naming the ``images`` extra."""
    try:
        from PIL import Image
    except ImportError as e:
        raise MissingDependencyError("pillow", "images", feature=feature) from e
    return Image


def ratio(value: Any) -> float:
    """A PyAV rational (Fraction, or AVRational in PyAV 19+) as a float; 0.0 when unset."""
    if not value:
        return 0.0
    return value.numerator / value.denominator if value.denominator else 0.0


def _read_head(path: Path, size: int) -> bytes:
    try:
        with path.open("rb") as fh:
            return fh.read(size)
    except OSError as e:
        raise IngestError(path, f"could not be read ({e.strerror or e}); check its permissions.") from e


# --------------------------------------------------------------------------- format signatures


class Sniffed(NamedTuple):
    """A recognised file signature: the kind it maps to (None when unsupported) and a readable label."""

    kind: str | None
    label: str


#: ISO base media brands (bytes 8-12 after ``ftyp``) that are still images or audio, not video.
_FTYP_IMAGE_BRANDS = frozenset({b"heic", b"heix", b"hevc", b"mif1", b"msf1", b"avif", b"avis"})
_FTYP_AUDIO_BRANDS = frozenset({b"M4A ", b"M4B ", b"M4P "})
#: Header sizes of the BMP DIB variants; checked so that a text starting with "BM" is not an image.
_BMP_DIB_SIZES = frozenset({12, 40, 52, 56, 64, 108, 124})
_PREFIXES: tuple[tuple[tuple[bytes, ...], Sniffed], ...] = (
    ((b"\x89PNG\r\n\x1a\n",), Sniffed("image", "PNG image")),
    ((b"\xff\xd8\xff",), Sniffed("image", "JPEG image")),
    ((b"GIF87a", b"GIF89a"), Sniffed("image", "GIF image")),
    ((b"II*\x00", b"MM\x00*"), Sniffed("image", "TIFF image")),
)
_LATE_PREFIXES: tuple[tuple[tuple[bytes, ...], Sniffed], ...] = (
    ((b"\x1a\x45\xdf\xa3",), Sniffed("video", "Matroska/WebM video")),
    ((b"PK\x03\x04", b"PK\x05\x06"), Sniffed(None, "ZIP archive")),
    ((b"%PDF-",), Sniffed(None, "PDF document")),
    ((b"\x1f\x8b",), Sniffed(None, "gzip archive")),
    ((b"7z\xbc\xaf\x27\x1c",), Sniffed(None, "7-Zip archive")),
    ((b"\x7fELF",), Sniffed(None, "executable program")),
    # Audio signatures are checked with their version byte so that prose starting "ID3 tags" stays text.
    ((b"ID3\x02\x00", b"ID3\x03\x00", b"ID3\x04\x00", b"fLaC\x00", b"fLaC\x80"), Sniffed(None, "audio file")),
    ((b"\x93NUMPY",), Sniffed(None, "NumPy array file")),
)
#: First packets of an Ogg stream that carry pictures (Theora, VP8, or a Skeleton index, which video files use).
_OGG_VIDEO_MARKS = (b"\x80theora", b"OVP80", b"fishead\x00", b"\x80daala")
#: MPEG transport stream packets: 188 bytes (``.ts``) or 192 with a 4-byte timecode (``.m2ts``), each starting 0x47.
_TS_LAYOUTS = ((188, 0), (192, 4))


def _mpeg_ts(head: bytes) -> bool:
    """Three transport-stream packets in a row start with 0x47 (one such byte could be text: "G")."""
    return any(
        len(head) > 2 * size + offset and all(head[offset + k * size] == 0x47 for k in range(3))
        for size, offset in _TS_LAYOUTS
    )


_RIFF_FORMS = {
    b"WEBP": Sniffed("image", "WebP image"),
    b"AVI ": Sniffed("video", "AVI video"),
    b"WAVE": Sniffed(None, "WAV audio"),
}


def sniff(head: bytes) -> Sniffed | None:
    """Recognise a binary file format from its first bytes; None when no known signature matches.

    Images and videos (MP4/QuickTime, Matroska/WebM, AVI, MPEG transport streams, Ogg with a Theora
    stream) map to their kind; ZIP (the container of ``.xlsx``), PDF, audio, NumPy arrays and compressed
    archives are recognised with kind None so callers can name them in a message. An Ogg file is judged
    video only when its first bytes show a Theora (or Skeleton) stream, so give at least a few hundred bytes.
    """
    for prefixes, found in _PREFIXES:
        if head.startswith(prefixes):
            return found
    if len(head) >= 18 and head.startswith(b"BM") and struct.unpack_from("<I", head, 14)[0] in _BMP_DIB_SIZES:
        return Sniffed("image", "BMP image")
    if len(head) >= 12 and head.startswith(b"RIFF") and head[8:12] in _RIFF_FORMS:
        return _RIFF_FORMS[head[8:12]]
    if len(head) >= 12 and head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in _FTYP_IMAGE_BRANDS:
            return Sniffed("image", "HEIF/AVIF image")
        if brand in _FTYP_AUDIO_BRANDS:
            return Sniffed(None, "MPEG-4 audio")
        return Sniffed("video", "QuickTime video" if brand == b"qt  " else "MP4 video")
    if len(head) >= 8 and head[4:8] == b"moov":
        return Sniffed("video", "QuickTime video")
    if head.startswith(b"OggS\x00"):
        video = any(mark in head for mark in _OGG_VIDEO_MARKS)
        return Sniffed("video", "Ogg video") if video else Sniffed(None, "Ogg audio file")
    if _mpeg_ts(head):
        return Sniffed("video", "MPEG transport stream")
    for prefixes, found in _LATE_PREFIXES:
        if head.startswith(prefixes):
            return found
    return None


def _article(label: str) -> str:
    """``a``/``an`` before a format label ("an MP4 video", "a PNG image", "an AVI video")."""
    acronym = len(label) > 1 and label[1].isupper()
    return "an" if label[0] in "AEIOUaeiou" or (acronym and label[0] in "FHLMNRSX") else "a"


# --------------------------------------------------------------------------- pictures

#: Pillow format names accepted (anything else Pillow could open, such as ICO or PPM, is refused).
_PIL_FORMATS: tuple[str, ...] = ("JPEG", "PNG", "WEBP", "GIF", "BMP", "TIFF")
#: First word of the :func:`sniff` labels of the supported formats.
_SUPPORTED_LABELS = frozenset({"JPEG", "PNG", "WebP", "GIF", "BMP", "TIFF"})


def _not_an_image(p: Path, error: Exception) -> str:
    sniffed = sniff(_read_head(p, 64))
    if sniffed is not None and sniffed.label == "TIFF image":
        return (
            f"is a TIFF image in a layout Pillow cannot decode ({error}): scientific tools write TIFFs with "
            "several floating-point channels or planes that only they read. Export it as an 8- or 16-bit "
            "RGB or greyscale TIFF, or as PNG."
        )
    if sniffed is not None and sniffed.label.split()[0] in _SUPPORTED_LABELS:
        return f"starts like a {sniffed.label} but its header is damaged ({error}); replace it with the original image."
    if sniffed is not None and sniffed.kind == "image":
        return f"is a {sniffed.label}, which is not supported; convert it to JPEG, PNG or WebP."
    if sniffed is not None:
        return f"is a {sniffed.label}, not an image (it was probably renamed); give it its real extension."
    return (
        "is not a valid image: its content is not JPEG, PNG, WebP, GIF, BMP or TIFF (it may be another kind "
        "of file renamed, or damaged); replace it with the original image."
    )


def open_image(path: str | Path, *, draft: int | None = None) -> Any:
    """Open and fully decode the first frame of the image at ``path`` (a Pillow image; close it after use).

    Every Pillow failure becomes an :class:`IngestError` that says what to do. ``draft`` lets the JPEG
    decoder scale down while decoding (to no less than ``draft`` pixels a side).
    """
    Image = import_pil()
    p = Path(path)
    too_large = "is too large to decode safely ({}); downscale it before ingesting."
    try:
        img = Image.open(p, formats=_PIL_FORMATS)
    except Image.DecompressionBombError as e:
        raise IngestError(p, too_large.format(e)) from e
    except Image.UnidentifiedImageError as e:
        raise IngestError(p, _not_an_image(p, e)) from e
    except OSError as e:
        raise IngestError(
            p, f"could not be opened as an image ({e.strerror or e}); check the path and its permissions."
        ) from e
    try:
        if draft is not None and img.format == "JPEG":
            img.draft("RGB", (draft, draft))
        img.load()
    except Image.DecompressionBombError as e:
        img.close()
        raise IngestError(p, too_large.format(e)) from e
    except (OSError, EOFError, SyntaxError, ValueError, struct.error, zlib.error) as e:  # Pillow's decoder errors
        img.close()
        if "truncated" in str(e) or isinstance(e, EOFError):
            reason = (
                f"the image data is incomplete ({e}); the file was probably cut short while being "
                "copied or downloaded. Copy it again from the original."
            )
        else:
            reason = f"the image data is damaged and cannot be decoded ({e}); replace it with the original."
        raise IngestError(p, reason) from e
    return img


def _to_rgb(img: Any) -> Any:
    """An RGB copy of a Pillow image: transparency composited on white, 16-bit and float images rescaled."""
    Image = import_pil()
    mode = img.mode
    if mode == "RGB":
        return img.copy()
    if mode in ("I", "F") or mode.startswith("I;16"):
        import numpy as np

        arr = np.asarray(img, dtype=np.float64)
        top = float(arr.max()) if arr.size else 0.0
        if mode == "F" and top <= 1.0:
            arr = arr * 255.0
        elif top > 255.0:
            arr = arr / 257.0 if top <= 65535.0 else arr * (255.0 / top)
        return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), "L").convert("RGB")
    has_alpha = mode in ("RGBA", "LA", "PA", "RGBa", "La") or (mode == "P" and "transparency" in img.info)
    if has_alpha:
        rgba = img.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return img.convert("RGB")


def _check_max_side(max_side: int | None) -> None:
    """ConfigError unless ``max_side`` is None or a positive number of pixels."""
    if max_side is not None and (not isinstance(max_side, int) or max_side < 1):
        raise ConfigError(f"max_side must be a positive number of pixels or None, got {max_side!r}.")


def load_rgb(path: str | Path, *, max_side: int | None = None) -> Image:
    """The first frame of the image at ``path`` as an upright RGB image.

    EXIF orientation is applied, transparency is composited on white, and when ``max_side`` is set the
    image is shrunk (never enlarged) so that its longer side is at most ``max_side``, keeping the
    aspect ratio. Failures raise :class:`IngestError` (see :func:`open_image`).
    """
    _check_max_side(max_side)
    img = open_image(path, draft=max_side)
    from PIL import ImageOps

    try:
        try:
            upright = ImageOps.exif_transpose(img) or img
        except (OSError, ValueError, TypeError, KeyError, SyntaxError):  # a malformed orientation tag
            upright = img
        rgb = _to_rgb(upright)
        if max_side is not None and max(rgb.size) > max_side:
            rgb.thumbnail((max_side, max_side), import_pil().Resampling.LANCZOS)
        return rgb
    finally:
        img.close()


# --------------------------------------------------------------------------- videos

#: FFmpeg's AV_DISPOSITION_ATTACHED_PIC: a "video" stream that is one cover image.
_ATTACHED_PIC = 1 << 10


def _unreadable_reason(p: Path, error: Exception) -> str:
    """Why FFmpeg could not open ``p``, in words a user can act on."""
    head = _read_head(p, 4096)
    found = sniff(head)
    if found is not None and found.kind != "video":
        return f"is {_article(found.label)} {found.label}, not a video; rename it or leave it out."
    if found is not None:
        return (
            f"looks like {_article(found.label)} {found.label} but FFmpeg cannot read it ({error}): it is "
            "probably truncated (an unfinished download, copy or recording) or damaged. Re-download or "
            "re-export the file."
        )
    if b"\x00" not in head and head.strip():
        try:
            head.decode("utf-8")
            return (
                "contains text, not video data (a playlist, a subtitle file or a saved error page?); "
                "give it the right extension or leave it out."
            )
        except UnicodeDecodeError:
            pass
    return (
        f"is not a video FFmpeg can read ({error}); the file is damaged, incomplete or in an unsupported "
        "format. Re-download it, or re-encode it (for example to H.264 in MP4)."
    )


def open_video(path: str | Path) -> tuple[Any, Any]:
    """Open ``path`` with PyAV and return (container, main video stream), or raise IngestError.

    Files whose first bytes show an image, audio, archive or document are refused before FFmpeg sees
    them: FFmpeg would open a PNG or GIF as a "video" of one or a few frames. Cover art (an attached
    picture) is not a video stream.
    """
    av = import_av()
    p = Path(path)
    found = sniff(_read_head(p, 4096))
    if found is not None and found.kind != "video":
        raise IngestError(p, f"is {_article(found.label)} {found.label}, not a video; rename it or leave it out.")
    try:
        container = av.open(str(p))
    except (av.error.FFmpegError, OSError) as e:
        raise IngestError(p, _unreadable_reason(p, e)) from e
    stream = next(
        (s for s in container.streams.video if not int(getattr(s, "disposition", 0) or 0) & _ATTACHED_PIC), None
    )
    if stream is None:
        kinds = sorted({s.type for s in container.streams}) or ["no streams"]
        container.close()
        raise IngestError(p, f"has no video stream (it holds {', '.join(kinds)}); audio-only files are not videos.")
    return container, stream


#: Frames sampled from a clip and from a whole video: at most this many are embedded at ingestion (one per
#: second of a shorter span) and sent to a vision-language model as evidence.
FRAMES_PER_CLIP = 8
FRAMES_PER_VIDEO = 32


def frame_times(start_s: float, end_s: float, n: int) -> list[float]:
    """``n`` times spread uniformly over ``[start_s, end_s]``: the centres of ``n`` equal segments.

    Empty when ``n < 1`` or the range is empty; ConfigError when ``end_s < start_s``.
    """
    if end_s < start_s:
        raise ConfigError(f"end_s ({end_s}) is before start_s ({start_s}).")
    if n < 1 or end_s == start_s:
        return []
    step = (end_s - start_s) / n
    return [round(start_s + (k + 0.5) * step, 6) for k in range(n)]


#: iter_frames seeks instead of decoding forward when the next time is further ahead than this
#: (or than the longest keyframe interval seen so far).
_MIN_SEEK_GAP_S = 2.0
_MAX_DECODE_ERRORS = 32


class _FrameCursor:
    """Decodes one video stream forward, seeking to a keyframe when the next wanted time is far ahead.

    Holds at most two decoded frames: the last one at or before the current time (``prev``) and the
    first one after it (``ahead``).
    """

    def __init__(self, av: Any, path: Path, container: Any, video: Any) -> None:
        self.av, self.path, self.container, self.video = av, path, container, video
        self.tb = ratio(video.time_base)
        self.origin = (video.start_time or 0) * self.tb
        self.gap = _MIN_SEEK_GAP_S  # grows to the longest keyframe interval seen
        self.errors = 0
        self.last_key: float | None = None
        self.frames: Iterator[tuple[float, Any]] | None = None
        self.prev: tuple[float, Any] | None = None
        self.ahead: tuple[float, Any] | None = None
        self.at_end = False

    def _decode(self) -> Iterator[tuple[float, Any]]:
        for packet in self.container.demux(self.video):
            try:
                frames = packet.decode()
            except self.av.error.FFmpegError as e:
                self.errors += 1
                if self.errors > _MAX_DECODE_ERRORS:
                    raise IngestError(
                        self.path, f"too many damaged frames to extract images ({e}); re-encode the file."
                    ) from e
                continue
            for frame in frames:
                if frame.pts is None:
                    continue
                t = frame.pts * self.tb - self.origin
                if frame.key_frame:
                    if self.last_key is not None and t > self.last_key:
                        self.gap = max(self.gap, t - self.last_key)
                    self.last_key = t
                yield t, frame

    def _seek(self, target: float) -> None:
        try:
            self.container.seek(
                int((target + self.origin) / self.tb) if self.tb else 0, stream=self.video, backward=True
            )
        except self.av.error.FFmpegError:
            if self.frames is None:  # not seekable: decode forward from the start
                self.frames = self._decode()
            return
        self.frames, self.prev, self.ahead, self.at_end, self.last_key = self._decode(), None, None, False, None

    def frame_at(self, target: float) -> Any:
        """The frame on screen at ``target`` seconds (the first frame when none starts before it)."""
        latest = self.ahead or self.prev
        if self.frames is None or latest is None or (target - latest[0] > self.gap + 1e-6 and not self.at_end):
            self._seek(target)
        assert self.frames is not None
        while True:
            if self.ahead is None:
                self.ahead = next(self.frames, None)
                if self.ahead is None:
                    self.at_end = True
                    break
            if self.ahead[0] > target + 1e-6:
                break
            self.prev, self.ahead = self.ahead, None
        chosen = self.prev or self.ahead
        if chosen is None:
            raise IngestError(self.path, f"no frame could be decoded at {target:.2f} s; the file may be damaged.")
        return chosen[1]


def _to_image(frame: Any, max_side: int | None) -> Image:
    width, height = frame.width, frame.height
    if max_side and max(width, height) > max_side:
        scale = max_side / max(width, height)
        width, height = max(1, round(width * scale)), max(1, round(height * scale))
    return frame.to_image(width=width, height=height)


def iter_frames(
    path: str | Path, times: Sequence[float], *, max_side: int | None = 336
) -> Iterator[tuple[float, Image]]:
    """Yield ``(time, RGB image)`` for each requested time, in ascending time order.

    The image is the frame on screen at that time (the last frame starting at or before it), shrunk
    so its longer side is at most ``max_side`` pixels (None keeps the size). Decoding is a stream:
    forward through nearby times, seeking to the keyframe before a time that is far ahead, so only a
    couple of frames are held at once whatever the video's length. Times past the end give the last
    frame. Raises :class:`IngestError` when the file cannot be opened or decoded.
    """
    wanted = sorted((max(0.0, float(t)), t) for t in times)
    if not wanted:
        return
    p = Path(path)
    av = import_av()
    container, video = open_video(p)
    with container:
        cursor = _FrameCursor(av, p, container, video)
        for target, original in wanted:
            yield original, _to_image(cursor.frame_at(target), max_side)
