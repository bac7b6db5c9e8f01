"""Where a command's query comes from: its argument, standard input (``-``) or a file (``--query-file``).

A query too long for an argument list (a pasted document, a 1 MB log) can be piped or read from a file; it is
read as UTF-8 and bounded by :data:`MAX_QUERY_BYTES` so that a wrong file is refused rather than embedded.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ..errors import ConfigError

__all__ = ["MAX_QUERY_BYTES", "QueryArg", "QueryFileOpt", "read_query"]

#: Longest query read from standard input or a file (an encoder reads a few hundred tokens of it anyway).
MAX_QUERY_BYTES = 1 << 20

QueryArg = Annotated[str | None, typer.Argument(help="The query; '-' reads it from standard input.")]
QueryFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--query-file", help="Read the query from this UTF-8 file ('-': standard input) instead of the argument."
    ),
]


def _read(source: str | Path, *, served: bool) -> str:
    label = "standard input" if str(source) == "-" else str(source)
    if served:
        raise ConfigError(f"A query from {label} cannot be handed to `universalrag serve`; add --no-server.")
    try:
        if str(source) == "-":
            data = (
                sys.stdin.buffer.read(MAX_QUERY_BYTES + 1)
                if hasattr(sys.stdin, "buffer")
                else sys.stdin.read(MAX_QUERY_BYTES + 1).encode()
            )
        else:
            with Path(source).open("rb") as fh:
                data = fh.read(MAX_QUERY_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"Cannot read the query from {label} ({e.strerror or e}); check the path.") from None
    if len(data) > MAX_QUERY_BYTES:
        raise ConfigError(
            f"The query in {label} is longer than {MAX_QUERY_BYTES >> 20} MB; pass the question "
            "itself, not a whole document."
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ConfigError(f"The query in {label} is not UTF-8 text (byte offset {e.start}).") from None


def read_query(argument: str | None, query_file: Path | None, *, served: bool = False) -> str:
    """The query: ``argument``, or standard input when it is ``-``, or the content of ``query_file``.
    A usage error (exit code 2) when both or neither are given; :class:`ConfigError` when the text is empty,
    too long or unreadable."""
    if query_file is not None and argument is not None:
        raise typer.BadParameter(
            "give the query either as an argument or with --query-file, not both.",
            param_hint="'QUERY' / '--query-file'",
        )
    if query_file is not None:
        text = _read(query_file, served=served)
    elif argument == "-":
        text = _read("-", served=served)
    elif argument is None:
        raise typer.BadParameter(
            "Missing argument: pass the query as an argument, '-' to read standard input, or --query-file PATH.",
            param_hint="'QUERY'",
        )
    else:
        text = argument
    if not text.strip():
        raise ConfigError("The query is empty; pass a question.")
    return text.strip()
