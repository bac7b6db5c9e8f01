"""Videos → a plan of clips: probe, transcript, scene cuts, clip shaping, frame times.

Pure functions: no database, no embedding. A :class:`VideoPlan` holds what the ``clip`` and ``video``
corpora need: each clip's time range, transcript slice and frame timestamps, and the whole video's title,
transcript and frame timestamps. Frames are decoded later, as a stream, by
:func:`universalrag.media.iter_frames`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from ...errors import ConfigError
from ...media import FRAMES_PER_CLIP, FRAMES_PER_VIDEO, frame_times
from .asr import ASR
from .cues import Cue, slice_transcript
from .probe import VideoProbe, probe_video
from .scenes import detect_scenes, detector_spec, shape_clips
from .subtitles import read_embedded_cues, read_sidecar, sidecar_paths

__all__ = ["ClipPlan", "VideoOptions", "VideoPlan", "plan_video", "read_transcript"]


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
    frames_per_clip: int = FRAMES_PER_CLIP
    frames_per_video: int = FRAMES_PER_VIDEO
    asr: ASR | None = None

    def __post_init__(self) -> None:
        detector_spec(self.detector)
        if self.threshold is not None and not self.threshold > 0:
            raise ConfigError(f"threshold must be positive, got {self.threshold}.")
        if self.downscale is not None and (int(self.downscale) != self.downscale or self.downscale < 1):
            raise ConfigError(f"downscale must be an integer of at least 1, got {self.downscale}.")
        if self.min_clip_s < 0 or self.max_clip_s <= 0 or self.max_clip_s < 2 * self.min_clip_s:
            raise ConfigError(
                f"Clip limits need 0 <= min_clip_s and max_clip_s >= 2 * min_clip_s; got "
                f"min_clip_s={self.min_clip_s}, max_clip_s={self.max_clip_s}."
            )
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


def read_transcript(
    path: str | Path, *, probe: VideoProbe | None = None, asr: ASR | None = None
) -> tuple[list[Cue], str]:
    """A video's timed transcript and where it came from.

    Sources, first non-empty wins: a sidecar subtitle file (see :func:`sidecar_paths`; source
    ``"sidecar:<file name>"``), the first text subtitle stream in the container (``"embedded:<stream
    index>"``), then ``asr`` when given and the video has audio (``"asr:<name>"``). Otherwise
    ``([], "none")``. A ``probe`` of the file saves reopening a container that has no subtitle stream
    and skips ASR for a silent video.
    """
    p = Path(path)
    for sidecar in sidecar_paths(p):
        cues = read_sidecar(sidecar)
        if cues:
            return cues, f"sidecar:{sidecar.name}"
    if probe is None or probe.subtitle_streams:
        cues, index = read_embedded_cues(p)
        if cues:
            return cues, f"embedded:{index}"
    if asr is not None and (probe is None or probe.has_audio):
        cues = asr.transcribe(p)
        if cues:
            return cues, f"asr:{asr.name}"
    return [], "none"


def plan_video(path: str | Path, *, options: VideoOptions = VideoOptions()) -> VideoPlan:
    """Probe, transcribe, cut and sample the video at ``path``; see :class:`VideoOptions`.

    Raises :class:`IngestError` for a file that is not a whole, decodable video.
    """
    probe = probe_video(path)
    cues, source = read_transcript(probe.path, probe=probe, asr=options.asr)
    scenes = detect_scenes(
        probe.path, detector=options.detector, threshold=options.threshold, downscale=options.downscale
    )
    spans = shape_clips(
        scenes, duration_s=probe.duration_s, min_clip_s=options.min_clip_s, max_clip_s=options.max_clip_s
    )
    clips = [
        ClipPlan(
            index=i,
            start_s=round(a, 6),
            end_s=round(b, 6),
            transcript=slice_transcript(cues, a, b),
            frame_times=_sampled(a, b, options.frames_per_clip),
        )
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
