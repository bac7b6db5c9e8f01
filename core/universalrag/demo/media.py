"""Deterministic media for the demo: scikit-image's bundled photographs, JPEG bytes, a slideshow video.

Everything here is reproducible to the byte on a given installation: the photographs ship inside
scikit-image (nothing is downloaded), JPEGs are written without EXIF or timestamps, and the video is
encoded single-threaded by libx264 into an MP4 written with FFmpeg's ``bitexact`` flag (no encoder
tag, no creation time)::

    scenes = [(sample_photo("camera", size=(320, 240)), 5.0), (sample_photo("moon", size=(320, 240)), 5.0)]
    spans = write_slideshow("night.mp4", scenes, title="Photographing the Moon")
    spans  # [(0.0, 5.0), (5.0, 10.0)]: one hard cut at 5 s

scikit-image comes with the ``demo`` extra, PyAV with ``video`` and Pillow with ``images``; each is
imported on first use and its absence raises :class:`~universalrag.errors.MissingDependencyError`.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import MissingDependencyError
from ..media import import_av

if TYPE_CHECKING:  # pragma: no cover - typing only
    from PIL import Image as PILImage

__all__ = ["BUNDLED_SAMPLES", "encode_jpeg", "format_srt", "sample_photo", "write_slideshow"]

#: scikit-image samples stored inside its wheel; some other samples are downloaded on first use, so
#: they are refused here.
BUNDLED_SAMPLES: tuple[str, ...] = (
    "astronaut",
    "camera",
    "chelsea",
    "clock",
    "coffee",
    "coins",
    "hubble_deep_field",
    "moon",
    "rocket",
)

#: libx264 settings: fast, small, and single-threaded so that the bitstream does not depend on the
#: number of cores of the machine that builds it.
_X264_OPTIONS = {"preset": "veryfast", "crf": "26", "threads": "1"}


def _pil() -> Any:
    try:
        from PIL import Image, ImageOps
    except ImportError as e:
        raise MissingDependencyError("pillow", "images", feature="the demo's photographs") from e
    return Image, ImageOps


def _to_pil(image: np.ndarray | PILImage.Image) -> PILImage.Image:
    """An RGB Pillow image from an array (grey, RGB or RGBA) or a Pillow image."""
    image_mod, _ = _pil()
    if isinstance(image, image_mod.Image):
        return image.convert("RGB")
    array = np.asarray(image)
    if array.ndim == 2:
        array = np.stack([array] * 3, axis=-1)
    return image_mod.fromarray(np.ascontiguousarray(array[..., :3].astype(np.uint8))).convert("RGB")


def sample_photo(name: str, *, size: tuple[int, int] | None = None) -> np.ndarray:
    """The scikit-image sample photograph ``name`` as an RGB ``uint8`` array.

    ``name`` must be one of :data:`BUNDLED_SAMPLES` (they load offline). With ``size`` (width,
    height) the photograph is centre-cropped to that aspect ratio and resized to it.
    """
    if name not in BUNDLED_SAMPLES:
        raise ValueError(f"{name!r} is not a bundled scikit-image sample; use one of {', '.join(BUNDLED_SAMPLES)}.")
    try:
        import skimage.data
    except ImportError as e:
        raise MissingDependencyError("scikit-image", "demo", feature="the demo's photographs") from e
    photo = _to_pil(getattr(skimage.data, name)())
    if size is not None and photo.size != tuple(size):
        image_mod, image_ops = _pil()
        photo = image_ops.fit(photo, tuple(size), method=image_mod.Resampling.BICUBIC)
    return np.asarray(photo)


def encode_jpeg(image: np.ndarray | PILImage.Image, *, quality: int = 88, max_side: int | None = None) -> bytes:
    """Baseline JPEG bytes of ``image``, with no EXIF, comment or timestamp (same input, same bytes).

    ``max_side`` shrinks the image (keeping its aspect ratio) so that neither side exceeds it.
    """
    image_mod, _ = _pil()
    photo = _to_pil(image)
    if max_side is not None and max(photo.size) > max_side:
        scale = max_side / max(photo.size)
        photo = photo.resize(
            (max(1, round(photo.width * scale)), max(1, round(photo.height * scale))), image_mod.Resampling.BICUBIC
        )
    out = io.BytesIO()
    photo.save(out, format="JPEG", quality=quality, optimize=False, progressive=False, subsampling="4:2:0")
    return out.getvalue()


def _timestamp(seconds: float) -> str:
    ms = round(seconds * 1000)
    hours, rem = divmod(ms, 3_600_000)
    minutes, rem = divmod(rem, 60_000)
    secs, ms = divmod(rem, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d},{ms:03d}"


def format_srt(cues: Sequence[tuple[float, float, str]]) -> str:
    """SubRip text for ``cues``, each ``(start_s, end_s, text)``, numbered in the order given."""
    blocks = []
    for number, (start, end, text) in enumerate(cues, 1):
        if end < start:
            raise ValueError(f"cue {number} ends ({end}) before it starts ({start}).")
        blocks.append(f"{number}\n{_timestamp(start)} --> {_timestamp(end)}\n{text.strip()}\n")
    return "\n".join(blocks)


def write_slideshow(
    path: str | Path,
    scenes: Sequence[tuple[np.ndarray | PILImage.Image, float]],
    *,
    fps: int = 24,
    size: tuple[int, int] = (320, 240),
    title: str | None = None,
) -> list[tuple[float, float]]:
    """Write an H.264 MP4 at ``path`` showing each ``(image, seconds)`` of ``scenes`` in turn.

    Each image is held still (centre-cropped and resized to ``size``) for ``round(seconds * fps)``
    frames, so consecutive scenes are joined by hard cuts at exact frame times — what a shot-boundary
    detector such as PySceneDetect finds. ``title`` is written as the container's title tag. The file
    is silent and carries no timestamps, encoder tag or other varying metadata: the same arguments give
    the same bytes. Returns every scene's ``(start_s, end_s)``.
    """
    if not scenes:
        raise ValueError("A slideshow needs at least one scene.")
    if fps < 1 or size[0] < 2 or size[1] < 2 or size[0] % 2 or size[1] % 2:
        raise ValueError(f"Need fps >= 1 and an even width and height; got fps={fps}, size={size}.")
    av = import_av("the demo's video")
    image_mod, image_ops = _pil()
    frames: list[tuple[np.ndarray, int]] = []
    for image, seconds in scenes:
        if not seconds > 0:
            raise ValueError(f"Every scene must last more than 0 s; got {seconds}.")
        still = _to_pil(image)
        if still.size != tuple(size):
            still = image_ops.fit(still, tuple(size), method=image_mod.Resampling.BICUBIC)
        frames.append((np.ascontiguousarray(np.asarray(still)), max(1, round(seconds * fps))))

    spans: list[tuple[float, float]] = []
    time_base = Fraction(1, fps)
    out = av.open(str(path), "w", format="mp4", options={"fflags": "+bitexact"})
    try:
        if title:
            out.metadata["title"] = title  # must be set before the header is written
        stream: Any = out.add_stream("libx264", rate=fps)
        stream.width, stream.height = size
        stream.pix_fmt = "yuv420p"
        stream.options = dict(_X264_OPTIONS)
        stream.codec_context.thread_count = 1
        index = 0
        for pixels, count in frames:
            spans.append((index / fps, (index + count) / fps))
            for _ in range(count):
                frame = av.VideoFrame.from_ndarray(pixels, format="rgb24")
                frame.pts = index
                frame.time_base = time_base
                out.mux(stream.encode(frame))
                index += 1
        out.mux(stream.encode(None))
    finally:
        out.close()
    return spans
