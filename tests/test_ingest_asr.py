"""Speech recognition's success path, for real: a video with a speech-like audio track, encoded by FFmpeg
through PyAV, decoded to 16 kHz WAV pieces and sent over HTTP to the OpenAI-compatible test server, whose
transcription route finds the voiced stretches in the audio it receives. Only the words are canned (the
server has no speech model); the timestamps come from the audio itself. The ingestion test writes to a real
PostgreSQL with the bundled MiniLM encoder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.openai_server import OpenAICompatServer
from support.video import write_video

from universalrag.config import ASR_ENGINES, Settings
from universalrag.errors import ConfigError
from universalrag.ingest.pipeline import IngestOptions, ingest_paths
from universalrag.ingest.video import OpenAIAudioASR, VideoOptions, asr_from_settings, plan_video
from universalrag.ingest.video.asr import ASR_BUILDERS
from universalrag.retrieve import search_corpus

pytest.importorskip("av")
pytest.importorskip("scenedetect")
pytest.importorskip("skimage")
pytest.importorskip("openai")

#: Two stretches of "speech": one in each scene of a 12 s video cut at 6 s.
SPEECH = [(1.0, 3.0), (7.5, 10.0)]
WORDS = ["the rocket stands on its launch pad", "a cat sleeps on the couch"]
CLIPS = VideoOptions(min_clip_s=2.0, max_clip_s=8.0)


@pytest.fixture
def talk(tmp_path: Path):  # type: ignore[no-untyped-def]
    return write_video(tmp_path / "talk.mp4", [("rocket", 6.0), ("chelsea", 6.0)], audio="speech", speech=SPEECH)


def test_openai_asr_cues_carry_the_times_of_the_speech(talk) -> None:  # type: ignore[no-untyped-def]
    with OpenAICompatServer(speech_texts=list(WORDS)) as server:
        asr = OpenAIAudioASR("whisper-1", base_url=server.base_url, api_key="test", chunk_s=5)
        cues = asr.transcribe(talk.path)
        sent = server.requests_to("/v1/audio/transcriptions")
    assert [c.text for c in cues] == WORDS
    for cue, (start, end) in zip(cues, SPEECH, strict=True):  # the second stretch lies in the 5-10 s piece
        assert cue.start_s == pytest.approx(start, abs=0.1) and cue.end_s == pytest.approx(end, abs=0.1)
    assert len(sent) == 3  # 12 s in pieces of 5 s
    form = sent[0]["body"]
    assert (form["model"], form["response_format"], form["timestamp_granularities"]) == (
        "whisper-1",
        "verbose_json",
        ["segment"],
    )
    assert form["file"]["filename"] == "talk-0.wav" and form["file"]["bytes"] == 44 + 5 * 16_000 * 2
    assert sent[0]["headers"]["authorization"] == "Bearer test"


def test_a_server_that_returns_only_text_gives_one_cue_per_piece(talk) -> None:  # type: ignore[no-untyped-def]
    with OpenAICompatServer(speech_texts=list(WORDS), asr_segments=False) as server:
        cues = OpenAIAudioASR("whisper-1", base_url=server.base_url, api_key="test", chunk_s=5).transcribe(talk.path)
    assert [(c.start_s, c.end_s, c.text) for c in cues] == [(0.0, 5.0, WORDS[0]), (5.0, 10.0, WORDS[1])]


def test_ingestion_transcribes_with_the_asr_the_settings_name(  # type: ignore[no-untyped-def]
    store, minilm, talk
) -> None:
    with OpenAICompatServer(speech_texts=list(WORDS)) as server:
        settings = Settings(asr="openai", asr_base_url=server.base_url, asr_api_key="test")
        options = IngestOptions.from_settings(settings, video=CLIPS)
        report = ingest_paths(store, minilm, [talk.path], options=options)
        assert report.ok, report.failed
        assert len(server.requests_to("/v1/audio/transcriptions")) == 1  # one piece: chunk_s is 600 s
    assert store.counts()["clip"] == 2
    cat = search_corpus(store, minilm, "clip", "a cat sleeping on a couch", k=2)[0]
    assert (cat.start_s, cat.end_s) == (pytest.approx(6.0, abs=0.1), pytest.approx(12.0, abs=0.1))
    assert cat.content == WORDS[1] and cat.metadata["transcript_source"] == "asr:openai-audio:whisper-1"
    rocket = search_corpus(store, minilm, "clip", "a rocket on its launch pad", k=2)[0]
    assert rocket.start_s == 0.0 and rocket.content == WORDS[0]
    video = search_corpus(store, minilm, "video", "rocket", k=1)[0]
    assert WORDS[0] in video.content and WORDS[1] in video.content


def test_without_asr_settings_the_speech_is_not_transcribed(talk) -> None:  # type: ignore[no-untyped-def]
    options = IngestOptions.from_settings(Settings(), video=CLIPS)
    assert options.video is not None and options.video.asr is None
    plan = plan_video(talk.path, options=options.video)
    assert plan.transcript_source == "none" and all(c.transcript == "" for c in plan.clips)


def test_asr_settings_from_the_environment() -> None:
    env = {
        "UNIVERSALRAG_ASR": "openai",
        "UNIVERSALRAG_ASR_MODEL": "whisper-large-v3",
        "UNIVERSALRAG_ASR_BASE_URL": "http://127.0.0.1:9/v1",
        "OPENAI_API_KEY": "sk-secret",
    }
    settings = Settings.from_env(env)
    assert (settings.asr, settings.asr_model, settings.asr_api_key) == ("openai", "whisper-large-v3", "sk-secret")
    assert "sk-secret" not in repr(settings)
    asr = asr_from_settings(settings)
    assert isinstance(asr, OpenAIAudioASR) and asr.name == "openai-audio:whisper-large-v3"
    assert asr_from_settings(Settings.from_env({"UNIVERSALRAG_ASR": " "})) is None  # empty: off
    assert Settings().with_(asr="whisper").asr == "whisper"  # how the CLI's --asr sets it
    assert set(ASR_BUILDERS) == set(ASR_ENGINES)
    with pytest.raises(ConfigError, match="Unknown ASR engine 'vosk'"):
        Settings.from_env({"UNIVERSALRAG_ASR": "vosk"})
    with pytest.raises(ConfigError, match="UNIVERSALRAG_ASR_MODEL"):
        asr_from_settings(Settings(asr="faster-whisper"))
    local = asr_from_settings(Settings(asr="faster-whisper", asr_model="/models/ct2-small"))
    assert local is not None and local.name == "faster-whisper:ct2-small"  # built without loading anything
