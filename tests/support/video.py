"""Write real test videos with PyAV: photographs held for given durations with hard cuts.

Optional extras: a soft subtitle stream muxed into the container, a sidecar ``.srt``/``.vtt``, an audio
track (silence or one tone per scene), a ``title`` tag, a slow pan and per-frame noise (so decoding
costs what real footage costs). :func:`write_video` returns the true cut times, so tests can check
detected boundaries against them::

    video = write_video(tmp_path / "talk.mkv", [(photo("astronaut"), 3.0), (photo("coffee"), 2.0)],
                        cues=[(0.5, 2.0, "hello")], sidecar="srt")
    video.cut_times  # [3.0]

The photographs come from scikit-image's bundled samples (no download): ``astronaut``, ``camera``,
``chelsea``, ``coffee``, ``rocket``, ``hubble_deep_field``, ``immunohistochemistry``, ``retina``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "CONTAINER_CODECS",
    "ContainerCodecs",
    "WrittenVideo",
    "encoder_available",
    "format_srt",
    "format_vtt",
    "photo",
    "truncate_copy",
    "write_video",
]

Cue = tuple[float, float, str]

#: Photographs that scikit-image ships inside the wheel (the others download on first use).
BUNDLED_PHOTOS = (
    "astronaut",
    "camera",
    "chelsea",
    "coffee",
    "rocket",
    "hubble_deep_field",
    "immunohistochemistry",
    "retina",
)

_AUDIO_RATE = 48_000

#: A minimal ASS header; FFmpeg's text subtitle encoders refuse to open without one.
_ASS_HEADER = (
    b"[Script Info]\nScriptType: v4.00+\nPlayResX: 384\nPlayResY: 288\n\n[V4+ Styles]\n"
    b"Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, "
    b"Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, "
    b"MarginL, MarginR, MarginV, Encoding\n"
    b"Style: Default,Arial,16,&Hffffff,&Hffffff,&H0,&H0,0,0,0,0,100,100,0,0,1,1,0,2,10,10,10,0\n\n"
    b"[Events]\nFormat: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n"
)


@dataclass(frozen=True)
class ContainerCodecs:
    """Encoders used for one container: video, audio, and soft subtitles (None: not supported)."""

    video: str
    audio: str
    subtitle: str | None
    video_options: tuple[tuple[str, str], ...] = ()


_X264 = (("preset", "veryfast"),)
_VPX = (("deadline", "realtime"), ("cpu-used", "8"), ("row-mt", "1"), ("b", "800k"))

#: Extension → encoders; every entry exists in PyAV's bundled FFmpeg (check with :func:`encoder_available`).
CONTAINER_CODECS: dict[str, ContainerCodecs] = {
    ".mp4": ContainerCodecs("libx264", "aac", "mov_text", _X264),
    ".m4v": ContainerCodecs("libx264", "aac", "mov_text", _X264),
    ".mov": ContainerCodecs("libx264", "aac", "mov_text", _X264),
    ".mkv": ContainerCodecs("libx264", "aac", "subrip", _X264),
    ".webm": ContainerCodecs("libvpx-vp9", "libopus", "webvtt", _VPX),
    ".avi": ContainerCodecs("mpeg4", "pcm_s16le", None, (("b", "1500k"),)),
}


@dataclass(frozen=True)
class WrittenVideo:
    """What :func:`write_video` wrote: the file, the true cuts and the frames each scene shows."""

    path: Path
    #: Start time (seconds) of every scene after the first: where the hard cuts are.
    cut_times: list[float]
    #: (start, end) seconds of every scene; contiguous, covering [0, duration].
    scenes: list[tuple[float, float]]
    duration_s: float
    fps: int
    size: tuple[int, int]
    #: The RGB image (at the video's size) each scene starts with, for comparing decoded frames.
    images: list[np.ndarray]
    cues: list[Cue]
    sidecar: Path | None
    embedded_subtitles: bool
    audio: str | None

    def scene_at(self, t: float) -> int:
        """Index of the scene shown at ``t`` seconds."""
        for i, (_start, end) in enumerate(self.scenes):
            if t < end:
                return i
        return len(self.scenes) - 1


def encoder_available(name: str) -> bool:
    """True when PyAV's FFmpeg build has an encoder called ``name``."""
    import av

    try:
        av.codec.Codec(name, "w")
    except Exception:  # noqa: BLE001 - any failure means "not usable here"
        return False
    return True


def photo(name: str, *, size: tuple[int, int] = (320, 240)) -> np.ndarray:
    """A scikit-image sample photograph as RGB uint8, cropped to the aspect of ``size`` and resized."""
    import skimage.data
    from PIL import Image, ImageOps

    if name not in BUNDLED_PHOTOS:
        raise ValueError(f"{name!r} is not bundled with scikit-image; use one of {BUNDLED_PHOTOS}")
    array = np.asarray(getattr(skimage.data, name)())
    if array.ndim == 2:
        array = np.stack([array] * 3, axis=-1)
    image = Image.fromarray(array[..., :3].astype(np.uint8)).convert("RGB")
    return np.asarray(ImageOps.fit(image, size, method=Image.Resampling.BILINEAR))


def _as_rgb(image: Any, size: tuple[int, int]) -> np.ndarray:
    from PIL import Image, ImageOps

    if isinstance(image, str):
        return photo(image, size=size)
    if isinstance(image, Image.Image):
        pil = image.convert("RGB")
    else:
        array = np.asarray(image)
        if array.ndim == 2:
            array = np.stack([array] * 3, axis=-1)
        pil = Image.fromarray(array[..., :3].astype(np.uint8)).convert("RGB")
    if pil.size != size:
        pil = ImageOps.fit(pil, size, method=Image.Resampling.BILINEAR)
    return np.asarray(pil)


def _ts(seconds: float, sep: str) -> str:
    ms = round(seconds * 1000)
    h, rem = divmod(ms, 3_600_000)
    m, rem = divmod(rem, 60_000)
    s, ms = divmod(rem, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}{sep}{ms:03d}"


def format_srt(cues: Sequence[Cue]) -> str:
    """SubRip text for ``cues`` (start, end, text)."""
    blocks = [f"{i}\n{_ts(s, ',')} --> {_ts(e, ',')}\n{text}\n" for i, (s, e, text) in enumerate(cues, 1)]
    return "\n".join(blocks)


def format_vtt(cues: Sequence[Cue]) -> str:
    """WebVTT text for ``cues`` (start, end, text), with a NOTE block and cue settings as real files have."""
    blocks = ["WEBVTT\nKind: captions\nLanguage: en\n", "NOTE written by tests/support/video.py\n"]
    blocks += [f"{_ts(s, '.')} --> {_ts(e, '.')} align:start position:0%\n{text}\n" for s, e, text in cues]
    return "\n".join(blocks)


_SIDECAR_WRITERS = {"srt": format_srt, "vtt": format_vtt}


def _scene_frames(
    base: np.ndarray, n: int, *, motion: float, noise: int, rng: np.random.Generator, size: tuple[int, int], fps: int
):
    """Yield ``n`` RGB frames of one scene: the still photo, or a slow pan over it, plus noise."""
    from PIL import Image

    w, h = size
    if motion > 0:
        big = np.asarray(Image.fromarray(base).resize((int(w * 1.25), int(h * 1.25)), Image.Resampling.BILINEAR))
    for i in range(n):
        frame = base
        if motion > 0:
            dx = min(big.shape[1] - w, int(motion * i / fps))
            dy = min(big.shape[0] - h, int(motion * i / fps / 2))
            frame = big[dy : dy + h, dx : dx + w]
        if noise:
            jitter = rng.integers(-noise, noise + 1, size=frame.shape, dtype=np.int16)
            frame = np.clip(frame.astype(np.int16) + jitter, 0, 255).astype(np.uint8)
        yield frame


def write_video(
    path: str | Path,
    scenes: Sequence[tuple[Any, float]],
    *,
    fps: int = 25,
    size: tuple[int, int] = (320, 240),
    cues: Sequence[Cue] = (),
    sidecar: str | None = None,
    sidecar_name: str | None = None,
    embed_subtitles: bool = False,
    audio: str | None = None,
    speech: Sequence[tuple[float, float]] = (),
    title: str | None = None,
    motion: float = 0.0,
    noise: int = 0,
    gop: int | None = None,
    faststart: bool = False,
    codecs: ContainerCodecs | None = None,
) -> WrittenVideo:
    """Write a video of ``scenes`` — (image, seconds) pairs joined by hard cuts — and return what was written.

    An image is a scikit-image sample name, a PIL image or an array; it is cropped and resized to
    ``size``. Each scene lasts ``round(seconds * fps)`` frames, so the cut times are exact frame times.
    ``cues`` (start, end, text) go to a sidecar (``sidecar="srt"`` or ``"vtt"``, named ``sidecar_name``
    or ``<stem>.<ext>``) and/or into a soft subtitle stream (``embed_subtitles``; needs a container
    with a subtitle codec in :data:`CONTAINER_CODECS`). ``audio`` is ``"silence"``, ``"tones"`` (a
    different pitch per scene) or ``"speech"``: a voice-like signal (a 180 Hz tone with harmonics, its
    loudness pulsing at a syllable rate of 4 Hz) during each ``(start, end)`` of ``speech``, silence between.
    ``motion`` pans the picture by that many pixels per second and
    ``noise`` adds uniform noise of that amplitude, for realistic decoding costs. ``gop`` sets the
    keyframe interval in frames; ``faststart`` writes an MP4's index at the front.
    """
    import av
    from av.subtitles.subtitle import SubtitleSet

    path = Path(path)
    spec = codecs or CONTAINER_CODECS[path.suffix.lower()]
    if embed_subtitles and spec.subtitle is None:
        raise ValueError(f"{path.suffix} has no subtitle codec in CONTAINER_CODECS")
    if sidecar is not None and sidecar not in _SIDECAR_WRITERS:
        raise ValueError(f"sidecar must be one of {sorted(_SIDECAR_WRITERS)}")
    frame_counts = [max(1, round(seconds * fps)) for _image, seconds in scenes]
    images = [_as_rgb(image, size) for image, _seconds in scenes]
    starts = [sum(frame_counts[:i]) for i in range(len(frame_counts))]
    total = sum(frame_counts)
    scene_spans = [(s / fps, (s + n) / fps) for s, n in zip(starts, frame_counts, strict=True)]
    duration = total / fps
    cue_list = sorted((float(s), float(e), str(t)) for s, e, t in cues)

    options = {"movflags": "+faststart"} if faststart else {}
    out = av.open(str(path), "w", options=options)
    try:
        if title:
            out.metadata["title"] = title  # before the header is written, or the muxer drops it
        vs: Any = out.add_stream(spec.video, rate=fps)
        vs.width, vs.height = size
        vs.pix_fmt = "yuv420p"
        vs.options = dict(spec.video_options)
        if gop:
            vs.codec_context.gop_size = gop
        astream: Any = None
        if audio is not None:
            astream = out.add_stream(spec.audio, rate=_AUDIO_RATE, layout="mono")
        sstream: Any = None
        if embed_subtitles and spec.subtitle:
            sstream = out.add_stream(spec.subtitle)
            sstream.codec_context.subtitle_header = _ASS_HEADER
            sstream.codec_context.time_base = Fraction(1, 1000)

        rng = np.random.default_rng(0)
        audio_done = 0  # samples written
        cue_index = 0
        frame_index = 0
        for scene_no, (base, count) in enumerate(zip(images, frame_counts, strict=True)):
            for rgb in _scene_frames(base, count, motion=motion, noise=noise, rng=rng, size=size, fps=fps):
                frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
                frame.pts = frame_index
                frame.time_base = Fraction(1, fps)
                out.mux(vs.encode(frame))
                frame_index += 1
                now = frame_index / fps
                if astream is not None:
                    target = int(now * _AUDIO_RATE)
                    audio_done = _write_audio(out, astream, audio, audio_done, target, scene_no, speech)
                while sstream is not None and cue_index < len(cue_list) and cue_list[cue_index][0] <= now:
                    _write_cue(out, sstream, SubtitleSet, cue_list[cue_index], cue_index)
                    cue_index += 1
        out.mux(vs.encode(None))
        if astream is not None:
            out.mux(astream.encode(None))
        while sstream is not None and cue_index < len(cue_list):
            _write_cue(out, sstream, SubtitleSet, cue_list[cue_index], cue_index)
            cue_index += 1
    finally:
        out.close()

    sidecar_path = None
    if sidecar is not None:
        sidecar_path = path.with_name(sidecar_name or f"{path.stem}.{sidecar}")
        sidecar_path.write_text(_SIDECAR_WRITERS[sidecar](cue_list), encoding="utf-8")
    return WrittenVideo(
        path=path,
        cut_times=[s / fps for s in starts[1:]],
        scenes=scene_spans,
        duration_s=duration,
        fps=fps,
        size=size,
        images=images,
        cues=cue_list,
        sidecar=sidecar_path,
        embedded_subtitles=embed_subtitles,
        audio=audio,
    )


def _write_audio(
    out: Any,
    stream: Any,
    kind: str | None,
    done: int,
    target: int,
    scene_no: int,
    speech: Sequence[tuple[float, float]] = (),
) -> int:
    """Encode mono samples ``done..target`` (silence, a tone whose pitch depends on the scene, or speech-like
    bursts during the ``speech`` spans)."""
    import av

    if target <= done:
        return done
    t = np.arange(done, target) / _AUDIO_RATE
    if kind == "tones":
        samples = 0.3 * np.sin(2 * math.pi * (330.0 + 110.0 * scene_no) * t)
    elif kind == "silence":
        samples = np.zeros_like(t)
    elif kind == "speech":
        voiced = np.zeros_like(t, dtype=bool)
        for start, end in speech:
            voiced |= (t >= start) & (t < end)
        voice = sum(np.sin(2 * math.pi * 180.0 * k * t) / k for k in (1, 2, 3))
        samples = np.where(voiced, 0.25 * voice * (0.6 + 0.4 * np.sin(2 * math.pi * 4.0 * t)), 0.0)
    else:
        raise ValueError(f"audio must be 'silence', 'tones' or 'speech', got {kind!r}")
    pcm = (samples * 32767).astype(np.int16).reshape(1, -1)
    frame = av.AudioFrame.from_ndarray(pcm, format="s16", layout="mono")
    frame.sample_rate = _AUDIO_RATE
    frame.pts = done
    frame.time_base = Fraction(1, _AUDIO_RATE)
    out.mux(stream.encode(frame))
    return target


def _write_cue(out: Any, stream: Any, subtitle_set: Any, cue: Cue, index: int) -> None:
    start, end, text = cue
    line = text.replace("\n", "\\N")
    event = f"{index},0,Default,,0,0,0,,{line}".encode()
    packet = stream.codec_context.encode_subtitle(
        subtitle_set.create(text=event, start=0, end=round((end - start) * 1000), pts=round(start * 1_000_000))
    )
    packet.stream = stream
    packet.time_base = Fraction(1, 1000)
    packet.pts = packet.dts = round(start * 1000)
    packet.duration = round((end - start) * 1000)
    out.mux(packet)


def truncate_copy(src: str | Path, dst: str | Path, *, keep: float = 0.6) -> Path:
    """Copy the first ``keep`` share of ``src``'s bytes to ``dst``: a video cut off mid-download."""
    data = Path(src).read_bytes()
    dst = Path(dst)
    dst.write_bytes(data[: int(len(data) * keep)])
    return dst
