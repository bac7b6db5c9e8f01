"""Videos → a plan of clips: probe, transcript, scene cuts, clip shaping, frame times; frames on demand.

Pure functions: no database, no embedding. PyAV decodes and PySceneDetect finds the cuts; both come
with the ``video`` extra and are imported on first use. A :class:`VideoPlan` holds what the ``clip``
and ``video`` corpora need: each clip's time range, transcript slice and frame timestamps, and the
whole video's title, transcript and frame timestamps. Frames are decoded later, as a stream, by
:func:`iter_frames`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from heapq import heappop, heappush
from itertools import pairwise
from pathlib import Path

from universalrag.errors import ConfigError, IngestError, MissingDependencyError
from universalrag.ingest.asr import ASR
from universalrag.ingest.detect import VIDEO_EXTENSIONS
from universalrag.ingest.frames import iter_frames
from universalrag.ingest.subtitles import Cue, read_transcript, sidecar_paths, slice_transcript
from universalrag.ingest.video_probe import VideoProbe, import_av, probe_video

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
    import_av()
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
