"""Rendering shared by the commands: hits, route decisions, ingest summaries and progress.

Every piece of user content (queries, titles, paths, stored text, error messages) goes into a
:class:`rich.text.Text`, so ``[/bold]`` or ``[link=…]`` in it is printed as written. On a terminal long
labels and snippets are shortened; for a pipe every line is printed whole.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from rich.text import Text

from ..evidence import UNIT_TEXT_TOKENS, hit_file, hit_name, unit_text
from ..exact_terms import exact_terms, holds_name, identifiers
from ..types import Granularity, Hit, Modality, RouteDecision
from .context import Output
from .trust import one_line

if TYPE_CHECKING:
    from ..ingest import FileOutcome, IngestReport
    from ..ingest.report import Progress as BatchProgress

__all__ = [
    "IngestProgress",
    "folders_without_input",
    "hit_dict",
    "hit_label",
    "name_tag",
    "print_decision",
    "print_hits",
    "print_report",
    "similarity",
    "skipped_reasons",
    "snippet",
    "warnings_shown",
]


def snippet(text: str, width: int | None = 220) -> str:
    """``text`` on one line, shortened to ``width`` characters (``None``: whole)."""
    flat = " ".join(text.split())
    return flat if width is None or len(flat) <= width else flat[: width - 1] + "…"


def similarity(hit: Hit) -> float:
    """The similarity a person can read: the embedding similarity of a hybrid search (channel ``dense``; its
    score fuses ranks, about 0.03), else the corpus search's own score, also after fusion across corpora (whose
    rank-based score is kept in ``hit.score``)."""
    channels = hit.channel_scores
    return float(channels.get("dense", channels.get("similarity", hit.score)))


def hit_dict(hit: Hit, rank: int, *, max_tokens: int | None = UNIT_TEXT_TOKENS) -> dict[str, Any]:
    """A hit as JSON with its rank in the (fused) list and its readable similarity beside the raw score; a score
    that is not a finite number (NaN, infinity) is ``null``, so the output stays valid JSON. A ``content`` longer
    than ``max_tokens`` is cut as the adapters cut it (a long document's matched passages first, ``" […]"`` at the
    cut, ``"truncated": true``); ``None`` keeps whole units."""
    data = {"rank": rank, "similarity": round(similarity(hit), 6), **hit.to_dict(), "truncated": False}
    if max_tokens is not None:
        text, cut = unit_text(hit, max_tokens=max_tokens)
        limit = max_tokens * _CHARS_PER_TOKEN  # a text of few spaces (a minified file) is cut by characters
        if cut or len(text) > limit:
            data["content"] = text if len(text) <= limit else text[:limit] + " […]"
            data["truncated"] = True
    return _finite(data)


_CHARS_PER_TOKEN = 8


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


class _WarningLine(logging.Handler):
    def __init__(self, out: Output) -> None:
        super().__init__(logging.WARNING)
        self.out = out

    def emit(self, record: logging.LogRecord) -> None:
        self.out.error(record.getMessage(), label="warning")


@contextmanager
def warnings_shown(out: Output) -> Iterator[None]:
    """While the block runs, the library's warnings (a router that fell back, an answer cut at max_tokens) are
    printed on stderr as ``warning: ...`` lines, so the command says what happened."""
    handler = _WarningLine(out)
    logger = logging.getLogger("universalrag")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def _span(hit: Hit) -> str:
    if hit.start_s is None and hit.end_s is None:
        return ""
    return f" [{hit.start_s or 0:.1f}s–{hit.end_s or 0:.1f}s]"


def hit_label(hit: Hit) -> str:
    """How the text output names a hit: :func:`~universalrag.evidence.hit_name`, with the file's extension when
    the name is only the file's stem (``servers.csv``, not ``servers``: a reader should see which file it is),
    and where in a PDF, Word or PowerPoint file the unit lies (``report.pdf, p. 12``)."""
    name = hit_name(hit)
    local = hit_file(hit)
    if local and name == Path(local).stem:
        name = Path(local).name
    return name + _place(hit)


def _place(hit: Hit) -> str:
    """``, slide 4``, ``, p. iv`` or ``, pp. 3–5`` from a document unit's metadata; empty for other units."""
    meta = hit.metadata
    if meta.get("slide") is not None:
        return f", slide {meta['slide']}"
    page = meta.get("page_label") or meta.get("page")
    if page is None:
        return ""
    end = meta.get("page_end")
    return (
        f", pp. {page}–{end}" if end not in (None, meta.get("page")) and not meta.get("page_label") else f", p. {page}"
    )


def name_tag(hit: Hit, names: tuple[str, ...]) -> str | None:
    """Why a hit is ranked before hits of higher similarity, or None: it holds a name the query typed (channel
    ``exact`` or ``named``), and such hits come first. Says which name when it can be found in the hit's text."""
    if not (hit.channel_scores.get("exact") or hit.channel_scores.get("named")):
        return None
    text = " ".join([hit.content, hit_name(hit), *(part for _, part, _ in hit.matched_parts)])
    held = next((n for n in names if holds_name(text, (n,))), None)
    return f"holds '{held}'" if held else "name match"


def print_hits(out: Output, hits: Sequence[Hit], *, title: str | None = None, query: str | None = None) -> None:
    """Hits as a ranked list: rank, similarity, corpus, name (with its page) and a snippet. A hit ranked first
    because it holds a name ``query`` typed is tagged so, since its similarity may be lower than later ones'."""
    label_width, text_width = (80, 220) if out.terminal else (None, None)
    if title:
        out.print(Text(title, style="bold"))
    if not hits:
        out.print("  (no results)")
        return
    names = identifiers(exact_terms(query)) if query else ()
    # rank-based fusion (corpora on different scales) gives scores a person cannot read: show both then
    fused = any(similarity(h) != h.score for h in hits)
    tagged = False
    for rank, hit in enumerate(hits, 1):
        label = snippet(hit_label(hit), label_width)
        line = Text.assemble(
            f"  {rank}. ",
            (f"{similarity(hit):.3f}", "cyan"),
            " ",
            (hit.corpus, "magenta"),
            _span(hit),
            " ",
            (label, "bold"),
        )
        if (tag := name_tag(hit, names)) is not None:
            line.append(f"  [{tag}]", style="yellow")
            tagged = True
        if fused:
            line.append(f"  (fused score {hit.score:.4f})", style="dim")
        out.print(line)
        if hit.matched_parts and (hit.modality is Modality.TABLE or hit.granularity is Granularity.DOCUMENT):
            index, text, _score = hit.matched_parts[0]
            part = "row" if hit.modality is Modality.TABLE else "part"
            out.print(Text(f"     matched {part} {index + 1}: {snippet(text, text_width)}"), soft_wrap=True)
        else:
            out.print(Text(f"     {snippet(hit.content, text_width)}"), soft_wrap=True)
    if tagged:
        out.print(Text("  hits holding a name the query typed come first, whatever their similarity", style="dim"))
    if fused:
        out.print(Text("  similarity is each corpus's own score; the order is the fused ranking", style="dim"))


def print_decision(out: Output, decision: RouteDecision, *, filtered_out: bool = False) -> None:
    """The routes chosen and the probability of each candidate, best first; ``filtered_out``: the query's metadata
    filter matched no unit, which is then what a ``none`` conclusion is put down to (it was "nothing looked
    relevant": a filter on a key no unit holds read as a question nothing answers)."""
    ranked = sorted(decision.scores.items(), key=lambda kv: -kv[1])
    scores = ", ".join(f"{name} {p:.2f}" for name, p in ranked if p >= 0.01 or name in decision.routes)
    out.print(
        Text.assemble(
            ("route", "bold"),
            " ",
            (" + ".join(decision.routes), "magenta"),
            (f" ({decision.router}, {decision.latency_ms:.0f} ms{'; ' + scores if scores else ''})", "dim"),
        ),
        soft_wrap=True,
    )
    if filtered_out:
        out.print(
            Text(
                "  no unit matches the filter (`universalrag sources list` shows the files; a hit's metadata, "
                "with --json and without the filter, its keys)",
                "yellow",
            )
        )
    elif decision.fallback:
        likeliest = "corpus" if len(decision.routes) == 1 else "corpora"  # the fallback may search a sibling too
        out.print(Text(f"  nothing looked relevant (route none); searched the likeliest {likeliest} anyway", "dim"))


def print_report(out: Output, report: IngestReport) -> None:
    """The end-of-run summary: counts, rows per corpus, and every failure with its reason. ``removed`` (sources
    pruned because their file is gone) is shown when a run pruned any."""
    summary = report.to_dict()
    lines = [(key, summary[key]) for key in ("added", "replaced", "unchanged")]
    if removed := report.count("removed"):
        lines.append(("removed", f"{removed} (their files are gone)"))
    lines.append(("failed", len(report.failed)))
    if report.skipped:
        reasons = skipped_reasons(report)
        lines.append(("skipped", f"{len(report.skipped)} not ingested ({reasons}; --strict fails on them)"))
    lines += [(f"rows → {corpus}", n) for corpus, n in report.rows_per_corpus().items()]
    width = max(len(k) for k, _ in lines)
    for key, value in lines:
        out.print(Text(f"{key:<{width}}  {value}"))
    for outcome in report.failed:
        out.print(Text.assemble(("failed", "red"), f" {outcome.path}: {outcome.error}"), soft_wrap=True)
    _print_skipped(out, report.skipped)


#: How many skipped files the summary names on a terminal; the rest are counted.
SKIPPED_SHOWN = 10


def _print_skipped(out: Output, skipped: Sequence[FileOutcome]) -> None:
    """On a terminal, the first skipped files with their reasons: the counts above say what kinds were left out,
    not which files, and the bar that named them is gone once the run ends. A pipe has had a ``skipped:`` line per
    file (and keeps one summary line for them: a cache folder holds thousands)."""
    if not out.terminal:
        return
    shown = skipped[:SKIPPED_SHOWN]
    for outcome in shown:
        reason = (outcome.reason or "not ingested").removeprefix("is ")
        out.print(Text.assemble(("skipped", "yellow"), f" {outcome.path}: {reason}"), soft_wrap=True)
    if len(shown) < len(skipped):
        out.print(Text(f"… and {len(skipped) - len(shown)} more skipped files (--json lists every one)", "dim"))


def folders_without_input(folders: Sequence[Path], report: IngestReport) -> list[Path]:
    """The ``folders`` in which the run found no file it ingests (none at all, or only skipped ones): a run that
    says nothing about them looks like success, yet nothing of them can be searched."""
    found = [Path(o.path) for o in report.outcomes if o.status not in ("skipped", "removed")]
    return [f for f in folders if not any(p.is_relative_to(f) for p in found)]


def skipped_reasons(report: IngestReport) -> str:
    """Why files were skipped, most common first: "binary file of a type that is not ingested ×12, NumPy array
    file ×2"."""
    from collections import Counter

    def short(reason: str | None) -> str:
        text = (reason or "not ingested").removeprefix("is ").split(" (")[0]
        return text.removesuffix(", which is not ingested").removeprefix("a ").removeprefix("an ")

    counts = Counter(short(o.reason) for o in report.skipped)
    return ", ".join(f"{reason} ×{n}" for reason, n in counts.most_common())


#: The bar's width, and what the label, bar and clock take of a line with the spaces between the columns; the count
#: takes twice the total's digits + 1, and the note beside them gets the rest, at least ``NOTE_MIN`` characters.
_BAR_WIDTH = 15
_BAR_COLUMNS = len("ingest ") + _BAR_WIDTH + len("  0:00:00 ")
NOTE_MIN = 16


class IngestProgress:
    """Fed by ``ingest``'s ``on_start``/``on_file`` callbacks: a progress bar on a terminal, one whole line per
    file otherwise. ``quiet`` (``--json``) drops those lines, which would mix with the JSON on stdout, but keeps the
    bar: it is drawn on stderr and cleared at the end, and without it a long run shows nothing for minutes.
    Remembers every outcome, so an interrupted run can say what it kept."""

    def __init__(self, out: Output, *, quiet: bool = False) -> None:
        self.out = out
        self.quiet = quiet
        self.outcomes: list[FileOutcome] = []
        self.total: int | None = None
        self._progress: Any = None
        self._task: Any = None
        self._room = 0  # characters for the note beside the bar
        self._note_column: Any = None

    def __enter__(self) -> Self:
        if self.out.terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
            from rich.table import Column

            # a long path must not push the bar and the count off the line: the note gets what they leave
            self._note_column = Column(no_wrap=True, overflow="ellipsis")
            note = TextColumn("{task.fields[last]}", markup=False, table_column=self._note_column)
            self._progress = Progress(
                TextColumn("[bold]ingest[/]"),
                BarColumn(bar_width=_BAR_WIDTH),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                note,
                console=self.out.err,
                transient=True,
            )
            self._progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)

    def on_start(self, total: int) -> None:
        """Called once with the number of inputs."""
        self.total = total
        if self._progress is not None:
            self._room = max(NOTE_MIN, self.out.err.width - _BAR_COLUMNS - 2 * len(str(total)) - 1)
            self._note_column.max_width = self._room
            self._task = self._progress.add_task("", total=total, last="")

    def on_batch(self, progress: BatchProgress) -> None:
        """Called when a file's work starts (``done == 0``: named beside the bar; in a pipe, where each file has its
        line when done, only a group of files read and embedded together is announced, on stderr, since none of its
        lines comes before the whole group is written) and after each committed batch of a large source (beside the
        bar, or as a whole line)."""
        if progress.done == 0:
            if self._progress is not None:
                self._progress.update(self._task, last=self._note("working on ", progress.path, _more(progress)))
            elif progress.total > 1 and not self.quiet:  # a note on stderr: stdout has one line per file done
                self.out.err.print(Text(f"working on {one_line(progress.path)}{_more(progress)}"), soft_wrap=True)
            return
        counts = f": {progress.done}/{progress.total} {progress.what} {progress.stage}"
        if self._progress is not None:
            self._progress.update(self._task, last=self._note("", progress.path, counts))
        elif self.quiet:
            return
        elif progress.stage == "committed":
            self.out.line(one_line(progress.path) + counts)
        else:  # work before anything is written (embedding a group's passages): a note on stderr, as above
            self.out.err.print(Text(one_line(progress.path) + counts), soft_wrap=True)

    def on_file(self, outcome: FileOutcome) -> None:
        """Called after each input (its transaction is committed, or rolled back when it failed)."""
        self._show(outcome, advance=1)

    def on_removed(self, outcome: FileOutcome) -> None:
        """Called for each source pruned (or failing to be) after the files: remembered and shown like a file's
        outcome, without moving the bar, which counts the files found."""
        self._show(outcome, advance=0)

    def _show(self, outcome: FileOutcome, *, advance: int) -> None:
        self.outcomes.append(outcome)
        if self._progress is not None:
            self._progress.update(self._task, advance=advance, last=self._note(f"{outcome.status}: ", outcome.path))
        elif not self.quiet:
            self.out.line(f"{outcome.status}: {one_line(outcome.path)}")

    def _note(self, before: str, path: str, after: str = "") -> str:
        """``before + path + after`` for the bar's note, the path shortened from its start to fit the room left on
        the line: its end (the file's name and nearest folders) says which file it is."""
        room = max(NOTE_MIN, self._room - len(before) - len(after))
        path = one_line(path)  # a file name may hold escape sequences or a newline
        return before + (path if len(path) <= room else "…" + path[len(path) - room + 1 :]) + after

    def interrupted_message(self, *, rolled_back: bool = False) -> str:
        """What an interrupted run kept, and how to continue."""
        kept = [o for o in self.outcomes if o.status in ("added", "replaced")]
        total = f" of {self.total}" if self.total is not None else ""
        return (
            f"stopped after {len(self.outcomes)}{total} files: {len(kept)} sources were committed "
            f"({sum(1 for o in kept if o.status == 'added')} added, "
            f"{sum(1 for o in kept if o.status == 'replaced')} replaced)"
            + ("; the file in progress was rolled back" if rolled_back else "")
            + ". Run the same command again to continue: unchanged files are skipped."
        )


def _more(progress: BatchProgress) -> str:
    """`` and 12 more text files`` for a group of files read and embedded together, else nothing."""
    return f" and {progress.total - 1} more {progress.what}" if progress.total > 1 else ""
