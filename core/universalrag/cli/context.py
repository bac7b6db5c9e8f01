"""What one invocation of the command works with: its output streams, its settings and a :class:`UniversalRAG`.

* :class:`Output` — the two consoles. On a terminal, rich formatting and progress bars; otherwise (a pipe, a
  file, the ``serve`` client's captured streams) whole lines, never cropped or wrapped. User content is always
  printed literally (:func:`rich.markup.escape` / :class:`rich.text.Text`), never read as markup.
* :class:`Session` — what outlives one command: one :class:`Store` and one :class:`UniversalRAG` per settings
  and the routers built by name. Commands that only read the database (``status``, ``sources``, ``corpus``)
  use the store alone and never import the pipeline, the encoders or the routers. A one-shot process has one session per
  command; ``universalrag serve`` keeps one for its whole life, which is what makes a served query fast.
* :class:`CliContext` — settings + output + session for the running command (``ctx.obj``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from ..config import Settings
from .trust import strip_controls

if TYPE_CHECKING:
    from rich.console import Console

    from ..pipeline import UniversalRAG
    from ..store import Store

__all__ = ["CliContext", "Invocation", "Output", "Session"]

#: Width used when stdout is not a terminal: lines are never wrapped or cropped for a pipe.
PIPE_WIDTH = 1_000_000


class Output:
    """stdout and stderr consoles for one command.

    ``terminal`` (default: whether stdout is a TTY) switches between rich output for people and whole plain
    lines for programs; ``width`` is the terminal's width (ignored for pipes); ``color`` enables ANSI colours
    (default: on a terminal, unless ``NO_COLOR`` is set).
    """

    def __init__(
        self,
        *,
        terminal: bool | None = None,
        width: int | None = None,
        color: bool | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        from rich.console import Console

        out = stdout or sys.stdout
        self.terminal = out.isatty() if terminal is None else terminal
        self.color = (self.terminal and "NO_COLOR" not in os.environ) if color is None else color
        common: dict[str, Any] = {
            "highlight": False,
            "force_terminal": self.terminal,
            "no_color": not self.color,
            "color_system": "auto" if self.color else None,
        }
        if not self.terminal:
            common.update(width=PIPE_WIDTH, soft_wrap=True, force_interactive=False)
        elif width:
            common["width"] = width
        self.out: Console = Console(file=stdout, **common)
        self.err: Console = Console(file=stderr, stderr=stderr is None, **common)

    def print(self, *renderables: Any, **kwargs: Any) -> None:
        """Print to stdout (rich markup in literal strings is ours; user text must come as ``Text``, whose
        terminal escape sequences and control characters are dropped)."""
        self.out.print(*(_safe(r) for r in renderables), **kwargs)

    def line(self, text: str) -> None:
        """One plain line on stdout, as given but for terminal escape sequences and control characters (no markup,
        no wrapping)."""
        self.out.file.write(strip_controls(text) + "\n")
        self.out.file.flush()

    def json(self, data: Any) -> None:
        """Machine-readable output: one JSON document on stdout — indented on a terminal, one line otherwise."""
        import json

        self.line(json.dumps(data, ensure_ascii=False, indent=2 if self.terminal else None, default=str))

    def error(self, message: str, *, label: str = "error") -> None:
        """``error: message`` on stderr, the message printed literally."""
        from rich.markup import escape

        self.err.print(f"[bold red]{label}:[/] {escape(strip_controls(message))}", soft_wrap=True)


def _safe(renderable: Any) -> Any:
    """A ``Text`` without terminal escape sequences and control characters (a stored text or a file name may
    hold them); anything else as it is."""
    from rich.text import Text

    if isinstance(renderable, Text) and strip_controls(renderable.plain) != renderable.plain:
        clean = renderable.copy()
        clean.plain = strip_controls(renderable.plain)  # styles of a text that held escapes may shift
        return clean
    return renderable


@dataclass
class Invocation:
    """How the command was called: its environment and its terminal (given by the ``serve`` client, else this
    process's own). ``ctx.obj`` before the root callback runs."""

    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    terminal: bool | None = None
    width: int | None = None
    color: bool | None = None
    session: Session | None = None
    served: bool = False


def _encoder_key(settings: Settings) -> tuple[Any, ...]:
    return (
        settings.embedder,
        settings.embed_base_url,
        settings.embed_api_key,
        settings.embed_dimensions,
        settings.device,
    )


class Session:
    """One :class:`UniversalRAG` per settings, sharing one text encoder (and visual encoder) per encoder
    configuration; routers built by the registry, by name and options. Constructing it does no I/O."""

    def __init__(self) -> None:
        self._stores: dict[Settings, Store] = {}
        self._rags: dict[Settings, UniversalRAG] = {}
        self._variants: dict[tuple[Settings, Hashable], UniversalRAG] = {}
        self._routers: dict[Hashable, Any] = {}

    def store(self, settings: Settings) -> Store:
        """The :class:`Store` for ``settings`` (no connection until used); :meth:`rag` uses the same one."""
        store = self._stores.get(settings)
        if store is None:
            from ..store import Store

            store = self._stores[settings] = Store(settings=settings)
        return store

    def rag(self, settings: Settings) -> UniversalRAG:
        """The :class:`UniversalRAG` for ``settings`` (its default router, built on first use)."""
        rag = self._rags.get(settings)
        if rag is None:
            from ..pipeline import UniversalRAG

            store = self.store(settings)
            donor = next((r for s, r in self._rags.items() if _encoder_key(s) == _encoder_key(settings)), None)
            if donor is not None:
                rag = UniversalRAG(
                    settings=settings, store=store, embedder=donor.embedder, visual_encoder=donor.visual_encoder
                )
            else:
                rag = UniversalRAG(settings=settings, store=store, embedder=_shared_text_encoder(settings))
            self._rags[settings] = rag
        return rag

    def rag_with_router(self, settings: Settings, key: Hashable, router: Any) -> UniversalRAG:
        """A :class:`UniversalRAG` over the same store and encoders as :meth:`rag` but routed by ``router``
        (cached under ``key``)."""
        variant = self._variants.get((settings, key))
        if variant is None:
            from ..pipeline import UniversalRAG

            base = self.rag(settings)
            variant = UniversalRAG(
                settings=settings,
                store=base.store,
                embedder=base.embedder,
                router=router,
                visual_encoder=base.visual_encoder,
            )
            self._variants[(settings, key)] = variant
        return variant

    def router(self, key: Hashable, build: Any) -> Any:
        """The router cached under ``key``, built by ``build()`` the first time."""
        if key not in self._routers:
            self._routers[key] = build()
        return self._routers[key]

    def close(self) -> None:
        """Release every database connection."""
        for rag in self._rags.values():
            rag.close()  # closes its store too
        for settings, store in self._stores.items():
            if settings not in self._rags:
                store.close()
        self._rags.clear()
        self._stores.clear()
        self._variants.clear()


def _shared_text_encoder(settings: Settings) -> Any:
    """The process-wide bundled MiniLM when the settings ask for it, so that the example router of
    user-defined corpora (which uses the same instance) does not load a second copy; otherwise ``None`` (the
    :class:`UniversalRAG` builds the configured embedder)."""
    from ..embed import MINILM_NAME

    if settings.embedder not in ("minilm", MINILM_NAME) or settings.device:
        return None
    from ..routing.examples import default_embedder

    return default_embedder()


class CliContext:
    """Settings, output and the :class:`UniversalRAG` of the running command."""

    def __init__(
        self,
        settings: Settings,
        *,
        output: Output,
        session: Session | None = None,
        debug: bool = False,
        served: bool = False,
    ) -> None:
        self.settings = settings
        self.output = output
        self.debug = debug
        self.served = served
        self._own_session = session is None
        self.session = session or Session()

    @property
    def rag(self) -> UniversalRAG:
        """The :class:`UniversalRAG` for these settings (built on first use; nothing loads before)."""
        return self.session.rag(self.settings)

    @property
    def store(self) -> Store:
        """The corpus store for these settings (the same one :attr:`rag` uses; building it loads no model)."""
        return self.session.store(self.settings)

    def ensure_initialised(self) -> list[str]:
        """Create the schema and the built-in corpora on first use, and upgrade a schema an older version of
        the library made (``init`` is never a required first step); returns the corpora created. An up-to-date
        schema costs one query and no pipeline."""
        from ..store import migrate

        if not migrate.is_current(self.store.revision()):
            return self.rag.init()
        return []

    def with_settings(self, settings: Settings) -> CliContext:
        """The same output and session for other settings (``demo`` uses its own schema)."""
        return CliContext(settings, output=self.output, session=self.session, debug=self.debug, served=self.served)

    def close(self) -> None:
        """Release what this command opened (a served command leaves the server's session alone)."""
        if self._own_session:
            self.session.close()
