"""Build the demo knowledge base offline, byte for byte the same on every run, and list its questions.

:func:`build_demo_files` writes a folder holding one kind of file per corpus:

- Markdown documents (``texts/``) → the ``paragraph`` and ``document`` corpora;
- CSV tables (an observatory's observing log, a glacier's measurements) → ``table``;
- JPEG photographs from scikit-image's bundled samples, each with a ``<name>.jpg.txt`` caption → ``image``;
- a PDF report with a captioned table and figure → ``document``, ``paragraph``, ``table`` and ``image``
  (the ``documents`` extra; made with reportlab);
- a silent MP4 slideshow of photographs joined by hard cuts, with a ``.srt`` sidecar describing each
  shot → ``video`` (the whole film) and ``clip`` (one clip per shot, when ingested with
  :data:`DEMO_VIDEO_OPTIONS`).

Every file is generated deterministically (fixed inputs, no timestamps), and a file whose bytes are
already in place is left untouched, so ingesting the folder a second time re-ingests nothing.
:func:`demo_questions` returns one question per route, each answered by the top hit of its corpus::

    files = build_demo_files(Path("demo-kb"))
    ingest_paths(store, embedder, files, options=IngestOptions(video=DEMO_VIDEO_OPTIONS))
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError, MissingDependencyError
from ..ingest.video import VideoOptions
from ..routing.base import ROUTES
from .content import PHOTOS, REPORT, TABLES, VIDEO, Report, Table, VideoSpec
from .media import encode_jpeg, format_srt, sample_photo, write_slideshow

__all__ = [
    "DEMO_DIR",
    "DEMO_VIDEO_OPTIONS",
    "DemoQuestion",
    "build_demo_files",
    "demo_file_names",
    "demo_questions",
    "video_cues",
]

#: The package folder holding the demo's texts and questions.
DEMO_DIR = Path(__file__).resolve().parent

#: How the demo video must be ingested: every shot (4-5 s) becomes its own clip. Shots shorter than
#: ``min_clip_s`` would be merged with a neighbour and longer than ``max_clip_s`` split.
DEMO_VIDEO_OPTIONS = VideoOptions(min_clip_s=2.0, max_clip_s=8.0)

#: Largest side of the demo photographs, in pixels.
_PHOTO_MAX_SIDE = 640
#: Each subtitle starts this long after its shot begins and ends this long before it ends.
_CUE_MARGIN_S = 0.25


@dataclass(frozen=True)
class DemoQuestion:
    """A demo question, the route that should answer it, and how to recognise the right evidence.

    ``answer_phrase`` is a phrase the top hit of the route's corpus contains; ``source`` is the name of
    the file that evidence comes from. Both are None for the ``none`` route, which retrieves nothing.
    """

    question: str
    route: str
    answer_phrase: str | None
    source: str | None


def demo_questions() -> list[DemoQuestion]:
    """The demo questions, at least one per route, in the routers' route order (``none`` first)."""
    path = DEMO_DIR / "questions.json"
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
        questions = [
            DemoQuestion(
                question=str(item["question"]),
                route=str(item["route"]),
                answer_phrase=item.get("answer_phrase"),
                source=item.get("source"),
            )
            for item in items
        ]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ConfigError(f"The demo questions in {str(path)!r} cannot be read ({e}); reinstall universalrag.") from e
    routes = [q.route for q in questions]
    if set(routes) != set(ROUTES):
        raise ConfigError(
            f"{str(path)!r} must hold a question for every route ({', '.join(ROUTES)}); it has {', '.join(routes)}."
        )
    return sorted(questions, key=lambda q: ROUTES.index(q.route))  # stable: a route's questions keep their order


def video_cues(spec: VideoSpec = VIDEO) -> list[tuple[float, float, str]]:
    """The demo video's subtitles: one ``(start_s, end_s, text)`` cue inside each shot."""
    cues = []
    start = 0.0
    for scene in spec.scenes:
        frames = max(1, round(scene.seconds * spec.fps))
        end = start + frames / spec.fps
        cues.append((start + _CUE_MARGIN_S, end - _CUE_MARGIN_S, scene.subtitle))
        start = end
    return cues


def demo_file_names() -> list[str]:
    """Names of every file :func:`build_demo_files` writes (sidecars included), sorted."""
    names = [p.name for p in (DEMO_DIR / "texts").glob("*.md")]
    names += [t.file for t in TABLES]
    names += [n for p in PHOTOS for n in (p.file, f"{p.file}.txt")]
    names += [VIDEO.file, _srt_name(VIDEO), REPORT.file]
    return sorted(names)


def _srt_name(spec: VideoSpec) -> str:
    return f"{Path(spec.file).stem}.srt"


def _csv_bytes(table: Table) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(table.header)
    writer.writerows(table.rows)
    return out.getvalue().encode("utf-8")


def _report_bytes(spec: Report) -> bytes:
    """The report as PDF bytes, identical on every run (reportlab's invariant mode: no dates, fixed ids)."""
    try:
        from reportlab.lib import colors
        from reportlab.lib.pagesizes import A4
        from reportlab.lib.styles import getSampleStyleSheet
        from reportlab.platypus import Flowable, Image, Paragraph, SimpleDocTemplate, Spacer, TableStyle
        from reportlab.platypus import Table as PdfTable
    except ImportError as e:
        raise MissingDependencyError("reportlab", "demo", feature="the demo's PDF report") from e
    styles = getSampleStyleSheet()
    story: list[Flowable] = [Paragraph(spec.title, styles["Title"])]
    for heading, paragraphs in spec.sections:
        story.append(Paragraph(heading, styles["Heading1"]))
        story += [Paragraph(text, styles["BodyText"]) for text in paragraphs]
        if heading.startswith("2 "):
            table = PdfTable([list(row) for row in spec.table])
            table.setStyle(
                TableStyle(
                    [("GRID", (0, 0), (-1, -1), 0.5, colors.black), ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold")]
                )
            )
            story += [Spacer(1, 6), Paragraph(spec.table_caption, styles["BodyText"]), table]
        if heading.startswith("3 "):
            photo = io.BytesIO(encode_jpeg(sample_photo(spec.figure_sample), max_side=320))
            story += [
                Spacer(1, 6),
                Image(photo, width=240, height=160),
                Paragraph(spec.figure_caption, styles["BodyText"]),
            ]
    out = io.BytesIO()
    SimpleDocTemplate(out, pagesize=A4, title=spec.title, invariant=1).build(story)
    return out.getvalue()


def _video_bytes(spec: VideoSpec) -> bytes:
    """Encode the slideshow into a private temporary folder and return its bytes."""
    scenes = [(sample_photo(s.sample, size=spec.size), s.seconds) for s in spec.scenes]
    with tempfile.TemporaryDirectory(prefix="universalrag-demo-") as tmp:
        path = Path(tmp) / spec.file
        write_slideshow(path, scenes, fps=spec.fps, size=spec.size, title=spec.title)
        return path.read_bytes()


def _put(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` unless the file already holds exactly those bytes; True when written.

    The bytes go to a hidden temporary file first (ingestion skips hidden names) and are renamed into
    place, so a reader never sees half a file.
    """
    try:
        if path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except OSError:
        pass
    part = path.with_name(f".{path.name}.part")
    part.write_bytes(data)
    os.replace(part, path)
    return True


def build_demo_files(target: str | Path) -> list[Path]:
    """Write the demo knowledge base into the folder ``target`` (created if needed); return its files.

    The returned paths (sorted by name) include the caption and subtitle sidecars, which ingestion uses
    as the text of their photograph or video rather than as sources of their own, so the list can be
    passed to :func:`~universalrag.ingest.pipeline.ingest_paths` as it is, or ``target`` itself. Files
    already holding the right bytes are not rewritten; other files in ``target`` are left alone. Needs
    Pillow, scikit-image and PyAV (``pip install 'universalrag-postgres[demo]'``); takes about a second.
    """
    folder = Path(target)
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, bytes] = {}
    for text in sorted((DEMO_DIR / "texts").glob("*.md")):
        files[text.name] = text.read_bytes()
    for table in TABLES:
        files[table.file] = _csv_bytes(table)
    for photo in PHOTOS:
        files[photo.file] = encode_jpeg(sample_photo(photo.sample), max_side=_PHOTO_MAX_SIDE)
        files[f"{photo.file}.txt"] = (photo.caption.strip() + "\n").encode("utf-8")
    files[VIDEO.file] = _video_bytes(VIDEO)
    files[REPORT.file] = _report_bytes(REPORT)
    files[_srt_name(VIDEO)] = format_srt(video_cues(VIDEO)).encode("utf-8")
    for name, data in files.items():
        _put(folder / name, data)
    return [folder / name for name in sorted(files)]
