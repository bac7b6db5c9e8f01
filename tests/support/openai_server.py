"""A small OpenAI-compatible HTTP server for tests (stdlib only), so clients go through real HTTP.

Usage::

    with OpenAICompatServer(chat_reply="paris", embedding_dim=8) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert server.requests[-1]["path"] == "/v1/chat/completions"

Endpoints
    ``POST /v1/embeddings``        deterministic vectors from a SHA-256 of each input text (equal texts give
                                   equal vectors; not normalised, as real servers need not be); ``input`` may
                                   be a string or a list of strings; ``dimensions`` in the body overrides
                                   ``embedding_dim``; ``encoding_format`` "float" (default) or "base64".
    ``POST /v1/chat/completions``  ``chat_reply`` (or ``chat_reply(body)`` when callable) as a
                                   ``chat.completion``; with ``"stream": true`` as SSE
                                   ``chat.completion.chunk`` events (role, one chunk per word, finish)
                                   ending in ``data: [DONE]``, plus a usage chunk when
                                   ``stream_options.include_usage`` is set.
    ``POST /v1/audio/transcriptions``  multipart form (``file``: a WAV, ``model``, ``response_format``...), as
                                   the ``openai`` SDK sends it. The "recogniser" finds the voiced stretches of
                                   the audio (20 ms windows above an RMS threshold, gaps under 0.3 s bridged)
                                   and gives each the next text of ``speech_texts`` (``"speech"`` when none
                                   is left). ``verbose_json`` answers with ``segments`` (start/end seconds from
                                   the start of the uploaded file) unless ``asr_segments`` is False (text
                                   only); ``json`` gives ``{"text"}``, ``text`` the plain text.
    ``GET /v1/models``             one model, ``test-model``.

Behaviour knobs (attributes may also be changed while the server runs)
    ``status``   any value other than 200 answers every request with that status and an OpenAI-style
                 ``{"error": {...}}`` body.
    ``api_key``  when set, a request whose ``Authorization`` is not ``Bearer <api_key>`` gets 401 with
                 ``invalid_api_key``; the message shows the sent key masked, as OpenAI does.
    ``delay_s``  seconds to sleep before answering (timeout tests).
    ``finish_reason``  what a (non-streamed) chat answer says it ended with (default ``"stop"``; ``"length"`` for
                 an answer cut at max_tokens).

A ``chat_reply`` callable may raise :class:`ChatFailure` to answer that one request with an error status (a server
that fails some requests and answers others).

``requests`` records every request, in arrival order, as ``{"method", "path", "headers", "body"}``;
header names are lower-cased and ``body`` is the parsed JSON (``None`` when empty or not JSON), or for a
multipart form its text fields plus ``{"<field>": {"filename", "bytes"}}`` for each file.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import struct
import threading
import time
import wave
from collections.abc import Callable
from email.parser import BytesParser
from email.policy import default as default_policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ChatFailure", "OpenAICompatServer", "fake_embedding"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_error",
    404: "invalid_request_error",
    429: "rate_limit_exceeded",
    500: "server_error",
    503: "server_error",
}


class ChatFailure(Exception):
    """Raised by a ``chat_reply`` callable: the request is answered with ``status`` and an OpenAI-style error."""

    def __init__(self, status: int = 500, message: str = "The test server failed this request.") -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def fake_embedding(text: str, dim: int) -> list[float]:
    """The server's vector for ``text``: ``dim`` floats in [-1, 1) derived from SHA-256 of the text."""
    values: list[float] = []
    counter = 0
    while len(values) < dim:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        values.extend((b / 128.0) - 1.0 for b in digest)
        counter += 1
    return values[:dim]


def _mask(key: str) -> str:
    return key[:3] + "*" * max(len(key) - 7, 0) + key[-4:] if len(key) > 8 else "***"


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.0"  # one request per connection; streaming ends when the socket closes

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence the default stderr log
        return

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        self._dispatch("GET", None)

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        content_type = self.headers.get("Content-Type", "")
        if content_type.startswith("multipart/form-data"):
            body, self._files = _parse_form(content_type, raw)
            self._dispatch("POST", body)
            return
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self._dispatch("POST", body)

    def _dispatch(self, method: str, body: Any) -> None:
        owner = self.server.owner
        path = self.path.split("?", 1)[0].rstrip("/")
        owner._record(
            {"method": method, "path": path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body}
        )
        if owner.delay_s > 0:
            time.sleep(owner.delay_s)
        if owner.api_key is not None:
            sent = self.headers.get("Authorization", "")
            if sent != f"Bearer {owner.api_key}":
                key = sent.removeprefix("Bearer ").strip()
                self._error(401, f"Incorrect API key provided: {_mask(key)}.", code="invalid_api_key")
                return
        if owner.status != 200:
            self._error(owner.status, f"Test server configured to answer with status {owner.status}.")
            return
        routes: dict[tuple[str, str], Callable[[Any], None]] = {
            ("POST", "/v1/embeddings"): self._embeddings,
            ("POST", "/v1/chat/completions"): self._chat,
            ("POST", "/v1/audio/transcriptions"): self._transcriptions,
            ("GET", "/v1/models"): lambda _: self._json(
                200,
                {"object": "list", "data": [{"id": "test-model", "object": "model", "created": 0, "owned_by": "test"}]},
            ),
        }
        handler = routes.get((method, path))
        if handler is None:
            self._error(404, f"Unknown endpoint {method} {path}.", code="unknown_url")
            return
        if method == "POST" and not isinstance(body, dict):
            self._error(400, "The request body must be a JSON object.")
            return
        handler(body)

    # -- responses ---------------------------------------------------------------------------------------

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, *, code: str | None = None) -> None:
        self._json(
            status,
            {"error": {"message": message, "type": _ERROR_TYPES.get(status, "api_error"), "param": None, "code": code}},
        )

    def _embeddings(self, body: dict[str, Any]) -> None:
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not inputs or not all(isinstance(t, str) for t in inputs):
            self._error(400, "'input' must be a non-empty string or a list of strings.", code="invalid_input")
            return
        if any(t == "" for t in inputs):
            self._error(400, "'input' cannot contain an empty string.", code="invalid_input")
            return
        dim = body.get("dimensions") or self.server.owner.embedding_dim
        fmt = body.get("encoding_format") or "float"
        data = []
        for i, text in enumerate(inputs):
            vector = fake_embedding(text, int(dim))
            encoded: Any = (
                base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode() if fmt == "base64" else vector
            )
            data.append({"object": "embedding", "index": i, "embedding": encoded})
        tokens = sum(len(t.split()) for t in inputs)
        self._json(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model", "test-model"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    def _transcriptions(self, body: dict[str, Any]) -> None:
        owner = self.server.owner
        audio = getattr(self, "_files", {}).get("file")
        if not audio or not body.get("model"):
            self._error(400, "A transcription needs a 'file' and a 'model'.", code="invalid_request")
            return
        try:
            rate, samples = _read_wav(audio)
        except (wave.Error, EOFError) as e:
            self._error(400, f"Could not decode the audio file ({e}).", code="invalid_audio")
            return
        segments = [
            {
                "id": i,
                "seek": 0,
                "start": round(start, 3),
                "end": round(end, 3),
                "text": " " + text,
                "tokens": [],
                "temperature": 0.0,
                "avg_logprob": -0.1,
                "compression_ratio": 1.0,
                "no_speech_prob": 0.01,
            }
            for i, ((start, end), text) in enumerate(
                (span, owner._next_speech()) for span in _voiced_spans(samples, rate)
            )
        ]
        text = "".join(s["text"] for s in segments).strip()
        fmt = body.get("response_format") or "json"
        if fmt == "text":
            data = text.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        payload: dict[str, Any] = {"text": text}
        if fmt == "verbose_json":
            payload.update(
                {
                    "task": "transcribe",
                    "language": body.get("language") or "english",
                    "duration": round(len(samples) / rate, 3),
                }
            )
            if owner.asr_segments:
                payload["segments"] = segments
        self._json(200, payload)

    def _chat(self, body: dict[str, Any]) -> None:
        reply = self.server.owner.chat_reply
        try:
            text = reply(body) if callable(reply) else reply
        except ChatFailure as failure:
            self._error(failure.status, failure.message)
            return
        model = body.get("model", "test-model")
        created = int(time.time())
        prompt_tokens = sum(
            len(str(m.get("content", "")).split()) for m in body.get("messages") or [] if isinstance(m, dict)
        )
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": len(text.split()),
            "total_tokens": prompt_tokens + len(text.split()),
        }
        if not body.get("stream"):
            self._json(
                200,
                {
                    "id": "chatcmpl-test",
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text, "refusal": None},
                            "logprobs": None,
                            "finish_reason": self.server.owner.finish_reason,
                        }
                    ],
                    "usage": usage,
                },
            )
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()

        def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
            return {
                "id": "chatcmpl-test",
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            }

        words = text.split(" ")
        events = [chunk({"role": "assistant", "content": ""}, None)]
        events += [chunk({"content": w if i == 0 else " " + w}, None) for i, w in enumerate(words) if text]
        events.append(chunk({}, "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append(
                {
                    "id": "chatcmpl-test",
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": usage,
                }
            )
        for event in events:
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def _parse_form(content_type: str, raw: bytes) -> tuple[dict[str, Any], dict[str, bytes]]:
    """A multipart form → (text fields plus a summary of each file, file contents by field name)."""
    message = BytesParser(policy=default_policy).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    fields: dict[str, Any] = {}
    files: dict[str, bytes] = {}
    for part in message.iter_parts():
        name = str(part.get_param("name", header="content-disposition") or "")
        data = part.get_payload(decode=True) or b""
        if part.get_filename() is not None:
            files[name] = data
            fields[name] = {"filename": part.get_filename(), "bytes": len(data)}
        elif name.endswith("[]"):
            fields.setdefault(name[:-2], []).append(data.decode())
        else:
            fields[name] = data.decode()
    return fields, files


def _read_wav(data: bytes) -> tuple[int, Any]:
    """(sample rate, mono float samples in [-1, 1]) of 16-bit PCM WAV bytes."""
    import numpy as np

    with wave.open(io.BytesIO(data)) as wav:
        rate, channels, width = wav.getframerate(), wav.getnchannels(), wav.getsampwidth()
        frames = wav.readframes(wav.getnframes())
    if width != 2:
        raise wave.Error(f"expected 16-bit samples, got {8 * width}-bit")
    samples = np.frombuffer(frames, dtype="<i2").astype(np.float32) / 32768.0
    return rate, samples.reshape(-1, channels).mean(axis=1)


def _voiced_spans(
    samples: Any, rate: int, *, window_s: float = 0.02, threshold: float = 0.02, bridge_s: float = 0.3
) -> list[tuple[float, float]]:
    """(start, end) seconds of the stretches whose RMS exceeds ``threshold``; gaps under ``bridge_s`` are
    bridged and stretches shorter than a window are dropped."""
    import numpy as np

    size = max(1, int(window_s * rate))
    count = len(samples) // size
    if count == 0:
        return []
    rms = np.sqrt(np.mean(np.square(samples[: count * size].reshape(count, size)), axis=1))
    spans: list[tuple[float, float]] = []
    for i in np.flatnonzero(rms > threshold):
        start, end = i * window_s, (i + 1) * window_s
        if spans and start - spans[-1][1] < bridge_s:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return spans


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: OpenAICompatServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that hang up (timeout tests) are expected; other errors stay visible."""
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class OpenAICompatServer:
    """An OpenAI-compatible server on 127.0.0.1 (a free port), running in a daemon thread while in ``with``.

    See the module docstring for the endpoints and knobs.
    """

    def __init__(
        self,
        *,
        chat_reply: str | Callable[[dict], str] = "ok",
        embedding_dim: int = 16,
        status: int = 200,
        delay_s: float = 0.0,
        api_key: str | None = None,
        speech_texts: list[str] | None = None,
        asr_segments: bool = True,
        finish_reason: str = "stop",
    ) -> None:
        self.chat_reply = chat_reply
        self.speech_texts = list(speech_texts or [])
        self.asr_segments = asr_segments
        self.finish_reason = finish_reason
        self.embedding_dim = embedding_dim
        self.status = status
        self.delay_s = delay_s
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def _record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(entry)

    def _next_speech(self) -> str:
        with self._lock:
            return self.speech_texts.pop(0) if self.speech_texts else "speech"

    @property
    def port(self) -> int:
        """The port the server listens on (only while running)."""
        if self._httpd is None:
            raise RuntimeError("The server is not running; use it in a with block.")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, the value for an OpenAI client's ``base_url``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def requests_to(self, path: str) -> list[dict[str, Any]]:
        """The recorded requests whose path is ``path`` (for example ``"/v1/embeddings"``)."""
        with self._lock:
            return [r for r in self.requests if r["path"] == path]

    def __enter__(self) -> OpenAICompatServer:
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="openai-compat-server", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None
