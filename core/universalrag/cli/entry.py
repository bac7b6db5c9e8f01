"""The console-script entry point: a served command goes to ``universalrag serve`` when one is running;
everything else (and everything when no server runs) is handled by the typer app in this process."""

from __future__ import annotations

import os
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    """Run ``universalrag`` with ``argv`` (default: the process's arguments)."""
    args = list(sys.argv[1:] if argv is None else argv)
    # no model-loading progress bars from Hugging Face libraries in the command's output (ours are enough)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from .client import forward
    from .protocol import SERVED_COMMANDS, command_of

    if command_of(args) in {*SERVED_COMMANDS, "serve"}:
        # one query at a time: one BLAS/torch thread answers as fast on an idle machine and 10-50x faster on a
        # busy one (threads spinning for a core they do not get); OpenBLAS reads it when NumPy is first imported,
        # which is after this line; OMP_NUM_THREADS set by the user wins
        os.environ.setdefault("OMP_NUM_THREADS", "1")
    from ..errors import ConfigError

    try:
        code = forward(args)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    if code is not None:
        raise SystemExit(code)
    from .root import app

    try:
        app(args=args, prog_name="universalrag")
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None
