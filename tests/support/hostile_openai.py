"""A hostile OpenAI-compatible endpoint for security and fault tests (stdlib only, 127.0.0.1, real HTTP).

``mode`` decides every answer:

``echo401`` / ``echo500``  HTTP 401 / 500 with an OpenAI-style error body that echoes the sent API key in
                           full (as some proxies and self-hosted servers do), also in a header.
``hang``                   accepts the request and sends nothing for ``hang_s`` seconds.
``garbage``                HTTP 200 whose body is cut-off JSON (``{"choices": [{"message": {"content": "ab``).
``bad_reply``              a valid ``chat.completion`` whose content is cut-off JSON (a model's malformed
                           reply, for the LLM router) or, for embeddings, a body without ``data``.
``ok``                     a valid ``chat.completion`` answering ``reply``.

``requests`` counts the requests received (retries included).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["HostileServer"]


class _Handler(BaseHTTPRequestHandler):
    server: Any
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence the default log
        return

    def do_GET(self) -> None:  # noqa: N802
        self._answer()

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self._answer()

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _answer(self) -> None:
        owner = self.server.owner
        with owner.lock:
            owner.requests += 1
        key = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        mode = owner.mode
        if mode == "hang":
            deadline = time.monotonic() + owner.hang_s
            while time.monotonic() < deadline and not owner.stopping.is_set():
                time.sleep(0.05)
            return
        if mode in ("echo401", "echo500"):
            status = 401 if mode == "echo401" else 500
            message = f"Invalid credentials: the key {key} was refused by upstream (request for {key})."
            body = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": key}}
            self._send(status, json.dumps(body).encode(), {"x-echo-key": key})
            return
        if mode == "garbage":
            self._send(200, b'{"choices": [{"message": {"content": "ab')
            return
        content = '{"routes": ["par' if mode == "bad_reply" else owner.reply
        if self.path.rstrip("/").endswith("/embeddings"):
            self._send(200, json.dumps({"object": "list", "model": "m"}).encode())
            return
        body = {
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        }
        self._send(200, json.dumps(body).encode())


class HostileServer:
    """``with HostileServer("echo401") as server: ... server.base_url``."""

    def __init__(self, mode: str, *, hang_s: float = 30.0, reply: str = "ok") -> None:
        self.mode = mode
        self.hang_s = hang_s
        self.reply = reply
        self.requests = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
