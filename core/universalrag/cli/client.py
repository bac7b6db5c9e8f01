"""The client side of ``universalrag serve``: hand ``search``/``route``/``ask`` to a running server.

Imports only the standard library and :mod:`universalrag.config`, so a served command costs a Python start-up
and one round trip. When no server runs (no socket, or a stale one), the caller runs the command itself.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
from typing import TextIO

from ..config import ENV_VARS, Settings
from ..errors import ConfigError
from .protocol import SERVED_COMMANDS, command_of, read_message, socket_path, write_message

__all__ = ["forward", "served_environment"]

#: Environment passed to the server besides the library's own variables: how to colour output.
_TERMINAL_VARS = ("NO_COLOR", "FORCE_COLOR", "TERM", "COLUMNS")


def served_environment(environ: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """The part of the environment a served command sees (the library's variables and the terminal's)."""
    return {k: v for k, v in environ.items() if k in ENV_VARS or k.startswith("UNIVERSALRAG_") or k in _TERMINAL_VARS}


def forward(argv: list[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int | None:
    """Run ``argv`` on the running server and copy its output; returns the exit code, or ``None`` when the
    command must run in this process (not a served command, ``--no-server``/``--help``, no server)."""
    if command_of(argv) not in SERVED_COMMANDS or "--no-server" in argv or "--help" in argv:
        return None
    try:
        path = socket_path(Settings.from_env().home_dir)
    except ConfigError:
        return None  # the in-process run reports it
    if not path.exists():
        return None
    out, err = stdout or sys.stdout, stderr or sys.stderr
    terminal = out.isatty()
    request = {
        "argv": argv,
        "env": served_environment(os.environ),
        "cwd": os.getcwd(),
        "terminal": terminal,
        "width": shutil.get_terminal_size().columns if terminal else None,
        "color": terminal and "NO_COLOR" not in os.environ,
    }
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(path))
            with sock.makefile("rwb") as stream:
                write_message(stream, request)
                reply = read_message(stream)
    except (ConnectionError, FileNotFoundError, OSError):
        return None  # stale socket or a server that went away: run here
    if reply is None or "code" not in reply:
        return None
    out.write(reply.get("stdout", ""))
    out.flush()
    err.write(reply.get("stderr", ""))
    err.flush()
    return int(reply["code"])
