"""Video ingestion on real files written with PyAV: scikit-image photographs held a few seconds each
with hard cuts, subtitles as sidecars or muxed streams, audio tracks; truncated and fake videos.

No mocks: every video below is encoded, muxed and decoded by FFmpeg through PyAV. ``RecordingASR``
is a real (trivial) implementation of the ASR protocol, used to check when ASR is consulted.
"""

from __future__ import annotations

import importlib.util
import math
import os
import random
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from support.openai_server import OpenAICompatServer
from support.video import CONTAINER_CODECS, encoder_available, truncate_copy, write_video

from universalrag.errors import ConfigError, IngestError, MissingDependencyError
from universalrag.ingest.video import (
    SCENE_DETECTORS,
    VIDEO_EXTENSIONS,
    Cue,
    FasterWhisperASR,
    OpenAIAudioASR,
    VideoOptions,
    WhisperASR,
    detect_scenes,
    frame_times,
    iter_audio,
    iter_frames,
    parse_subtitles,
    plan_video,
    probe_video,
    read_transcript,
    shape_clips,
    sidecar_paths,
    slice_transcript,
)

# The modules above import PyAV and PySceneDetect lazily; without the `video` extra, skip this file.
pytest.importorskip("av")
pytest.importorskip("scenedetect")
pytest.importorskip("skimage")

FPS = 25
SCENES = [("astronaut", 3.0), ("coffee", 2.0), ("rocket", 4.0), ("camera", 2.5), ("chelsea", 3.0)]
#: One or two cues inside each scene (scene k spans the true cut times).
CUES = [
    (0.2, 1.4, "An astronaut in a white suit"),
    (1.6, 2.8, "poses beside the flag."),
    (3.1, 4.8, "A cup of coffee on a saucer."),
    (5.2, 8.7, "A rocket stands on the launch pad."),
    (9.2, 11.3, "A photographer with his camera."),
    (11.7, 14.2, "A tabby cat looks up."),
]
SCENE_TEXT = [
    "An astronaut in a white suit poses beside the flag.",
    "A cup of coffee on a saucer.",
    "A rocket stands on the launch pad.",
    "A photographer with his camera.",
    "A tabby cat looks up.",
]


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("video")


@pytest.fixture(scope="module")
def talk(media: Path):
    """The main video: five photographs with hard cuts, a sidecar .srt, a tone per scene, a title tag."""
    return write_video(
        media / "talk.mp4", SCENES, fps=FPS, cues=CUES, sidecar="srt", audio="tones", title="Five photographs", gop=50
    )


def _thumb(image) -> np.ndarray:
    from PIL import Image

    pil = image if isinstance(image, Image.Image) else Image.fromarray(image)
    return np.asarray(pil.convert("RGB").resize((8, 6), Image.Resampling.BOX), dtype=np.float32)


def _closest_scene(image, written) -> int:
    thumb = _thumb(image)
    return int(np.argmin([np.abs(thumb - _thumb(src)).mean() for src in written.images]))


# --------------------------------------------------------------------------- scenes and clips


def test_detected_cuts_fall_within_two_frames_of_the_true_cuts(talk) -> None:
    scenes = detect_scenes(talk.path)
    found = [start for start, _end in scenes[1:]]
    assert len(found) == len(talk.cut_times)
    assert max(abs(a - b) for a, b in zip(found, talk.cut_times, strict=True)) <= 2 / FPS
    assert scenes[0][0] == 0.0 and scenes[-1][1] == pytest.approx(talk.duration_s, abs=1 / FPS)


@pytest.mark.parametrize("detector", ["adaptive", "histogram"])
def test_other_detectors_from_the_registry_find_the_same_cuts(talk, detector: str) -> None:
    found = [start for start, _end in detect_scenes(talk.path, detector=detector, downscale=2)[1:]]
    assert len(found) == len(talk.cut_times)
    assert max(abs(a - b) for a, b in zip(found, talk.cut_times, strict=True)) <= 2 / FPS


def test_unknown_detector_names_the_known_ones(talk) -> None:
    assert {"content", "adaptive"} <= set(SCENE_DETECTORS)
    with pytest.raises(ConfigError, match="content, adaptive"):
        detect_scenes(talk.path, detector="magic")
    with pytest.raises(ConfigError, match="scene detector"):
        VideoOptions(detector="magic")


def test_plan_clips_follow_cuts_and_carry_their_transcript_slices(talk) -> None:
    plan = plan_video(talk.path, options=VideoOptions(min_clip_s=0.5, max_clip_s=60))
    assert plan.title == "Five photographs"
    assert plan.transcript_source == "sidecar:talk.srt"
    assert [c.text for c in plan.transcript] == [text for _s, _e, text in CUES]
    assert len(plan.clips) == len(SCENES)
    for clip, (start, end), text in zip(plan.clips, talk.scenes, SCENE_TEXT, strict=True):
        assert abs(clip.start_s - start) <= 2 / FPS and abs(clip.end_s - end) <= 2 / FPS + 0.05
        assert clip.transcript == text
        assert all(clip.start_s <= t <= clip.end_s for t in clip.frame_times)
        assert len(clip.frame_times) == min(8, math.floor(clip.end_s - clip.start_s))  # at most 1 per second
    assert [c.index for c in plan.clips] == list(range(len(SCENES)))
    assert all(a.end_s == b.start_s for a, b in pairwise(plan.clips))
    assert len(plan.video_frame_times) == 14  # a 14.5 s video: one frame per second, under the 32 cap
    assert plan.transcript_text.startswith("An astronaut")


def test_default_options_merge_short_scenes_into_one_clip(talk) -> None:
    plan = plan_video(talk.path)
    assert [(c.start_s, c.end_s) for c in plan.clips] == [(0.0, plan.probe.duration_s)]
    assert plan.clips[0].transcript == " ".join(SCENE_TEXT)
    assert len(plan.clips[0].frame_times) == 8


def test_shape_clips_examples() -> None:
    # 1 s scene between 10 s and 4 s scenes joins the shorter neighbour (the 4 s one).
    assert shape_clips([(0, 10), (10, 11), (11, 15)], duration_s=15, min_clip_s=2, max_clip_s=20) == [
        (0.0, 10.0),
        (10.0, 15.0),
    ]
    # 25 s scene split into the fewest equal parts under 10 s.
    split = shape_clips([(0, 25)], duration_s=25, min_clip_s=2, max_clip_s=10)
    assert [t for clip in split for t in clip] == pytest.approx([0.0, 25 / 3, 25 / 3, 50 / 3, 50 / 3, 25.0])
    assert shape_clips([], duration_s=5, min_clip_s=1, max_clip_s=10) == [(0.0, 5.0)]
    assert shape_clips([(0, 1), (1, 2)], duration_s=2, min_clip_s=20, max_clip_s=180) == [(0.0, 2.0)]
    assert shape_clips([(0, 3)], duration_s=0, min_clip_s=1, max_clip_s=10) == []
    # scenes past the duration (a detector's last frame) are clipped to it
    assert shape_clips([(0, 4), (4, 9.04)], duration_s=9.0, min_clip_s=1, max_clip_s=10) == [(0.0, 4.0), (4.0, 9.0)]
    with pytest.raises(ConfigError, match="2 \\* min_clip_s"):
        shape_clips([], duration_s=5, min_clip_s=6, max_clip_s=10)


def test_shape_clips_properties_on_random_scene_lists() -> None:
    rng = random.Random(7)
    for _ in range(300):
        duration = rng.uniform(0.5, 900)
        cuts = sorted(rng.uniform(0, duration) for _ in range(rng.randint(0, 60)))
        bounds = [0.0, *cuts, duration]
        scenes = list(pairwise(bounds))
        min_s = rng.uniform(0, 30)
        max_s = rng.uniform(2 * min_s, 6 * min_s + 1) or 1.0
        clips = shape_clips(scenes, duration_s=duration, min_clip_s=min_s, max_clip_s=max_s)
        assert clips[0][0] == 0.0 and clips[-1][1] == duration
        assert all(a[1] == b[0] for a, b in pairwise(clips))
        lengths = [b - a for a, b in clips]
        assert max(lengths) <= max_s + 1e-6
        if duration >= min_s:
            assert min(lengths) >= min_s - 1e-6
        else:
            assert clips == [(0.0, duration)]
        # every boundary is a detected cut or lies inside an original scene's even split
        inner = {round(c, 9) for c in cuts}
        for a, _b in clips[1:]:
            if round(a, 9) not in inner:
                assert any(x < a < y for x, y in scenes) or a in cuts
    # scenes already within the limits are returned as they are
    scenes = [(0.0, 30.0), (30.0, 95.0), (95.0, 120.0)]
    assert shape_clips(scenes, duration_s=120, min_clip_s=20, max_clip_s=180) == scenes


def test_frame_times_are_centres_of_equal_segments() -> None:
    assert frame_times(0, 8, 4) == [1.0, 3.0, 5.0, 7.0]
    assert frame_times(10, 11, 1) == [10.5]
    assert frame_times(2, 5, 3) == [2.5, 3.5, 4.5]
    assert frame_times(0, 5, 0) == [] and frame_times(3, 3, 4) == []
    times = frame_times(1.25, 99.75, 32)
    gaps = np.diff(times)
    assert len(times) == 32 and np.allclose(gaps, gaps[0]) and times[0] - 1.25 == pytest.approx(gaps[0] / 2)
    with pytest.raises(ConfigError):
        frame_times(5, 4, 2)


def test_slice_transcript_takes_overlapping_cues() -> None:
    cues = [Cue(0, 2, "a"), Cue(1.5, 3.5, "b"), Cue(3.5, 3.5, "c"), Cue(4, 5, "d")]
    assert slice_transcript(cues, 0, 2) == "a b"
    assert slice_transcript(cues, 2, 3.5) == "b"
    assert slice_transcript(cues, 3.5, 4) == "c"
    assert slice_transcript(cues, 5, 9) == ""


def test_video_options_validate() -> None:
    with pytest.raises(ConfigError, match="max_clip_s >= 2"):
        VideoOptions(min_clip_s=60, max_clip_s=100)
    with pytest.raises(ConfigError, match="frames_per_clip"):
        VideoOptions(frames_per_clip=0)
    with pytest.raises(ConfigError, match="transcribe"):
        VideoOptions(asr=object())  # type: ignore[arg-type]
    assert VideoOptions().max_clip_s <= 180  # every clip, hence the average, stays within 3 minutes


# --------------------------------------------------------------------------- containers and probing


@pytest.mark.parametrize("ext", [".mp4", ".mkv", ".webm", ".avi", ".mov"])
def test_probe_each_container(media: Path, ext: str) -> None:
    spec = CONTAINER_CODECS[ext]
    if not encoder_available(spec.video):
        pytest.skip(f"this PyAV build has no {spec.video} encoder")
    written = write_video(media / f"probe{ext}", [("coffee", 1.0), ("rocket", 1.0)], audio="silence", title="Probe me")
    probe = probe_video(written.path)
    assert ext in VIDEO_EXTENSIONS
    assert probe.duration_s == pytest.approx(2.0, abs=0.1)
    assert (probe.fps, probe.width, probe.height, probe.has_audio) == (25.0, 320, 240, True)
    assert probe.video_codec in {"h264", "vp9", "mpeg4"}
    assert probe.metadata["title"] == "Probe me"
    assert probe.metadata["streams"][0]["type"] == "video"
    assert probe.metadata["size_bytes"] == written.path.stat().st_size
    cuts = [a for a, _b in detect_scenes(written.path)[1:]]
    assert cuts == pytest.approx([1.0], abs=2 / FPS)


@pytest.mark.parametrize("ext", [".mkv", ".webm", ".mp4"])
def test_embedded_subtitle_stream_is_read_when_there_is_no_sidecar(media: Path, ext: str) -> None:
    spec = CONTAINER_CODECS[ext]
    if not encoder_available(spec.video) or not encoder_available(spec.subtitle or ""):
        pytest.skip(f"this PyAV build lacks {spec.video} or {spec.subtitle}")
    cues = [(0.3, 1.1, "First <i>line</i> &amp; more"), (1.4, 1.9, "Second\nline")]
    written = write_video(media / f"soft{ext}", [("astronaut", 1.0), ("coffee", 1.0)], cues=cues, embed_subtitles=True)
    assert sidecar_paths(written.path) == []
    probe = probe_video(written.path)
    assert probe.subtitle_streams == 1
    got, source = read_transcript(written.path, probe=probe)
    assert source == "embedded:1"
    assert [c.text for c in got] == ["First line & more", "Second line"]
    assert [t for c in got for t in (c.start_s, c.end_s)] == pytest.approx([0.3, 1.1, 1.4, 1.9], abs=0.002)


def test_vtt_sidecar_and_sidecar_preference(media: Path) -> None:
    cues = [(0.2, 0.9, "<v Ann>Hello</v> there"), (1.2, 1.8, "General Kenobi")]
    written = write_video(
        media / "greeting.mkv", [("camera", 1.0), ("chelsea", 1.0)], cues=cues, sidecar="vtt", embed_subtitles=True
    )
    got, source = read_transcript(written.path)
    assert source == "sidecar:greeting.vtt"  # a sidecar wins over the muxed stream
    assert [(c.start_s, c.end_s, c.text) for c in got] == [(0.2, 0.9, "Hello there"), (1.2, 1.8, "General Kenobi")]
    (media / "greeting.en.srt").write_text("1\n00:00:00,100 --> 00:00:00,500\nEnglish\n", encoding="utf-8")
    (media / "greeting.de.srt").write_text("1\n00:00:00,100 --> 00:00:00,500\nDeutsch\n", encoding="utf-8")
    (media / "greeting.part2.srt").write_text("1\n00:00:00,100 --> 00:00:00,500\nOther\n", encoding="utf-8")
    assert [p.name for p in sidecar_paths(written.path)] == ["greeting.vtt", "greeting.en.srt", "greeting.de.srt"]
    (media / "greeting.vtt").unlink()
    assert read_transcript(written.path)[1] == "sidecar:greeting.en.srt"


def test_subtitle_parser_handles_real_world_files() -> None:
    srt = (
        "1\r\n00:00:01,000 --> 00:00:02,500\r\n<b>Bold</b> {\\an8}move\r\n\r\n"
        "2\r\n0:00:03.5 --> 0:00:04.25\r\nno blank line before the next cue\r\n"
        "3\r\n00:00:05,000 --> 00:00:06,000\r\nl&#39;amour\r\n"
    )
    assert [(c.start_s, c.end_s, c.text) for c in parse_subtitles(srt)] == [
        (1.0, 2.5, "Bold move"),
        (3.5, 4.25, "no blank line before the next cue"),
        (5.0, 6.0, "l'amour"),
    ]
    rolling = (
        "WEBVTT\n\n00:00.000 --> 00:02.000\nwe are going\n\n"
        "00:02.000 --> 00:04.000\nwe are going\nto the moon\n\n"
        "00:04.000 --> 00:06.000\nto the moon\nand back\n"
    )
    assert [c.text for c in parse_subtitles(rolling)] == ["we are going", "to the moon", "and back"]
    with pytest.raises(IngestError, match="no subtitle cues"):
        parse_subtitles("just some words", name="notes.srt")


def test_cp1252_sidecar(media: Path) -> None:
    written = write_video(media / "cafe.avi", [("coffee", 1.0)])
    (media / "cafe.srt").write_bytes("1\n00:00:00,000 --> 00:00:00,800\nCafé crème\n".encode("cp1252"))
    cues, source = read_transcript(written.path)
    assert (source, cues[0].text) == ("sidecar:cafe.srt", "Café crème")


class RecordingASR:
    """A real, trivial ASR: returns one fixed cue and records which files it was asked about."""

    name = "recording"

    def __init__(self) -> None:
        self.calls: list[Path] = []

    def transcribe(self, path: Path) -> list[Cue]:
        self.calls.append(Path(path))
        return [Cue(0.0, 1.0, "spoken words")]


def test_asr_only_when_no_subtitles_and_audio(media: Path, talk) -> None:
    silent = write_video(media / "silent.mp4", [("rocket", 1.0)])
    voiced = write_video(media / "voiced.mp4", [("rocket", 1.0)], audio="tones")
    asr = RecordingASR()
    assert read_transcript(silent.path) == ([], "none")
    assert read_transcript(silent.path, probe=probe_video(silent.path), asr=asr) == ([], "none")
    assert read_transcript(talk.path, asr=asr)[1] == "sidecar:talk.srt"
    assert asr.calls == []
    plan = plan_video(voiced.path, options=VideoOptions(asr=asr))
    assert (plan.transcript_source, plan.clips[0].transcript) == ("asr:recording", "spoken words")
    assert asr.calls == [voiced.path]


def test_audio_is_decoded_at_16_khz_mono(talk) -> None:
    pieces = list(iter_audio(talk.path, chunk_s=5))
    assert [round(offset, 3) for offset, _ in pieces] == [0.0, 5.0, 10.0]
    total = sum(s.size for _o, s in pieces)
    assert total == pytest.approx(talk.duration_s * 16_000, rel=0.01)
    assert all(s.dtype == np.float32 for _o, s in pieces)
    assert 0.1 < float(np.sqrt(np.mean(pieces[0][1] ** 2))) < 0.4  # the 0.3-amplitude tone


def test_local_asr_chunks_are_offset_and_failures_name_the_engine(talk) -> None:
    # The chunk loop the faster-whisper and openai-whisper adapters share, fed the real decoded audio; the
    # stand-in "model" answers one segment per chunk (no local Whisper model exists here).
    from universalrag.errors import IngestError
    from universalrag.ingest.video.asr import transcribe_chunks

    sizes: list[int] = []

    def one_segment(samples: np.ndarray) -> list[dict]:
        sizes.append(samples.size)
        return [{"start": 0.5, "end": 1.5, "text": f"chunk {len(sizes)}"}, {"start": 2.0, "end": 2.5, "text": " "}]

    cues = transcribe_chunks(talk.path, 5.0, one_segment, engine="test-whisper")
    assert [(c.start_s, c.end_s, c.text) for c in cues] == [
        (0.5, 1.5, "chunk 1"),
        (5.5, 6.5, "chunk 2"),
        (10.5, 11.5, "chunk 3"),
    ]
    assert sizes[0] == 5 * 16_000

    def broken(samples: np.ndarray) -> list[dict]:
        raise RuntimeError("model exploded")

    with pytest.raises(IngestError, match="test-whisper failed to transcribe the audio.*model exploded"):
        transcribe_chunks(talk.path, 5.0, broken, engine="test-whisper")


# --------------------------------------------------------------------------- broken inputs


@pytest.mark.parametrize(("ext", "faststart"), [(".mkv", False), (".mp4", True), (".mp4", False), (".avi", False)])
def test_truncated_video_is_rejected(media: Path, ext: str, faststart: bool) -> None:
    whole = write_video(
        media / f"whole{int(faststart)}{ext}", [("coffee", 2.0), ("rocket", 2.0)], audio="tones", faststart=faststart
    )
    probe_video(whole.path)  # the complete file is fine
    cut = truncate_copy(whole.path, media / f"cut{int(faststart)}{ext}", keep=0.7)
    with pytest.raises(IngestError, match="truncated") as info:
        probe_video(cut)
    assert info.value.path == str(cut) and "Re-download" in info.value.reason
    with pytest.raises(IngestError):
        plan_video(cut)


def test_not_a_video(media: Path) -> None:
    text = media / "notes.mp4"
    text.write_text("This is a shopping list, not a film.\n" * 20, encoding="utf-8")
    with pytest.raises(IngestError, match="contains text, not video data"):
        probe_video(text)
    png = media / "picture.mp4"
    from PIL import Image

    Image.new("RGB", (8, 8), "red").save(png, format="PNG")
    with pytest.raises(IngestError, match="is a PNG image, not a video"):
        probe_video(png)
    empty = media / "empty.mkv"
    empty.write_bytes(b"")
    with pytest.raises(IngestError, match="empty"):
        probe_video(empty)
    with pytest.raises(IngestError, match="no such file"):
        probe_video(media / "missing.mp4")


def test_audio_only_file_has_no_video_stream(media: Path) -> None:
    import av

    path = media / "voice.mka"
    with av.open(str(path), "w", format="matroska") as out:
        stream = out.add_stream("pcm_s16le", rate=8000, layout="mono")
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 8000), np.int16), format="s16", layout="mono")
        frame.sample_rate = 8000
        out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    with pytest.raises(IngestError, match="has no video stream"):
        probe_video(path)


# --------------------------------------------------------------------------- frames


def test_iter_frames_returns_the_photo_on_screen(talk) -> None:
    times = [13.9, 0.0, 2.96, 3.04, 7.5, 9.1, 11.0, 11.5, 0.5, 99.0]
    got = list(iter_frames(talk.path, times, max_side=160))
    assert [t for t, _ in got] == sorted(times)
    for t, image in got:
        assert image.size == (160, 120) and image.mode == "RGB"
        expected = talk.scene_at(min(t, talk.duration_s - 0.01))
        assert _closest_scene(image, talk) == expected, t
    full = next(iter_frames(talk.path, [1.0], max_side=None))[1]
    assert full.size == (320, 240)


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
    except OSError:
        pytest.skip("no /proc/self/statm on this system")
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_iter_frames_streams_with_bounded_memory(media: Path) -> None:
    names = ["astronaut", "coffee", "rocket", "camera", "chelsea", "retina"]
    written = write_video(media / "long.mkv", [(names[i % len(names)], 4.0) for i in range(12)], gop=50)
    times = frame_times(0.0, written.duration_s, 400)  # dense enough to decode forward through the file
    list(iter_frames(written.path, times[:5]))  # warm up codec and allocator
    base = _rss_mb()
    peak = base
    frames = iter_frames(written.path, times)
    for i, (t, image) in enumerate(frames):
        if i % 40 == 0:
            shown = written.images[_closest_scene(image.resize((320, 240)), written)]
            assert np.array_equal(shown, written.images[written.scene_at(t)]), t
            peak = max(peak, _rss_mb())
    assert peak - base < 60, f"RSS grew by {peak - base:.0f} MB"
    lazy = iter_frames(written.path, times)
    assert next(lazy)[0] == times[0]  # a generator: nothing is decoded before it is asked for
    lazy.close()


# --------------------------------------------------------------------------- speech recognition


@pytest.mark.parametrize(
    ("cls", "module", "package"),
    [
        (FasterWhisperASR, "faster_whisper", "faster-whisper"),
        (WhisperASR, "whisper", "openai-whisper"),
    ],
)
def test_local_asr_without_its_package_names_it(talk, cls, module: str, package: str) -> None:
    if importlib.util.find_spec(module) is not None:
        pytest.skip(f"{module} is installed here")
    asr = cls("/models/none")  # constructing does no I/O
    with pytest.raises(MissingDependencyError, match=package) as info:
        asr.transcribe(talk.path)
    assert "pip install" in str(info.value)


def test_openai_asr_errors_are_actionable(talk) -> None:
    pytest.importorskip("openai")
    with OpenAICompatServer() as server:
        server.api_key = "right-key"
        asr = OpenAIAudioASR("whisper-1", base_url=server.base_url, api_key="wrong-key", timeout=10)
        with pytest.raises(IngestError, match="HTTP 401") as info:
            asr.transcribe(talk.path)
        assert "API key" in info.value.reason and "wrong-key" not in str(info.value)
        assert server.requests[-1]["path"] == "/v1/audio/transcriptions"
