"""Image and file corpora fed from SQL: a bytea column (PNG bytes made with Pillow), path columns confined to the
worker's folders, documents by path, and a poison row parked while the rest proceeds. The visual channel uses a
tiny randomly initialised CLIP built by the test (no CLIP weights can be downloaded): it checks plumbing only."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from support.media import photo
from support.sync import app_sql, queue_count, unit_rows
from support.tiny_clip import TINY_CLIP_DIMENSION, build_tiny_clip

from universalrag.embed import CLIPVisualEncoder
from universalrag.sync import Worker, WorkerOptions, sync_status


def png(name: str) -> bytes:
    buf = io.BytesIO()
    photo(name, size=(64, 48)).save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture
def app(database_url: str, store: Any) -> Iterator[tuple[psycopg.Connection[Any], str]]:
    app_schema = f"{store.schema}_app"
    conn = app_sql(database_url)
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(app_schema)))
    yield conn, app_schema
    conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(app_schema)))
    conn.close()


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> CLIPVisualEncoder:
    return CLIPVisualEncoder(build_tiny_clip(tmp_path_factory.mktemp("clip")), name="tiny-clip")


def test_bytea_images_with_a_poison_row(app: Any, store: Any, minilm: Any, clip: CLIPVisualEncoder) -> None:
    conn, app_schema = app
    s, table = store.schema, sql.Identifier(app_schema, "photos")
    conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, png bytea, caption text, album text)").format(table))
    rows = [
        (1, b"GIF89a but not really an image", "a broken upload", "misc"),
        (2, png("coffee"), "a cup of coffee on a saucer", "kitchen"),
        (3, png("rocket"), "a rocket on the launch pad", "space"),
        (4, png("chelsea"), "a tabby cat looking at the camera", "pets"),
    ]
    conn.cursor().executemany(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s, %s)").format(table), rows)
    queued = conn.execute(
        sql.SQL(
            "SELECT {}.attach_table(%s::regclass, corpus => 'photos', content => 'png', modality => 'image', "
            "caption => 'caption', metadata => ARRAY['album'], description => 'Our photo library')"
        ).format(sql.Identifier(s)),
        (f"{app_schema}.photos",),
    ).fetchone()[0]
    assert queued == 4
    assert store.corpus("photos").granularity == "image"
    with Worker(store, embedder=minilm, visual_encoder=clip, options=WorkerOptions(max_attempts=2)) as worker:
        result = worker.drain()
    assert (result.written, result.failed, result.parked) == (3, 2, 1)  # the poison row: two attempts, parked
    units = unit_rows(conn, s, "photos")
    assert set(units) == {"2", "3", "4"} and all(u["has_vector"] for u in units.values())
    spec = store.corpus("photos")
    assert (spec.visual_encoder, spec.visual_dimension) == ("tiny-clip", TINY_CLIP_DIMENSION)
    visual = conn.execute(
        sql.SQL("SELECT count(*) FROM {}.corpus_photos WHERE visual IS NOT NULL").format(sql.Identifier(s))
    ).fetchone()[0]
    assert visual == 3
    hit = store.search("photos", minilm.embed_query("cat"), k=1)[0]
    assert hit.metadata["album"] == "pets"
    [status] = [st for st in sync_status(store) if st.corpus == "photos"]
    assert (status.backlog, status.failed) == (0, 1)
    assert "not a decodable image" in (status.last_error or "")
    parked = conn.execute(
        sql.SQL("SELECT attempts, last_error FROM {}.sync_queue WHERE parked_at IS NOT NULL").format(sql.Identifier(s))
    ).fetchall()
    assert len(parked) == 1 and parked[0][0] == 2 and "not a decodable image" in parked[0][1]

    # Fixing the row queues it again; once written, the parked entry of the same unit is settled too.
    conn.execute(sql.SQL("UPDATE {} SET png = %s WHERE id = 1").format(table), (png("astronaut"),))
    with Worker(store, embedder=minilm, visual_encoder=clip) as worker:
        assert worker.drain().written == 1
    assert set(unit_rows(conn, s, "photos")) == {"1", "2", "3", "4"}
    assert queue_count(conn, s) == 0


def test_sync_retry_requeues_parked_items(store: Any, minilm: Any, database_url: str) -> None:
    conn, s = app_sql(database_url), store.schema
    conn.execute(sql.SQL("SELECT {}.add_image('image', %s, 'broken')").format(sql.Identifier(s)), (b"\x89PNG\r\n",))
    conn.execute(
        sql.SQL("SELECT {}.add_image('image', %s, 'a coffee cup', '{{\"shop\": \"north\"}}')").format(
            sql.Identifier(s)
        ),
        (png("coffee"),),
    )
    with Worker(store, embedder=minilm, options=WorkerOptions(max_attempts=1)) as worker:
        result = worker.drain()
    assert (result.written, result.parked) == (1, 1)
    assert store.search("image", minilm.embed_query("coffee"), k=1)[0].metadata == {"shop": "north"}
    assert queue_count(conn, s, parked=True) == 1
    assert conn.execute(sql.SQL("SELECT {}.sync_retry('image')").format(sql.Identifier(s))).fetchone()[0] == 1
    assert queue_count(conn, s, parked=False) == 1
    conn.close()


def test_path_columns_are_read_only_under_the_worker_roots(app: Any, store: Any, minilm: Any, tmp_path: Path) -> None:
    conn, app_schema = app
    s, table = store.schema, sql.Identifier(app_schema, "assets")
    root, outside = tmp_path / "assets", tmp_path / "private"
    root.mkdir()
    outside.mkdir()
    photo("coffee", size=(64, 48)).save(root / "coffee_cup.png")
    photo("rocket", size=(64, 48)).save(outside / "rocket.png")
    conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, file text)").format(table))
    conn.cursor().executemany(
        sql.SQL("INSERT INTO {} VALUES (%s, %s)").format(table),
        [(1, "coffee_cup.png"), (2, str(outside / "rocket.png")), (3, "../private/rocket.png")],
    )
    conn.execute(
        sql.SQL(
            "SELECT {}.attach_table(%s::regclass, corpus => 'assets', content => 'file', modality => 'image')"
        ).format(sql.Identifier(s)),
        (f"{app_schema}.assets",),
    )
    with Worker(store, embedder=minilm, options=WorkerOptions(max_attempts=1)) as worker:
        result = worker.drain()
    assert result.parked == 3 and all("--files-root" in e for e in result.errors)
    conn.execute(sql.SQL("SELECT {}.sync_retry()").format(sql.Identifier(s)))
    options = WorkerOptions(max_attempts=1, file_roots=(root,))
    with Worker(store, embedder=minilm, options=options) as worker:
        result = worker.drain()
    assert result.written == 1 and result.parked == 2
    assert all("outside the folders" in e for e in result.errors)
    unit = unit_rows(conn, s, "assets")["1"]
    assert unit["content"] == "coffee cup" and unit["uri"] == "coffee_cup.png"


def test_documents_by_path(app: Any, store: Any, minilm: Any, tmp_path: Path) -> None:
    pytest.importorskip("pypdfium2", reason="the documents extra reads PDF files")
    from support.documents import write_report_pdf

    conn, app_schema = app
    s, table = store.schema, sql.Identifier(app_schema, "manuals")
    (tmp_path / "kettle.md").write_text("# Kettle\n\nDescale the kettle monthly with citric acid.\n")
    (tmp_path / "bike.html").write_text("<html><body><h1>Bike</h1><p>Oil the chain every 300 km.</p></body></html>")
    write_report_pdf(tmp_path / "report.pdf")
    (tmp_path / "scan.pdf").write_bytes(b"%PDF-1.4 not really")
    (tmp_path / "notes.odt").write_bytes(b"PK not read")
    conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, path text, title text)").format(table))
    conn.cursor().executemany(
        sql.SQL("INSERT INTO {} VALUES (%s, %s, %s)").format(table),
        [
            (1, "kettle.md", "Kettle manual"),
            (2, "bike.html", "Bike manual"),
            (3, "scan.pdf", "Scanned"),
            (4, "report.pdf", "Annual report"),
            (5, "notes.odt", "Notes"),
        ],
    )
    conn.execute(
        sql.SQL(
            "SELECT {}.attach_table(%s::regclass, corpus => 'manuals', content => 'path', "
            "content_kind => 'path', granularity => 'document', caption => 'title')"
        ).format(sql.Identifier(s)),
        (f"{app_schema}.manuals",),
    )
    options = WorkerOptions(max_attempts=1, file_roots=(tmp_path,))
    with Worker(store, embedder=minilm, options=options) as worker:
        result = worker.drain()
    assert (result.written, result.parked) == (3, 2)
    assert any("scan.pdf: " in e for e in result.errors)  # a damaged PDF: the reader's reason
    assert any(".odt documents are not read" in e for e in result.errors)
    report = [u for u in unit_rows(conn, s, "manuals").values() if u["uri"] == "report.pdf"]
    assert len(report) == 1 and report[0]["content"].startswith("Annual report\n") and len(report[0]["content"]) > 200
    hit = store.search("manuals", minilm.embed_query("how often should I oil the bicycle chain"), k=1)[0]
    assert hit.uri == "bike.html" and "Oil the chain every 300 km." in hit.content
    assert hit.content.startswith("Bike manual")


def test_urls_are_fetched_only_when_allowed(store: Any, minilm: Any, database_url: str, tmp_path: Path) -> None:
    import functools
    import http.server
    import threading

    photo("coffee", size=(64, 48)).save(tmp_path / "coffee.png")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    conn, s = app_sql(database_url), store.schema
    try:
        for path in (f"{base}/coffee.png", f"{base}/missing.png", "ftp://example.org/x.png"):
            conn.execute(sql.SQL("SELECT {}.add_file('image', %s, 'shop photo')").format(sql.Identifier(s)), (path,))
        with Worker(store, embedder=minilm, options=WorkerOptions(max_attempts=1)) as worker:
            result = worker.drain()
        assert result.parked == 3 and sum("--allow-urls" in e for e in result.errors) == 2
        conn.execute(sql.SQL("SELECT {}.sync_retry()").format(sql.Identifier(s)))
        with Worker(store, embedder=minilm, options=WorkerOptions(max_attempts=1, allow_urls=True)) as worker:
            result = worker.drain()
        assert (result.written, result.parked) == (1, 2)
        assert any("404" in e for e in result.errors) and any("only http and https" in e for e in result.errors)
        hit = store.search("image", minilm.embed_query("shop photo"), k=1)[0]
        assert hit.uri == f"{base}/coffee.png"
    finally:
        server.shutdown()
        conn.close()


def test_videos_by_path_get_sampled_frames(
    app: Any, store: Any, minilm: Any, clip: CLIPVisualEncoder, tmp_path: Path
) -> None:
    from support.video import write_video

    conn, app_schema = app
    s, table = store.schema, sql.Identifier(app_schema, "films")
    write_video(tmp_path / "launch.mp4", [("rocket", 2.0), ("coffee", 2.0)], size=(64, 48))
    (tmp_path / "fake.mp4").write_bytes(b"\x89PNG\r\n\x1a\n not a video")
    conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, file text, title text)").format(table))
    conn.cursor().executemany(
        sql.SQL("INSERT INTO {} VALUES (%s, %s, %s)").format(table),
        [(1, "launch.mp4", "Rocket launch, then a coffee break"), (2, "fake.mp4", "Fake")],
    )
    conn.execute(
        sql.SQL(
            "SELECT {}.attach_table(%s::regclass, corpus => 'films', content => 'file', "
            "modality => 'video', caption => 'title')"
        ).format(sql.Identifier(s)),
        (f"{app_schema}.films",),
    )
    options = WorkerOptions(max_attempts=1, file_roots=(tmp_path,))
    with Worker(store, embedder=minilm, visual_encoder=clip, options=options) as worker:
        result = worker.drain()
    assert (result.written, result.parked) == (1, 1) and "not a video" in result.errors[0]
    spec = store.corpus("films")
    assert (spec.granularity, spec.visual_encoder) == ("video", "tiny-clip")
    row = conn.execute(
        sql.SQL("SELECT content, uri, visual IS NOT NULL FROM {}.corpus_films").format(sql.Identifier(s))
    ).fetchone()
    assert row == ("Rocket launch, then a coffee break", "launch.mp4", True)
