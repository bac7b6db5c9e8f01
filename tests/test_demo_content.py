"""The demo knowledge base: reproducible to the byte, one clip per video shot, questions routed right.

The end-to-end check (ingest, then each question answered by the top hit of its corpus) belongs to the
``universalrag demo`` command's test; these tests cover the content without a database.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from universalrag.demo import DEMO_VIDEO_OPTIONS, build_demo_files, demo_file_names, demo_questions
from universalrag.demo.build import video_cues
from universalrag.demo.content import PHOTOS, TABLES, VIDEO
from universalrag.demo.media import BUNDLED_SAMPLES, format_srt, sample_photo, write_slideshow
from universalrag.errors import MissingDependencyError
from universalrag.routing.base import ROUTES


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The knowledge base, built once for the module."""
    folder = tmp_path_factory.mktemp("demo") / "kb"
    files = build_demo_files(folder)
    assert files == sorted(files) and [p.name for p in files] == demo_file_names()
    return folder


def test_build_is_byte_identical_and_leaves_identical_files_alone(built: Path, tmp_path: Path) -> None:
    again = build_demo_files(tmp_path / "again")
    assert _digests(built) == _digests(tmp_path / "again")
    assert {p.name for p in again} == set(_digests(built))
    kinds = {p.suffix for p in again}
    assert {".md", ".csv", ".jpg", ".txt", ".mp4", ".srt"} <= kinds

    stamps = {p.name: p.stat().st_mtime_ns for p in again}
    build_demo_files(tmp_path / "again")
    assert {p.name: p.stat().st_mtime_ns for p in again} == stamps  # nothing rewritten

    damaged = tmp_path / "again" / VIDEO.file
    damaged.write_bytes(b"not a video")
    (tmp_path / "again" / "mine.txt").write_text("the user's own file", encoding="utf-8")
    build_demo_files(tmp_path / "again")
    assert _digests(built)[VIDEO.file] == hashlib.sha256(damaged.read_bytes()).hexdigest()  # repaired
    assert (tmp_path / "again" / "mine.txt").is_file()  # others' files are left alone
    assert not list((tmp_path / "again").glob(".*"))  # no temporary files left behind


def test_video_has_one_clip_per_shot_with_its_subtitle(built: Path) -> None:
    from universalrag.ingest.video import plan_video

    plan = plan_video(built / VIDEO.file, options=DEMO_VIDEO_OPTIONS)
    assert plan.title == VIDEO.title
    assert plan.transcript_source.startswith("sidecar")
    assert (plan.probe.width, plan.probe.height) == VIDEO.size
    expected_end = 0.0
    assert len(plan.clips) == len(VIDEO.scenes) >= 4
    for clip, scene in zip(plan.clips, VIDEO.scenes, strict=True):
        assert clip.start_s == pytest.approx(expected_end, abs=1.5 / VIDEO.fps)
        expected_end += scene.seconds
        assert clip.end_s == pytest.approx(expected_end, abs=1.5 / VIDEO.fps)
        assert clip.transcript == scene.subtitle
    assert plan.probe.duration_s == pytest.approx(expected_end, abs=0.1) and expected_end <= 30


def test_media_and_sidecars(built: Path) -> None:
    from PIL import Image

    for photo in PHOTOS:
        assert photo.sample in BUNDLED_SAMPLES
        with Image.open(built / photo.file) as image:
            assert image.format == "JPEG" and max(image.size) <= 640
            assert not image.getexif()
        assert (built / f"{photo.file}.txt").read_text(encoding="utf-8").strip() == photo.caption
    assert 4 <= len(PHOTOS) <= 6
    for table in TABLES:
        lines = (built / table.file).read_text(encoding="utf-8").splitlines()
        assert lines[0] == ",".join(table.header) and len(lines) == len(table.rows) + 1
    srt = (built / f"{Path(VIDEO.file).stem}.srt").read_text(encoding="utf-8")
    assert srt == format_srt(video_cues())
    assert srt.startswith("1\n00:00:00,250 --> 00:00:04,750\n")


def _evidence_text(folder: Path, source: str) -> str:
    """The text a question's evidence is made from: the file itself, or its caption or subtitles."""
    path = folder / source
    if path.suffix == ".jpg":
        path = folder / f"{source}.txt"
    elif path.suffix == ".mp4":
        path = path.with_suffix(".srt")
    elif path.suffix == ".pdf":
        from universalrag.ingest.documents import read_document

        return "\n".join(b.text for p in read_document(path).pages for b in p.blocks)
    return path.read_text(encoding="utf-8")


def test_questions_cover_every_route_with_their_evidence_in_the_files(built: Path) -> None:
    questions = demo_questions()
    assert sorted({q.route for q in questions}, key=ROUTES.index) == list(ROUTES)
    assert [q.route for q in questions] == sorted((q.route for q in questions), key=ROUTES.index)
    for q in questions:
        if q.route == "none":
            assert q.answer_phrase is None and q.source is None
            continue
        assert q.source in demo_file_names(), q
        assert q.answer_phrase and q.answer_phrase in _evidence_text(built, q.source), q
        assert q.answer_phrase.lower() not in q.question.lower(), q  # no answer given away


def test_shipped_router_sends_each_question_to_its_route() -> None:
    from universalrag.routing import TrainedRouter

    questions = demo_questions()
    decisions = TrainedRouter.default().route_many([q.question for q in questions])
    assert [d.primary for d in decisions] == [q.route for q in questions]


def test_media_helpers_refuse_bad_input_and_name_missing_extras(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError, match="bundled"):
        sample_photo("brick_wall_downloaded")
    with pytest.raises(ValueError, match="at least one scene"):
        write_slideshow(tmp_path / "empty.mp4", [])
    with pytest.raises(ValueError, match="even width"):
        write_slideshow(tmp_path / "odd.mp4", [(sample_photo("moon"), 1.0)], size=(321, 240))
    with pytest.raises(ValueError, match="before it starts"):
        format_srt([(2.0, 1.0, "backwards")])
    monkeypatch.setitem(sys.modules, "av", None)
    with pytest.raises(MissingDependencyError, match=r"universalrag-postgres\[video\]"):
        write_slideshow(tmp_path / "x.mp4", [(sample_photo("moon"), 1.0)])
    monkeypatch.setitem(sys.modules, "skimage.data", None)
    with pytest.raises(MissingDependencyError, match=r"universalrag-postgres\[demo\]"):
        sample_photo("moon")
