"""What a new user of ``universalrag ingest``, ``sources`` and ``search`` ran into, end to end on real folders and the
test database: empty files in a folder, files deleted since they were ingested (``--prune``, ``sources delete
FOLDER``), folders with nothing to ingest, a progress bar that names the file being worked on, and search output
that says why a hit of lower similarity is ranked first."""

from __future__ import annotations

import io
import json
from pathlib import Path

from conftest import DATA
from typer.testing import CliRunner

from universalrag.cli import app
from universalrag.cli.context import Output
from universalrag.cli.output import IngestProgress, print_hits
from universalrag.errors import StoreError
from universalrag.ingest.pipeline import IngestOptions, Progress, ingest_paths
from universalrag.store import Store
from universalrag.types import Granularity, Hit, Modality

APOLLO = DATA / "corpus" / "apollo_11.txt"
LIGHTHOUSE = DATA / "corpus" / "kestrel_point_lighthouse.txt"


def run(env: dict[str, str], *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env=env, prog_name="universalrag", input=stdin)
    return result.exit_code, result.stdout, result.stderr


def _uris(env: dict[str, str]) -> set[str]:
    return {s["uri"] for s in json.loads(run(env, "sources", "list", "--json")[1])}


def test_empty_files_in_a_folder_are_skipped_and_only_a_named_one_fails(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "apollo.txt").write_bytes(APOLLO.read_bytes())
    (docs / "empty.md").write_bytes(b"")
    (docs / "__init__.py").write_bytes(b"")  # every Python package has one
    for _ in range(2):  # nothing changed: every run succeeds the same way
        code, out, err = run(cli_env, "ingest", str(docs))
        assert code == 0, out + err
        assert "skipped 2 not ingested (empty ×2; --strict fails on them)" in " ".join(out.split())
        assert f"skipped: {docs / 'empty.md'}" in out.splitlines() and "failed 0" in " ".join(out.split())
    report = json.loads(run(cli_env, "ingest", str(docs), "--json")[1])
    assert {Path(s["path"]).name: s["reason"] for s in report["skipped"]} == {
        "__init__.py": "is empty (0 bytes)",
        "empty.md": "is empty (0 bytes)",
    }
    code, out, _ = run(cli_env, "ingest", str(docs), "--strict", "--json")
    report = json.loads(out)
    assert code == 1 and len(report["failed"]) == 2 and report["skipped"] == []
    assert all("the file is empty (0 bytes)" in f["error"] for f in report["failed"])
    code, out, _ = run(cli_env, "ingest", str(docs / "empty.md"), "--json")  # named explicitly: still an error
    assert code == 1 and "the file is empty (0 bytes)" in json.loads(out)["failed"][0]["error"]


def _two_folders(
    env: dict[str, str], first: Path, top: str, nested: str, second: Path, other: str
) -> tuple[Path, Path]:
    """``first`` holding ``top`` and ``sub/nested``, ``second`` holding ``other``, both ingested."""
    (first / "sub").mkdir(parents=True)
    second.mkdir()
    (first / top).write_bytes(APOLLO.read_bytes())
    (first / "sub" / nested).write_bytes(LIGHTHOUSE.read_bytes())
    (second / other).write_bytes(LIGHTHOUSE.read_bytes())
    assert run(env, "ingest", str(first), str(second))[0] == 0
    return first, second


def test_prune_removes_the_sources_of_deleted_files_under_the_folder_only(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    docs, other = _two_folders(
        cli_env, tmp_path / "docs", "apollo.txt", "npm-ci.md", tmp_path / "other", "lighthouse.txt"
    )
    (docs / "sub" / "npm-ci.md").rename(tmp_path / "npm-ci.md")  # moved away, as the user did
    (other / "lighthouse.txt").unlink()  # gone too, but not under the folder given

    code, out, _ = run(cli_env, "ingest", str(docs))  # without --prune nothing is removed
    assert code == 0 and (docs / "sub" / "npm-ci.md").resolve().as_uri() in _uris(cli_env)
    code, out, err = run(cli_env, "ingest", str(docs), "--prune")
    assert code == 0, out + err
    assert f"removed: {docs / 'sub' / 'npm-ci.md'}" in out.splitlines()
    assert "removed 1 (their files are gone)" in " ".join(out.split())
    uris = _uris(cli_env)
    assert (docs / "sub" / "npm-ci.md").resolve().as_uri() not in uris
    assert {(docs / "apollo.txt").resolve().as_uri(), (other / "lighthouse.txt").resolve().as_uri()} <= uris
    hits = json.loads(run(cli_env, "search", "Kestrel Point lighthouse keeper", "-c", "paragraph", "--json")[1])
    assert all("npm-ci" not in (h["uri"] or "") for h in hits)
    code, out, _ = run(cli_env, "ingest", str(docs), "--prune", "--json")
    assert code == 0 and json.loads(out)["removed"] == [] and json.loads(out)["unchanged"] == 1


def test_a_prune_that_fails_on_one_source_keeps_it_and_removes_the_others(store: Store, minilm, tmp_path: Path) -> None:
    from universalrag.ingest.pipeline import prune_missing

    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):
        (docs / name).write_text(f"Notes {name}\n\n" + APOLLO.read_text(encoding="utf-8"), encoding="utf-8")
    assert ingest_paths(store, minilm, [docs], options=IngestOptions()).ok
    (docs / "a.txt").unlink()
    (docs / "b.txt").unlink()
    real = store.delete_source

    def flaky(uri: str, *, scope: str | None = None) -> bool:
        if uri.endswith("/a.txt"):
            raise StoreError("the connection was lost")
        return real(uri, scope=scope)

    store.delete_source = flaky  # type: ignore[method-assign]
    assert prune_missing(store, [tmp_path / "missing-folder", docs / "c.txt"]) == []  # not a folder: nothing
    outcomes = prune_missing(store, [docs])
    assert {Path(o.path).name: o.status for o in outcomes} == {"a.txt": "failed", "b.txt": "removed"}
    assert {Path(s["uri"]).name for s in store.sources()} == {"a.txt", "c.txt"}


def test_sources_delete_accepts_a_folder_after_confirmation(cli_env: dict[str, str], tmp_path: Path) -> None:
    docs2, keep = _two_folders(cli_env, tmp_path / "docs2", "a.txt", "b.txt", tmp_path / "keep", "c.txt")
    code, out, _ = run(cli_env, "sources", "delete", str(docs2), stdin="n\n")
    assert code == 1 and f"Delete the 2 sources under {docs2}?" in out and len(_uris(cli_env)) == 3
    code, out, _ = run(cli_env, "sources", "delete", str(docs2), stdin="y\n")
    assert code == 0 and f"deleted 2 sources under {docs2}" in out
    assert _uris(cli_env) == {(keep / "c.txt").resolve().as_uri()}
    (keep / "c.txt").unlink()
    keep.rmdir()  # a folder deleted from disk whose sources are still stored
    code, out, _ = run(cli_env, "sources", "delete", str(keep), "--yes")
    assert code == 0 and f"deleted 1 sources under {keep}" in out and _uris(cli_env) == set()
    code, _, err = run(cli_env, "sources", "delete", str(docs2), "--yes")
    assert code == 1 and "No source under" in err


def test_a_folder_with_nothing_to_ingest_says_so(cli_env: dict[str, str], tmp_path: Path) -> None:
    empty, binary, docs = tmp_path / "emptydir", tmp_path / "binonly", tmp_path / "docs"
    for folder in (empty, binary, docs):
        folder.mkdir()
    (binary / "blob.bin").write_bytes(bytes(range(256)) * 4)
    (docs / "apollo.txt").write_bytes(APOLLO.read_bytes())
    for folder in (empty, binary):
        code, _, err = run(cli_env, "ingest", str(folder))
        assert code == 0 and f"note: no supported files found in {folder}; supported: text" in err
    code, _, err = run(cli_env, "ingest", str(empty), "--strict")
    assert code == 1 and "no supported files found" in err
    code, _, err = run(cli_env, "ingest", str(docs), str(empty))
    assert code == 0 and f"found in {empty};" in err and f"found in {docs};" not in err


def test_each_file_is_announced_before_its_work(store: Store, minilm, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_bytes(APOLLO.read_bytes())
    (docs / "b.md").write_bytes(LIGHTHOUSE.read_bytes())
    (docs / "c.csv").write_text("host,owner\nbuild-04,alice\n", encoding="utf-8")
    (docs / "d.txt").write_bytes(APOLLO.read_bytes() + b"\n\nA copy.\n")
    events: list[str] = []
    ingest_paths(
        store,
        minilm,
        [docs],
        on_file=lambda o: events.append(f"{o.status} {Path(o.path).name}"),
        on_progress=lambda p: events.append(f"start {Path(p.path).name} {p.done}/{p.total} {p.what}"),
    )
    embedded = [e for e in events if e.endswith(" passages")]  # a group's embedding calls name the file in progress
    assert [e.split()[1] for e in embedded] == ["b.md", "d.txt"]
    assert all(events.index(e) < events.index(f"added {e.split()[1]}") for e in embedded)
    assert [e for e in events if e not in embedded] == [
        "start a.txt 0/2 text files",
        "added a.txt",
        "added b.md",
        "start c.csv 0/1 table",
        "added c.csv",
        "start d.txt 0/1 text",
        "added d.txt",
    ]


def test_progress_names_the_file_being_worked_on_and_a_pipe_one_line_per_file() -> None:
    stdout = io.StringIO()
    progress = IngestProgress(Output(terminal=False, stdout=stdout, stderr=io.StringIO()))
    with progress:
        progress.on_start(1)
        progress.on_batch(Progress(path="docs/big.txt", done=0, total=1, what="text"))
        progress.on_batch(Progress(path="docs/big.txt", done=2, total=5, what="passage batches"))
    assert stdout.getvalue() == "docs/big.txt: 2/5 passage batches committed\n"  # the start is the bar's alone
    terminal = io.StringIO()
    shown = IngestProgress(Output(terminal=True, stdout=io.StringIO(), stderr=terminal))
    with shown:
        shown.on_start(3)
        shown.on_batch(Progress(path="docs/a.md", done=0, total=3, what="text files"))
        shown._progress.refresh()
        assert "working on docs/a.md and 2 more text files" in terminal.getvalue()


def test_search_output_says_why_a_name_hit_comes_first_and_names_files_and_pages() -> None:
    lock = Hit(
        corpus="paragraph",
        id="p1",
        score=0.63,
        content="npm ci installs exactly what package-lock.json lists.",
        uri="file:///docs/npm-ci.md",
        metadata={"title": "npm-ci"},
        channel_scores={"named": 1.0},
    )
    table = Hit(
        corpus="table",
        id="t1",
        score=0.61,
        content="| host | owner |",
        uri="file:///docs/servers.csv",
        metadata={"title": "servers"},
        modality=Modality.TABLE,
        granularity=Granularity.TABLE,
        matched_parts=((0, "host: build-04 | owner: alice", 0.6),),
        channel_scores={"exact": 1.0},
    )
    pdf = Hit(
        corpus="paragraph",
        id="p2",
        score=0.69,
        content="Install with npm install.",
        uri="file:///docs/guide.pdf#page=7",
        metadata={"document_format": "pdf", "source": "/docs/guide.pdf", "page": 7, "page_label": "vii"},
    )
    stdout = io.StringIO()
    print_hits(
        Output(terminal=False, stdout=stdout, stderr=io.StringIO()),
        [lock, table, pdf],
        query="what does package-lock.json do for build-04",
    )
    lines = stdout.getvalue().splitlines()
    assert lines[0] == "  1. 0.630 paragraph npm-ci.md  [holds 'package-lock.json']"
    assert lines[2] == "  2. 0.610 table servers.csv  [holds 'build-04']"
    assert lines[4] == "  3. 0.690 paragraph guide.pdf, p. vii"
    assert lines[-1] == "  hits holding a name the query typed come first, whatever their similarity"


def test_search_text_output_tags_the_hit_holding_the_typed_name(cli_env: dict[str, str], tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "servers.csv").write_text("name,ip,owner\nbuild-04,10.0.1.5,alice\ndb-02,10.0.1.6,bob\n", encoding="utf-8")
    (docs / "apollo.txt").write_bytes(APOLLO.read_bytes())
    assert run(cli_env, "ingest", str(docs))[0] == 0
    code, out, err = run(cli_env, "search", "who owns build-04", "-c", "table")
    assert code == 0, err
    first = next(line for line in out.splitlines() if line.strip().startswith("1. "))
    assert first.endswith("table servers.csv  [holds 'build-04']")
