"""The routing log in SQL (background, batched, never in a query's way), feedback from Python and the CLI, and
adaptation of the combiner to a database's content — on a real database with the real MiniLM."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from test_routing_evidence import SATURN_Q, WITH_Q, write_reference
from typer.testing import CliRunner

from universalrag.config import Settings
from universalrag.decision_log import DecisionLog, query_hash
from universalrag.errors import RoutingError
from universalrag.pipeline import UniversalRAG
from universalrag.types import RouteDecision


@pytest.fixture(scope="module")
def content(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """The reference texts and planets table, ingested once per module in a schema of its own."""
    from universalrag.embed import bundled_minilm

    settings = Settings(database_url=database_url, schema="fb_" + uuid.uuid4().hex[:12])
    with UniversalRAG(
        settings=settings, embedder=bundled_minilm(), generator=None, visual_encoder=None
    ) as feedback_rag:
        assert feedback_rag.ingest([write_reference(tmp_path_factory.mktemp("fb") / "reference")]).ok
        yield settings
        feedback_rag.store.downgrade("base")


@pytest.fixture
def feedback_rag(content: Settings, minilm) -> Iterator[UniversalRAG]:  # type: ignore[no-untyped-def]
    """A fresh pipeline over the module's content, with an empty routing log and no stored combiner."""
    instance = UniversalRAG(settings=content, embedder=minilm, generator=None, visual_encoder=None)
    with instance.store.transaction() as conn:
        conn.execute(sa.text(f"TRUNCATE {content.schema}.routing_log, {content.schema}.router_combiners"))
    yield instance
    instance.close()


def _log_rows(feedback_rag: UniversalRAG) -> list[dict]:
    with feedback_rag.store.transaction() as conn:
        return [
            dict(r)
            for r in conn.execute(
                sa.text(f"SELECT * FROM {feedback_rag.store.schema}.routing_log ORDER BY created_at")
            ).mappings()
        ]


def test_decisions_are_logged_in_the_background_without_their_text(feedback_rag: UniversalRAG) -> None:
    first = feedback_rag.route(SATURN_Q)
    feedback_rag.query(WITH_Q)
    assert feedback_rag.decision_log().flush()
    rows = _log_rows(feedback_rag)
    assert len(rows) == 2
    row = next(r for r in rows if str(r["id"]) == first.id)
    assert row["query_hash"] == query_hash(SATURN_Q) and row["query_text"] is None
    assert row["routes"] == list(first.routes) and row["router_version"] == first.version
    assert set(row["evidence"]) == set(first.evidence) and row["evidence"]["table"]["best"] > 0
    assert row["latency_ms"] > 0 and row["feedback_routes"] is None


def test_the_query_text_is_stored_only_when_enabled(feedback_rag: UniversalRAG) -> None:
    talkative = UniversalRAG(
        settings=feedback_rag.settings,
        store=feedback_rag.store,
        embedder=feedback_rag.embedder,
        generator=None,
        visual_encoder=None,
        log_query_text=True,
    )
    talkative.route(SATURN_Q)
    assert talkative.decision_log().flush()
    assert [r["query_text"] for r in _log_rows(feedback_rag)] == [SATURN_Q]
    quiet = UniversalRAG(
        settings=feedback_rag.settings,
        store=feedback_rag.store,
        embedder=feedback_rag.embedder,
        generator=None,
        visual_encoder=None,
        log_decisions=False,
    )
    quiet.route(SATURN_Q)
    quiet.decision_log().flush()
    assert len(_log_rows(feedback_rag)) == 1


def test_logging_never_breaks_or_blocks_a_query(feedback_rag: UniversalRAG) -> None:
    table = sa.Table("routing_log", sa.MetaData(), schema=feedback_rag.store.schema)
    rename = sa.DDL("ALTER TABLE %(fullname)s RENAME TO routing_log_away")
    with feedback_rag.store.engine.begin() as conn:  # the log's table gone: every write of the log fails
        conn.execute(rename.against(table))
    try:
        log = feedback_rag.decision_log()
        assert feedback_rag.route(SATURN_Q).primary == "table"
        log.flush()
        assert log.failed == 1 and log.written == 0
        full = DecisionLog(feedback_rag.store, capacity=1)
        full._queue.put_nowait({})  # the writer is not running: the queue stays full
        full.record("q", RouteDecision(routes=("table",), id=str(uuid.uuid4())), candidates=["table"])
        assert full.dropped == 1
    finally:
        away = sa.Table("routing_log_away", sa.MetaData(), schema=feedback_rag.store.schema)
        with feedback_rag.store.engine.begin() as conn:
            conn.execute(sa.DDL("ALTER TABLE %(fullname)s RENAME TO routing_log").against(away))


def test_feedback_marks_a_decision_and_is_validated(feedback_rag: UniversalRAG) -> None:
    decision = feedback_rag.route(WITH_Q)
    assert feedback_rag.feedback(decision, ["paragraph"]) == decision.id
    assert feedback_rag.feedback(SATURN_Q, ["table"])  # never routed before: routed and logged with the feedback
    rows = {r["query_hash"]: r for r in _log_rows(feedback_rag)}
    assert rows[query_hash(WITH_Q)]["feedback_routes"] == ["paragraph"]
    assert rows[query_hash(SATURN_Q)]["feedback_routes"] == ["table"] and rows[query_hash(SATURN_Q)]["feedback_at"]
    with pytest.raises(RoutingError, match="Unknown route"):
        feedback_rag.feedback(WITH_Q, ["tabel"])
    with pytest.raises(RoutingError, match="No logged routing decision"):
        feedback_rag.feedback(str(uuid.uuid4()), ["table"])


def test_cli_feedback(feedback_rag: UniversalRAG, cli_env: dict[str, str]) -> None:
    from universalrag.cli import app

    decision = feedback_rag.route(SATURN_Q)
    feedback_rag.decision_log().flush()
    env = {**cli_env, "UNIVERSALRAG_SCHEMA": feedback_rag.store.schema}
    result = CliRunner().invoke(app, ["router", "feedback", decision.id, "--route", "table"], env=env)
    assert result.exit_code == 0, result.output
    assert decision.id in result.stdout
    assert _log_rows(feedback_rag)[0]["feedback_routes"] == ["table"]
    bad = CliRunner().invoke(app, ["router", "feedback", SATURN_Q, "--route", "nope"], env=env)
    assert bad.exit_code != 0 and "Unknown route" in bad.output


def test_feedback_rows_are_used_by_adaptation(feedback_rag: UniversalRAG) -> None:
    from universalrag.adapt import feedback_queries

    feedback_rag.feedback(feedback_rag.route(SATURN_Q), ["table"])
    feedback_rag.feedback(feedback_rag.route("What is 17 times 3?"), ["none"])
    used = feedback_queries(feedback_rag)
    assert {q.source for q in used} == {"feedback"} and len(used) == 2
    assert sorted(q.answerable for q in used) == [False, True]
    report = feedback_rag.adapt_router([(SATURN_Q, "table"), (WITH_Q, "paragraph")], holdout=0.0, save=False)
    assert report.feedback == 2 and report.train >= 4 and not report.saved
    json.dumps(report.to_dict())


def test_cli_adapt(feedback_rag: UniversalRAG, cli_env: dict[str, str]) -> None:
    """`router adapt` writes questions from the database's own units (routing.synth) and adapts; without the
    synthesis module it says how to adapt from Python instead."""
    import importlib.util

    from universalrag.cli import app

    env = {**cli_env, "UNIVERSALRAG_SCHEMA": feedback_rag.store.schema}
    result = CliRunner().invoke(app, ["router", "adapt", "--per-corpus", "4", "--json"], env=env)
    if importlib.util.find_spec("universalrag.routing.synth") is None:
        assert result.exit_code != 0 and "adapt_router" in result.output
        return
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["train"] > 0 and "accuracy" in report["after"]


def test_status_shows_the_adapted_combiner_and_reset_returns_to_the_shipped_one(
    feedback_rag: UniversalRAG,
    minilm,  # type: ignore[no-untyped-def]
    cli_env: dict[str, str],
) -> None:
    """An adaptation can make routing worse on questions it did not see (the routing benchmark's tune split made
    the held-out split's demo questions worse): `router status` says which combiner decides, `router reset` and
    `feedback_rag.reset_router()` undo `router adapt` for every new pipeline and for the one that adapted."""
    from universalrag.cli import app
    from universalrag.routing.combiner import Combiner

    shipped = Combiner.default().version
    env = {**cli_env, "UNIVERSALRAG_SCHEMA": feedback_rag.store.schema}
    status = CliRunner().invoke(app, ["router", "status", "--json"], env=env)
    assert status.exit_code == 0, status.output
    assert json.loads(status.stdout) == {"combiner": shipped, "shipped": shipped, "adapted": None}

    examples = [
        (SATURN_Q, "table"),
        ("which planet has the most moons", "table"),
        (WITH_Q, "paragraph"),
        ("What is 17 times 3?", "none"),
        ("hello there", "none"),
    ]
    report = feedback_rag.adapt_router(examples, holdout=0.0, force=True, use_feedback=False)
    assert (
        report.saved and report.combiner.version != shipped and feedback_rag.combiner.version == report.combiner.version
    )

    status = CliRunner().invoke(app, ["router", "status", "--json"], env=env)
    data = json.loads(status.stdout)
    assert data["combiner"] == data["adapted"]["version"] == report.combiner.version
    assert data["adapted"]["train"] == report.train and data["adapted"]["created_at"]
    text = CliRunner().invoke(app, ["router", "status"], env=env).stdout
    assert report.combiner.version in text and "router reset" in text

    result = CliRunner().invoke(app, ["router", "reset"], env=env)
    assert result.exit_code == 0 and f"removed the adapted combiner {report.combiner.version}" in result.stdout
    fresh = UniversalRAG(settings=feedback_rag.settings, embedder=minilm, generator=None, visual_encoder=None)
    assert fresh.combiner.version == shipped
    fresh.close()
    assert CliRunner().invoke(app, ["router", "reset"], env=env).stdout.startswith("no adapted combiner")

    again = feedback_rag.adapt_router(
        examples, holdout=0.0, force=True, use_feedback=False
    )  # Python: the same, in place
    assert feedback_rag.reset_router() == again.combiner.version and feedback_rag.combiner.version == shipped
    assert feedback_rag.reset_router() is None
    kept = Combiner.default()
    feedback_rag.use_combiner(kept)
    feedback_rag.adapt_router(examples, holdout=0.0, force=True, use_feedback=False)
    feedback_rag.use_combiner(kept)  # a combiner the caller chose is not replaced by a reset
    assert feedback_rag.reset_router() is not None and feedback_rag.combiner is kept
