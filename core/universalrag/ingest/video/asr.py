"""Speech recognition for videos without subtitles (VideoRAG's auxiliary text): the :class:`ASR` protocol.

Three implementations, each importing its SDK on first use (constructors do no I/O):

* :class:`FasterWhisperASR` — faster-whisper with a local CTranslate2 model folder (or a cached name);
* :class:`WhisperASR` — openai-whisper with a local ``.pt`` checkpoint (or a name it can download);
* :class:`OpenAIAudioASR` — any OpenAI-compatible ``/v1/audio/transcriptions`` endpoint.

Audio is decoded with PyAV (16 kHz mono), so no ``ffmpeg`` program is needed. ASR is off unless a
caller passes one of these to :class:`~universalrag.ingest.video.VideoOptions`, or the settings name one
(``UNIVERSALRAG_ASR``; see :func:`asr_from_settings`).
"""

from __future__ import annotations

import io
import threading
import wave
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ...config import Settings
from ...errors import ConfigError, IngestError, MissingDependencyError
from ...media import import_av
from ...openai_client import OpenAIClients, redact_url, translate_error
from .cues import Cue, clean_cue_text

__all__ = [
    "ASR",
    "ASR_BUILDERS",
    "FasterWhisperASR",
    "OpenAIAudioASR",
    "WhisperASR",
    "asr_from_settings",
    "iter_audio",
    "transcribe_chunks",
]

#: Whisper models take 16 kHz mono audio.
SAMPLE_RATE = 16_000


@runtime_checkable
class ASR(Protocol):
    """Turns the speech of a video file into timed cues."""

    name: str

    def transcribe(self, path: Path) -> list[Cue]:
        """Cues (seconds from the start of the file) of the speech in ``path``; ``[]`` when there is none."""
        ...


def _import(module: str, package: str, extra: str, feature: str) -> Any:
    try:
        return __import__(module, fromlist=["_"])
    except ImportError as e:
        raise MissingDependencyError(package, extra, feature=feature) from e


def iter_audio(
    path: str | Path, *, chunk_s: float | None = None, sample_rate: int = SAMPLE_RATE
) -> Iterator[tuple[float, np.ndarray]]:
    """Decode the first audio stream of ``path`` as float32 mono samples at ``sample_rate``.

    Yields ``(offset_s, samples)``: one array for the whole track when ``chunk_s`` is None, else
    pieces of ``chunk_s`` seconds (memory stays bounded for long videos). Yields nothing when the
    file has no audio stream.
    """
    av = import_av("reading audio")
    p = Path(path)
    try:
        container = av.open(str(p))
    except (av.error.FFmpegError, OSError) as e:
        raise IngestError(p, f"could not be opened to read its audio ({e}).") from e
    with container:
        if not container.streams.audio:
            return
        stream = container.streams.audio[0]
        resampler = av.AudioResampler(format="flt", layout="mono", rate=sample_rate)
        limit = None if chunk_s is None else max(1, int(chunk_s * sample_rate))
        pending: list[np.ndarray] = []
        held = 0
        offset = 0
        try:
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    pending.append(out.to_ndarray().reshape(-1))
                    held += pending[-1].size
                while limit is not None and held >= limit:
                    samples = np.concatenate(pending)
                    yield offset / sample_rate, samples[:limit]
                    pending, held, offset = [samples[limit:]], samples.size - limit, offset + limit
            for out in resampler.resample(None):
                pending.append(out.to_ndarray().reshape(-1))
        except av.error.FFmpegError as e:
            raise IngestError(p, f"its audio could not be decoded ({e}); re-encode the file.") from e
        if pending and sum(a.size for a in pending):
            yield offset / sample_rate, np.concatenate(pending)


def _cues(segments: Any, offset: float = 0.0) -> list[Cue]:
    """Cues from Whisper-style segments (objects or dicts with start, end, text)."""
    cues = []
    for seg in segments or ():
        get = seg.get if isinstance(seg, dict) else lambda k, s=seg: getattr(s, k, None)
        text = clean_cue_text(str(get("text") or ""))
        if text:
            start = offset + float(get("start") or 0.0)
            cues.append(Cue(start, max(start, offset + float(get("end") or 0.0)), text))
    return cues


class _LocalModel:
    """Lazily loads a model once (thread-safe) and remembers it."""

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def get(self, load: Any) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = load()
        return self._model


#: What local speech models raise when they cannot transcribe or load (torch and CTranslate2 raise
#: RuntimeError, a missing or damaged model file OSError, a bad argument or tensor shape ValueError).
_MODEL_ERRORS = (RuntimeError, OSError, ValueError)


def transcribe_chunks(
    path: Path, chunk_s: float | None, segments: Callable[[np.ndarray], Any], *, engine: str
) -> list[Cue]:
    """Cues of the audio of ``path``, transcribed ``chunk_s`` seconds at a time by ``segments`` (a local
    model's Whisper-style segments for one chunk); the model's failures become one :class:`IngestError`."""
    cues: list[Cue] = []
    for offset, samples in iter_audio(path, chunk_s=chunk_s):
        try:
            found = list(segments(samples) or ())  # faster-whisper decodes lazily, while its segments are read
        except _MODEL_ERRORS as e:
            raise IngestError(path, f"{engine} failed to transcribe the audio ({type(e).__name__}: {e}).") from e
        cues.extend(_cues(found, offset))
    return cues


class FasterWhisperASR:
    """Transcribes with faster-whisper (``pip install faster-whisper``).

    ``model`` is a local CTranslate2 model folder or a model name already in the Hugging Face cache;
    with ``local_files_only`` (the default) nothing is downloaded. The model loads on first use. Audio
    is transcribed in pieces of ``chunk_s`` seconds (None: whole), so memory stays bounded.
    """

    def __init__(
        self,
        model: str | Path,
        *,
        device: str = "cpu",
        compute_type: str = "int8",
        language: str | None = None,
        beam_size: int = 5,
        local_files_only: bool = True,
        chunk_s: float | None = 1200,
    ) -> None:
        self.model = str(model)
        self.chunk_s = chunk_s
        self.device = device
        self.compute_type = compute_type
        self.language = language
        self.beam_size = beam_size
        self.local_files_only = local_files_only
        self.name = f"faster-whisper:{Path(self.model).name}"
        self._loaded = _LocalModel()

    def _load(self) -> Any:
        fw = _import("faster_whisper", "faster-whisper", "asr", "speech recognition with faster-whisper")
        try:
            return fw.WhisperModel(
                self.model, device=self.device, compute_type=self.compute_type, local_files_only=self.local_files_only
            )
        except _MODEL_ERRORS as e:
            raise ConfigError(
                f"The faster-whisper model {self.model!r} could not be loaded ({type(e).__name__}: {e}). "
                "Pass the path of a local CTranslate2 Whisper model folder (for example one converted with "
                "ct2-transformers-converter), or a model name already in the Hugging Face cache."
            ) from e

    def transcribe(self, path: Path) -> list[Cue]:
        """Transcribe the audio track of ``path``."""
        model = self._loaded.get(self._load)

        def segments(samples: np.ndarray) -> Any:
            return model.transcribe(samples, language=self.language, beam_size=self.beam_size)[0]

        return transcribe_chunks(path, self.chunk_s, segments, engine="faster-whisper")


class WhisperASR:
    """Transcribes with openai-whisper (``pip install openai-whisper``).

    ``model`` is the path of a ``.pt`` checkpoint, or a model name (``base``, ``small``...) that
    whisper finds in ``download_root`` or downloads there. Runs in fp32 on CPU. The model loads on
    first use. Audio is transcribed in pieces of ``chunk_s`` seconds (None: whole).
    """

    def __init__(
        self,
        model: str | Path,
        *,
        device: str = "cpu",
        language: str | None = None,
        download_root: str | Path | None = None,
        chunk_s: float | None = 1200,
    ) -> None:
        self.model = str(model)
        self.chunk_s = chunk_s
        self.device = device
        self.language = language
        self.download_root = None if download_root is None else str(download_root)
        self.name = f"whisper:{Path(self.model).stem}"
        self._loaded = _LocalModel()

    def _load(self) -> Any:
        whisper = _import("whisper", "openai-whisper", "whisper", "speech recognition with openai-whisper")
        try:
            return whisper.load_model(self.model, device=self.device, download_root=self.download_root)
        except _MODEL_ERRORS as e:
            raise ConfigError(
                f"The whisper model {self.model!r} could not be loaded ({type(e).__name__}: {e}). Pass the path "
                "of a downloaded .pt checkpoint, or set download_root to the folder that holds it."
            ) from e

    def transcribe(self, path: Path) -> list[Cue]:
        """Transcribe the audio track of ``path``."""
        model = self._loaded.get(self._load)

        def segments(samples: np.ndarray) -> Any:
            return model.transcribe(samples, language=self.language, fp16=False, verbose=None).get("segments")

        return transcribe_chunks(path, self.chunk_s, segments, engine="whisper")


def _transcription(client: Any, *, params: dict[str, Any]) -> Any:
    """One transcription request on ``client`` (an ``openai.OpenAI``)."""
    return client.audio.transcriptions.create(**params)


def _wav_bytes(samples: np.ndarray, sample_rate: int) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(sample_rate)
        out.writeframes((np.clip(samples, -1.0, 1.0) * 32767).astype("<i2").tobytes())
    return buffer.getvalue()


#: Advice for the kinds of failure where the generic one says too little (see ``translate_error``).
_HINTS = {
    "timeout": "Raise timeout= or lower chunk_s=, and check that the server is up.",
    "not_found": "Check that the model exists on this endpoint, that it transcribes audio, and that the base URL "
    "ends in /v1.",
    "bad_request": "Check that the model accepts audio transcriptions with response_format='verbose_json'.",
}


class OpenAIAudioASR:
    """Transcribes through an OpenAI-compatible ``audio.transcriptions`` endpoint (``universalrag-postgres[openai]``).

    The audio is sent as 16 kHz mono WAV pieces of ``chunk_s`` seconds (10 minutes is about 19 MB,
    under OpenAI's 25 MB limit), asking for ``verbose_json`` segments; a server that returns only text
    gives one cue per piece. ``base_url``/``api_key`` default to the SDK's (``OPENAI_API_KEY``). ``timeout``
    bounds the request of one piece with its retries included (a hung or failing endpoint costs ``timeout``,
    not ``timeout`` per attempt).
    """

    def __init__(
        self,
        model: str = "whisper-1",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        language: str | None = None,
        timeout: float = 600,
        chunk_s: float = 600,
    ) -> None:
        if not model or not str(model).strip():
            raise ConfigError("OpenAIAudioASR needs a model name, for example 'whisper-1'.")
        if chunk_s <= 0 or timeout <= 0:
            raise ConfigError("chunk_s and timeout must be positive (seconds).")
        self.model = str(model).strip()
        self.base_url = base_url
        self.language = language
        self.timeout = float(timeout)
        self.chunk_s = float(chunk_s)
        self.name = f"openai-audio:{self.model}"
        self._api_key = api_key
        self._openai = OpenAIClients(
            base_url,
            api_key=api_key,
            timeout=self.timeout,
            feature="speech recognition through the OpenAI API",
            error_type=ConfigError,
            no_key="No API key for OpenAI transcription: pass api_key= or set OPENAI_API_KEY.",
        )

    def __repr__(self) -> str:
        key = "***" if self._api_key else None
        return f"OpenAIAudioASR(model={self.model!r}, base_url={redact_url(self.base_url)!r}, api_key={key})"

    def transcribe(self, path: Path) -> list[Cue]:
        """Transcribe the audio track of ``path``, piece by piece."""
        cues: list[Cue] = []
        for offset, samples in iter_audio(path, chunk_s=self.chunk_s):
            params: dict[str, Any] = {
                "file": (f"{Path(path).stem}-{int(offset)}.wav", _wav_bytes(samples, SAMPLE_RATE), "audio/wav"),
                "model": self.model,
                "response_format": "verbose_json",
                "timestamp_granularities": ["segment"],
            }
            if self.language:
                params["language"] = self.language
            try:
                # every attempt and pause inside one deadline of ``timeout`` seconds per piece
                response = self._openai.call(partial(_transcription, params=params))
            except Exception as e:  # SDK errors are translated, anything else re-raised
                error = translate_error(
                    e,
                    error_type=lambda reason: IngestError(path, reason),
                    what=f"the transcription request for model {self.model!r}",
                    base_url=self.base_url,
                    api_key=self._api_key,
                    timeout=self.timeout,
                    hints=_HINTS,
                )
                if error is None:
                    raise
                raise error from e
            segments = getattr(response, "segments", None)
            if segments is None and isinstance(response, dict):
                segments = response.get("segments")
            if segments:
                cues.extend(_cues(segments, offset))
            else:
                text = clean_cue_text(str(getattr(response, "text", "") or ""))
                if text:
                    cues.append(Cue(offset, offset + samples.size / SAMPLE_RATE, text))
        return cues


def _openai(settings: Settings) -> ASR:
    return OpenAIAudioASR(
        settings.asr_model or "whisper-1", base_url=settings.asr_base_url, api_key=settings.asr_api_key
    )


def _local(kind: type[FasterWhisperASR] | type[WhisperASR], what: str) -> Callable[[Settings], ASR]:
    def build(settings: Settings) -> ASR:
        if not settings.asr_model:
            raise ConfigError(f"UNIVERSALRAG_ASR={settings.asr} needs UNIVERSALRAG_ASR_MODEL: {what}.")
        return kind(settings.asr_model, device=settings.device or "cpu")

    return build


#: ``Settings.asr`` value (one of :data:`universalrag.config.ASR_ENGINES`) → how that recogniser is built.
ASR_BUILDERS: dict[str, Callable[[Settings], ASR]] = {
    "openai": _openai,
    "faster-whisper": _local(
        FasterWhisperASR,
        "the path of a local CTranslate2 Whisper model folder, or a model name already in the Hugging Face cache",
    ),
    "whisper": _local(WhisperASR, "the path of a downloaded openai-whisper .pt checkpoint"),
}


def asr_from_settings(settings: Settings) -> ASR | None:
    """The speech recogniser the settings name (``UNIVERSALRAG_ASR`` and ``UNIVERSALRAG_ASR_*``), or None when
    ASR is off. Builds it without I/O: a local model loads on its first transcription."""
    if not settings.asr:
        return None
    return ASR_BUILDERS[settings.asr](settings)  # Settings accepts only the names of ASR_ENGINES
