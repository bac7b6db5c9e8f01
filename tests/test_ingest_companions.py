"""A source is its file and the companions read with it: editing only a video's ``.srt`` or an image's caption
sidecar and ingesting again replaces the source (it used to report ``unchanged`` and keep the old text).

A real PyAV-encoded video with a real SRT sidecar, real JPEGs from Pillow, the real PostgreSQL and the bundled
MiniLM encoder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.media import write_photo

from universalrag.ingest.companions import fingerprint
from universalrag.ingest.files import hash_file
from universalrag.ingest.pipeline import IngestOptions, ingest_paths
from universalrag.ingest.video import VideoOptions
from universalrag.retrieve import search_corpus

CLIPS = IngestOptions(video=VideoOptions(min_clip_s=1.0, max_clip_s=8.0))
BEFORE = [(0.2, 2.8, "the rocket stands on its launch pad before dawn")]
AFTER = [(0.2, 2.8, "a grey cat sleeps on the living room couch")]


def _contents(store, minilm, corpus: str, query: str) -> list[str]:  # type: ignore[no-untyped-def]
    return [h.content for h in search_corpus(store, minilm, corpus, query, k=10)]


def test_editing_only_the_subtitle_file_replaces_the_video(store, minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("av")
    pytest.importorskip("scenedetect")
    from support.video import format_srt, write_video

    video = write_video(tmp_path / "talk.mp4", [("rocket", 3.0)], cues=BEFORE, sidecar="srt")
    srt = tmp_path / "talk.srt"
    assert srt.exists()

    first = ingest_paths(store, minilm, [tmp_path], options=CLIPS)
    assert [o.status for o in first.outcomes] == ["added"], first.outcomes
    again = ingest_paths(store, minilm, [tmp_path], options=CLIPS)
    assert [o.status for o in again.outcomes] == ["unchanged"]  # nothing changed: nothing re-embedded
    assert any("rocket" in c for c in _contents(store, minilm, "clip", "rocket"))

    srt.write_text(format_srt(AFTER), encoding="utf-8")  # the video's bytes stay the same
    edited = ingest_paths(store, minilm, [tmp_path], options=CLIPS)
    assert [o.status for o in edited.outcomes] == ["replaced"], edited.outcomes
    clips = _contents(store, minilm, "clip", "a cat on a couch")
    videos = _contents(store, minilm, "video", "a cat on a couch")
    assert clips and all("cat sleeps" in c and "rocket" not in c for c in clips), clips
    assert videos and all("cat sleeps" in c and "rocket" not in c for c in videos), videos
    assert store.counts()["clip"] == len(clips)  # the old clips went with the old source

    # naming the video alone sees the same sidecar, and a second run is unchanged again
    alone = ingest_paths(store, minilm, [video.path], options=CLIPS)
    assert [o.status for o in alone.outcomes] == ["unchanged"]


def test_editing_only_an_image_caption_sidecar_replaces_the_image(store, minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    photo = write_photo(tmp_path / "p1.jpg")
    caption = tmp_path / "p1.jpg.txt"
    caption.write_text("a lighthouse on a rocky coast at sunset", encoding="utf-8")

    assert [o.status for o in ingest_paths(store, minilm, [tmp_path]).outcomes] == ["added"]
    assert [o.status for o in ingest_paths(store, minilm, [tmp_path]).outcomes] == ["unchanged"]
    caption.write_text("a red bicycle leaning against a fence", encoding="utf-8")
    assert [o.status for o in ingest_paths(store, minilm, [photo]).outcomes] == ["replaced"]
    images = _contents(store, minilm, "image", "bicycle")
    assert len(images) == 1 and "red bicycle" in images[0] and "lighthouse" not in images[0], images


def test_the_fingerprint_is_the_file_hash_without_companions_and_covers_them_otherwise(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("plain notes", encoding="utf-8")
    assert fingerprint(text, hash_file(text)) == hash_file(text)  # unchanged for sources without companions

    photo = write_photo(tmp_path / "p.jpg")
    alone = fingerprint(photo, hash_file(photo))
    assert alone == hash_file(photo)
    assert fingerprint(photo, hash_file(photo), texts=("alt text from a page",)) != alone
    sidecar = tmp_path / "p.txt"
    sidecar.write_text("one caption", encoding="utf-8")
    with_one = fingerprint(photo, hash_file(photo))
    sidecar.write_text("another caption", encoding="utf-8")
    assert len({alone, with_one, fingerprint(photo, hash_file(photo))}) == 3


def test_alt_text_reads_only_the_pages_that_name_an_image_of_the_run(tmp_path: Path) -> None:
    """A page that never spells an image's file name cannot show it, so it is not parsed for alt text: re-ingesting
    an unchanged folder of 15 Wikipedia pages beside 4 images parsed every page, three times the pages' own time."""
    from universalrag.ingest.companions import alt_texts

    photo = write_photo(tmp_path / "harbour at dawn.jpg")
    shown = tmp_path / "shown.html"
    shown.write_text(
        '<html><body><p>The harbour.</p><img src="harbour%20at%20dawn.jpg" alt="Boats in the harbour '
        'at dawn"></body></html>',
        encoding="utf-8",
    )
    others = [tmp_path / f"page{i}.html" for i in range(3)]
    for page in others:
        page.write_text(
            '<html><body><p>No picture here.</p><img src="https://example.org/x.png" alt="x"></body></html>',
            encoding="utf-8",
        )
    parsed: dict = {}
    alts = alt_texts([photo, shown, *others], parsed)
    assert alts == {photo.resolve(): "Boats in the harbour at dawn"}
    assert set(parsed) == {shown}  # the pages that name no image of the run were not parsed
    assert alt_texts([shown, *others], parsed) == {}  # no image in the run: no page read
