"""A folder mixing text, tables, images and videos, ingested end to end into the six corpora.

Real files (photos from scikit-image, videos written with PyAV and cut with PySceneDetect, a CSV and an Excel
workbook), the real bundled text encoder and a real PostgreSQL. The visual channel uses a tiny randomly
initialised CLIP built in the test: it checks the plumbing, not visual quality.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.kb import VIDEO_OPTIONS, mixed_folder
from support.media import write_photo
from support.tiny_clip import build_tiny_clip
from support.video import truncate_copy, write_video

from universalrag.ingest.pipeline import IngestOptions, ingest_paths
from universalrag.retrieve import search_corpus
from universalrag.store import Store


@pytest.fixture
def mixed(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    folder = tmp_path / "mixed"
    return folder, mixed_folder(folder)


def test_a_mixed_folder_fills_each_corpus_once(store: Store, minilm, mixed) -> None:  # type: ignore[no-untyped-def]
    folder, made = mixed
    options = IngestOptions(video=VIDEO_OPTIONS)
    report = ingest_paths(store, minilm, [folder], options=options)
    assert report.ok, report.failed
    kinds = {Path(o.path).name: o.kind for o in report.outcomes}
    assert kinds == {
        "lighthouse.txt": "text",
        "league.csv": "table",
        "ferries.xlsx": "table",
        "IMG_0042.jpg": "image",
        "rocket-on-launch-pad.png": "image",
        "morning.mp4": "video",
    }
    counts = store.counts()
    assert counts["document"] == 1 and counts["paragraph"] > 3
    assert counts["table"] == 2 and counts["image"] == 2 and counts["video"] == 1 and counts["clip"] == 3
    again = ingest_paths(store, minilm, [folder], options=options)
    assert again.count("unchanged") == 6 and store.counts() == counts

    row = search_corpus(store, minilm, "table", "How many games did the Quarry Lions win?", k=1)[0]
    assert row.metadata["title"] and "Quarry Lions" in row.matched_parts[0][1]
    ferry = search_corpus(store, minilm, "table", "how long is the ferry crossing to Gull Island", k=1)[0]
    assert "Gull Island" in ferry.matched_parts[0][1] and "40" in ferry.matched_parts[0][1]

    image = search_corpus(store, minilm, "image", "a cup of coffee on a saucer", k=2)[0]
    assert image.uri.endswith("IMG_0042.jpg") and image.metadata["description_source"] == "sidecar"
    rocket = search_corpus(store, minilm, "image", "rocket launch pad", k=2)[0]
    assert rocket.uri.endswith("rocket-on-launch-pad.png") and rocket.metadata["description_source"] == "filename"

    video = made["video"]
    clip = search_corpus(store, minilm, "clip", "the cat sleeping on the couch", k=1)[0]
    start, end = video.scenes[2]  # type: ignore[attr-defined]
    assert abs(clip.start_s - start) <= 2 / video.fps and abs(clip.end_s - end) <= 2 / video.fps  # type: ignore[attr-defined]
    assert "Chelsea" in clip.content and clip.parent_id
    whole = search_corpus(store, minilm, "video", "a calm morning with coffee and a cat", k=1)[0]
    assert whole.id == clip.parent_id and whole.end_s == pytest.approx(video.duration_s, abs=0.1)  # type: ignore[attr-defined]


def test_each_file_is_hashed_once_per_run(  # type: ignore[no-untyped-def]
    store: Store, minilm, mixed, monkeypatch
) -> None:
    # A spy around the real SHA-256 constructor: it counts the digests taken inside universalrag.ingest.
    import hashlib
    import sys

    real, calls = hashlib.sha256, []

    def counting(*args: object, **kwargs: object) -> object:
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if caller.startswith("universalrag.ingest"):
            calls.append(caller)
        return real(*args, **kwargs)

    monkeypatch.setattr(hashlib, "sha256", counting)
    folder, _made = mixed
    report = ingest_paths(store, minilm, [folder], options=IngestOptions(video=VIDEO_OPTIONS))
    assert report.ok and len(report.outcomes) == 6
    # every file once, the two sidecars (a caption, a subtitle file) included: they are part of their source's
    # fingerprint; plus one digest that combines the file's with them for each of the two sources that have one,
    # and with the reading rules for the CSV and the XLSX (TABLE_RULES) and the text file (PASSAGE_RULES)
    assert sorted(calls) == ["universalrag.ingest.companions"] * 5 + ["universalrag.ingest.files"] * (6 + 2)


def test_a_corrupt_video_leaves_nothing_and_the_run_goes_on(store: Store, minilm, tmp_path: Path) -> None:
    folder = tmp_path / "media"
    folder.mkdir()
    good = write_video(folder / "good.mp4", [("camera", 2.0), ("rocket", 2.0)], title="Two shots")
    truncate_copy(good.path, folder / "broken.mp4", keep=0.4)
    write_photo(folder / "fake.jpg", name="coffee")
    (folder / "fake.jpg").write_bytes(b"not a jpeg at all, just text")
    report = ingest_paths(store, minilm, [folder], options=IngestOptions(video=VIDEO_OPTIONS))
    failed = {Path(o.path).name: o.error for o in report.failed}
    assert set(failed) == {"broken.mp4", "fake.jpg"}
    assert report.count("added") == 1
    counts = store.counts()
    assert counts["video"] == 1 and counts["image"] == 0
    assert [s["uri"].rsplit("/", 1)[-1] for s in store.sources()] == ["good.mp4"]


def test_visual_channel_with_a_tiny_random_clip(settings, minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from universalrag.embed.visual import CLIPVisualEncoder

    encoder = CLIPVisualEncoder(build_tiny_clip(tmp_path / "tiny-clip"), name="tiny-random-clip")
    store = Store(settings=settings)
    store.init(embedder=minilm.name, dimension=minilm.dimension)
    folder = tmp_path / "vis"
    folder.mkdir()
    write_photo(folder / "coffee.jpg", name="coffee")
    write_photo(folder / "chelsea.jpg", name="chelsea")
    write_video(
        folder / "clip.mp4",
        [("astronaut", 2.0), ("coffee", 2.0)],
        cues=[(0.2, 1.8, "An astronaut floats and waves."), (2.2, 3.8, "A cup of coffee steams.")],
        sidecar="srt",
    )
    report = ingest_paths(store, minilm, [folder], options=IngestOptions(visual_encoder=encoder, video=VIDEO_OPTIONS))
    assert report.ok, report.failed
    for corpus in ("image", "clip", "video"):
        spec = store.corpus(corpus)
        assert (spec.visual_encoder, spec.visual_dimension) == ("tiny-random-clip", encoder.dimension)
    hits = search_corpus(store, minilm, "image", "coffee", k=2, visual_encoder=encoder, visual_weight=0.8)
    assert len(hits) == 2 and all(set(h.channel_scores) == {"text", "visual"} for h in hits)
    for h in hits:
        assert h.score == pytest.approx(0.8 * h.channel_scores["visual"] + 0.2 * h.channel_scores["text"], abs=1e-5)
    clips = search_corpus(store, minilm, "clip", "astronaut", k=2, visual_encoder=encoder)
    assert all("visual" in h.channel_scores for h in clips)
    other = CLIPVisualEncoder(build_tiny_clip(tmp_path / "other", seed=1), name="another-clip")
    with pytest.raises(Exception, match="another-clip"):
        search_corpus(store, minilm, "image", "coffee", visual_encoder=other)
    store.close()


def test_html_page_tables_and_image_alt_text(store: Store, minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "site"
    folder.mkdir()
    write_photo(folder / "DSC_1234.jpg", name="rocket")
    (folder / "report.html").write_text(
        """<html><head><title>Spaceport report</title></head><body>
<h1>Spaceport report</h1><p>The spaceport opened its second pad this spring.</p>
<img src="DSC_1234.jpg" alt="A white rocket standing on the launch pad before dawn">
<h2>Launches by year</h2>
<table><tr><th>year</th><th>launches</th></tr><tr><td>2024</td><td>14</td></tr><tr><td>2025</td><td>19</td></tr></table>
<table><caption>Crew rotation</caption><tr><th>crew</th><th>days in orbit</th></tr>
<tr><td>Aster</td><td>182</td></tr><tr><td>Borealis</td><td>96</td></tr></table>
<img src="https://example.invalid/remote.png" alt="a remote picture that is not ingested">
</body></html>""",
        encoding="utf-8",
    )
    report = ingest_paths(store, minilm, [folder])
    assert report.ok, report.failed
    page = next(o for o in report.outcomes if o.path.endswith("report.html"))
    assert set(page.corpora) == {"document", "paragraph", "table"} and page.rows["table"] == 2
    image = search_corpus(store, minilm, "image", "rocket on the launch pad", k=1)[0]
    assert image.metadata["description_source"] == "alt" and "before dawn" in image.content
    crew = search_corpus(store, minilm, "table", "how many days did the Borealis crew spend in orbit", k=1)[0]
    assert crew.metadata["title"] == "Crew rotation" and "Borealis" in crew.matched_parts[0][1]
    assert ingest_paths(store, minilm, [folder]).count("unchanged") == 2


def test_a_dataframe_is_ingested_as_a_table(store: Store, minilm) -> None:  # type: ignore[no-untyped-def]
    pd = pytest.importorskip("pandas")
    from universalrag.ingest.pipeline import ingest_tables
    from universalrag.ingest.tables import table_from_dataframe

    df = pd.DataFrame(
        {
            "planet": ["Mercury", "Venus", "Earth", "Mars"],
            "moons": [0, 0, 1, 2],
            "day_length_hours": [4222.6, 2802.0, 24.0, 24.7],
        }
    )
    table = table_from_dataframe(df, title="Inner planets")
    first = ingest_tables(store, minilm, [table], uri="memory://planets")
    assert first.status == "added" and first.rows == {"table": 1, "table.parts": 4}
    assert (
        ingest_tables(store, minilm, [table_from_dataframe(df, title="Inner planets")], uri="memory://planets").status
        == "unchanged"
    )
    hit = search_corpus(store, minilm, "table", "how many moons does Mars have", k=1)[0]
    assert hit.uri == "memory://planets" and "Mars" in hit.matched_parts[0][1]
    df.loc[3, "moons"] = 3
    assert (
        ingest_tables(store, minilm, [table_from_dataframe(df, title="Inner planets")], uri="memory://planets").status
        == "replaced"
    )
    assert store.counts()["table"] == 1
