"""`universalrag graph build|stats|show` end to end: ingestion with the graph off, a build from the stored units, and
the neighbourhood shown, exported and drawn."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from universalrag.cli import app

runner = CliRunner()


def run(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env=env, prog_name="universalrag")
    return result.exit_code, result.stdout, result.stderr


def _site(folder: Path) -> Path:
    folder.mkdir()
    (folder / "a.html").write_text(
        "<html><head><title>Brass Harbour</title></head><body><h1>Brass Harbour</h1>"
        '<p>Brass Harbour was founded by the <a href="b.html">Kestrel Company</a>.</p></body></html>',
        encoding="utf-8",
    )
    (folder / "b.html").write_text(
        "<html><head><title>Kestrel Company</title></head><body><h1>Kestrel Company</h1>"
        "<p>The Kestrel Company ran ferries to Gull Island.</p></body></html>",
        encoding="utf-8",
    )
    (folder / "league.csv").write_text("team,city\nHarbour Herons,Brass Harbour\n", encoding="utf-8")
    return folder


def test_build_stats_and_show(cli_env: dict[str, str], tmp_path: Path) -> None:
    folder = _site(tmp_path / "site")
    code, out, err = run({**cli_env, "UNIVERSALRAG_GRAPH": "off"}, "ingest", str(folder), "--json")
    assert code == 0, err
    code, out, _ = run(cli_env, "graph", "stats", "--json")
    assert code == 0 and json.loads(out)["entities"] == 0  # ingested with the graph off

    code, out, err = run(cli_env, "graph", "build", "--json")
    assert code == 0, err
    built = json.loads(out)
    assert built["sources"] == 3 and built["entities"] > 0
    code, out, _ = run(cli_env, "graph", "stats", "--json")
    stats = json.loads(out)
    assert stats["entities"] > 0 and stats["embedded"] == stats["entities"] and stats["sources"] == 3
    assert {"links_to", "belongs_to", "city"} <= set(stats["keywords"])

    png = tmp_path / "harbour.png"
    code, out, err = run(cli_env, "graph", "show", "brass  harbour", "--hops", "2", "--png", str(png), "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["entity"]["name"] == "Brass Harbour" and shown["entity"]["type"] == "page"
    neighbours = {n["name"]: n for n in shown["neighbours"]}
    assert neighbours["Kestrel Company"]["hops"] == 1 and neighbours["Gull Island"]["hops"] == 2
    assert neighbours["Harbour Herons"]["via"] == ["city"]
    assert {u["corpus"] for u in shown["units"]} >= {"document", "table"}
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    code, out, _ = run(cli_env, "graph", "show", "Kestrel Company")
    assert code == 0 and "-[links_to]- Brass Harbour (page)" in out
    code, out, err = run(cli_env, "graph", "show", "Harbour")
    assert code != 0 and "No entity is called 'Harbour'" in err and "Brass Harbour" in err  # near names


def test_ingestion_writes_the_graph_by_default_and_exports(cli_env: dict[str, str], tmp_path: Path) -> None:
    folder = _site(tmp_path / "site")
    code, _, err = run(cli_env, "ingest", str(folder), "--json")
    assert code == 0, err
    code, out, _ = run(cli_env, "graph", "stats", "--json")
    stats = json.loads(out)
    assert stats["entities"] > 0 and stats["embedded"] == 0  # vectors are left to `graph build`

    from universalrag import UniversalRAG
    from universalrag.config import Settings

    settings = Settings.from_env(cli_env)
    with UniversalRAG(settings=settings) as rag:
        graph = rag.graph
        assert graph.embed() == stats["entities"]
        nx_graph = graph.to_networkx("Kestrel Company", hops=1)
        names = {d["name"] for _, d in nx_graph.nodes(data=True)}
        assert {"Kestrel Company", "Brass Harbour", "Gull Island"} <= names
        assert any(d["keywords"] == "links_to" for _, _, d in nx_graph.edges(data=True))
        path = graph.to_graphml(tmp_path / "g.graphml", "Kestrel Company")
        assert "<graphml" in path.read_text(encoding="utf-8")
        assert graph.paths("Gull Island", "Brass Harbour", max_hops=2)
