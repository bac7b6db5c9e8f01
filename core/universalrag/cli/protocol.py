"""The ``serve`` protocol: one JSON line each way over a Unix socket at ``UNIVERSALRAG_HOME/serve.sock``.

Request: ``{"v": 1, "argv": [...], "env": {...}, "secrets": {...}, "cwd": "...", "terminal": bool,
"width": int|null, "color": bool}`` — the command line, the caller's ``UNIVERSALRAG_*`` environment without any
variable that may hold a credential, SHA-256 digests of those (the server uses its own values, and answers only
when they are the same), and the terminal. Response:
``{"v": 1, "code": int, "stdout": "...", "stderr": "..."}``, or ``{"v": 1, "refused": "reason"}`` when the
server does not run that command (the caller then runs it itself). Standard library only: the client side must
start in milliseconds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "MAX_MESSAGE_BYTES",
    "MAX_SOCKET_PATH",
    "SERVED_COMMANDS",
    "SOCKET_NAME",
    "VERSION",
    "command_of",
    "read_message",
    "socket_path",
    "write_message",
]

VERSION = 1
SOCKET_NAME = "serve.sock"
#: Commands a running server answers; everything else always runs in the calling process.
SERVED_COMMANDS = frozenset({"search", "route", "ask"})
#: Longest Unix socket path most systems accept (sun_path is 108 bytes on Linux, 104 on macOS).
MAX_SOCKET_PATH = 100
#: Longest request line a server reads (a query is at most 1 MB; the environment a few kB).
MAX_MESSAGE_BYTES = 2 << 20
#: Root options that take a value (skipped when looking for the command's name).
_ROOT_OPTIONS_WITH_VALUE = frozenset({"--schema"})


def socket_path(home: Path) -> Path:
    """Where the server of ``UNIVERSALRAG_HOME`` listens."""
    return home / SOCKET_NAME


def command_of(argv: list[str]) -> str | None:
    """The sub-command named in ``argv`` (after the root options), or ``None``."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _ROOT_OPTIONS_WITH_VALUE:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


class Writer(Protocol):
    """Where messages are written: a socket's file, a pipe, a buffer."""

    def write(self, data: bytes, /) -> object: ...
    def flush(self) -> object: ...


class Reader(Protocol):
    """Where messages are read from: a socket's file, a pipe, a buffer."""

    def readline(self, size: int = -1, /) -> bytes: ...


def write_message(stream: Writer, message: dict[str, Any]) -> None:
    """One message as one line of JSON."""
    stream.write(json.dumps({"v": VERSION, **message}, ensure_ascii=False).encode("utf-8") + b"\n")
    stream.flush()


def read_message(stream: Reader, *, limit: int = MAX_MESSAGE_BYTES) -> dict[str, Any] | None:
    """The next message, or ``None`` when the peer closed the connection, spoke another version, or sent a line
    longer than ``limit`` bytes or that is not JSON."""
    line = stream.readline(limit + 1)
    if not line or len(line) > limit or not line.endswith(b"\n"):
        return None
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("v") != VERSION:
        return None
    return message
