"""One hostile file fails alone: whatever a reader raises for one file becomes that file's typed failure (an
``IngestError`` with its path and a reason) while the run goes on. Real files, the real pipeline and store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from universalrag.ingest import ingest_paths


def deep_json(path: Path, depth: int) -> Path:
    path.write_text("[" * depth + "1" + "]" * depth)
    return path


def pptx_with_a_shape_of_no_known_type(path: Path) -> Path:
    """A slide whose shape has neither a preset nor a custom geometry (python-pptx cannot name its type)."""
    from pptx import Presentation
    from pptx.enum.shapes import MSO_SHAPE
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])
    shape = slide.shapes.add_shape(MSO_SHAPE.RECTANGLE, Inches(1), Inches(1), Inches(3), Inches(1))
    shape.text_frame.text = "Budget review on Thursday"
    geometry = shape._element.spPr.find("{http://schemas.openxmlformats.org/drawingml/2006/main}prstGeom")
    geometry.getparent().remove(geometry)
    deck.save(str(path))
    return path


def good_text(folder: Path) -> Path:
    path = folder / "notes.txt"
    path.write_text("The heating in the north wing is switched on in October.\n")
    return path


def test_files_whose_readers_raise_fail_alone_and_the_run_goes_on(store: Any, minilm: Any, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    deep_json(folder / "deep.json", 1_000)
    pptx_with_a_shape_of_no_known_type(folder / "shapes.pptx")
    good_text(folder)
    report = ingest_paths(store, minilm, [folder])
    by_name = {Path(o.path).name: o for o in report.outcomes}
    assert by_name["notes.txt"].status == "added"
    deep = by_name["deep.json"]
    assert deep.status in ("failed", "added"), deep
    if deep.status == "failed":
        assert deep.error and "RecursionError" not in deep.error and "deeper" in deep.error
    shapes = by_name["shapes.pptx"]
    assert shapes.status == "added", shapes  # the shape's text is read without knowing its type
    hit = store.search("paragraph", minilm.embed_query("budget review Thursday"), k=3)
    assert any("Budget review" in h.content for h in hit)


def test_a_path_too_long_for_the_system_is_a_failure_of_its_own(store: Any, minilm: Any, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    good = good_text(folder)
    long_path = folder / ("x" * 5_000 + ".txt")
    report = ingest_paths(store, minilm, [long_path, good])
    statuses = {Path(o.path).name[:8]: o for o in report.outcomes}
    assert statuses["notes.tx"].status == "added"
    failed = statuses["xxxxxxxx"]
    assert failed.status == "failed" and failed.error and "too long" in failed.error


def test_the_cli_reports_a_path_too_long_without_a_traceback(cli_env: dict[str, str], tmp_path: Path) -> None:
    long_path = tmp_path / ("x" * 5_000 + ".txt")
    done = subprocess.run(
        [sys.executable, "-m", "universalrag.cli", "ingest", str(long_path)],
        env={**os.environ, **cli_env},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "Traceback" not in output and "too long" in output


def test_markdown_nested_past_the_parser_limit_keeps_its_text() -> None:
    """markdown-it stops reading blocks nested past its limit and drops their text without a word; a page nested
    that deep is read as plain text instead (every word kept), one nested less deeply as Markdown."""
    from universalrag.ingest.markup import markdown_to_html

    deep = "> " * 150 + "deep quoted text\n\n" + "- " * 60 + "deep list text\n\nafter"
    html = markdown_to_html(deep)
    assert "deep quoted text" in html and "deep list text" in html and "after" in html
    shallow = markdown_to_html("> > quoted **bold**")
    assert "<blockquote>" in shallow and "<strong>bold</strong>" in shallow
