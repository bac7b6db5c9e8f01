"""The checklist of docs/scaling.md, verified on plain Postgres: every statement the library sends while it
searches and routes (text, multi-vector and table corpora; exact and index scans; filters; hybrid search) is one
that Citus distributed tables and read replicas accept — no session-level SET (index settings are
transaction-local), every LIMIT a literal, every query vector cast explicitly to ``vector(n)``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlalchemy as sa
from conftest import DATA

from universalrag.pipeline import UniversalRAG

_VECTOR_VALUE = re.compile(r"^\[-?[0-9.eE+-]+(,-?[0-9.eE+-]+)+\]$")
_SESSION_SET = re.compile(r"^\s*(SET|RESET)\s+(?!LOCAL\b)(?!TRANSACTION\b)", re.IGNORECASE)
_SET_CONFIG = re.compile(r"set_config\(([^()]*)\)", re.IGNORECASE)
_LIMIT = re.compile(r"\bLIMIT\s+([^\s)]+)", re.IGNORECASE)
_OFFSET = re.compile(r"\bOFFSET\b", re.IGNORECASE)

CHECKLIST = (
    "no session-level SET or RESET: index settings are set_config(name, value, true) or SET LOCAL",
    "every LIMIT is an integer literal (no bound parameter, no OFFSET)",
    "every query vector is a bound parameter cast to vector(n) (CAST(%(p)s AS VECTOR(n)))",
)


def violations(statements: list[tuple[str, dict[str, object]]]) -> list[str]:
    """The checklist items each statement breaks (empty: every statement is fit for Citus and replicas)."""
    found = []
    for sql, params in statements:
        if _SESSION_SET.match(sql):
            found.append(f"session-level SET: {sql[:80]}")
        for args in _SET_CONFIG.findall(sql):
            if not args.replace(" ", "").lower().endswith(",true"):
                found.append(f"set_config without is_local=true: {sql[:80]}")
        for value in _LIMIT.findall(sql):
            if not value.isdigit():
                found.append(f"LIMIT {value} is not a literal: {sql[:80]}")
        if _OFFSET.search(sql):
            found.append(f"OFFSET: {sql[:80]}")
        for name, value in (params or {}).items():
            if isinstance(value, str) and _VECTOR_VALUE.match(value):
                uses = sql.count(f"%({name})s")
                cast = len(re.findall(rf"CAST\(%\({re.escape(name)}\)s AS VECTOR\(\d+\)\)", sql))
                if uses != cast:
                    found.append(f"vector parameter {name} used without a vector(n) cast: {sql[:80]}")
    return found


def test_the_checks_catch_what_citus_refuses() -> None:
    bad = [
        ("SET hnsw.ef_search = 100", {}),
        ("SELECT set_config('a', 'b', false)", {}),
        ("SELECT 1 FROM t ORDER BY x LIMIT %(limit)s", {"limit": 5}),
        ("SELECT e <=> %(q)s FROM t", {"q": "[0.1,0.2,0.3]"}),
    ]
    assert len(violations(bad)) == 4
    good = [
        ("SET LOCAL hnsw.ef_search = 100", {}),
        ("SELECT set_config(%(a)s, %(b)s, true)", {}),
        ("SELECT e <=> CAST(%(q)s AS VECTOR(3)) FROM t ORDER BY 1 LIMIT 5", {"q": "[0.1,0.2,0.3]"}),
    ]
    assert violations(good) == []


@pytest.mark.parametrize("index", [True, False], ids=["index-scan", "exact-scan"])
def test_search_and_routing_sql_follows_the_checklist(settings, minilm, tmp_path: Path, index: bool) -> None:  # type: ignore[no-untyped-def]
    rag = UniversalRAG(
        settings=settings.with_(exact_scan_rows=0 if index else 100000),
        embedder=minilm,
        generator=None,
        visual_encoder=None,
        log_decisions=False,
    )
    try:
        assert rag.ingest(
            [
                DATA / "corpus" / "apollo_11.txt",
                DATA / "corpus" / "sourdough_baking.md",
                DATA / "tables" / "nba_2023.csv",
            ]
        ).ok
        statements: list[tuple[str, dict[str, object]]] = []
        sa.event.listen(
            rag.store.engine,
            "before_cursor_execute",
            lambda _c, _cur, sql, params, *_a: statements.append((sql, dict(params or {}))),
        )
        rag.route("Which team scored the most points in the 2023 season?")
        rag.retrieve("When did Apollo 11 land on the Moon?", routes=["paragraph", "document", "table"], k=3)
        rag.retrieve("sourdough starter", routes=["paragraph"], k=2, filter={"format": {"$in": ["md", "txt"]}})
        hybrid = UniversalRAG(
            settings=rag.settings,
            store=rag.store,
            embedder=minilm,
            generator=None,
            visual_encoder=None,
            hybrid=True,
            log_decisions=False,
        )
        hybrid.retrieve("Apollo 11 landing", routes=["paragraph", "table"], k=2)
        hybrid.close()  # its worker threads (the store is shared and closed below)
        rag.store.get_units("paragraph", [h.id for h in rag.retrieve("Moon", routes=["paragraph"], k=2)])
        rag.store.nonempty()
        searches = [s for s, _ in statements if "<=>" in s]
        assert searches and any("_parts" in s for s in searches)  # multi-vector corpora were searched too
        # index searches carry their settings (transaction-local set_config); exact scans need none
        assert any("set_config" in s for s, _ in statements) == index
        assert violations(statements) == []
    finally:
        rag.close()


def _partition_recipe(schema: str) -> str:
    from conftest import REPO

    text = (REPO / "docs" / "scaling.md").read_text(encoding="utf-8")
    section = text.split("## Partitioning one large corpus", 1)[1]
    block = re.search(r"```sql\n(.*?)```", section, re.S)
    assert block is not None
    return block[1].replace("universalrag.", f"{schema}.")


def test_the_partitioning_recipe_of_the_docs_keeps_search_results(settings, minilm) -> None:  # type: ignore[no-untyped-def]
    rag = UniversalRAG(settings=settings, embedder=minilm, generator=None, visual_encoder=None, log_decisions=False)
    try:
        assert rag.ingest([DATA / "corpus" / "apollo_11.txt", DATA / "corpus" / "sourdough_baking.md"]).ok
        question = "How often should I feed a sourdough starter?"
        before = [(h.id, round(h.score, 5)) for h in rag.retrieve(question, routes=["paragraph"], k=5)]
        count = rag.store.counts()["paragraph"]
        with rag.store.transaction() as conn:
            conn.connection.driver_connection.execute(_partition_recipe(settings.schema))
        with rag.store.transaction() as conn:
            kind = conn.execute(
                sa.text("SELECT relkind FROM pg_class WHERE oid = CAST(:t AS regclass)"),
                {"t": f"{settings.schema}.corpus_paragraph"},
            ).scalar_one()
        assert kind == "p"  # partitioned
        assert rag.store.counts()["paragraph"] == count
        for exact in (True, False):
            hits = rag.store.search("paragraph", minilm.embed_query(question), k=5, exact_scan=exact)
            assert [(h.id, round(h.score, 5)) for h in hits] == before
        # Re-ingesting a changed file still replaces its units through the partitioned table.
        assert rag.store.delete_source(
            str(next(iter(s["uri"] for s in rag.store.sources() if s["uri"].endswith("sourdough_baking.md"))))
        )
        assert rag.store.counts()["paragraph"] < count
    finally:
        rag.close()
