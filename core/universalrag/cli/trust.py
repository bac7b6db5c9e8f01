"""What the command line trusts: a home directory and a server socket only when they are the user's own, and
text for the terminal only without its control sequences.

Standard library only (the client side of ``serve`` imports it and must start in milliseconds).

- A home (``UNIVERSALRAG_HOME``) that belongs to another user, or that others may write, is refused: another
  local user could plant ``serve.sock`` there and answer the commands (or read what they send). The socket itself
  must be a socket that belongs to the user. Parents of the home are not checked: a directory of the user's own
  inside ``/tmp`` (sticky) cannot be replaced by others.
- Text from a server, from stored content and from file names may hold terminal escape sequences (OSC 8 links,
  title changes, cursor moves, a screen clear). :func:`strip_controls` removes every escape and control
  character; colours (SGR) are kept only where the caller asks for them (output of a trusted server on a terminal).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from ..errors import ConfigError

__all__ = ["check_home", "check_socket", "one_line", "strip_controls"]

#: An escape sequence: CSI (ESC [ … final byte), OSC (ESC ] … BEL or ST), DCS/SOS/PM/APC strings, any other
#: two-byte escape, and the 8-bit CSI/OSC introducers.
_ESCAPE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b.?"
    r"|[\x9b\x9d][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]",  # C0 controls but tab and newline; DEL; C1 controls
    re.DOTALL,
)
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def strip_controls(text: str, *, keep_colours: bool = False) -> str:
    """``text`` without terminal escape sequences and control characters (tab and newline stay); colour codes
    (``ESC [ … m``) stay when ``keep_colours``."""

    def replace(match: re.Match[str]) -> str:
        seq = match.group(0)
        return seq if keep_colours and _COLOUR.fullmatch(seq) else ""

    return _ESCAPE.sub(replace, text)


def one_line(text: str) -> str:
    """``text`` for one line of output (a file name): controls removed, newlines, carriage returns and tabs
    shown as ``\\n``, ``\\r``, ``\\t``."""
    shown = text.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return strip_controls(shown)


def _owner_problem(info: os.stat_result, path: Path, what: str) -> str | None:
    uid = os.geteuid()
    if info.st_uid != uid:
        return f"{what} {path} belongs to another user (uid {info.st_uid}, you are {uid})"
    if info.st_mode & 0o022:
        return f"{what} {path} can be written by other users (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def check_home(home: Path) -> None:
    """Refuse (:class:`ConfigError`) a home directory of another user or one that others may write; a home that
    does not exist yet passes (it is created private)."""
    try:
        info = os.stat(home)
    except FileNotFoundError:
        return
    except OSError as e:
        raise ConfigError(f"UNIVERSALRAG_HOME {home} cannot be looked at ({e.strerror or e}).") from e
    problem = _owner_problem(info, home, "UNIVERSALRAG_HOME")
    if problem:
        raise ConfigError(
            f"{problem}; another user could plant a server socket there. Set UNIVERSALRAG_HOME to a directory "
            f"that only you can write (or run `chmod go-w {home}` if it is yours)."
        )


def check_socket(path: Path) -> None:
    """Refuse (:class:`ConfigError`) a server socket that is not a socket of this user."""
    info = os.lstat(path)
    if not stat.S_ISSOCK(info.st_mode):
        raise ConfigError(f"{path} is not a socket; remove it (only `universalrag serve` creates it).")
    if info.st_uid != os.geteuid():
        raise ConfigError(
            f"the server socket {path} belongs to another user (uid {info.st_uid}); it was not started by you. "
            "Remove it, and set UNIVERSALRAG_HOME to a directory that only you can write."
        )
