"""Scene cuts of a video (PySceneDetect) and the clips they are shaped into.

PySceneDetect and PyAV come with the ``video`` extra and are imported on first use.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from heapq import heappop, heappush
from itertools import pairwise
from pathlib import Path

from ...errors import ConfigError, IngestError, MissingDependencyError
from ...media import import_av

__all__ = ["SCENE_DETECTORS", "SceneDetectorSpec", "detect_scenes", "detector_spec", "shape_clips"]


@dataclass(frozen=True, slots=True)
class SceneDetectorSpec:
    """A PySceneDetect detector: its class name, the keyword of its threshold and that threshold's default."""

    class_name: str
    threshold_arg: str
    default_threshold: float
    description: str


#: Detector name → how to build it; ``detect_scenes(detector=...)`` takes one of these names.
SCENE_DETECTORS: dict[str, SceneDetectorSpec] = {
    "content": SceneDetectorSpec(
        "ContentDetector", "threshold", 27.0, "hard cuts: the change of hue, saturation and brightness between frames"
    ),
    "adaptive": SceneDetectorSpec(
        "AdaptiveDetector",
        "adaptive_threshold",
        3.0,
        "hard cuts against a rolling average; steadier with fast camera motion",
    ),
    "histogram": SceneDetectorSpec("HistogramDetector", "threshold", 0.20, "cuts where the colour histogram changes"),
    "hash": SceneDetectorSpec("HashDetector", "threshold", 0.35, "cuts where a perceptual hash of the frame changes"),
}


def detector_spec(name: str) -> SceneDetectorSpec:
    spec = SCENE_DETECTORS.get(name)
    if spec is None:
        raise ConfigError(f"Unknown scene detector {name!r}; choose one of: {', '.join(SCENE_DETECTORS)}.")
    return spec


def detect_scenes(
    path: str | Path, *, detector: str = "content", threshold: float | None = None, downscale: int | None = None
) -> list[tuple[float, float]]:
    """Scene boundaries of the video at ``path`` as contiguous ``(start_s, end_s)`` pairs.

    ``detector`` names an entry of :data:`SCENE_DETECTORS` (PySceneDetect's ContentDetector by
    default, ``"adaptive"`` for its AdaptiveDetector); ``threshold`` overrides its default.
    Frames are shrunk before comparison for speed: by ``downscale`` (an integer factor) or, when
    None, automatically to about 256 pixels wide. Cuts less than 15 frames after the previous one
    are ignored (PySceneDetect's ``min_scene_len``). A video without cuts is one scene; an empty list
    means no frame could be decoded.
    """
    spec = detector_spec(detector)
    if downscale is not None and downscale < 1:
        raise ConfigError(f"downscale must be an integer of at least 1, got {downscale}.")
    av = import_av()
    try:
        import scenedetect
        from scenedetect.video_stream import FrameRateUnavailable, SeekError
    except ImportError as e:
        raise MissingDependencyError("scenedetect", "video", feature="scene detection") from e
    p = Path(path)
    value = spec.default_threshold if threshold is None else float(threshold)
    scene_detector = getattr(scenedetect, spec.class_name)(**{spec.threshold_arg: value})
    try:
        stream = scenedetect.VideoStreamAv(str(p), suppress_output=True)
    except FrameRateUnavailable as e:
        raise IngestError(
            p,
            f"could not be opened for scene detection ({type(e).__name__}: {e}); "
            "the video stream has no usable frame rate. Re-encode the file.",
        ) from e
    except (scenedetect.VideoOpenFailure, OSError, ValueError) as e:
        raise IngestError(p, f"could not be opened for scene detection ({e}).") from e
    manager = scenedetect.SceneManager()
    if downscale is not None:
        manager.auto_downscale = False
        manager.downscale = int(downscale)
    manager.add_detector(scene_detector)
    try:
        manager.detect_scenes(video=stream)
    except (av.error.FFmpegError, SeekError) as e:
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


def shape_clips(
    scenes: Sequence[tuple[float, float]], *, duration_s: float, min_clip_s: float, max_clip_s: float
) -> list[tuple[float, float]]:
    """Turn scenes into clips: contiguous ``(start_s, end_s)`` pairs covering ``[0, duration_s]``.

    The scenes' boundaries inside ``(0, duration_s)`` are the candidate cuts (gaps and overlaps
    between scenes are ignored; no scenes means one). Scenes shorter than ``min_clip_s`` are merged,
    shortest first, into their shorter neighbour; then clips longer than ``max_clip_s`` are split into
    the fewest equal parts that fit. With ``max_clip_s >= 2 * min_clip_s`` (required) every clip ends
    up between the two limits, except a video shorter than ``min_clip_s``, which is one clip.
    """
    if not math.isfinite(duration_s) or duration_s < 0:
        raise ConfigError(f"duration_s must be a finite number >= 0, got {duration_s}.")
    if min_clip_s < 0 or max_clip_s <= 0 or max_clip_s < 2 * min_clip_s:
        raise ConfigError(
            f"need 0 <= min_clip_s and max_clip_s >= 2 * min_clip_s > 0; got min_clip_s={min_clip_s}, "
            f"max_clip_s={max_clip_s}."
        )
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
