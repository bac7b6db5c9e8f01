"""Hits → evidence for a language model: text, table Markdown, images, and frames sampled from clips and videos.

A budget caps the evidence: ``max_text_tokens`` is shared among the hits, each given what it needs up to an even
share of what the shorter ones leave (:func:`text_shares`), so a long hit is cut rather than the hits after it
losing their text (a 86,000-character manual first left the answering passage after it with none); pictures beyond
``max_images`` are dropped by priority, the order of the hits (a clip or video first loses frames, evenly, then all
of them).
Media are loaded from the hit's ``uri`` when it is a local file; other URIs give text-only evidence.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from .errors import IngestError, InvalidInputError
from .framing import RETRIEVED_NOTE, delimit
from .media import FRAMES_PER_CLIP, FRAMES_PER_VIDEO, frame_times, iter_frames, load_rgb
from .types import Evidence, Granularity, Hit, Modality

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = [
    "RETRIEVED_NOTE",
    "UNIT_TEXT_TOKENS",
    "EvidenceBudget",
    "build_evidence",
    "check_unit_tokens",
    "delimit",
    "graph_note",
    "hit_content",
    "hit_file",
    "hit_images",
    "hit_name",
    "hit_path",
    "hit_source",
    "hit_text",
    "source_label",
    "text_shares",
    "unit_text",
    "uri_file",
]

_WORDS_PER_TOKEN = 0.75
_WORD = re.compile(r"\S+")


@dataclass(frozen=True, slots=True)
class EvidenceBudget:
    """How much evidence goes to the model (in hit order, best first)."""

    max_text_tokens: int = 6000
    max_images: int = 48
    frames_per_clip: int = FRAMES_PER_CLIP
    frames_per_video: int = FRAMES_PER_VIDEO
    image_max_side: int = 768
    frame_max_side: int = 448


#: Longer than this, a document's text leads with its matched passages (the default budget's words).
_LONG_DOCUMENT_WORDS = int(EvidenceBudget().max_text_tokens * _WORDS_PER_TOKEN)


def uri_file(uri: str | None) -> str | None:
    """The local path of a ``file://`` URI, whether or not the file is still there; ``None`` for another URI (a
    web page's address) or none."""
    if not uri:
        return None
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else None


def _uri_name(uri: str) -> str:
    """The last part of a URI's path, decoded ("planets.csv", "Cunard_Line"); empty when it has none."""
    return Path(unquote(urlparse(uri).path)).name


def source_label(uri: str) -> str:
    """A short name for a source's URI: a file's name ("planets.csv"), else the last part of a web address
    ("Cunard_Line"), else its host, else the address itself."""
    return _uri_name(uri) or urlparse(uri).netloc or uri


def hit_file(hit: Hit) -> str | None:
    """The local path of a hit's ``file://`` URI (:func:`uri_file`)."""
    return uri_file(hit.uri)


def hit_source(hit: Hit) -> str | None:
    """Where a hit comes from, as LangChain's loaders name it in ``source``: its local file's path
    (:func:`hit_file`), else its URI; ``None`` without a URI."""
    return hit_file(hit) or hit.uri or None


def hit_path(hit: Hit) -> Path | None:
    """The local file behind a hit (``file://`` URIs) when it exists, or ``None``."""
    file = hit_file(hit)
    path = Path(file) if file else None
    return path if path is not None and path.is_file() else None


def _jpeg(image: Image) -> bytes:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="JPEG", quality=85)
    return buffer.getvalue()


def _evenly(values: Sequence[float], n: int) -> list[float]:
    if n >= len(values):
        return list(values)
    if n <= 0:
        return []
    step = len(values) / n
    return [values[int(i * step + step / 2)] for i in range(n)]


def _frame_times(hit: Hit, n: int) -> list[float]:
    """``n`` times spread evenly over the clip's (or video's) range; the times stored at ingestion when the
    range is unknown."""
    start, end = hit.start_s or 0.0, hit.end_s or float(hit.metadata.get("duration_s") or 0.0)
    if end > start:
        return frame_times(start, end, n)
    return _evenly([float(t) for t in hit.metadata.get("frame_times", [])], n)


def hit_images(
    hit: Hit, *, max_images: int, budget: EvidenceBudget = EvidenceBudget()
) -> tuple[list[bytes], list[float]]:
    """JPEG bytes of the hit's picture (an image) or sampled frames (a clip or a video), with frame times."""
    path = hit_path(hit)
    if path is None or max_images <= 0 or hit.modality not in (Modality.IMAGE, Modality.VIDEO):
        return [], []
    try:
        if hit.modality is Modality.IMAGE:
            return [_jpeg(load_rgb(path, max_side=budget.image_max_side))], []
        wanted = budget.frames_per_video if hit.granularity is Granularity.VIDEO else budget.frames_per_clip
        times = _frame_times(hit, min(wanted, max_images))
        frames = list(iter_frames(path, times, max_side=budget.frame_max_side))
    except IngestError:
        return [], []  # the file changed or vanished since ingestion: the text still stands
    return [_jpeg(img) for _, img in frames], [t for t, _ in frames]


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes // 60:d}:{minutes % 60:02d}:{secs:02d}" if minutes >= 60 else f"{minutes:02d}:{secs:02d}"


def _where(hit: Hit) -> str:
    """Where in its document a unit lies, as a reader cites it: ", p. 12, Table 3" or ", slide 4"."""
    meta = hit.metadata
    bits = []
    if meta.get("slide") is not None:
        bits.append(f"slide {meta['slide']}")
    elif (page := meta.get("page_label") or meta.get("page")) is not None:
        end = meta.get("page_end")
        bits.append(
            f"pp. {page}–{end}" if end not in (None, meta.get("page")) and not meta.get("page_label") else f"p. {page}"
        )
    if meta.get("label"):
        bits.append(str(meta["label"]))
    return "".join(f", {b}" for b in bits)


def hit_name(hit: Hit) -> str:
    """How a reader names a hit: a PDF, Word or PowerPoint unit by its file; another by its title, with its file's
    name when that says something more ("General Options (config-vars.rst)"); else by its file or address, else
    its id. A unit of an attached table (``attach_table``) is named by its row's key (``id=42``), not its unit id."""
    meta = hit.metadata
    if meta.get("document_format") and meta.get("source"):  # a unit of a PDF, Word or PowerPoint file
        return Path(str(meta["source"])).name
    local = hit_file(hit)
    file = Path(local).name if local else ""
    title = str(meta.get("title") or "")
    if title and file and title not in (file, Path(file).stem):
        return f"{title} ({file})"
    return title or file or (_uri_name(hit.uri) if hit.uri else "") or _row_key(meta) or hit.id


def _row_key(meta: Mapping[str, Any]) -> str:
    """``id=42`` (``tenant=7, id=42`` for a key of several columns) from the ``source_key`` the sync worker gives
    each unit of an attached table; empty for other units."""
    key = meta.get("source_key")
    if not isinstance(key, Mapping) or not key:
        return ""
    return ", ".join(f"{column}={value}" for column, value in key.items())


def _label(hit: Hit, index: int) -> str:
    name = hit_name(hit)
    span = ""
    if hit.start_s is not None and hit.end_s is not None and hit.modality is Modality.VIDEO:
        span = f" {_clock(hit.start_s)}–{_clock(hit.end_s)}"
    return f"[{hit.corpus} {index}] {name}{_where(hit)}{span}"


def _passages_first(hit: Hit) -> str | None:
    """A document hit's matched passages (best first) before its whole text, or ``None`` when it is not a document
    or matched as a whole (a document of one chunk)."""
    passages = [(i, text) for i, text, _ in hit.matched_parts if text.strip() != hit.content.strip()]
    if not passages or hit.granularity is not Granularity.DOCUMENT:
        return None
    listed = "\n".join(f"- part {i + 1}: {text}" for i, text in passages)
    return f"Matched passages (best first):\n{listed}\n\n{hit.content}"


def graph_note(hit: Hit) -> str:
    """How the knowledge graph reached ``hit``, for a model: the path from the name the question typed to the entity
    the unit names, with the relation's and the entity's descriptions where the graph holds them (a row's other
    cells, a model's summary); empty for a hit a search found."""
    p = hit.path
    if p is None or p.hops == 0:
        return ""
    step = f"{p.seed} -[{p.relation}]-> {p.entity}" if p.hops == 1 else f"{p.seed} -> ... -[{p.relation}]-> {p.entity}"
    lines = [f"Reached through the knowledge graph: {step} ({p.hops} hop{'s' if p.hops > 1 else ''})."]
    if p.relation_description:
        lines.append(f"{p.relation}: {p.relation_description}")
    if p.entity_description:
        lines.append(f"{p.entity}: {p.entity_description}")
    return "\n".join(lines) + "\n\n"


def hit_text(hit: Hit) -> str:
    """The text a model reads for ``hit``: a table's matched rows (best first) before its Markdown; a document
    longer than the default text budget, its matched passages (best first) before its whole text — a budget cuts a
    text from its end, and a manual's matching page may lie far past its first pages; a clip's transcript with its
    video and time range; any other unit's content. A hit the knowledge graph reached leads with its path
    (:func:`graph_note`)."""
    note = graph_note(hit)
    return note + _unit_text(hit) if note else _unit_text(hit)


def _unit_text(hit: Hit) -> str:
    if hit.matched_parts and hit.modality is Modality.TABLE:
        rows = "\n".join(f"- row {i + 1}: {text}" for i, text, _ in hit.matched_parts)
        return f"Matched rows (best first):\n{rows}\n\n{hit.content}"
    if len(hit.content.split()) > _LONG_DOCUMENT_WORDS:
        led = _passages_first(hit)
        if led is not None:
            return led
    if hit.modality is Modality.VIDEO and hit.granularity is Granularity.CLIP:
        video = hit.metadata.get("title", "the video")
        return f"Transcript of {video} from {_clock(hit.start_s or 0)} to {_clock(hit.end_s or 0)}: {hit.content}"
    return hit.content


#: What one unit's text may take, in tokens, in a retriever's document or node, by default: a whole manual (a unit of
#: the document corpus) is 80,000 characters, and a chain that joins four such documents sent a model a prompt of
#: 250,000. About 750 words: a table's matched rows and more, a long document's matched passages and more.
UNIT_TEXT_TOKENS = 1000


def check_unit_tokens(value: Any, name: str = "max_unit_tokens") -> int | None:
    """``value`` when it is ``None`` (whole units) or an integer of at least 1; else :class:`InvalidInputError`
    naming ``name`` (the adapters check their ``max_unit_tokens`` when built, not at the first long unit)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise InvalidInputError(f"{name} must be an integer of at least 1, or None to keep whole units; got {value!r}.")
    return value


def unit_text(hit: Hit, *, max_tokens: int | None = UNIT_TEXT_TOKENS) -> tuple[str, bool]:
    """``(text, cut)``: :func:`hit_text` of ``hit`` within ``max_tokens`` (``None``: whole) — a long document leads
    with its matched passages, then the text is cut at a word, ``" […]"`` marking the cut — and whether it was cut."""
    check_unit_tokens(max_tokens, "max_tokens")
    text = hit_text(hit)
    if max_tokens is None or len(text.split()) <= max_tokens * _WORDS_PER_TOKEN:
        return text, False
    led = _passages_first(hit)
    return _cut(graph_note(hit) + led if led else text, max_tokens), True


def hit_content(text: str, hit: Hit) -> str:
    """The unit content inside ``text`` written by :func:`hit_text` for ``hit`` (whose ``content`` is ignored):
    ``text`` without the rows, passages or transcript heading :func:`hit_text` puts before it; other text as it
    is."""
    empty = replace(hit, content="")
    led = _passages_first(empty)
    for prefix in (hit_text(empty), graph_note(empty) + led if led else None):
        if prefix and text.startswith(prefix):
            return text[len(prefix) :]
    return text


def _cut(text: str, tokens: int) -> str:
    """``text`` up to the word the budget reaches, its line breaks kept (a table's Markdown stays a table)."""
    limit = int(tokens * _WORDS_PER_TOKEN)
    ends = [m.end() for _, m in zip(range(limit + 1), _WORD.finditer(text), strict=False)]
    return text if len(ends) <= limit else text[: ends[limit - 1] if limit else 0] + " […]"


def text_shares(needs: Sequence[int], total: int) -> list[int]:
    """How many of ``total`` tokens each text gets, given what each ``needs``: every text needing no more than an
    even share of what the shorter ones leave gets all it needs, the longer ones that even share (max-min
    fairness)."""
    shares = [0] * len(needs)
    left = total
    order = sorted(range(len(needs)), key=needs.__getitem__)
    for done, i in enumerate(order):
        shares[i] = min(needs[i], left // (len(order) - done))
        left -= shares[i]
    return shares


def _tokens(text: str) -> int:
    return int(len(text.split()) / _WORDS_PER_TOKEN) + 1


def build_evidence(
    hits: Sequence[Hit], *, budget: EvidenceBudget = EvidenceBudget(), with_media: bool = True
) -> list[Evidence]:
    """Evidence for ``hits`` in order, within ``budget`` (see the module docstring)."""
    images_left = budget.max_images
    texts = [hit_text(hit) for hit in hits]
    shares = text_shares([_tokens(t) for t in texts], budget.max_text_tokens)
    out: list[Evidence] = []
    for index, (hit, text, share) in enumerate(zip(hits, texts, shares, strict=True), 1):
        if share <= 0 and images_left <= 0:
            break
        if len(text.split()) > share * _WORDS_PER_TOKEN:  # cut: what matched goes first
            text = _passages_first(hit) or text
        text = _cut(text, share) if share > 0 else ""
        images, times = hit_images(hit, max_images=images_left, budget=budget) if with_media else ([], [])
        images_left -= len(images)
        out.append(
            Evidence(
                id=hit.id,
                corpus=hit.corpus,
                modality=hit.modality or Modality.TEXT,
                label=_label(hit, index),
                text=text,
                images=tuple(images),
                frame_times=tuple(times),
                hit=hit,
            )
        )
    return out
