"""The client side of ``universalrag serve``: hand ``search``/``route``/``ask`` to a running server.

Imports only the standard library and :mod:`universalrag.config`, so a served command costs a Python start-up
and one round trip. When no server runs (no socket, or a stale one), the caller runs the command itself.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import sys
from collections.abc import Mapping
from typing import TextIO

from ..config import ENV_VARS, Settings
from ..errors import ConfigError
from .protocol import MAX_MESSAGE_BYTES, SERVED_COMMANDS, command_of, read_message, socket_path, write_message
from .trust import check_home, check_socket, strip_controls

__all__ = ["CONNECT_TIMEOUT_S", "REPLY_TIMEOUT_S", "forward", "secret_digests", "served_environment"]

#: Environment passed to the server besides the library's own variables: how to colour output.
_TERMINAL_VARS = ("NO_COLOR", "FORCE_COLOR", "TERM", "COLUMNS")
#: Variables whose values may hold a credential (API keys, URLs with a password): never sent to the server.
SECRET_NAME = re.compile(r"KEY|PASSWORD|TOKEN|SECRET|URL|SERVERS")
#: Seconds to connect and send a request; a server that does not take it in time is passed over.
CONNECT_TIMEOUT_S = 2.0
#: Seconds to wait for the reply; past it the command runs in this process instead.
REPLY_TIMEOUT_S = 120.0


def _library_var(name: str) -> bool:
    return name in ENV_VARS or name.startswith("UNIVERSALRAG_")


def served_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The part of the environment a served command sees (the library's variables and the terminal's), without
    any variable that may hold a credential (:data:`SECRET_NAME`): the server uses its own."""
    return {k: v for k, v in environ.items() if (_library_var(k) and not SECRET_NAME.search(k)) or k in _TERMINAL_VARS}


def secret_digests(environ: Mapping[str, str]) -> dict[str, str]:
    """SHA-256 digests of the credential-bearing library variables that are set (never their values): the server
    answers only when its own values are the same, so a command never runs with credentials the caller did not
    give it."""
    return {
        k: hashlib.sha256(v.strip().encode("utf-8")).hexdigest()
        for k, v in environ.items()
        if _library_var(k) and SECRET_NAME.search(k) and v.strip()
    }


def forward(argv: list[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int | None:
    """Run ``argv`` on the running server and copy its output; returns the exit code, or ``None`` when the
    command must run in this process (not a served command, ``--no-server``/``--help``, no server, a server that
    does not answer in time or runs with other credentials).

    Raises :class:`ConfigError` when the home or the socket is not the user's own (:mod:`.trust`)."""
    if command_of(argv) not in SERVED_COMMANDS or "--no-server" in argv or "--help" in argv:
        return None
    try:
        home = Settings.from_env().home_dir
    except ConfigError:
        return None  # the in-process run reports it
    path = socket_path(home)
    check_home(home)
    if not os.path.lexists(path):
        return None
    check_socket(path)
    out, err = stdout or sys.stdout, stderr or sys.stderr
    terminal = out.isatty()
    request = {
        "argv": argv,
        "env": served_environment(os.environ),
        "secrets": secret_digests(os.environ),
        "cwd": os.getcwd(),
        "terminal": terminal,
        "width": shutil.get_terminal_size().columns if terminal else None,
        "color": terminal and "NO_COLOR" not in os.environ,
    }
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(CONNECT_TIMEOUT_S)
            sock.connect(str(path))
            with sock.makefile("rwb") as stream:
                write_message(stream, request)
                sock.settimeout(REPLY_TIMEOUT_S)
                reply = read_message(stream, limit=MAX_MESSAGE_BYTES * 64)
    except (OSError, ValueError):  # stale socket, a server that went away or did not answer in time: run here
        return None
    if reply is None or "code" not in reply or not isinstance(reply["code"], int):
        return None
    colours = bool(request["color"])
    out.write(strip_controls(str(reply.get("stdout", "")), keep_colours=colours))
    out.flush()
    err.write(strip_controls(str(reply.get("stderr", "")), keep_colours=colours))
    err.flush()
    return int(reply["code"])
