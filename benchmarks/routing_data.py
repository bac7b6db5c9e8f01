"""Question sets for judging routing by what it retrieves, with their gold units, and the corpora they are about.

Two kinds of questions, each split deterministically into a ``tune`` part (for fitting routers or combiners)
and a ``report`` part (held out; benchmarks report on it):

- **wikitables** — crowd-written questions about tables of real 2014 Wikipedia pages
  (``shared/data/wikitables``, CC BY-SA 4.0, WikiTableQuestions by Pasupat & Liang), read at run time. The
  pages are ingested as a folder, as a user would; a question's gold is its page (uri) and, more strictly,
  the page's table it was written about. Split **by page** (CRC-32 of the page name), so no report page was
  seen while tuning.
- **own** — questions written for this benchmark (``benchmarks/data/*.jsonl``) about corpora built here: the
  demo knowledge base (:mod:`universalrag.demo`), Python's language-reference topics
  (``pydoc_data.topics``, written out as text files), scikit-image's bundled photographs with captions
  written for this benchmark, slideshow videos with subtitles written for it; plus unanswerable arithmetic
  and chit-chat questions whose gold is ``none``. Split by CRC-32 of the question text.

Gold units are resolved after ingestion: the units of the gold corpus made from the gold file that contain
the question's ``phrase`` (all of the file's units in that corpus when there is no phrase). Usage::

    sys.path.insert(0, "benchmarks")
    from routing_data import find_wikitables, prepare_benchmark, tune_examples

    rag = UniversalRAG(schema="routing_e2e", generator=None)
    questions, notes = prepare_benchmark(rag, Path("benchmarks/out/kb"), wikitables=find_wikitables(), pages=40)
    tune = tune_examples(questions)          # [(query, gold corpus or "none")], for adapt_router
    report = [q for q in questions if q.split == "report"]
"""

from __future__ import annotations

import json
import os
import re
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

__all__ = [
    "DATA",
    "BenchQuestion",
    "build_own_corpora",
    "drop_stale_copies",
    "find_wikitables",
    "normalise",
    "own_questions",
    "prepare_benchmark",
    "pyref_topics_asked",
    "resolve_gold",
    "split_of",
    "tune_examples",
    "wikitable_positions",
    "wikitables_pages",
    "wikitables_questions",
]

#: The questions, captions and subtitles written for this benchmark.
DATA = Path(__file__).resolve().parent / "data"
_OWN_SETS = ("demo", "pyref", "photos", "videos", "none")
_NONE = "none"


@dataclass(frozen=True, slots=True)
class BenchQuestion:
    """A question, where its answer is (``corpus`` — ``none`` when nothing should be retrieved — the source
    ``uri`` and the ``gold_units`` resolved after ingestion), its ``source`` set, ``style`` and ``split``."""

    query: str
    source: str
    style: str
    corpus: str
    split: str
    uri: str | None = None
    phrase: str | None = None
    table_index: int | None = None  # wikitables: the gold table's position among the page's parsed tables
    gold_units: tuple[str, ...] = ()
    #: What counts as found: ``unit`` (a gold unit in the top k) or ``uri`` (any unit of the gold source).
    judge: str = "unit"

    @property
    def answerable(self) -> bool:
        """False for questions whose gold is ``none``."""
        return self.corpus != _NONE


def split_of(key: str, *, tune_percent: int = 50) -> str:
    """``tune`` or ``report`` for ``key``, fixed by its CRC-32 (the same on every machine and run)."""
    return "tune" if zlib.crc32(key.encode("utf-8")) % 100 < tune_percent else "report"


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# -- wikitables ---------------------------------------------------------------------------------------------------
def find_wikitables(start: Path | None = None) -> Path | None:
    """The ``wikitables`` folder of ``UNIVERSALRAG_SHARED_DATA`` when set, else ``shared/data/wikitables`` next to
    the repository (or one of its parents), if present."""
    chosen = os.environ.get("UNIVERSALRAG_SHARED_DATA")
    if chosen:
        candidate = Path(chosen) / "wikitables"
        return candidate if (candidate / "questions.jsonl").is_file() else None
    here = (start or Path(__file__)).resolve()
    for parent in here.parents:
        candidate = parent / "shared" / "data" / "wikitables"
        if (candidate / "questions.jsonl").is_file():
            return candidate
    return None


def wikitables_pages(root: Path, *, limit: int | None = None) -> list[Path]:
    """The HTML pages, sorted by name; with ``limit``, an evenly spaced deterministic subset."""
    pages = sorted((root / "pages").glob("*.html"))
    if limit is not None and 0 < limit < len(pages):
        step = len(pages) / limit
        pages = [pages[int(i * step)] for i in range(limit)]
    return pages


def wikitables_questions(root: Path, *, pages: Sequence[Path] | None = None) -> list[BenchQuestion]:
    """The crowd questions (about ``pages`` only, when given); gold: the page's uri and its table."""
    chosen = {p.name for p in pages} if pages is not None else None
    out = []
    for row in _read_jsonl(root / "questions.jsonl"):
        if chosen is not None and row["page"] not in chosen:
            continue
        uri = (root / "pages" / row["page"]).resolve().as_uri()
        out.append(
            BenchQuestion(
                query=row["query"],
                source="wikitables",
                style="crowd",
                corpus="table",
                split=split_of(row["page"]),
                uri=uri,
                table_index=int(row["table_index"]),
                judge="uri",
            )
        )
    return out


def wikitable_positions(page: Path) -> list[int | None]:
    """For each ``class="wikitable"`` table of ``page`` (the numbering of the questions' ``table_index``), its
    position among the tables that ingestion parses from the page (``metadata["index_in_file"]``), or None."""
    from bs4 import BeautifulSoup

    from universalrag.ingest.tables import tables_from_html

    html = page.read_text(encoding="utf-8", errors="replace")
    parsed = [(t.header, next(iter(t.batches(3)), [])) for t in tables_from_html(html, name=page.name)]
    soup = BeautifulSoup(html, "html.parser")
    positions: list[int | None] = []
    start = 0
    for tag in soup.find_all("table"):
        if "wikitable" not in (tag.get("class") or []):
            continue
        alone = tables_from_html(str(tag), name=page.name)
        key = (alone[0].header, next(iter(alone[0].batches(3)), [])) if alone else None
        found = next((i for i in range(start, len(parsed)) if parsed[i] == key), None)
        positions.append(found)
        if found is not None:
            start = found + 1
    return positions


# -- own corpora and questions ---------------------------------------------------------------------------------
def _media() -> dict[str, Any]:
    return json.loads((DATA / "media.json").read_text(encoding="utf-8"))


def _put(path: Path, data: bytes) -> None:
    if not (path.is_file() and path.read_bytes() == data):
        path.write_bytes(data)


def _write_pyref(folder: Path, topics: Iterable[str] | None) -> None:
    from pydoc_data.topics import topics as reference

    folder.mkdir(parents=True, exist_ok=True)
    for name in sorted(topics if topics is not None else reference):
        _put(folder / f"{name}.txt", reference[name].encode("utf-8"))


def _write_photos(folder: Path) -> None:
    import io

    import numpy as np
    import skimage.data
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    for photo in _media()["photos"]:
        pixels = np.asarray(getattr(skimage.data, photo["sample"])())
        if pixels.dtype != np.uint8:
            pixels = (pixels * 255).clip(0, 255).astype(np.uint8)
        image = Image.fromarray(pixels).convert("RGB")
        image.thumbnail((640, 640))
        out = io.BytesIO()
        image.save(out, "PNG" if photo["file"].endswith(".png") else "JPEG", quality=88)
        _put(folder / photo["file"], out.getvalue())
        _put(folder / f"{photo['file']}.txt", (photo["caption"] + "\n").encode("utf-8"))


def _write_videos(folder: Path, *, seconds: float = 4.0, margin: float = 0.25) -> None:
    from universalrag.demo.media import format_srt, sample_photo, write_slideshow

    folder.mkdir(parents=True, exist_ok=True)
    for video in _media()["videos"]:
        path = folder / video["file"]
        if not path.is_file():
            scenes = [(sample_photo(s, size=(320, 240)), seconds) for s in video["samples"]]
            write_slideshow(path, scenes, title=video["title"])
        cues = [(i * seconds + margin, (i + 1) * seconds - margin, text) for i, text in enumerate(video["cues"])]
        _put(path.with_suffix(".srt"), format_srt(cues).encode("utf-8"))


def build_own_corpora(folder: Path, *, pyref_topics: Iterable[str] | None = None) -> dict[str, Path]:
    """Write the own corpora into ``folder`` (one sub-folder per set; unchanged files are not rewritten) and
    return them by set name. ``pyref_topics`` limits the language-reference topics written (default: all)."""
    from universalrag.demo import build_demo_files

    folders = {name: folder / name for name in ("demo", "pyref", "photos", "videos")}
    build_demo_files(folders["demo"])
    _write_pyref(folders["pyref"], pyref_topics)
    _write_photos(folders["photos"])
    _write_videos(folders["videos"])
    return folders


def own_questions(folders: Mapping[str, Path], *, sets: Sequence[str] = _OWN_SETS) -> list[BenchQuestion]:
    """The questions written for this benchmark, for the sets in ``sets`` whose folder exists (``none``
    needs none); a question about a file that is not in its folder is left out."""
    out = []
    for name in sets:
        for row in _read_jsonl(DATA / f"{name}.jsonl"):
            uri = None
            if row["corpus"] != _NONE:
                path = folders[row["source"]] / row["file"]
                if not path.is_file():
                    continue
                uri = path.resolve().as_uri()
            out.append(
                BenchQuestion(
                    query=row["query"],
                    source=row["source"],
                    style=row["style"],
                    corpus=row["corpus"],
                    split=split_of(row["query"]),
                    uri=uri,
                    phrase=row.get("phrase"),
                )
            )
    return out


def pyref_topics_asked() -> list[str]:
    """The language-reference topics the own questions are about (the smallest pyref corpus that answers)."""
    return sorted({Path(r["file"]).stem for r in _read_jsonl(DATA / "pyref.jsonl")})


# -- gold units ----------------------------------------------------------------------------------------------------
def normalise(text: str) -> str:
    """Text compared for gold phrases: lower case, quotes and emphasis marks dropped, whitespace collapsed."""
    return " ".join(re.sub(r"[*\"“”'’`]", "", text).lower().split())


def resolve_gold(
    store: Any, questions: Sequence[BenchQuestion], *, positions: dict[str, list[int | None]] | None = None
) -> tuple[list[BenchQuestion], list[BenchQuestion]]:
    """``(resolved, unresolved)``: each answerable question with the ids of its gold units; a question whose
    gold cannot be found among the ingested units is unresolved (``none`` questions are always resolved).
    ``positions`` caches :func:`wikitable_positions` by page uri (it is filled as pages are parsed)."""
    from universalrag.store.sample import units_of_source

    cache: dict[tuple[str, str], list[Any]] = {}
    positions = positions if positions is not None else {}
    resolved, unresolved = [], []
    for q in questions:
        if not q.answerable:
            resolved.append(q)
            continue
        assert q.uri is not None
        units = cache.get((q.corpus, q.uri))
        if units is None:
            units = cache[(q.corpus, q.uri)] = units_of_source(store, q.corpus, q.uri)
        if q.table_index is not None:
            page = Path(_path_of(q.uri))
            if q.uri not in positions:
                positions[q.uri] = wikitable_positions(page) if page.is_file() else []
            where = positions[q.uri]
            index = where[q.table_index] if q.table_index < len(where) else None
            gold = [u for u in units if index is not None and u.metadata.get("index_in_file") == index]
        elif q.phrase:
            gold = [u for u in units if normalise(q.phrase) in normalise(u.content)]
        else:
            gold = units
        found = bool(gold) or (q.judge == "uri" and bool(units))  # a page's questions stand without their table
        (resolved if found else unresolved).append(replace(q, gold_units=tuple(u.id for u in gold)))
    return resolved, unresolved


def _path_of(uri: str) -> str:
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(uri).path)


def tune_examples(questions: Iterable[BenchQuestion]) -> list[tuple[str, str]]:
    """``(query, gold corpus or "none")`` for the tune split — what ``UniversalRAG.adapt_router`` takes."""
    return [(q.query, q.corpus) for q in questions if q.split == "tune"]


def drop_stale_copies(store: Any, kb: Path) -> int:
    """Delete the sources of ``store`` that are copies of the own corpora written under another results folder
    (``…/<the same folder name>/kb/…`` but not under ``kb``): an earlier run with another ``--out`` ingested them
    under those paths, and the duplicates would push gold units out of every strategy's top 5. Returns how many."""
    mine = kb.resolve().as_uri() + "/"
    marker = f"/{kb.parent.name}/{kb.name}/"
    stale = [s["uri"] for s in store.sources() if marker in s["uri"] and not s["uri"].startswith(mine)]
    return sum(bool(store.delete_source(uri)) for uri in stale)


def prepare_benchmark(
    rag: Any,
    work: Path,
    *,
    quick: bool = False,
    pages: int | None = None,
    wikitables: Path | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> tuple[list[BenchQuestion], dict[str, Any]]:
    """Build the own corpora under ``work``, ingest them and the wikitables pages (all of them as a folder, or
    ``pages`` evenly spaced ones) into ``rag``, and resolve the gold units: ``(questions, notes)``, both splits.
    ``quick`` writes only the language-reference topics that questions are about."""
    from universalrag.demo import DEMO_VIDEO_OPTIONS
    from universalrag.ingest.pipeline import IngestOptions

    start = time.perf_counter()
    folders = build_own_corpora(work / "kb", pyref_topics=pyref_topics_asked() if quick else None)
    report = rag.ingest(list(folders.values()), options=IngestOptions(video=DEMO_VIDEO_OPTIONS))
    stale = drop_stale_copies(rag.store, work / "kb")  # after the ingest: a new schema exists from then on
    if stale:
        log(f"removed {stale} sources of the own corpora ingested from another results folder")
    notes: dict[str, Any] = {"own_ingest": report.to_dict()}
    questions = own_questions(folders)
    if wikitables is not None:
        chosen = wikitables_pages(wikitables, limit=pages)
        target: list[Path] = [wikitables / "pages"] if len(chosen) == len(wikitables_pages(wikitables)) else chosen
        log(f"ingesting {len(chosen)} wikitables pages" + (" as a folder" if target[0].is_dir() else ""))
        wiki = rag.ingest(target)
        notes["wikitables_ingest"] = {k: v for k, v in wiki.to_dict().items() if k != "failed"}
        notes["wikitables_failed"] = len(wiki.failed)
        questions += wikitables_questions(wikitables, pages=chosen)
    notes["ingest_s"] = round(time.perf_counter() - start, 1)
    cache = work / "wikitable_positions.json"
    positions = json.loads(cache.read_text()) if cache.is_file() else {}
    resolved, unresolved = resolve_gold(rag.store, questions, positions=positions)
    cache.write_text(json.dumps(positions))
    notes["unresolved"] = [q.query for q in unresolved]
    if unresolved:
        log(f"{len(unresolved)} questions left out: their gold unit is not among the ingested units")
    return resolved, notes
