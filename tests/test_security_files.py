"""Every file read during ingestion stays inside what the user named, and hostile files are refused one by one.

Real files only: Pillow images, PyAV videos, symbolic links made with ``os.symlink``, a secret file outside the
ingested folder (standing for ``/etc/passwd``). The database is the real PostgreSQL, the encoder the bundled
MiniLM.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from support.kb import VIDEO_OPTIONS
from support.video import format_srt, photo, truncate_copy, write_video

from universalrag.ingest.files import inside
from universalrag.ingest.images import sidecar_paths as image_sidecars
from universalrag.ingest.pipeline import IngestOptions, ingest_paths
from universalrag.ingest.video import sidecar_paths as video_sidecars
from universalrag.store import Store

SECRET = "root:x:0:0:root:/root:/bin/bash kestrelsecret"


def _secret(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "passwd"
    secret.write_text(SECRET + "\n", "utf-8")
    return secret


def _image(path: Path) -> Path:
    from PIL import Image

    Image.fromarray(photo("rocket", size=(64, 48))).save(path)
    return path


def _all_text(store: Store) -> str:
    import sqlalchemy as sa

    parts = []
    with store.engine.connect() as conn:
        for name in store.corpora():
            table = sa.table(f"corpus_{name}", sa.column("content"), schema=store.schema)
            parts += [str(r[0]) for r in conn.execute(sa.select(table.c.content))]
        sources = sa.table("sources", sa.column("metadata"), schema=store.schema)
        parts += [str(r[0]) for r in conn.execute(sa.select(sources.c.metadata))]
    return "\n".join(parts)


def test_inside_follows_links_and_refuses_escapes_and_loops(tmp_path: Path) -> None:
    secret = _secret(tmp_path)
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "ok.txt").write_text("fine", "utf-8")
    (folder / "escape.txt").symlink_to(secret)
    (folder / "climb.txt").symlink_to(Path("..") / "outside" / "passwd")
    (folder / "loop_a.txt").symlink_to(folder / "loop_b.txt")
    (folder / "loop_b.txt").symlink_to(folder / "loop_a.txt")
    (folder / "dangling.txt").symlink_to(folder / "missing.txt")
    (folder / "alias.txt").symlink_to(folder / "ok.txt")
    assert inside(folder / "ok.txt", folder) and inside(folder / "alias.txt", folder)
    for name in ("escape.txt", "climb.txt", "loop_a.txt", "dangling.txt"):
        assert not inside(folder / name, folder), name
    assert not inside(folder / ".." / "outside" / "passwd", folder)


def test_symlinked_image_sidecars_outside_the_folder_are_never_read(store: Store, minilm, tmp_path: Path) -> None:
    secret = _secret(tmp_path)
    folder = tmp_path / "photos"
    folder.mkdir()
    _image(folder / "p1.jpg")
    (folder / "p1.jpg.txt").symlink_to(secret)  # the hostile tester's link
    (folder / "p1.json").symlink_to(secret)
    _image(folder / "p2.jpg")
    (folder / "p2.txt").symlink_to(Path("..") / "outside" / "passwd")
    _image(folder / "p3.jpg")
    (folder / "p3.jpg.txt").write_text("A rocket on its pad at dawn.", "utf-8")  # an honest sidecar still works
    assert image_sidecars(folder / "p1.jpg") == [] and image_sidecars(folder / "p2.jpg") == []

    report = ingest_paths(store, minilm, [folder])
    assert report.ok, report.failed
    named = ingest_paths(store, minilm, [folder / "p1.jpg", folder / "p2.jpg"])  # named one by one too
    assert named.ok, named.failed
    text = _all_text(store)
    assert "kestrelsecret" not in text and "root:x:0:0" not in text
    assert "A rocket on its pad at dawn." in text
    assert store.counts()["image"] == 3 and store.counts()["paragraph"] == 0  # links were not ingested as text


def test_symlinked_subtitles_outside_the_folder_are_never_read(store: Store, minilm, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.srt").write_text(format_srt([(0.2, 1.8, "kestrelsecret subtitle line")]), "utf-8")
    folder = tmp_path / "videos"
    folder.mkdir()
    write_video(folder / "talk.mp4", [(photo("astronaut"), 1.0), (photo("coffee"), 1.0)])
    (folder / "talk.srt").symlink_to(outside / "leak.srt")
    (folder / "talk.en.srt").symlink_to(Path("..") / "outside" / "leak.srt")
    assert video_sidecars(folder / "talk.mp4") == []
    report = ingest_paths(store, minilm, [folder], options=IngestOptions(video=VIDEO_OPTIONS))
    assert report.ok, report.failed
    assert "kestrelsecret" not in _all_text(store)


def test_symlink_loops_and_html_references_outside_do_not_escape(store: Store, minilm, tmp_path: Path) -> None:
    secret = _secret(tmp_path)
    _image(tmp_path / "outside" / "secret.png")
    folder = tmp_path / "site"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "up").symlink_to(folder)  # a folder loop
    (folder / "a.txt").symlink_to(folder / "b.txt")  # a file loop
    (folder / "b.txt").symlink_to(folder / "a.txt")
    (folder / "passwd.txt").symlink_to(secret)
    _image(folder / "logo.png")
    (folder / "page.html").write_text(
        "<html><body><h1>Harbour page</h1><p>Moorings open at dawn for the kestrel fleet.</p>"
        '<img src="../../outside/passwd" alt="kestrelsecret one">'
        '<img src="../outside/secret.png" alt="kestrelsecret two">'
        f'<img src="file://{secret}" alt="kestrelsecret three">'
        '<img src="logo.png" alt="the harbour logo"></body></html>',
        "utf-8",
    )
    report = ingest_paths(store, minilm, [folder])
    assert report.ok, report.failed
    added = sorted(Path(o.path).name for o in report.outcomes if o.status == "added")
    assert added == ["logo.png", "page.html"]
    text = _all_text(store)
    assert "root:x:0:0" not in text and "the harbour logo" in text
    assert store.counts()["image"] == 1


# --------------------------------------------------------------------------- bad files, one by one


def _nested_html(depth: int) -> str:
    return "<html><body>" + "<div>" * depth + "deep kestrel text" + "</div>" * depth + "</body></html>"


@pytest.mark.parametrize(
    "case", ["empty_txt", "binary_txt", "truncated_video", "corrupt_video", "nested_html", "empty_csv", "empty_jpg"]
)
def test_a_bad_file_fails_alone_and_stores_nothing(store: Store, minilm, tmp_path: Path, case: str) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "good.txt").write_text("Kestrel Point lighthouse was first lit in 1889 and still works.", "utf-8")
    rng = np.random.default_rng(7)
    if case == "empty_txt":
        bad = folder / "empty.txt"
        bad.write_bytes(b"")
    elif case == "binary_txt":
        bad = folder / "data.txt"
        bad.write_bytes(rng.integers(0, 256, 20_000, dtype=np.uint8).tobytes())
    elif case in ("truncated_video", "corrupt_video"):
        source = write_video(tmp_path / "whole.mp4", [(photo("astronaut"), 2.0), (photo("coffee"), 2.0)]).path
        bad = folder / "clip.mp4"
        if case == "truncated_video":
            truncate_copy(source, bad, keep=0.3)
        else:
            data = bytearray(Path(source).read_bytes())
            data[64:] = rng.integers(0, 256, len(data) - 64, dtype=np.uint8).tobytes()
            bad.write_bytes(bytes(data))
    elif case == "nested_html":
        bad = folder / "deep.html"
        bad.write_text(_nested_html(10_000), "utf-8")
    elif case == "empty_csv":
        bad = folder / "rows.csv"
        bad.write_bytes(b"")
    else:
        bad = folder / "photo.jpg"
        bad.write_bytes(b"")
    report = ingest_paths(store, minilm, [folder], options=IngestOptions(video=VIDEO_OPTIONS))
    by_name = {Path(o.path).name: o for o in report.outcomes}
    assert by_name["good.txt"].status == "added"  # the rest of the run continues
    outcome = by_name[bad.name]
    if case == "nested_html" and outcome.status == "added":
        # deep nesting is read without recursion: the text is kept, nothing crashes
        assert "deep kestrel text" in _all_text(store)
        return
    if case in ("binary_txt", "empty_txt", "empty_csv", "empty_jpg"):
        # found in a folder: skipped with the reason; named on its own: a failure
        reason = "binary" if case == "binary_txt" else "empty"
        assert outcome.status == "skipped" and outcome.reason and reason in outcome.reason
        named = ingest_paths(store, minilm, [bad])
        outcome = named.outcomes[0]
        assert reason in (outcome.error or "")
    assert outcome.status == "failed", outcome
    assert outcome.path.endswith(bad.name) and outcome.error and "Traceback" not in outcome.error
    assert "RecursionError" not in outcome.error and "internal error" not in outcome.error
    stored = {s["uri"] for s in store.sources()}
    assert stored == {(folder / "good.txt").resolve().as_uri()}  # nothing of the bad file was written


def test_one_megabyte_of_nested_html_is_bounded(store: Store, minilm, tmp_path: Path) -> None:
    # 100,000 nested elements (1.1 MB): the navigation pruning is linear (it was quadratic: > 600 s)
    page = tmp_path / "deeper.html"
    page.write_text(_nested_html(100_000), "utf-8")
    report = ingest_paths(store, minilm, [page])
    outcome = report.outcomes[0]
    assert outcome.status in ("added", "failed")
    if outcome.status == "failed":
        assert outcome.error and "Recursion" not in outcome.error


def test_unknown_corpus_is_refused_before_anything_is_read(store: Store, minilm, tmp_path: Path) -> None:
    from universalrag.errors import CorpusNotFoundError

    (tmp_path / "a.txt").write_text("some text", "utf-8")
    with pytest.raises(CorpusNotFoundError, match="No corpus named 'nope'"):
        ingest_paths(store, minilm, [tmp_path], corpus="nope")
    assert store.sources() == []


def test_hidden_os_error_never_leaks_content(tmp_path: Path) -> None:
    # a sidecar that the user cannot read is reported by name, without its content
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    _image(tmp_path / "p.jpg")
    side = tmp_path / "p.jpg.txt"
    side.write_text("private", "utf-8")
    side.chmod(0)
    from universalrag.errors import IngestError
    from universalrag.ingest.images import read_image

    with pytest.raises(IngestError, match="p.jpg.txt"):
        read_image(tmp_path / "p.jpg")


def test_a_broken_subtitle_file_is_named_in_the_videos_failure(store: Store, minilm, tmp_path: Path) -> None:
    folder = tmp_path / "talks"
    folder.mkdir()
    write_video(folder / "talk.mp4", [(photo("astronaut"), 1.0), (photo("coffee"), 1.0)])
    (folder / "talk.srt").write_text("these are speaker notes, not subtitles\n", "utf-8")
    (folder / "notes.txt").write_text("The harbour opens at dawn.", "utf-8")
    report = ingest_paths(store, minilm, [folder], options=IngestOptions(video=VIDEO_OPTIONS))
    by_name = {Path(o.path).name: o for o in report.outcomes}
    assert by_name["notes.txt"].status == "added"
    failed = by_name["talk.mp4"]
    assert failed.status == "failed" and "'talk.srt'" in (failed.error or "")
    assert store.counts()["video"] == 0
