"""Which units of a source a model describes, and what it is shown for each: the unit and its neighbourhood.

:func:`describe_requests` picks the non-text units of one prepared source (images, figures of documents, tables,
scenes of videos; a whole video is not described, its scenes are) and builds each one's request: the pictures
(an image, a figure, a scene's sampled frames, shrunk and sent as JPEG) and the text around it: its caption, the
sentences that cite it, the passages of the same page or section, the page, slide, document or video title, a
scene's transcript and its neighbours'. Tables go as their Markdown preview. No model is called here, and pictures
are read only when a call needs them (:func:`load_pictures`).
"""

from __future__ import annotations

import hashlib
import io
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..evidence import uri_file
from ..types import CorpusSpec, Granularity, Modality, Unit

__all__ = ["DescribeRequest", "describe_requests", "load_pictures", "payload", "request_messages"]

_log = logging.getLogger(__name__)

#: How a unit is named to the model, by kind.
_KIND_NAMES = {
    "image": "a picture",
    "figure": "a figure of a document",
    "table": "a table",
    "clip": "a scene of a video (frames sampled from it, in time order)",
}


@dataclass(frozen=True, slots=True)
class DescribeRequest:
    """What the model is shown about unit ``index`` (its position in the source's units): its ``kind`` (``image``,
    ``figure``, ``table`` or ``clip``) and ``context`` lines; the picture at ``picture`` (an image, a figure) or the
    frames at ``frame_times`` of the video at ``video`` (a scene). ``content`` identifies what is shown: the SHA-256
    of the picture's bytes, or of the video's source with the frame times. Pictures are read only for a call
    (:func:`load_pictures`), never for an answer found in the cache."""

    index: int
    kind: str
    context: tuple[str, ...]
    picture: str | None = None
    video: str | None = None
    frame_times: tuple[float, ...] = field(default=())
    content: str = ""


def _kind(unit: Unit, spec: CorpusSpec) -> str | None:
    if spec.modality is Modality.IMAGE:
        return "figure" if "document_id" in unit.metadata or "document_title" in unit.metadata else "image"
    if spec.modality is Modality.TABLE:
        return "table"
    if spec.modality is Modality.VIDEO and spec.granularity is Granularity.CLIP:
        return "clip"
    if spec.modality is Modality.VIDEO and unit.parent_id is not None:  # a user corpus of scenes
        return "clip"
    return None


def _jpeg(image: Any, *, quality: int = 85) -> bytes:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def _file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _sampled_times(unit: Unit, count: int) -> tuple[float, ...]:
    """At most ``count`` of the scene's frame times, evenly over it."""
    times = [float(t) for t in unit.metadata.get("frame_times") or ()]
    if count < 1:
        return ()
    if len(times) > count:
        step = (len(times) - 1) / max(count - 1, 1)
        times = [times[round(i * step)] for i in range(count)]
    return tuple(times)


def load_pictures(request: DescribeRequest, *, max_side: int = 1024) -> tuple[tuple[bytes, ...], tuple[float, ...]]:
    """The JPEG bytes of what ``request`` shows (its picture shrunk so its longer side is at most ``max_side``, or
    its scene's frames, at most 768 pixels) and the frames' times. IngestError when they cannot be read."""
    from ..media import iter_frames, load_rgb

    if request.picture is not None:
        return (_jpeg(load_rgb(request.picture, max_side=max_side)),), ()
    if request.video is not None and request.frame_times:
        frames = list(iter_frames(request.video, request.frame_times, max_side=min(max_side, 768)))
        return tuple(_jpeg(image) for _, image in frames), tuple(t for t, _ in frames)
    return (), ()


def _clip_time(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}:{secs:02d}"


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def _neighbours(unit: Unit, texts: Sequence[Unit], limit: int) -> str:
    """The passages of the unit's page (else of its section), in order, cut to ``limit`` characters; for a source
    whose passages say neither (a web page), its first passages, which say what the page is about."""
    page = unit.metadata.get("page")
    heading = list(unit.metadata.get("heading_path") or ())
    same_page = [t for t in texts if page is not None and t.metadata.get("page") == page]
    near = same_page or [t for t in texts if heading and list(t.metadata.get("heading_path") or ()) == heading]
    if not near and not any("page" in t.metadata or t.metadata.get("heading_path") for t in texts):
        near = list(texts[:3])
    return _cut(" ".join(t.content for t in near), limit) if near else ""


def _context(unit: Unit, kind: str, units: Sequence[Unit], texts: Sequence[Unit], limit: int) -> list[str]:
    meta = unit.metadata
    source_title = next((str(t.metadata["title"]) for t in texts if t.metadata.get("title")), "")
    lines = [f"This is {_KIND_NAMES[kind]}."]
    where = meta.get("document_title") or source_title or meta.get("source") or ""
    if kind == "image":
        name = Path(uri_file(unit.uri) or unit.uri or "").name
        lines.append(f"File name: {name}" if name else "")
        if meta.get("description_source") not in (None, "filename"):
            lines.append(f"Its existing description ({meta.get('description_source')}): {_cut(unit.content, limit)}")
        exif = {k: v for k, v in meta.items() if k in ("camera", "datetime") and v}
        lines += [f"Taken: {exif['datetime']}" if "datetime" in exif else ""]
    elif kind == "clip":
        title = meta.get("title") or ""
        lines.append(f"Video: {title}" if title else "")
        if unit.start_s is not None and unit.end_s is not None:
            lines.append(f"Scene from {_clip_time(unit.start_s)} to {_clip_time(unit.end_s)}.")
        lines.append(f"Transcript of the scene: {_cut(unit.content, limit)}" if unit.content.strip() else "")
        scenes = [u for u in units if u.corpus == unit.corpus and u.start_s is not None]
        scenes.sort(key=lambda u: u.start_s or 0.0)
        at = next((i for i, u in enumerate(scenes) if u.id == unit.id), None)
        if at is not None and at > 0 and scenes[at - 1].content.strip():
            lines.append(f"Transcript just before: {_cut(scenes[at - 1].content, limit // 3)}")
        if at is not None and at + 1 < len(scenes) and scenes[at + 1].content.strip():
            lines.append(f"Transcript just after: {_cut(scenes[at + 1].content, limit // 3)}")
    else:
        lines.append(f"Document: {where}" if where else "")
        label = meta.get("label") or ""
        caption = meta.get("caption") or ""
        lines.append(f"Caption: {label + ' ' if label and label not in caption else ''}{caption}" if caption else "")
        if meta.get("heading_path"):
            lines.append("Section: " + " > ".join(meta["heading_path"]))
        if meta.get("page") is not None:
            lines.append(f"{'Slide' if meta.get('slide') else 'Page'}: {meta.get('page_label') or meta['page']}")
        cited = [str(s) for s in meta.get("cited_by") or ()]
        lines.append("Sentences citing it: " + _cut(" ".join(cited), limit // 2) if cited else "")
        if meta.get("alt_text"):
            lines.append(f"Alternative text: {meta['alt_text']}")
        nearby = _neighbours(unit, texts, limit)
        lines.append(f"Text around it: {nearby}" if nearby else "")
        if kind == "table":
            lines.append("The table (Markdown, its first rows):\n" + unit.content[: limit * 2])
        elif meta.get("description_source") == "context":  # a figure with nothing but its place for a text
            pass
        elif unit.content.strip() and unit.content.strip() != caption.strip():
            lines.append(f"Its existing text: {_cut(unit.content, limit)}")
    return [line for line in lines if line]


def describe_requests(
    units: Sequence[Unit],
    spec_of: Callable[[str], CorpusSpec],
    *,
    source_hash: str = "",
    frames_per_clip: int = 4,
    context_chars: int = 1500,
) -> list[DescribeRequest]:
    """The requests for the non-text units of one source's ``units`` (``spec_of`` gives a corpus's spec;
    ``source_hash`` is the source's content hash, which identifies its scenes' frames). A unit whose picture cannot
    be read is left out, with a warning (it keeps the text it has)."""
    specs: dict[str, CorpusSpec] = {}
    for corpus in {u.corpus for u in units}:
        specs[corpus] = spec_of(corpus)
    texts = [
        u
        for u in units
        if specs[u.corpus].modality is Modality.TEXT and specs[u.corpus].granularity is not Granularity.DOCUMENT
    ]
    requests = []
    for index, unit in enumerate(units):
        kind = _kind(unit, specs[unit.corpus])
        if kind is None:
            continue
        local = uri_file(unit.uri)
        picture = video = None
        times: tuple[float, ...] = ()
        content = ""
        if kind in ("image", "figure"):
            if local is None or not Path(local).is_file():
                continue  # nothing to look at (a figure whose picture was not saved)
            try:
                picture, content = local, _file_sha256(local)
            except OSError as e:
                _log.warning(
                    "%s: its picture cannot be read for a model description (%s); it keeps its text.", local, e
                )
                continue
        elif kind == "clip":
            times = _sampled_times(unit, frames_per_clip)
            if local is not None and times and Path(local).is_file():
                video = local
                if not source_hash:  # called without the source's hash: the video's own
                    source_hash = _file_sha256(local)
                content = f"{source_hash}@{','.join(f'{t:.3f}' for t in times)}"
        context = tuple(_context(unit, kind, units, texts, context_chars))
        requests.append(DescribeRequest(index, kind, context, picture, video, times, content))
    return requests


def request_messages(
    request: DescribeRequest, system_prompt: str, images: Sequence[bytes] = (), times: Sequence[float] = ()
) -> list[dict[str, Any]]:
    """The chat messages of one request: the system prompt, then the context and the pictures (``images``, JPEG
    bytes from :func:`load_pictures`) as content parts, each a ``data:`` URL; a scene's frames each preceded by its
    time (``times``)."""
    from ..generate.prompt import image_data_url

    parts: list[dict[str, Any]] = [{"type": "text", "text": "\n".join(request.context)}]
    for i, image in enumerate(images):
        if times:
            parts.append({"type": "text", "text": f"Frame at {times[i]:.1f} s:"})
        parts.append({"type": "image_url", "image_url": {"url": image_data_url(image)}})
    parts.append({"type": "text", "text": "Reply with the JSON object."})
    return [{"role": "system", "content": system_prompt}, {"role": "user", "content": parts}]


def payload(request: DescribeRequest) -> Mapping[str, Any]:
    """What identifies a request's answer (for the cache key): its kind, context and pictures."""
    return {"kind": request.kind, "context": list(request.context), "content": request.content}
