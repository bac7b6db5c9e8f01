"""What a new user of the command line met on Debian's documentation folders (``/usr/share/doc/*``,
``/usr/share/iso-codes/json``): skipped files never named, a bar pushed off an 80-column line by a long path, minutes
without a line in a pipe or with ``--json``, ``-k`` described as per corpus, ``--hybrid`` showing rank-fusion scores
as similarities, and ``ask --llm-model`` ignoring the model. Each test builds its own small input of the same shape."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

from conftest import DATA
from typer.testing import CliRunner

from universalrag.cli import app
from universalrag.cli.context import Output
from universalrag.cli.output import SKIPPED_SHOWN, IngestProgress, print_decision, print_report
from universalrag.embed.base import Embedder
from universalrag.ingest import FileOutcome, IngestReport
from universalrag.ingest.pipeline import IngestOptions, Progress, ingest_paths
from universalrag.store import Store
from universalrag.types import RouteDecision

APOLLO = DATA / "corpus" / "apollo_11.txt"
#: The first bytes of a PostScript manual (``manual.ps.gz`` beside ``manual.html`` in a Debian doc folder).
POSTSCRIPT = b"%!PS-Adobe-2.0\n%%Creator: dvips(k) 5.998\n%%Pages: 48\n%%EndComments\n" + b"\x00\x9c" * 64


def run(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env=env, prog_name="universalrag")
    return result.exit_code, result.stdout, result.stderr


def _ingested(env: dict[str, str], root: Path) -> None:
    """A folder holding one text file, ingested."""
    docs = root / "docs"
    docs.mkdir()
    (docs / "apollo.txt").write_bytes(APOLLO.read_bytes())
    code, out, err = run(env, "ingest", str(docs))
    assert code == 0, out + err


def _doc_folder(root: Path) -> Path:
    """A Debian-like doc folder: one text file ingested, a gzipped PostScript manual and a binary file skipped."""
    docs = root / "doc" / "bzip2"
    docs.mkdir(parents=True)
    (docs / "apollo.txt").write_bytes(APOLLO.read_bytes())
    (docs / "manual.ps.gz").write_bytes(gzip.compress(POSTSCRIPT))
    (docs / "blob.bin").write_bytes(bytes(range(256)) * 8)
    return docs


def test_a_terminal_summary_names_each_skipped_file_with_its_reason(
    store: Store, minilm: Embedder, tmp_path: Path
) -> None:
    docs = _doc_folder(tmp_path)
    report = ingest_paths(store, minilm, [docs], options=IngestOptions())
    reasons = {Path(o.path).name: o.reason for o in report.skipped}
    assert set(reasons) == {"manual.ps.gz", "blob.bin"} and report.ok
    stdout = io.StringIO()
    print_report(Output(terminal=True, color=False, width=300, stdout=stdout, stderr=io.StringIO()), report)
    lines = stdout.getvalue().splitlines()
    for name, reason in reasons.items():  # the counts say what kinds; these lines say which files, and why
        assert f"skipped {docs / name}: {(reason or '').removeprefix('is ')}" in lines, lines
    piped = io.StringIO()  # a pipe had a line per skipped file already, and keeps one summary line for them
    print_report(Output(terminal=False, stdout=piped, stderr=io.StringIO()), report)
    assert [line for line in piped.getvalue().splitlines() if line.startswith("skipped")] == [
        next(line for line in lines if line.startswith("skipped "))
    ]


def test_a_terminal_summary_names_the_first_skipped_files_and_counts_the_rest() -> None:
    skipped = [
        FileOutcome(
            path=f"/doc/examples/f{i}.o", status="skipped", reason="is a binary file of a type that is not ingested"
        )
        for i in range(SKIPPED_SHOWN + 3)
    ]
    report = IngestReport([FileOutcome(path="/doc/README", status="added"), *skipped])
    stdout = io.StringIO()
    print_report(Output(terminal=True, color=False, width=200, stdout=stdout, stderr=io.StringIO()), report)
    text = stdout.getvalue()
    assert "skipped /doc/examples/f0.o: a binary file of a type that is not ingested" in text
    assert f"f{SKIPPED_SHOWN - 1}.o" in text and f"f{SKIPPED_SHOWN}.o" not in text
    assert "… and 3 more skipped files (--json lists every one)" in text


def test_json_ingest_on_a_terminal_keeps_the_bar_on_stderr_and_stdout_clean() -> None:
    stdout, stderr = io.StringIO(), io.StringIO()
    progress = IngestProgress(Output(terminal=True, stdout=stdout, stderr=stderr), quiet=True)
    with progress:
        progress.on_start(2)
        progress.on_batch(Progress(path="doc/nettle.pdf.gz", done=0, total=1, what="document"))
        progress._progress.refresh()
        assert "working on doc/nettle.pdf.gz" in stderr.getvalue()  # a long file shows it is being worked on
        progress.on_file(FileOutcome(path="doc/nettle.pdf.gz", status="added"))
    assert stdout.getvalue() == ""  # stdout is the JSON document alone


def _help(command: str) -> str:
    code, out, _ = run({"COLUMNS": "200"}, command, "--help")
    assert code == 0
    return " ".join(out.split())


def test_help_names_every_scene_detector_and_says_k_counts_results_in_all(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    from universalrag.ingest.video.scenes import SCENE_DETECTORS

    text = _help("ingest")
    assert all(name in text.split("--detector")[1][:200] for name in SCENE_DETECTORS), text
    _ingested(cli_env, tmp_path)
    # -k counts the merged ranking, whichever corpora the router picks (document and paragraph here): one hit
    code, out, err = run(cli_env, "search", "--no-server", "-k", "1", "--json", "Who walked on the Moon first?")
    assert code == 0, out + err
    assert len(json.loads(out)) == 1
    for command in ("search", "ask"):
        text = _help(command)
        assert "per corpus" not in text and "in all" in text, text


def test_a_pipe_announces_a_group_of_text_files_before_its_lines_come(cli_env: dict[str, str], tmp_path: Path) -> None:
    docs = tmp_path / "gnupg"
    docs.mkdir()
    for name in ("FAQ", "README", "TODO"):  # small text files are read and embedded as one group
        (docs / name).write_bytes(APOLLO.read_bytes() + name.encode())
    code, out, err = run(cli_env, "ingest", str(docs))
    assert code == 0, out + err
    # a log of a long group is not silent until the group is written: stderr says what is being worked on, and
    # stdout keeps one line per file done
    assert err.splitlines()[0] == f"working on {docs / 'FAQ'} and 2 more text files", err
    assert out.splitlines()[:3] == [f"added: {docs / name}" for name in ("FAQ", "README", "TODO")]
    stdout, stderr = io.StringIO(), io.StringIO()
    with IngestProgress(Output(terminal=False, stdout=stdout, stderr=stderr), quiet=True) as quiet:
        quiet.on_batch(Progress(path="doc/FAQ", done=0, total=3, what="text files"))
    assert stdout.getvalue() == stderr.getvalue() == ""  # --json: stdout is the JSON document alone


def test_hybrid_search_shows_the_embedding_similarity_not_the_rank_fusion_score(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    _ingested(cli_env, tmp_path)
    query = "When did Apollo 11 land on the Moon?"
    for corpus in (("--corpus", "paragraph"), ()):  # one corpus, and the routed corpora merged
        code, out, err = run(cli_env, "search", "--no-server", "--hybrid", "--json", *corpus, query)
        assert code == 0, out + err
        hits = json.loads(out)
        top = hits[0]
        # the dense channel is the cosine similarity; the score (about 0.03) fuses the dense and full-text ranks
        assert top["similarity"] == top["channel_scores"]["dense"] > 0.3 > top["score"], top
        code, out, _ = run(cli_env, "search", "--no-server", "--hybrid", *corpus, query)
        first = out.splitlines()[1 if corpus else 2]
        assert first.split()[1] == f"{top['similarity']:.3f}" and f"(fused score {top['score']:.4f})" in first, out


def test_a_long_path_beside_the_bar_keeps_the_label_count_and_file_name_on_an_80_column_terminal() -> None:
    stderr = io.StringIO()
    path = "/usr/share/doc/zlib1g-dev/examples/and/some/deeper/folders/zlib_how.html"
    with IngestProgress(Output(terminal=True, width=80, color=False, stdout=io.StringIO(), stderr=stderr)) as shown:
        shown.on_start(24)
        shown.on_file(FileOutcome(path="/usr/share/doc/zlib1g-dev/FAQ.gz", status="added"))
        shown.on_batch(Progress(path=path, done=0, total=1, what="text"))
        shown._progress.refresh()
    line = stderr.getvalue().split("\r")[-3]  # the last frame drawn before the bar is cleared
    assert line.startswith("\x1b[2Kingest ") and " 1/24 " in line, repr(line)  # once cut to "in…", bar and count gone
    assert "working on …" in line and line.endswith("/deeper/folders/zlib_how.html"), repr(line)  # the file's end
    assert len(line.removeprefix("\x1b[2K")) <= 80


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_ask_answers_with_the_model_it_is_given_and_json_says_why_there_is_no_answer(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    _ingested(cli_env, tmp_path)
    env = {k: v for k, v in cli_env.items() if not k.startswith("UNIVERSALRAG_LLM")}
    model = (
        "--no-server",
        "--llm-model",
        "tiny",
        "--llm-url",
        f"http://127.0.0.1:{_closed_port()}/v1",
        "--llm-key",
        "none",
        "--timeout",
        "2",
    )
    code, out, err = run(env, "ask", *model, "--json", "Who walked on the Moon first?")
    assert code == 0, out + err
    data = json.loads(out)  # stdout stays one JSON document
    assert data["answer"] is None and "tiny" in data["warning"] and "Connection refused" in data["warning"], data
    code, out, err = run(env, "ask", *model, "Who walked on the Moon first?")
    assert code == 0 and "No language model is configured" not in out, out  # the model named was asked
    assert "no answer, only the evidence above" in err and "tiny" in err, err
    code, out, _ = run(env, "ask", "--no-server", "--json", "Who walked on the Moon first?")
    assert json.loads(out)["warning"] is None  # no model configured: nothing failed


def test_a_none_fallback_that_searched_two_corpora_says_corpora() -> None:
    stdout = io.StringIO()
    decision = RouteDecision(
        routes=("document", "paragraph"),
        scores={"none": 0.57, "document": 0.03},
        router="evidence(trained)",
        fallback=True,
    )
    print_decision(Output(terminal=False, stdout=stdout, stderr=io.StringIO()), decision)
    assert stdout.getvalue().splitlines()[1] == (
        "  nothing looked relevant (route none); searched the likeliest corpora anyway"
    )
