"""Videos → a plan of clips: probe, transcript, scene cuts, clip shaping, frame times; frames on demand.

Pure functions: no database, no embedding. PyAV decodes and PySceneDetect finds the cuts; both come
with the ``video`` extra and are imported on first use. A :class:`VideoPlan` holds what the ``clip``
and ``video`` corpora need: each clip's time range, transcript slice and frame timestamps, and the
whole video's title, transcript and frame timestamps. Frames are decoded later, as a stream, by
:func:`iter_frames`.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from heapq import heappop, heappush
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from universalrag.errors import ConfigError, IngestError, MissingDependencyError
from universalrag.ingest.asr import ASR
from universalrag.ingest.detect import VIDEO_EXTENSIONS, sniff
from universalrag.ingest.subtitles import Cue, read_transcript, sidecar_paths, slice_transcript

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = [
    "SCENE_DETECTORS",
    "VIDEO_EXTENSIONS",
    "ClipPlan",
    "Cue",
    "SceneDetectorSpec",
    "VideoOptions",
    "VideoPlan",
    "VideoProbe",
    "detect_scenes",
    "frame_times",
    "iter_frames",
    "plan_video",
    "probe_video",
    "read_transcript",
    "shape_clips",
    "sidecar_paths",
    "slice_transcript",
]

_HASH_CHUNK = 1 << 20
#: How far before the declared end the truncation check starts reading packets.
_TAIL_S = 3.0
#: iter_frames seeks instead of decoding forward when the next time is further ahead than this
#: (or than the longest keyframe interval seen so far).
_MIN_SEEK_GAP_S = 2.0
_MAX_DECODE_ERRORS = 32
#: FFmpeg's AV_DISPOSITION_ATTACHED_PIC: a "video" stream that is one cover image.
_ATTACHED_PIC = 1 << 10


def _import_av() -> Any:
    try:
        import av
    except ImportError as e:
        raise MissingDependencyError("av", "video", feature="reading videos") from e
    return av


def _ratio(value: Any) -> float:
    """A PyAV rational (Fraction, or AVRational in PyAV 19+) as a float; 0.0 when unset."""
    if not value:
        return 0.0
    return value.numerator / value.denominator if value.denominator else 0.0


# --------------------------------------------------------------------------- probing


@dataclass(frozen=True, slots=True)
class VideoProbe:
    """What a video file holds. ``content_hash`` is the SHA-256 of its bytes; ``metadata`` is JSON-ready
    (``format``, ``size_bytes``, ``bit_rate``, ``tags``, ``streams``, and ``title`` when the file has one)."""

    path: Path
    duration_s: float
    fps: float
    width: int
    height: int
    video_codec: str
    has_audio: bool
    subtitle_streams: int
    container: str
    content_hash: str
    metadata: dict[str, Any] = field(default_factory=dict)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _check_file(p: Path) -> None:
    if not p.exists():
        raise IngestError(p, "no such file; check the path (relative paths start at the current folder).")
    if p.is_dir():
        raise IngestError(p, "is a folder, not a video file; pass the files inside it, or ingest the whole folder.")
    if not p.is_file():
        raise IngestError(p, "is not a regular file (a device, socket or pipe); save the video to a file.")
    if p.stat().st_size == 0:
        raise IngestError(p, "the file is empty (0 bytes); it is not a video. Re-download or re-export it.")


def _article(label: str) -> str:
    """``a``/``an`` before a format label ("an MP4 video", "a PNG image", "an AVI video")."""
    acronym = len(label) > 1 and label[1].isupper()
    return "an" if label[0] in "AEIOUaeiou" or (acronym and label[0] in "FHLMNRSX") else "a"


def _not_video_reason(head: bytes) -> str | None:
    """A reason when the first bytes show a known format that is not video; None otherwise."""
    found = sniff(head)
    if found is not None and found.kind != "video":
        return f"is {_article(found.label)} {found.label}, not a video; rename it or leave it out."
    return None


def _unreadable_reason(p: Path, error: Exception) -> str:
    """Why FFmpeg could not open ``p``, in words a user can act on."""
    try:
        with p.open("rb") as fh:
            head = fh.read(4096)
    except OSError as e:
        return f"could not be read ({e.strerror or e}); check its permissions."
    found = sniff(head)
    if found is not None:
        return _not_video_reason(head) or (
            f"looks like {_article(found.label)} {found.label} but FFmpeg cannot read it ({error}): it is probably "
            "truncated (an unfinished download, copy or recording) or damaged. Re-download or re-export the file.")
    if b"\x00" not in head and head.strip():
        try:
            head.decode("utf-8")
            return ("contains text, not video data (a playlist, a subtitle file or a saved error page?); "
                    "give it the right extension or leave it out.")
        except UnicodeDecodeError:
            pass
    return (f"is not a video FFmpeg can read ({error}); the file is damaged, incomplete or in an unsupported "
            "format. Re-download it, or re-encode it (for example to H.264 in MP4).")


def _main_video_stream(container: Any) -> Any | None:
    """The first video stream that is not attached cover art (an album or podcast image)."""
    for stream in container.streams.video:
        if int(getattr(stream, "disposition", 0) or 0) & _ATTACHED_PIC:
            continue
        return stream
    return None


def _open(p: Path) -> tuple[Any, Any]:
    """Open ``p`` with PyAV and return (container, main video stream), or raise IngestError.

    Files whose first bytes show an image, audio, archive or document are refused before FFmpeg sees
    them: FFmpeg would open a PNG or GIF as a "video" of one or a few frames.
    """
    av = _import_av()
    try:
        with p.open("rb") as fh:
            reason = _not_video_reason(fh.read(64))
    except OSError as e:
        raise IngestError(p, f"could not be read ({e.strerror or e}); check its permissions.") from e
    if reason:
        raise IngestError(p, reason)
    try:
        container = av.open(str(p))
    except (av.error.FFmpegError, OSError) as e:
        raise IngestError(p, _unreadable_reason(p, e)) from e
    stream = _main_video_stream(container)
    if stream is None:
        kinds = sorted({s.type for s in container.streams}) or ["no streams"]
        container.close()
        raise IngestError(p, f"has no video stream (it holds {', '.join(kinds)}); audio-only files are not videos.")
    return container, stream


def _scan_tail(av: Any, container: Any, video: Any, from_s: float, origin: float) -> tuple[float, float, int, int]:
    """Demux from ``from_s`` to the end: (end of any stream, end of the video stream, frames, errors)."""
    try:
        container.seek(int((from_s + origin) * 1_000_000), backward=True, any_frame=False)
    except av.error.FFmpegError:
        pass  # no index (a damaged or streamed file): read on from here, which is slower but right
    end_all = end_video = 0.0
    frames = errors = 0
    for packet in container.demux():
        if packet.pts is not None and packet.time_base:
            end = (packet.pts + (packet.duration or 0)) * _ratio(packet.time_base) - origin
            end_all = max(end_all, end)
            if packet.stream.index == video.index:
                end_video = max(end_video, end)
        if packet.stream.index == video.index:
            try:
                frames += len(packet.decode())
            except av.error.FFmpegError:
                errors += 1
    return end_all, end_video, frames, errors


def probe_video(path: str | Path) -> VideoProbe:
    """Read a video's duration, frame rate, size, codecs and tags, hash its bytes, and check it is whole.

    The check decodes the first frame and reads the last seconds of packets: a file whose data ends
    well before the duration its header declares (an interrupted download or recording), or whose
    end cannot be decoded, is rejected. Raises :class:`IngestError` naming the path and what to do
    for a missing, empty, non-video, unreadable, truncated or damaged file. Cheap enough to call
    first and skip files whose ``content_hash`` is already ingested.
    """
    p = Path(path)
    _check_file(p)
    av = _import_av()
    content_hash = _sha256(p)
    container, video = _open(p)
    with container:
        origin = (container.start_time or 0) / 1_000_000
        fps = _ratio(video.average_rate) or _ratio(video.guessed_rate) or _ratio(video.base_rate)
        ctx = video.codec_context
        try:
            first = next(iter(container.decode(video)), None)
        except av.error.FFmpegError as e:
            raise IngestError(p, f"its video stream cannot be decoded ({e}); the file is damaged or uses a codec "
                                 "this FFmpeg build lacks. Re-encode it, for example to H.264 in MP4.") from e
        if first is None:
            raise IngestError(p, "its video stream holds no decodable frame; re-download or re-encode the file.")
        declared = [
            (container.duration or 0) / 1_000_000,
            (video.duration or 0) * _ratio(video.time_base),
        ]
        frames_s = video.frames / fps if video.frames and fps else 0.0
        duration = max(declared) or frames_s
        end_all, end_video, decoded, errors = _scan_tail(av, container, video, max(0.0, duration - _TAIL_S), origin)
        if not duration:
            duration = end_all  # nothing declared: the data decides
        tolerance = 0.5 + (2.0 / fps if fps else 0.1)
        expected_video = max(frames_s, declared[1])
        if end_all < duration - tolerance or end_video < expected_video - tolerance:
            actual = min(end_all, end_video) if end_video < expected_video - tolerance else end_all
            raise IngestError(
                p,
                f"the file is truncated: its header declares {max(duration, expected_video):.2f} s but its data "
                f"ends at {actual:.2f} s (an interrupted download, copy or recording). Re-download or re-export it.",
            )
        if errors and not decoded:
            raise IngestError(p, f"its last {_TAIL_S:g} seconds cannot be decoded ({errors} damaged packets); "
                                 "re-download or re-encode the file.")
        tags = {str(k): str(v) for k, v in container.metadata.items()}
        title = next((v.strip() for k, v in tags.items() if k.lower() == "title" and v.strip()), None)
        streams = []
        for s in container.streams:
            info: dict[str, Any] = {"index": s.index, "type": s.type,
                                    "codec": s.codec_context.name if s.codec_context is not None else None}
            for key in ("language", "title"):
                if s.metadata.get(key):
                    info[key] = str(s.metadata[key])
            streams.append(info)
        metadata: dict[str, Any] = {
            "format": container.format.name,
            "format_long_name": container.format.long_name,
            "size_bytes": p.stat().st_size,
            "bit_rate": int(container.bit_rate or 0) or None,
            "tags": tags,
            "streams": streams,
        }
        if title:
            metadata["title"] = title
        return VideoProbe(
            path=p,
            duration_s=round(float(duration), 6),
            fps=round(float(fps), 6),
            width=int(ctx.width or first.width),
            height=int(ctx.height or first.height),
            video_codec=ctx.name,
            has_audio=bool(container.streams.audio),
            subtitle_streams=len(container.streams.subtitles),
            container=container.format.name,
            content_hash=content_hash,
            metadata=metadata,
        )


# --------------------------------------------------------------------------- scenes and clips


@dataclass(frozen=True, slots=True)
class SceneDetectorSpec:
    """A PySceneDetect detector: its class name, the keyword of its threshold and that threshold's default."""

    class_name: str
    threshold_arg: str
    default_threshold: float
    description: str


#: Detector name → how to build it; ``detect_scenes(detector=...)`` takes one of these names.
SCENE_DETECTORS: dict[str, SceneDetectorSpec] = {
    "content": SceneDetectorSpec("ContentDetector", "threshold", 27.0,
                                 "hard cuts: the change of hue, saturation and brightness between frames"),
    "adaptive": SceneDetectorSpec("AdaptiveDetector", "adaptive_threshold", 3.0,
                                  "hard cuts against a rolling average; steadier with fast camera motion"),
    "histogram": SceneDetectorSpec("HistogramDetector", "threshold", 0.20,
                                   "cuts where the colour histogram changes"),
    "hash": SceneDetectorSpec("HashDetector", "threshold", 0.35,
                              "cuts where a perceptual hash of the frame changes"),
}


def _detector_spec(name: str) -> SceneDetectorSpec:
    spec = SCENE_DETECTORS.get(name)
    if spec is None:
        raise ConfigError(f"Unknown scene detector {name!r}; choose one of: {', '.join(SCENE_DETECTORS)}.")
    return spec


def detect_scenes(path: str | Path, *, detector: str = "content", threshold: float | None = None,
                  downscale: int | None = None) -> list[tuple[float, float]]:
    """Scene boundaries of the video at ``path`` as contiguous ``(start_s, end_s)`` pairs.

    ``detector`` names an entry of :data:`SCENE_DETECTORS` (PySceneDetect's ContentDetector by
    default, ``"adaptive"`` for its AdaptiveDetector); ``threshold`` overrides its default.
    Frames are shrunk before comparison for speed: by ``downscale`` (an integer factor) or, when
    None, automatically to about 256 pixels wide. Cuts less than 15 frames after the previous one
    are ignored (PySceneDetect's ``min_scene_len``). A video without cuts is one scene; an empty list
    means no frame could be decoded.
    """
    spec = _detector_spec(detector)
    if downscale is not None and downscale < 1:
        raise ConfigError(f"downscale must be an integer of at least 1, got {downscale}.")
    _import_av()
    try:
        import scenedetect
    except ImportError as e:
        raise MissingDependencyError("scenedetect", "video", feature="scene detection") from e
    p = Path(path)
    value = spec.default_threshold if threshold is None else float(threshold)
    scene_detector = getattr(scenedetect, spec.class_name)(**{spec.threshold_arg: value})
    try:
        stream = scenedetect.VideoStreamAv(str(p), suppress_output=True)
    except (scenedetect.VideoOpenFailure, OSError) as e:
        raise IngestError(p, f"could not be opened for scene detection ({e}).") from e
    except Exception as e:  # FrameRateUnavailable and friends
        raise IngestError(p, f"could not be opened for scene detection ({type(e).__name__}: {e}); "
                             "the video stream has no usable frame rate. Re-encode the file.") from e
    manager = scenedetect.SceneManager()
    if downscale is not None:
        manager.auto_downscale = False
        manager.downscale = int(downscale)
    manager.add_detector(scene_detector)
    try:
        manager.detect_scenes(video=stream)
    except Exception as e:  # decoder errors surface here as various types
        raise IngestError(p, f"scene detection failed while decoding ({type(e).__name__}: {e}).") from e
    return [(float(a.seconds), float(b.seconds)) for a, b in manager.get_scene_list(start_in_scene=True)]


def _merge_short(bounds: list[float], min_len: float) -> list[float]:
    """Merge segments shorter than ``min_len`` (shortest first) into their shorter neighbour."""
    n = len(bounds) - 1
    start, end = bounds[:-1], bounds[1:]
    prev = [i - 1 for i in range(n)]
    nxt = [i + 1 if i + 1 < n else -1 for i in range(n)]
    alive = [True] * n
    version = [0] * n
    heap = [(end[i] - start[i], start[i], i, 0) for i in range(n)]
    heap.sort()
    count = n
    while heap and count > 1:
        length, _s, i, ver = heappop(heap)
        if not alive[i] or ver != version[i]:
            continue
        if length >= min_len:
            break
        left, right = prev[i], nxt[i]
        if left == -1 or (right != -1 and end[right] - start[right] < end[left] - start[left]):
            keep, gone = i, right
        else:
            keep, gone = left, i
        end[keep] = end[gone]
        nxt[keep] = nxt[gone]
        if nxt[gone] != -1:
            prev[nxt[gone]] = keep
        alive[gone] = False
        version[keep] += 1
        count -= 1
        heappush(heap, (end[keep] - start[keep], start[keep], keep, version[keep]))
    first = next(i for i in range(n) if alive[i] and prev[i] == -1)
    out = [start[first]]
    i = first
    while i != -1:
        out.append(end[i])
        i = nxt[i]
    return out


def shape_clips(scenes: Sequence[tuple[float, float]], *, duration_s: float, min_clip_s: float,
                max_clip_s: float) -> list[tuple[float, float]]:
    """Turn scenes into clips: contiguous ``(start_s, end_s)`` pairs covering ``[0, duration_s]``.

    The scenes' boundaries inside ``(0, duration_s)`` are the candidate cuts (gaps and overlaps
    between scenes are ignored; no scenes means one). Scenes shorter than ``min_clip_s`` are merged,
    shortest first, into their shorter neighbour; then clips longer than ``max_clip_s`` are split into
    the fewest equal parts that fit. With ``max_clip_s >= 2 * min_clip_s`` (required) every clip ends
    up between the two limits, except a video shorter than ``min_clip_s``, which is one clip.
    """
    if not math.isfinite(duration_s) or duration_s < 0:
        raise ValueError(f"duration_s must be a finite number >= 0, got {duration_s}.")
    if min_clip_s < 0 or max_clip_s <= 0 or max_clip_s < 2 * min_clip_s:
        raise ValueError(f"need 0 <= min_clip_s and max_clip_s >= 2 * min_clip_s > 0; got min_clip_s={min_clip_s}, "
                         f"max_clip_s={max_clip_s}.")
    if duration_s == 0:
        return []
    cuts = sorted({float(t) for scene in scenes for t in scene if 0.0 < t < duration_s})
    bounds = _merge_short([0.0, *cuts, float(duration_s)], min_clip_s)
    clips: list[tuple[float, float]] = []
    for a, b in pairwise(bounds):
        parts = max(1, math.ceil((b - a) / max_clip_s - 1e-9))
        step = (b - a) / parts
        edges = [a + k * step for k in range(parts)] + [b]
        clips.extend(pairwise(edges))
    return clips


def frame_times(start_s: float, end_s: float, n: int) -> list[float]:
    """``n`` times spread uniformly over ``[start_s, end_s]``: the centres of ``n`` equal segments.

    Empty when ``n < 1`` or the range is empty; ``ValueError`` when ``end_s < start_s``.
    """
    if end_s < start_s:
        raise ValueError(f"end_s ({end_s}) is before start_s ({start_s}).")
    if n < 1 or end_s == start_s:
        return []
    step = (end_s - start_s) / n
    return [round(start_s + (k + 0.5) * step, 6) for k in range(n)]


# --------------------------------------------------------------------------- frames


def _to_image(frame: Any, max_side: int | None) -> Image:
    width, height = frame.width, frame.height
    if max_side and max(width, height) > max_side:
        scale = max_side / max(width, height)
        width, height = max(1, round(width * scale)), max(1, round(height * scale))
    return frame.to_image(width=width, height=height)


class _FrameCursor:
    """Decodes one video stream forward, seeking to a keyframe when the next wanted time is far ahead.

    Holds at most two decoded frames: the last one at or before the current time (``prev``) and the
    first one after it (``ahead``).
    """

    def __init__(self, av: Any, path: Path, container: Any, video: Any) -> None:
        self.av, self.path, self.container, self.video = av, path, container, video
        self.tb = _ratio(video.time_base)
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
                    raise IngestError(self.path, f"too many damaged frames to extract images ({e}); "
                                                 "re-encode the file.") from e
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
            self.container.seek(int((target + self.origin) / self.tb) if self.tb else 0,
                                stream=self.video, backward=True)
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


def iter_frames(path: str | Path, times: Sequence[float], *,
                max_side: int | None = 336) -> Iterator[tuple[float, Image]]:
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
    av = _import_av()
    container, video = _open(p)
    with container:
        cursor = _FrameCursor(av, p, container, video)
        for target, original in wanted:
            yield original, _to_image(cursor.frame_at(target), max_side)


# --------------------------------------------------------------------------- plans


@dataclass(frozen=True, slots=True)
class VideoOptions:
    """How :func:`plan_video` cuts and samples a video.

    The defaults keep every clip between 20 s and 3 minutes. The UniversalRAG paper segments videos
    with PySceneDetect into clips averaging no more than 3 minutes; capping each clip at 180 s
    guarantees that average for any video, while the 20 s floor turns bursts of quick cuts into one
    clip long enough to carry a few sentences of transcript (about 50 spoken words) and frames
    worth embedding. ``max_clip_s`` must be at least twice ``min_clip_s`` so that splitting a long
    scene never leaves a piece below the floor. ``frames_per_clip``/``frames_per_video`` are upper
    bounds: like VideoRAG, short spans get at most one frame per second. ``asr`` (off by default)
    transcribes videos that have neither a sidecar nor an embedded subtitle stream.
    """

    detector: str = "content"
    threshold: float | None = None
    downscale: int | None = None
    min_clip_s: float = 20.0
    max_clip_s: float = 180.0
    frames_per_clip: int = 8
    frames_per_video: int = 32
    asr: ASR | None = None

    def __post_init__(self) -> None:
        _detector_spec(self.detector)
        if self.threshold is not None and not self.threshold > 0:
            raise ConfigError(f"threshold must be positive, got {self.threshold}.")
        if self.downscale is not None and (int(self.downscale) != self.downscale or self.downscale < 1):
            raise ConfigError(f"downscale must be an integer of at least 1, got {self.downscale}.")
        if self.min_clip_s < 0 or self.max_clip_s <= 0 or self.max_clip_s < 2 * self.min_clip_s:
            raise ConfigError(f"Clip limits need 0 <= min_clip_s and max_clip_s >= 2 * min_clip_s; got "
                              f"min_clip_s={self.min_clip_s}, max_clip_s={self.max_clip_s}.")
        if self.frames_per_clip < 1 or self.frames_per_video < 1:
            raise ConfigError("frames_per_clip and frames_per_video must be at least 1.")
        if self.asr is not None and not isinstance(self.asr, ASR):
            raise ConfigError(f"asr must have a name and a transcribe(path) method, got {type(self.asr).__name__}.")


@dataclass(frozen=True, slots=True)
class ClipPlan:
    """One clip: its time range, the transcript said during it, and the times of its sampled frames."""

    index: int
    start_s: float
    end_s: float
    transcript: str
    frame_times: list[float]


@dataclass(frozen=True, slots=True)
class VideoPlan:
    """Everything the clip and video corpora need from one video file."""

    probe: VideoProbe
    title: str
    transcript: list[Cue]
    transcript_source: str
    clips: list[ClipPlan]
    video_frame_times: list[float]

    @property
    def transcript_text(self) -> str:
        """The whole transcript as one text."""
        return " ".join(c.text for c in self.transcript)


def _sampled(start_s: float, end_s: float, most: int) -> list[float]:
    """At most ``most`` frame times, and at most one per second of the span."""
    return frame_times(start_s, end_s, max(1, min(most, math.floor(end_s - start_s))))


def _title(probe: VideoProbe) -> str:
    title = probe.metadata.get("title")
    if title:
        return str(title)
    words = re.sub(r"[_\-.]+", " ", probe.path.stem).strip()
    return words or probe.path.stem


def plan_video(path: str | Path, *, options: VideoOptions = VideoOptions()) -> VideoPlan:
    """Probe, transcribe, cut and sample the video at ``path``; see :class:`VideoOptions`.

    Raises :class:`IngestError` for a file that is not a whole, decodable video.
    """
    probe = probe_video(path)
    cues, source = read_transcript(probe.path, probe=probe, asr=options.asr)
    scenes = detect_scenes(probe.path, detector=options.detector, threshold=options.threshold,
                           downscale=options.downscale)
    spans = shape_clips(scenes, duration_s=probe.duration_s, min_clip_s=options.min_clip_s,
                        max_clip_s=options.max_clip_s)
    clips = [
        ClipPlan(index=i, start_s=round(a, 6), end_s=round(b, 6), transcript=slice_transcript(cues, a, b),
                 frame_times=_sampled(a, b, options.frames_per_clip))
        for i, (a, b) in enumerate(spans)
    ]
    return VideoPlan(
        probe=probe,
        title=_title(probe),
        transcript=cues,
        transcript_source=source,
        clips=clips,
        video_frame_times=_sampled(0.0, probe.duration_s, options.frames_per_video),
    )
