"""What an ingestion run knows: its options (:class:`IngestOptions`), where each kind of file goes, and the
run's state (:class:`IngestRun`) that the pipeline and the text-group planner share. No parsing, no writing."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import Settings
from ..embed.base import Embedder, check_embedder
from ..errors import ConfigError, IngestError, UniversalRAGError
from ..store import Store
from ..types import CorpusSpec, Modality
from .limits import InputLimits
from .report import FileOutcome, Progress
from .text.document import TextDocument
from .video.planning import VideoOptions

if TYPE_CHECKING:
    from ..embed.visual import VisualEncoder
    from ..store.sources import SourceHook
    from ..types import Unit
    from .describe import Describer
    from .documents import DocumentOptions

__all__ = ["DEFAULT_CORPORA", "IngestOptions", "IngestRun", "describer_from_settings", "failed_outcome"]

#: Where a file goes when no corpus is named, by detected kind.
DEFAULT_CORPORA: dict[str, tuple[str, ...]] = {
    "text": ("document", "paragraph"),
    "table": ("table",),
    "image": ("image",),
    "video": ("video", "clip"),
    "document": ("document", "paragraph", "table", "image"),
}
_KIND_MODALITY = {
    "text": Modality.TEXT,
    "table": Modality.TABLE,
    "image": Modality.IMAGE,
    "video": Modality.VIDEO,
    "document": Modality.TEXT,
}


@dataclass(frozen=True, slots=True)
class IngestOptions:
    """How inputs are turned into units."""

    visual_encoder: VisualEncoder | None = None
    video: VideoOptions | None = None
    table_batch_rows: int = 1024
    captions: dict[str, str] = field(default_factory=dict)  # file path → caption for images
    documents: DocumentOptions | None = None  # OCR and picture settings for PDF, Word and PowerPoint files
    #: Large sources (see :mod:`universalrag.ingest.large`): a plain-text file above this many bytes is streamed
    #: and committed in batches of ``text_batch_passages`` passages; a table file with more than
    #: ``stage_rows`` rows is committed in batches of ``table_batch_rows``, embedding at most
    #: ``max_embedded_rows`` evenly spaced rows per table.
    large_text_bytes: int = 8 << 20
    #: Markdown, HTML, reST and code files are parsed whole; above this many bytes they are refused (save the
    #: text as .txt to have it streamed).
    max_markup_bytes: int = 64 << 20
    text_batch_passages: int = 512
    stage_rows: int = 20_000
    max_embedded_rows: int = 100_000
    #: Caps on what one file may expand to while it is read (Office packages, a document's text, a table's
    #: columns): :mod:`universalrag.ingest.limits`.
    limits: InputLimits = field(default_factory=InputLimits)
    #: Writes a description and an entity summary of each image, figure, table and video scene with a chat model
    #: before its source is written (:mod:`universalrag.ingest.describe`); ``None``: off.
    describer: Describer | None = None
    #: Writes each source's knowledge-graph rows with its units (``GraphStore.for_ingest(extractor)``,
    #: :mod:`universalrag.graph`): called with a source's units and URI before its transaction, it returns the hook
    #: that writes them inside it; ``None``: no graph.
    graph: Callable[[Sequence[Unit], str], SourceHook] | None = None
    #: Asked between files and between the embedding calls of a group of text files; when it returns True the
    #: ingest raises :class:`KeyboardInterrupt` there, every file done so far committed (the command's Ctrl-C).
    should_stop: Callable[[], bool] | None = None

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        visual_encoder: VisualEncoder | None = None,
        video: VideoOptions | None = None,
        table_batch_rows: int = 1024,
        captions: dict[str, str] | None = None,
        documents: DocumentOptions | None = None,
        describe: bool | None = None,
    ) -> IngestOptions:
        """Options whose videos are transcribed by the speech recogniser the settings name
        (``UNIVERSALRAG_ASR``), unless ``video`` brings its own ``asr``, and whose non-text units a chat model
        describes when ``describe`` is true (``None``: ``UNIVERSALRAG_DESCRIBE``). Nothing is loaded yet."""
        from .video.asr import asr_from_settings

        video = video or VideoOptions()
        if video.asr is None and settings.asr:
            video = replace(video, asr=asr_from_settings(settings))
        return cls(
            visual_encoder=visual_encoder,
            video=video,
            table_batch_rows=table_batch_rows,
            captions=dict(captions or {}),
            documents=documents,
            describer=describer_from_settings(settings) if _wanted(describe, settings) else None,
            limits=InputLimits.from_settings(settings),
        )

    def described(self, settings: Settings, describe: bool | None) -> IngestOptions:
        """These options with model descriptions turned on (a describer for ``settings``' chat model, unless they
        have one) or off, as ``describe`` says; ``None`` leaves them as they are."""
        if describe is None or (self.describer is not None) == describe:
            return self
        return replace(self, describer=describer_from_settings(settings) if describe else None)


@dataclass(slots=True)
class IngestRun:
    """One ingestion run: where its files go, the corpora it has checked, what it has read so far."""

    store: Store
    embedder: Embedder
    options: IngestOptions
    corpus: str | None
    checked: set[str] = field(default_factory=set)
    alts: dict[Path, str] = field(default_factory=dict)
    parsed: dict[Path, TextDocument] = field(default_factory=dict)  # pages already read this run
    formats: dict[Path, str | None] = field(default_factory=dict)  # reader format detected per file
    on_progress: Callable[[Progress], None] | None = None

    def spec(self, name: str, kind: str) -> CorpusSpec:
        """Corpus ``name``, checked once per run to hold ``kind`` files embedded by this run's encoder (a
        visual channel is added for images and videos when a visual encoder is given)."""
        spec = self.store.corpus(name)
        if name not in self.checked:
            if spec.modality is not _KIND_MODALITY[kind]:
                raise ConfigError(
                    f"Corpus {name!r} holds {spec.modality} units; a {kind} file cannot go there. "
                    f"Use a {_KIND_MODALITY[kind]} corpus, or leave out --corpus."
                )
            check_embedder(spec, self.embedder)
            visual = self.options.visual_encoder
            if visual is not None and kind in ("image", "video"):
                self.store.add_visual_channel(name, dimension=visual.dimension, encoder=visual.name)
                spec = self.store.corpus(name)
            self.checked.add(name)
        return spec

    def targets(self, kind: str) -> tuple[str, ...]:
        """The corpora a ``kind`` file goes to: the one named for the run, else the defaults of its kind."""
        return (self.corpus,) if self.corpus else DEFAULT_CORPORA[kind]

    def scope(self, kind: str) -> str:
        """The sources' scope: ``""`` for the default corpora of ``kind``, else the corpus named. A file sent to
        a user corpus is a source of its own, so it never replaces the file's units in the default corpora."""
        return "" if self.targets(kind) == DEFAULT_CORPORA[kind] else str(self.corpus)


def _wanted(describe: bool | None, settings: Settings) -> bool:
    return settings.describe if describe is None else describe


def describer_from_settings(settings: Settings) -> Describer:
    """A :class:`~universalrag.ingest.describe.Describer` for one run with the chat model of ``settings``
    (:class:`ConfigError` when none is configured)."""
    from .describe import Describer

    return Describer.from_settings(settings)


def failed_outcome(path: Path, error: UniversalRAGError) -> FileOutcome:
    """The outcome of a file that failed with ``error`` (its reason, without the path an IngestError repeats)."""
    reason = error.reason if isinstance(error, IngestError) else str(error)
    return FileOutcome(path=str(path), status="failed", error=reason)
