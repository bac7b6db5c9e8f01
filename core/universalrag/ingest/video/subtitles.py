"""Subtitles of videos: SubRip/WebVTT sidecar files and text subtitle streams inside containers.

No database. Cues come out as :class:`~universalrag.ingest.video.cues.Cue` with markup removed. PyAV is
imported only when an embedded stream is read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...errors import IngestError
from ...media import import_av, ratio
from ..files import bom_encoding, inside
from .cues import Cue, clean_cue_text

__all__ = ["SIDECAR_EXTENSIONS", "parse_subtitles", "read_embedded_cues", "read_sidecar", "sidecar_paths"]

#: Extensions of subtitle files looked for beside a video, mapped to their format.
SIDECAR_EXTENSIONS: dict[str, str] = {".srt": "srt", ".vtt": "vtt"}

#: Language tags (``en``, ``eng``, ``pt-BR``, ``zh_Hans``) and flags (``forced``, ``sdh``) that may stand
#: between a video's stem and the sidecar extension: ``talk.en.srt``, ``talk.en.forced.vtt``.
_TAG_PART = re.compile(r"(?:[a-z]{2,3}(?:[-_][a-z0-9]{2,8})*|forced|sdh|cc|hi|default|auto)", re.IGNORECASE)
_TIMING = re.compile(
    r"^\s*(?P<start>(?:\d+:)?\d{1,2}:\d{2}(?:[.,]\d{1,3})?)\s*-->\s*"
    r"(?P<end>(?:\d+:)?\d{1,2}:\d{2}(?:[.,]\d{1,3})?)"
)
_ENGLISH = re.compile(r"^(en|eng)([-_].*)?$", re.IGNORECASE)


# --------------------------------------------------------------------------- sidecar discovery


def _sidecar_rank(video: Path, candidate: Path) -> tuple[int, str] | None:
    """Sort key of ``candidate`` as a sidecar of ``video``, or None when it is not one."""
    name = candidate.name
    ext = candidate.suffix.lower()
    if ext not in SIDECAR_EXTENSIONS:
        return None
    base = name[: -len(ext)]
    order = list(SIDECAR_EXTENSIONS).index(ext)
    if base == video.stem:
        return (0, f"{order}")
    if base == video.name:  # talk.mp4.srt
        return (1, f"{order}")
    if not base.startswith(video.stem + "."):
        return None
    tags = base[len(video.stem) + 1 :].split(".")
    if not all(_TAG_PART.fullmatch(tag) for tag in tags):
        return None
    english = bool(_ENGLISH.match(tags[0]))
    return (2 if english else 3, f"{base.lower()}{order}")


def sidecar_paths(path: str | Path) -> list[Path]:
    """Existing subtitle files that belong to the video at ``path``, best first.

    Matched beside the video: ``<stem>.srt``, ``<stem>.vtt``, ``<name>.srt`` (``talk.mp4.srt``), then
    language-tagged ones (``<stem>.en.srt``, ``<stem>.pt-BR.forced.vtt``) with English first, others
    in name order. A folder walker should skip these files rather than ingest them on their own. A subtitle
    file that is a symbolic link leading out of the video's folder is ignored: it is never read.
    """
    video = Path(path)
    folder = video.parent
    try:
        with os.scandir(folder if str(folder) else ".") as entries:
            names = [entry.name for entry in entries if entry.is_file()]
    except OSError:
        return []
    ranked = []
    for name in names:
        rank = _sidecar_rank(video, folder / name)
        if rank is not None and inside(folder / name, folder):
            ranked.append((rank, folder / name))
    return [p for _rank, p in sorted(ranked)]


# --------------------------------------------------------------------------- parsing


def _seconds(stamp: str) -> float:
    main, _, frac = stamp.replace(",", ".").partition(".")
    parts = [int(p) for p in main.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0)
    h, m, s = parts
    return h * 3600 + m * 60 + s + (int(frac.ljust(3, "0")[:3]) / 1000 if frac else 0.0)


def _raw_cues(text: str) -> Iterable[tuple[float, float, list[str]]]:
    """(start, end, lines) for every timing line; its text runs to the next blank or timing line."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    i = 0
    while i < len(lines):
        match = _TIMING.match(lines[i])
        if match is None:
            i += 1
            continue
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() and not _TIMING.match(lines[i]):
            body.append(lines[i])
            i += 1
        if i < len(lines) and _TIMING.match(lines[i]) and body and body[-1].strip().isdigit():
            body.pop()  # the next SubRip cue's counter, in a file without blank lines between cues
        yield _seconds(match["start"]), _seconds(match["end"]), body


def parse_subtitles(text: str, *, name: str = "<subtitles>") -> list[Cue]:
    """Parse SubRip or WebVTT ``text`` into cues sorted by start time.

    Both formats are recognised by their timing lines (``00:01:02,500 --> 00:01:04,000``; hours
    optional, ``,`` or ``.`` before the milliseconds), so a mislabelled file still parses. WebVTT
    headers, NOTE/STYLE/REGION blocks, cue identifiers and cue settings are skipped. Rolling captions
    (each cue repeating the previous cue's last line, as auto-generated captions do) are de-duplicated.
    Raises :class:`IngestError` (naming ``name``) when text is present but no timing line is found.
    """
    cues: list[Cue] = []
    previous_lines: list[str] = []
    for start, end, body in _raw_cues(text):
        lines = [clean_cue_text(line) for line in body]
        lines = [line for line in lines if line]
        if previous_lines and len(lines) > 1 and lines[0] == previous_lines[-1]:
            lines = lines[1:]
        if not lines:
            continue
        previous_lines = lines
        joined = " ".join(lines)
        end = max(end, start)
        if cues and cues[-1].text == joined and start <= cues[-1].end_s + 0.05:
            cues[-1] = Cue(cues[-1].start_s, max(cues[-1].end_s, end), joined)
            continue
        cues.append(Cue(start, end, joined))
    if not cues and text.strip() and not any(_TIMING.match(line) for line in text.splitlines()):
        which = f"the subtitle file {Path(name).name!r}" if name != "<subtitles>" else "the subtitles"
        raise IngestError(
            name,
            f"no subtitle cues found in {which}: expected SubRip or WebVTT timing lines such as "
            "'00:00:01,000 --> 00:00:04,000'; fix or remove the file.",
        )
    cues.sort(key=lambda c: (c.start_s, c.end_s))
    return cues


def _decode(data: bytes) -> str:
    encoding = bom_encoding(data)
    if encoding is not None:
        return data[len(encoding.bom) :].decode(encoding.name, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")  # the usual encoding of older .srt files


def read_sidecar(path: str | Path) -> list[Cue]:
    """Read and parse a ``.srt``/``.vtt`` file (UTF-8, UTF-16 with a BOM, or Windows-1252)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:  # the video's outcome shows the reason: it names the subtitle file
        raise IngestError(
            p,
            f"the subtitle file {p.name!r} could not be read ({e.strerror or e}); check its permissions, or remove it.",
        ) from e
    return parse_subtitles(_decode(data), name=str(p))


# --------------------------------------------------------------------------- embedded streams


def read_embedded_cues(path: str | Path) -> tuple[list[Cue], int | None]:
    """Cues of the first text subtitle stream in the container at ``path``, and that stream's index.

    Bitmap subtitles (DVD, Blu-ray PGS, DVB) cannot be read as text and are skipped. Returns
    ``([], None)`` when the container has no text subtitle stream. Times are relative to the start
    of the container.
    """
    av = import_av()
    p = Path(path)
    try:
        container = av.open(str(p))
    except (av.error.FFmpegError, OSError) as e:
        raise IngestError(p, f"could not be opened to read its subtitles ({e}).") from e
    with container:
        stream = next(
            (s for s in container.streams.subtitles if s.codec_context.codec and s.codec_context.codec.text_sub),
            None,
        )
        if stream is None:
            return [], None
        index = int(stream.index)  # read now: a stream's fields are freed with its container
        offset = (container.start_time or 0) / 1_000_000
        cues: list[Cue] = []
        try:
            for packet in container.demux(stream):
                if packet.pts is None or packet.size == 0:
                    continue
                subtitles = stream.decode2(packet)
                if subtitles is None:
                    continue
                tb = ratio(packet.time_base)
                start = packet.pts * tb - offset + subtitles.start_display_time / 1000
                shown_ms = subtitles.end_display_time - subtitles.start_display_time
                if 0 < shown_ms < 0xFFFFFFFF - subtitles.start_display_time:
                    end = start + shown_ms / 1000
                else:
                    end = start + (packet.duration or 0) * tb
                text = clean_cue_text(" ".join(_rect_text(r) for r in subtitles))
                if text:
                    cues.append(Cue(max(0.0, start), max(0.0, end), text))
        except av.error.FFmpegError as e:
            raise IngestError(p, f"its subtitle stream #{index} could not be decoded ({e}).") from e
    cues.sort(key=lambda c: (c.start_s, c.end_s))
    return cues, index


def _rect_text(rect: Any) -> str:
    dialogue = getattr(rect, "dialogue", b"") or getattr(rect, "text", b"") or b""
    return dialogue.decode("utf-8", errors="replace") if isinstance(dialogue, bytes) else str(dialogue)
