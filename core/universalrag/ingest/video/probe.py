"""Probing a video file: duration, frame rate, size, streams, content hash, and a truncation check.

PyAV comes with the ``video`` extra and is imported on first use.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from universalrag.errors import IngestError, MissingDependencyError
from universalrag.ingest.detect import sniff

__all__ = ["VideoProbe", "import_av", "open_video", "probe_video", "ratio"]

_HASH_CHUNK = 1 << 20
#: How far before the declared end the truncation check starts reading packets.
_TAIL_S = 3.0
#: FFmpeg's AV_DISPOSITION_ATTACHED_PIC: a "video" stream that is one cover image.
_ATTACHED_PIC = 1 << 10


def import_av() -> Any:
    try:
        import av
    except ImportError as e:
        raise MissingDependencyError("av", "video", feature="reading videos") from e
    return av


def ratio(value: Any) -> float:
    """A PyAV rational (Fraction, or AVRational in PyAV 19+) as a float; 0.0 when unset."""
    if not value:
        return 0.0
    return value.numerator / value.denominator if value.denominator else 0.0



@dataclass(frozen=True, slots=True)
class VideoProbe:
    """What a video file holds. ``content_hash`` is the SHA-256 of its bytes; ``metadata`` is JSON-ready
    (``format``, ``size_bytes``, ``bit_rate``, ``tags``, ``streams``, and ``title`` when the file has one)."""

    path: Path
    duration_s: float
    fps: float
    width: int
    height: int
    video_codec: str
    has_audio: bool
    subtitle_streams: int
    container: str
    content_hash: str
    metadata: dict[str, Any] = field(default_factory=dict)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _check_file(p: Path) -> None:
    if not p.exists():
        raise IngestError(p, "no such file; check the path (relative paths start at the current folder).")
    if p.is_dir():
        raise IngestError(p, "is a folder, not a video file; pass the files inside it, or ingest the whole folder.")
    if not p.is_file():
        raise IngestError(p, "is not a regular file (a device, socket or pipe); save the video to a file.")
    if p.stat().st_size == 0:
        raise IngestError(p, "the file is empty (0 bytes); it is not a video. Re-download or re-export it.")


def _article(label: str) -> str:
    """``a``/``an`` before a format label ("an MP4 video", "a PNG image", "an AVI video")."""
    acronym = len(label) > 1 and label[1].isupper()
    return "an" if label[0] in "AEIOUaeiou" or (acronym and label[0] in "FHLMNRSX") else "a"


def _not_video_reason(head: bytes) -> str | None:
    """A reason when the first bytes show a known format that is not video; None otherwise."""
    found = sniff(head)
    if found is not None and found.kind != "video":
        return f"is {_article(found.label)} {found.label}, not a video; rename it or leave it out."
    return None


def _unreadable_reason(p: Path, error: Exception) -> str:
    """Why FFmpeg could not open ``p``, in words a user can act on."""
    try:
        with p.open("rb") as fh:
            head = fh.read(4096)
    except OSError as e:
        return f"could not be read ({e.strerror or e}); check its permissions."
    found = sniff(head)
    if found is not None:
        return _not_video_reason(head) or (
            f"looks like {_article(found.label)} {found.label} but FFmpeg cannot read it ({error}): it is probably "
            "truncated (an unfinished download, copy or recording) or damaged. Re-download or re-export the file.")
    if b"\x00" not in head and head.strip():
        try:
            head.decode("utf-8")
            return ("contains text, not video data (a playlist, a subtitle file or a saved error page?); "
                    "give it the right extension or leave it out.")
        except UnicodeDecodeError:
            pass
    return (f"is not a video FFmpeg can read ({error}); the file is damaged, incomplete or in an unsupported "
            "format. Re-download it, or re-encode it (for example to H.264 in MP4).")


def _main_video_stream(container: Any) -> Any | None:
    """The first video stream that is not attached cover art (an album or podcast image)."""
    for stream in container.streams.video:
        if int(getattr(stream, "disposition", 0) or 0) & _ATTACHED_PIC:
            continue
        return stream
    return None


def open_video(p: Path) -> tuple[Any, Any]:
    """Open ``p`` with PyAV and return (container, main video stream), or raise IngestError.

    Files whose first bytes show an image, audio, archive or document are refused before FFmpeg sees
    them: FFmpeg would open a PNG or GIF as a "video" of one or a few frames.
    """
    av = import_av()
    try:
        with p.open("rb") as fh:
            reason = _not_video_reason(fh.read(64))
    except OSError as e:
        raise IngestError(p, f"could not be read ({e.strerror or e}); check its permissions.") from e
    if reason:
        raise IngestError(p, reason)
    try:
        container = av.open(str(p))
    except (av.error.FFmpegError, OSError) as e:
        raise IngestError(p, _unreadable_reason(p, e)) from e
    stream = _main_video_stream(container)
    if stream is None:
        kinds = sorted({s.type for s in container.streams}) or ["no streams"]
        container.close()
        raise IngestError(p, f"has no video stream (it holds {', '.join(kinds)}); audio-only files are not videos.")
    return container, stream


def _scan_tail(av: Any, container: Any, video: Any, from_s: float, origin: float) -> tuple[float, float, int, int]:
    """Demux from ``from_s`` to the end: (end of any stream, end of the video stream, frames, errors)."""
    try:
        container.seek(int((from_s + origin) * 1_000_000), backward=True, any_frame=False)
    except av.error.FFmpegError:
        pass  # no index (a damaged or streamed file): read on from here, which is slower but right
    end_all = end_video = 0.0
    frames = errors = 0
    for packet in container.demux():
        if packet.pts is not None and packet.time_base:
            end = (packet.pts + (packet.duration or 0)) * ratio(packet.time_base) - origin
            end_all = max(end_all, end)
            if packet.stream.index == video.index:
                end_video = max(end_video, end)
        if packet.stream.index == video.index:
            try:
                frames += len(packet.decode())
            except av.error.FFmpegError:
                errors += 1
    return end_all, end_video, frames, errors


def probe_video(path: str | Path) -> VideoProbe:
    """Read a video's duration, frame rate, size, codecs and tags, hash its bytes, and check it is whole.

    The check decodes the first frame and reads the last seconds of packets: a file whose data ends
    well before the duration its header declares (an interrupted download or recording), or whose
    end cannot be decoded, is rejected. Raises :class:`IngestError` naming the path and what to do
    for a missing, empty, non-video, unreadable, truncated or damaged file. Cheap enough to call
    first and skip files whose ``content_hash`` is already ingested.
    """
    p = Path(path)
    _check_file(p)
    av = import_av()
    content_hash = _sha256(p)
    container, video = open_video(p)
    with container:
        origin = (container.start_time or 0) / 1_000_000
        fps = ratio(video.average_rate) or ratio(video.guessed_rate) or ratio(video.base_rate)
        ctx = video.codec_context
        try:
            first = next(iter(container.decode(video)), None)
        except av.error.FFmpegError as e:
            raise IngestError(p, f"its video stream cannot be decoded ({e}); the file is damaged or uses a codec "
                                 "this FFmpeg build lacks. Re-encode it, for example to H.264 in MP4.") from e
        if first is None:
            raise IngestError(p, "its video stream holds no decodable frame; re-download or re-encode the file.")
        declared = [
            (container.duration or 0) / 1_000_000,
            (video.duration or 0) * ratio(video.time_base),
        ]
        frames_s = video.frames / fps if video.frames and fps else 0.0
        duration = max(declared) or frames_s
        end_all, end_video, decoded, errors = _scan_tail(av, container, video, max(0.0, duration - _TAIL_S), origin)
        if not duration:
            duration = end_all  # nothing declared: the data decides
        tolerance = 0.5 + (2.0 / fps if fps else 0.1)
        expected_video = max(frames_s, declared[1])
        if end_all < duration - tolerance or end_video < expected_video - tolerance:
            actual = min(end_all, end_video) if end_video < expected_video - tolerance else end_all
            raise IngestError(
                p,
                f"the file is truncated: its header declares {max(duration, expected_video):.2f} s but its data "
                f"ends at {actual:.2f} s (an interrupted download, copy or recording). Re-download or re-export it.",
            )
        if errors and not decoded:
            raise IngestError(p, f"its last {_TAIL_S:g} seconds cannot be decoded ({errors} damaged packets); "
                                 "re-download or re-encode the file.")
        tags = {str(k): str(v) for k, v in container.metadata.items()}
        title = next((v.strip() for k, v in tags.items() if k.lower() == "title" and v.strip()), None)
        streams = []
        for s in container.streams:
            info: dict[str, Any] = {"index": s.index, "type": s.type,
                                    "codec": s.codec_context.name if s.codec_context is not None else None}
            for key in ("language", "title"):
                if s.metadata.get(key):
                    info[key] = str(s.metadata[key])
            streams.append(info)
        metadata: dict[str, Any] = {
            "format": container.format.name,
            "format_long_name": container.format.long_name,
            "size_bytes": p.stat().st_size,
            "bit_rate": int(container.bit_rate or 0) or None,
            "tags": tags,
            "streams": streams,
        }
        if title:
            metadata["title"] = title
        return VideoProbe(
            path=p,
            duration_s=round(float(duration), 6),
            fps=round(float(fps), 6),
            width=int(ctx.width or first.width),
            height=int(ctx.height or first.height),
            video_codec=ctx.name,
            has_audio=bool(container.streams.audio),
            subtitle_streams=len(container.streams.subtitles),
            container=container.format.name,
            content_hash=content_hash,
            metadata=metadata,
        )
