"""Decoding frames at given times as a stream: memory stays bounded for a two-hour video."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from universalrag.errors import IngestError
from universalrag.ingest.video_probe import import_av, open_video, ratio

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = ["iter_frames"]

#: iter_frames seeks instead of decoding forward when the next time is further ahead than this
#: (or than the longest keyframe interval seen so far).
_MIN_SEEK_GAP_S = 2.0
_MAX_DECODE_ERRORS = 32


def _to_image(frame: Any, max_side: int | None) -> Image:
    width, height = frame.width, frame.height
    if max_side and max(width, height) > max_side:
        scale = max_side / max(width, height)
        width, height = max(1, round(width * scale)), max(1, round(height * scale))
    return frame.to_image(width=width, height=height)


class _FrameCursor:
    """Decodes one video stream forward, seeking to a keyframe when the next wanted time is far ahead.

    Holds at most two decoded frames: the last one at or before the current time (``prev``) and the
    first one after it (``ahead``).
    """

    def __init__(self, av: Any, path: Path, container: Any, video: Any) -> None:
        self.av, self.path, self.container, self.video = av, path, container, video
        self.tb = ratio(video.time_base)
        self.origin = (video.start_time or 0) * self.tb
        self.gap = _MIN_SEEK_GAP_S  # grows to the longest keyframe interval seen
        self.errors = 0
        self.last_key: float | None = None
        self.frames: Iterator[tuple[float, Any]] | None = None
        self.prev: tuple[float, Any] | None = None
        self.ahead: tuple[float, Any] | None = None
        self.at_end = False

    def _decode(self) -> Iterator[tuple[float, Any]]:
        for packet in self.container.demux(self.video):
            try:
                frames = packet.decode()
            except self.av.error.FFmpegError as e:
                self.errors += 1
                if self.errors > _MAX_DECODE_ERRORS:
                    raise IngestError(self.path, f"too many damaged frames to extract images ({e}); "
                                                 "re-encode the file.") from e
                continue
            for frame in frames:
                if frame.pts is None:
                    continue
                t = frame.pts * self.tb - self.origin
                if frame.key_frame:
                    if self.last_key is not None and t > self.last_key:
                        self.gap = max(self.gap, t - self.last_key)
                    self.last_key = t
                yield t, frame

    def _seek(self, target: float) -> None:
        try:
            self.container.seek(int((target + self.origin) / self.tb) if self.tb else 0,
                                stream=self.video, backward=True)
        except self.av.error.FFmpegError:
            if self.frames is None:  # not seekable: decode forward from the start
                self.frames = self._decode()
            return
        self.frames, self.prev, self.ahead, self.at_end, self.last_key = self._decode(), None, None, False, None

    def frame_at(self, target: float) -> Any:
        """The frame on screen at ``target`` seconds (the first frame when none starts before it)."""
        latest = self.ahead or self.prev
        if self.frames is None or latest is None or (target - latest[0] > self.gap + 1e-6 and not self.at_end):
            self._seek(target)
        assert self.frames is not None
        while True:
            if self.ahead is None:
                self.ahead = next(self.frames, None)
                if self.ahead is None:
                    self.at_end = True
                    break
            if self.ahead[0] > target + 1e-6:
                break
            self.prev, self.ahead = self.ahead, None
        chosen = self.prev or self.ahead
        if chosen is None:
            raise IngestError(self.path, f"no frame could be decoded at {target:.2f} s; the file may be damaged.")
        return chosen[1]


def iter_frames(path: str | Path, times: Sequence[float], *,
                max_side: int | None = 336) -> Iterator[tuple[float, Image]]:
    """Yield ``(time, RGB image)`` for each requested time, in ascending time order.

    The image is the frame on screen at that time (the last frame starting at or before it), shrunk
    so its longer side is at most ``max_side`` pixels (None keeps the size). Decoding is a stream:
    forward through nearby times, seeking to the keyframe before a time that is far ahead, so only a
    couple of frames are held at once whatever the video's length. Times past the end give the last
    frame. Raises :class:`IngestError` when the file cannot be opened or decoded.
    """
    wanted = sorted((max(0.0, float(t)), t) for t in times)
    if not wanted:
        return
    p = Path(path)
    av = import_av()
    container, video = open_video(p)
    with container:
        cursor = _FrameCursor(av, p, container, video)
        for target, original in wanted:
            yield original, _to_image(cursor.frame_at(target), max_side)
