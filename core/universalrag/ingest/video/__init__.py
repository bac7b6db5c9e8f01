"""Videos → a plan of clips: probe, transcript (subtitles, embedded streams, speech recognition), scene cuts,
clip shaping and frame times. Frames themselves are decoded by :mod:`universalrag.media`."""

from __future__ import annotations

from ...media import frame_times, iter_frames
from ..detect import VIDEO_EXTENSIONS
from .asr import ASR, FasterWhisperASR, OpenAIAudioASR, WhisperASR, asr_from_settings, iter_audio
from .cues import Cue, clean_cue_text, slice_transcript
from .planning import ClipPlan, VideoOptions, VideoPlan, plan_video, read_transcript
from .probe import VideoProbe, probe_video
from .scenes import SCENE_DETECTORS, SceneDetectorSpec, detect_scenes, shape_clips
from .subtitles import parse_subtitles, read_embedded_cues, read_sidecar, sidecar_paths

__all__ = [
    "ASR",
    "SCENE_DETECTORS",
    "VIDEO_EXTENSIONS",
    "ClipPlan",
    "Cue",
    "FasterWhisperASR",
    "OpenAIAudioASR",
    "SceneDetectorSpec",
    "VideoOptions",
    "VideoPlan",
    "VideoProbe",
    "WhisperASR",
    "asr_from_settings",
    "clean_cue_text",
    "detect_scenes",
    "frame_times",
    "iter_audio",
    "iter_frames",
    "parse_subtitles",
    "plan_video",
    "probe_video",
    "read_embedded_cues",
    "read_sidecar",
    "read_transcript",
    "shape_clips",
    "sidecar_paths",
    "slice_transcript",
]
