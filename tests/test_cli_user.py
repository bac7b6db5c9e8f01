"""What a new user meets on the command line: `route` able to show the decision `search` makes (evidence-aware,
not the question-only prior), and `router eval` saying that it measures the prior."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import DATA

from universalrag.cli.context import CliContext, Output, Session
from universalrag.cli.routers import PRIOR_ONLY_NOTE, RouterOptions, routes_as_search, searches_with_evidence

QUESTION = "When did the Apollo 11 crew land on the Moon?"


def test_route_as_search_is_the_decision_search_makes(settings: Any, tmp_path: Path) -> None:
    """The helper `route` is to call gives the routes and scores `search` routes with, prior included."""
    obj = CliContext(settings, output=Output(terminal=False), session=Session())
    try:
        obj.ensure_initialised()
        assert obj.rag.ingest([DATA / "corpus" / "apollo_11.txt", DATA / "tables" / "nba_2023.csv"]).ok
        decision = routes_as_search(obj, QUESTION)
        searched, _ = obj.rag.search(QUESTION)
        assert decision.routes == searched.routes and dict(decision.scores) == dict(searched.scores)
        assert decision.evidence and decision.prior  # decided with the corpora's probes; the prior kept beside
        assert decision.router.startswith("evidence")
        assert dict(decision.scores) != dict(obj.rag.router.route(QUESTION).scores)  # not the prior alone
    finally:
        obj.session.close()


def test_which_router_choices_route_as_search_does() -> None:
    assert searches_with_evidence("trained", RouterOptions())
    assert searches_with_evidence("trained", RouterOptions(timeout=5.0))  # options of other kinds do not matter
    assert not searches_with_evidence("trained", RouterOptions(model_dir=Path("my-router")))
    assert not searches_with_evidence("llm", RouterOptions())
    assert "question-only" in PRIOR_ONLY_NOTE and "eval rag" in PRIOR_ONLY_NOTE


def test_route_says_what_it_shows_and_evidence_shows_what_search_does(cli_env: dict[str, str]) -> None:
    """`route` shows the question-only prior and says so; `route --evidence` the decision `search` makes."""
    import json

    from typer.testing import CliRunner

    from universalrag.cli import app

    def run(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(
            app,
            [*args, "--no-server"] if args[0] in ("route", "search") else list(args),
            env=cli_env,
            prog_name="universalrag",
        )
        return result.exit_code, result.stdout

    assert run("ingest", str(DATA / "corpus" / "apollo_11.txt"), str(DATA / "tables" / "nba_2023.csv"))[0] == 0
    code, out = run("route", QUESTION, "--prior")
    assert code == 0 and "question-only prior" in out
    code, out = run("route", QUESTION)
    assert code == 0 and "as search" in out
    code, out = run("route", "What is 7 times 8?")  # `none` is shown as none, with what search still does
    assert code == 0 and out.startswith("none") and "search still searches" in out
    code, out = run("route", QUESTION, "--evidence", "--json")
    shown = json.loads(out)
    code, out = run("search", QUESTION, "--json", "-k", "1")
    assert code == 0 and shown["evidence"] and shown["prior"] and shown["router"].startswith("evidence")
    assert {h["corpus"] for h in json.loads(out)} <= set(shown["routes"])  # search searched what route showed
    code, _ = run("route", QUESTION, "--evidence", "--router", "examples")
    assert code == 1
    # a filter no unit passes says so, instead of "nothing looked relevant"
    code, out = run("search", QUESTION, "--filter", '{"file_name": "apollo_11.txt"}')
    assert code == 0 and "no unit matches the filter" in out and "nothing looked relevant" not in out
    code, out = run("search", QUESTION, "--filter", '{"uri": {"$like": "%/apollo_11.txt"}}')
    assert code == 0 and "no unit matches" not in out and "apollo_11.txt" in out
    code, out = run("search", QUESTION, "-c", "table", "--filter", '{"file_name": "apollo_11.txt"}')
    assert code == 0 and "no unit of this corpus matches the filter" in out
