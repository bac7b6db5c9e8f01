"""Probing a video file: duration, frame rate, size, streams, and a truncation check.

PyAV comes with the ``video`` extra and is imported on first use (:func:`universalrag.media.import_av`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import IngestError
from ...media import import_av, open_video, ratio
from ..files import check_file

__all__ = ["VideoProbe", "probe_video"]

#: How far before the declared end the truncation check starts reading packets.
_TAIL_S = 3.0


@dataclass(frozen=True, slots=True)
class VideoProbe:
    """What a video file holds. ``metadata`` is JSON-ready (``format``, ``size_bytes``, ``bit_rate``, ``tags``,
    ``streams``, and ``title`` when the file has one)."""

    path: Path
    duration_s: float
    fps: float
    width: int
    height: int
    video_codec: str
    has_audio: bool
    subtitle_streams: int
    container: str
    metadata: dict[str, Any] = field(default_factory=dict)


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
    """Read a video's duration, frame rate, size, codecs and tags, and check it is whole.

    The check decodes the first frame and reads the last seconds of packets: a file whose data ends
    well before the duration its header declares (an interrupted download or recording), or whose
    end cannot be decoded, is rejected. Raises :class:`IngestError` naming the path and what to do
    for a missing, empty, non-video, unreadable, truncated or damaged file.
    """
    p = Path(path)
    check_file(p, empty="it is not a video. Re-download or re-export it.")
    av = import_av()
    container, video = open_video(p)
    with container:
        origin = (container.start_time or 0) / 1_000_000
        fps = ratio(video.average_rate) or ratio(video.guessed_rate) or ratio(video.base_rate)
        ctx = video.codec_context
        try:
            first = next(iter(container.decode(video)), None)
        except av.error.FFmpegError as e:
            raise IngestError(
                p,
                f"its video stream cannot be decoded ({e}); the file is damaged or uses a codec "
                "this FFmpeg build lacks. Re-encode it, for example to H.264 in MP4.",
            ) from e
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
            raise IngestError(
                p,
                f"its last {_TAIL_S:g} seconds cannot be decoded ({errors} damaged packets); "
                "re-download or re-encode the file.",
            )
        tags = {str(k): str(v) for k, v in container.metadata.items()}
        title = next((v.strip() for k, v in tags.items() if k.lower() == "title" and v.strip()), None)
        streams = []
        for s in container.streams:
            info: dict[str, Any] = {
                "index": s.index,
                "type": s.type,
                "codec": s.codec_context.name if s.codec_context is not None else None,
            }
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
            metadata=metadata,
        )
