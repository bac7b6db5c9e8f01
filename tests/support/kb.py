"""A small mixed knowledge base written into a folder: a text, a CSV, an Excel workbook, two photographs (one
with a caption sidecar) and a video of three scenes with subtitles. Shared by the ingestion and pipeline tests."""

from __future__ import annotations

import shutil
from pathlib import Path

from support.media import write_photo
from support.video import WrittenVideo, write_video
from universalrag.ingest.video import VideoOptions

DATA = Path(__file__).resolve().parents[1] / "data"

VIDEO_OPTIONS = VideoOptions(min_clip_s=1.0, max_clip_s=10.0, frames_per_clip=2, frames_per_video=4)
CUES = [
    (0.2, 2.8, "An astronaut floats inside the space station and waves at the camera."),
    (3.2, 5.8, "A cup of hot coffee steams on a wooden table in the morning light."),
    (6.2, 8.8, "A ginger cat named Chelsea sleeps curled up on the sofa."),
]


def mixed_folder(root: Path) -> dict[str, WrittenVideo]:
    root.mkdir()
    shutil.copy(DATA / "corpus" / "kestrel_point_lighthouse.txt", root / "lighthouse.txt")
    (root / "league.csv").write_text(
        "team,city,wins,losses\nHarbour Herons,Kestrel Bay,31,7\nMill Town Rovers,Ashford,12,26\n"
        "Quarry Lions,Stonebridge,20,18\n",
        encoding="utf-8",
    )
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Ferries"
    sheet.append(["route", "departures per day", "crossing minutes"])
    sheet.append(["Kestrel Bay to Gull Island", 6, 40])
    sheet.append(["Ashford to Northmere", 2, 95])
    book.save(root / "ferries.xlsx")
    write_photo(root / "IMG_0042.jpg", name="coffee")
    (root / "IMG_0042.jpg.txt").write_text(
        "A white cup of black coffee on a saucer, seen from above.", encoding="utf-8"
    )
    write_photo(root / "rocket-on-launch-pad.png", name="rocket")
    video = write_video(
        root / "morning.mp4",
        [("astronaut", 3.0), ("coffee", 3.0), ("chelsea", 3.0)],
        cues=CUES,
        sidecar="srt",
        title="A calm morning",
    )
    return {"video": video}


def build_rag(database_url: str, folder: Path, **kwargs: object):  # type: ignore[no-untyped-def]
    """A UniversalRAG over the mixed knowledge base, in a schema of its own (drop it with
    ``rag.store.downgrade("base")``)."""
    import uuid

    from universalrag.config import Settings
    from universalrag.ingest.pipeline import IngestOptions
    from universalrag.pipeline import UniversalRAG

    kwargs.setdefault("visual_encoder", None)
    rag = UniversalRAG(settings=Settings(database_url=database_url, schema="kb_" + uuid.uuid4().hex[:12]), **kwargs)  # type: ignore[arg-type]
    mixed_folder(folder)
    report = rag.ingest([folder], options=IngestOptions(video=VIDEO_OPTIONS))
    assert report.ok, report.failed
    return rag
