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
    ``GET /v1/models``             one model, ``test-model``.

Behaviour knobs (attributes may also be changed while the server runs)
    ``status``   any value other than 200 answers every request with that status and an OpenAI-style
                 ``{"error": {...}}`` body.
    ``api_key``  when set, a request whose ``Authorization`` is not ``Bearer <api_key>`` gets 401 with
                 ``invalid_api_key``; the message shows the sent key masked, as OpenAI does.
    ``delay_s``  seconds to sleep before answering (timeout tests).

``requests`` records every request, in arrival order, as ``{"method", "path", "headers", "body"}``;
header names are lower-cased and ``body`` is the parsed JSON (``None`` when empty or not JSON).
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

__all__ = ["OpenAICompatServer", "fake_embedding"]

_ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 403: "permission_error",
                404: "invalid_request_error", 429: "rate_limit_exceeded", 500: "server_error",
                503: "server_error"}


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
    server: "_HTTPServer"
    protocol_version = "HTTP/1.0"  # one request per connection; streaming ends when the socket closes

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence the default stderr log
        return

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        self._dispatch("GET", None)

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self._dispatch("POST", body)

    def _dispatch(self, method: str, body: Any) -> None:
        owner = self.server.owner
        path = self.path.split("?", 1)[0].rstrip("/")
        owner._record({"method": method, "path": path,
                       "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
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
            ("GET", "/v1/models"): lambda _: self._json(200, {"object": "list", "data": [
                {"id": "test-model", "object": "model", "created": 0, "owned_by": "test"}]}),
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
        self._json(status, {"error": {"message": message, "type": _ERROR_TYPES.get(status, "api_error"),
                                      "param": None, "code": code}})

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
            encoded: Any = (base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
                            if fmt == "base64" else vector)
            data.append({"object": "embedding", "index": i, "embedding": encoded})
        tokens = sum(len(t.split()) for t in inputs)
        self._json(200, {"object": "list", "data": data, "model": body.get("model", "test-model"),
                         "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    def _chat(self, body: dict[str, Any]) -> None:
        reply = self.server.owner.chat_reply
        text = reply(body) if callable(reply) else reply
        model = body.get("model", "test-model")
        created = int(time.time())
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages") or []
                            if isinstance(m, dict))
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": len(text.split()),
                 "total_tokens": prompt_tokens + len(text.split())}
        if not body.get("stream"):
            self._json(200, {
                "id": "chatcmpl-test", "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                             "logprobs": None, "finish_reason": "stop"}],
                "usage": usage,
            })
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()

        def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
            return {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": created,
                    "model": model, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                                 "finish_reason": finish}]}

        words = text.split(" ")
        events = [chunk({"role": "assistant", "content": ""}, None)]
        events += [chunk({"content": w if i == 0 else " " + w}, None) for i, w in enumerate(words) if text]
        events.append(chunk({}, "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append({"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": created,
                           "model": model, "choices": [], "usage": usage})
        for event in events:
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: "OpenAICompatServer"

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
    ) -> None:
        self.chat_reply = chat_reply
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

    def __enter__(self) -> "OpenAICompatServer":
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="openai-compat-server", daemon=True)
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
