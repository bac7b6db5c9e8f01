"""Rows that hold the identifier, address or number the user typed come first among a table hit's matched rows.

Asked of a 60-row server inventory (a CSV, ingested as a user would, real MiniLM, real PostgreSQL) "who owns
the box at 10.0.1.5": the right table came first, but the row shown to the model was another host's (10.0.9.111),
because the encoder puts every address near every other. The model would have answered with the wrong owner.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from support.schemas import ingested_store
from support.shared_data import WIKITABLES, WIKITABLES_PAGES, skip_unless

from universalrag.exact_terms import MAX_TERMS, exact_terms, identifiers, term_pattern
from universalrag.pipeline import UniversalRAG
from universalrag.store import Store

TEAMS = ("payments", "search", "platform", "data-eng", "mobile", "security")
KINDS = ("web", "db", "cache", "build", "queue", "ml")


# -- which terms a query holds ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("who owns the box at 10.0.1.5", ("10.0.1.5",)),
        ("when was build-04 bought?", ("build-04",)),
        ("ml-06 cores", ("ml-06",)),
        ("what is exact_scan_max_rows", ("exact_scan_max_rows",)),
        ("previous to 1977 how many greek leagues were champion?", ("1977",)),
        ("servers in sgp1", ("sgp1",)),
        ("what is the 1,500 euros budget for", ("1,500",)),  # thousands separators stay in the number
        ('Show me "Jammy Jellyfish" release', ("Jammy Jellyfish",)),
        ("PGVectorStore add_texts", ("PGVectorStore", "add_texts")),
        ("how many moons does Saturn have", ()),  # words alone: the encoder's job
        ("the 5 best", ()),  # a lone digit is too common to count
        ("DB-02 or db-02", ("DB-02",)),  # no repeats, case-insensitive
        ("what does --no-deps do", ("--no-deps",)),  # a long option keeps its dashes
        ("where is .netrc read", (".netrc",)),  # a dotfile keeps its dot
        ("how big is ~/.cache/pip", (".cache/pip",)),  # a path from the dot on (how the full-text parser splits it)
        ("__NOGLOBS__", ("__NOGLOBS__",)),
        ("what is __init__.py for", ("__init__.py",)),
        ("use the -v flag. Then stop", ()),  # a short option and a sentence's end are not terms
    ],
)
def test_exact_terms(query: str, terms: tuple[str, ...]) -> None:
    assert exact_terms(query) == terms


def test_exact_terms_are_capped() -> None:
    assert len(exact_terms("a1 b2 c3 d4 e5 f6")) == MAX_TERMS == 4


# -- what a pattern matches, in PostgreSQL ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("term", "text", "matches"),
    [
        ("10.0.1.5", "ip: 10.0.1.5 | purchased", True),
        ("10.0.1.5", "ip: 10.0.1.50 | purchased", False),  # a whole word only
        ("10.0.1.5", "ip: 10x0x1x5", False),  # dots are literal
        ("build-04", "hostname: BUILD-04 |", True),  # case-insensitive
        ("build-04", "hostname: build-045 |", False),
        ("1952-53", "Season: 1952\u201353 | Coach", True),  # a typed hyphen matches the page's en dash
        ("exact_scan_max_rows", "set `exact_scan_max_rows` higher", True),
        ("1,500", "a budget of 1,500 euros", True),
        ("1,500", "a budget of 21,500 euros", False),
        ("a(b)*c", "the a(b)*c case", True),  # regular-expression characters are escaped
        ("O'Brien 2", "named O'Brien 2", True),
        ("--no-deps", "run pip install --no-deps x", True),
        ("--no-deps", "run pip install --no-depsx", False),
        (".netrc", "credentials in ~/.netrc", True),
    ],
)
def test_term_pattern_in_postgres(database_url: str, term: str, text: str, matches: bool) -> None:
    from universalrag.store.engine import make_engine

    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            got = conn.execute(
                sa.text("SELECT CAST(:text AS text) ~* CAST(:pattern AS text)"),
                {"text": text, "pattern": term_pattern(term)},
            ).scalar_one()
    finally:
        engine.dispose()
    assert got is matches, term_pattern(term)


# -- the rows a search returns ---------------------------------------------------------------------------------------
def _write_inventory(path: Path) -> list[dict[str, str]]:
    """60 hosts; addresses, names and dates drawn from a fixed pattern (every address distinct)."""
    rows = []
    for i in range(60):
        rows.append(
            {
                "hostname": f"{KINDS[i % 6]}-{i // 6 + 1:02d}",
                "datacenter": ("fra1", "ams2", "nyc3")[i % 3],
                "os": ("Debian 12", "Ubuntu 24.04", "Rocky Linux 9")[i * 7 % 3],
                "ram_gb": str(16 << (i % 4)),
                "owner_team": TEAMS[i * 5 % 6],
                "ip": f"10.0.{i % 9 + 1}.{(i * 37) % 240 + 2}",
                "purchased": f"20{18 + i % 8}-{i % 12 + 1:02d}-{i % 27 + 1:02d}",
            }
        )
    rows.append({**rows[-1], "hostname": "spare-01", "ip": rows[10]["ip"] + "0"})  # 10.0.x.y0 beside 10.0.x.y
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return rows


@pytest.fixture(scope="module")
def inventory(tmp_path_factory, database_url: str, minilm) -> Iterator[tuple[Store, list[dict[str, str]]]]:  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("inventory")
    rows = _write_inventory(folder / "servers.csv")
    (folder / "seasons.csv").write_text(
        "Season,Coach,Finish\n"
        + "".join(f"{y}\u2013{(y + 1) % 100:02d},Coach {y},{y % 7 + 1}\n" for y in range(1940, 1980)),
        encoding="utf-8",
    )
    with ingested_store(database_url, minilm, [folder]) as store:
        assert len(store.sources()) == 2
        yield store, rows


def _first_row(hit) -> str:  # type: ignore[no-untyped-def]
    assert hit.matched_parts, hit
    return hit.matched_parts[0][1]


def _table(hits, name: str):  # type: ignore[no-untyped-def]
    return next(h for h in hits if Path(h.uri).name == name)


@pytest.mark.parametrize("index", [10, 23, 47])
def test_the_row_holding_the_typed_address_comes_first(inventory, minilm, index: int) -> None:  # type: ignore[no-untyped-def]
    store, rows = inventory
    row = rows[index]
    query = f"who owns the box at {row['ip']}"
    hits = store.search("table", minilm.embed_query(query), k=2, exact_terms=exact_terms(query))
    first = _first_row(_table(hits, "servers.csv"))
    assert f"ip: {row['ip']} |" in first and row["owner_team"] in first, first  # not spare-01's 10.0.x.y0


@pytest.mark.parametrize("query", ["when was {host} bought", "{host} owner team", "RAM of {host}?"])
def test_the_row_of_the_named_host_comes_first(inventory, minilm, query: str) -> None:  # type: ignore[no-untyped-def]
    store, rows = inventory
    for row in (rows[3], rows[34], rows[59]):
        text = query.format(host=row["hostname"])
        hits = store.search("table", minilm.embed_query(text), k=2, exact_terms=exact_terms(text))
        assert f"hostname: {row['hostname']} |" in _first_row(_table(hits, "servers.csv")), text


def test_scores_and_order_stay_those_of_similarity(inventory, minilm) -> None:  # type: ignore[no-untyped-def]
    store, rows = inventory
    query = f"who owns the box at {rows[23]['ip']}"
    vector = minilm.embed_query(query)
    plain = store.search("table", vector, k=2)
    exact = store.search("table", vector, k=2, exact_terms=exact_terms(query))
    assert [(h.id, h.score) for h in exact] == [(h.id, h.score) for h in plain]
    for hit in exact:  # every matched part keeps its own similarity, and the best one is still reported
        assert max(s for _, _, s in hit.matched_parts) == pytest.approx(hit.score, abs=1e-6)


def test_a_season_typed_with_a_hyphen_finds_the_en_dash_row(inventory, minilm) -> None:  # type: ignore[no-untyped-def]
    store, _ = inventory
    query = "who coached in 1952-53?"
    hits = store.search("table", minilm.embed_query(query), k=2, exact_terms=exact_terms(query))
    assert _first_row(_table(hits, "seasons.csv")).startswith("Season: 1952\u201353 |")


def test_the_pipeline_passes_the_terms(inventory, minilm) -> None:  # type: ignore[no-untyped-def]
    """Through :meth:`UniversalRAG.search` (what the adapters call): the plan's terms reach the store."""
    store, rows = inventory
    rag = UniversalRAG(store=store, embedder=minilm, generator=None, visual_encoder=None)
    row = rows[47]
    _, hits = rag.search(f"which team owns {row['ip']}?", k=2, routes=["table"])
    assert f"ip: {row['ip']} |" in _first_row(_table(hits, "servers.csv"))


# -- names the user typed: the units holding them come first --------------------------------------------------------
@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("what does error E0382 mean", ("E0382",)),
        ("default value of max_concurrent_requests", ("max_concurrent_requests",)),
        ("when was dns.lookup added", ("dns.lookup",)),
        ("servers in sgp1", ("sgp1",)),
        ("how do I use PGVectorStore", ("PGVectorStore",)),
        ('Show me "Jammy Jellyfish" release', ("Jammy Jellyfish",)),
        ("previous to 1977 how many greek leagues were champion?", ("1977",)),  # the search ignores it if many hold it
        ("what runs on port 5432", ("5432",)),
        ("which country has numeric code 533", ("533",)),
        ("how many tickets did 1,500 people buy", ("1,500",)),
        ("who scored 24 points, 2.5 a game", ()),  # short numbers and decimals: too many rows hold them
        ("who finished 2nd in the 1952-53 season", ()),  # an ordinal, a season
        ("who owns the box at 10.0.1.5", ()),  # an address: the table's rows are told apart by their parts instead
        ("how many U.S. states", ()),  # an abbreviation
        ("which team owns db-02?", ("db-02",)),
        ("pip install --user", ("--user",)),
        ("is ~/.netrc read", (".netrc",)),
        ("how do I recover data from a damaged .bz2 file", ()),  # an extension: a kind of file, not a name
        ("where do the .yaml settings go", ()),
        ("what belongs in .gitignore", (".gitignore",)),
        ("where is ~/.cache/pip", (".cache/pip",)),
        ("__NOMAGIC__ meaning", ("__NOMAGIC__",)),
    ],
)
def test_identifiers(query: str, names: tuple[str, ...]) -> None:
    assert identifiers(exact_terms(query)) == names


ERRORS = {  # error pages as a compiler's manual has them, one per code (our own wording)
    "E0106": "A reference in a type or a function signature lacks the lifetime it needs.",
    "E0119": "Two implementations of one trait overlap for the same type.",
    "E0204": "A type was marked Copy although one of its fields cannot be copied.",
    "E0255": "An imported name clashes with an item defined in the same module.",
    "E0277": "A type was used where a trait bound requires an implementation it does not have.",
    "E0308": "The type of an expression is not the type its context expects.",
    "E0369": "A binary operator was applied to a type that does not support it.",
    "E0382": "A value was used after it had been moved into another binding.",
    "E0384": "A variable that is not mutable was assigned a second time.",
    "E0412": "A type name was used that is not defined in this scope.",
    "E0425": "A value or function name was used that is not defined in this scope.",
    "E0433": "A path names a crate or a module that was never declared.",
    "E0499": "A value was borrowed mutably twice while the first borrow was still alive.",
    "E0502": "A value was borrowed mutably while an immutable borrow of it was still alive.",
    "E0503": "A value was used while a mutable borrow of it was still alive.",
    "E0505": "A value was moved out while it was still borrowed.",
    "E0507": "A value was moved out of a place behind a shared reference.",
    "E0515": "A function returns a reference to a value that the function itself owns.",
    "E0597": "A borrowed value does not live as long as the reference to it needs.",
    "E0599": "A method was called that the type of the receiver does not have.",
}


@pytest.fixture(scope="module")
def error_pages(tmp_path_factory, database_url: str, minilm) -> Iterator[Store]:  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("errors")
    for code, text in ERRORS.items():
        (folder / f"{code}.md").write_text(
            f"# Error code {code}\n\n{text} The compiler stops at the first "
            "place where this happens and shows an example of the mistake beside "
            "the way to mend it.\n",
            encoding="utf-8",
        )
    (folder / "index.md").write_text(
        "# Error codes\n\nEvery error the compiler reports has a code such as " + ", ".join(ERRORS) + ".\n",
        encoding="utf-8",
    )
    with ingested_store(database_url, minilm, [folder]) as store:
        yield store


def test_the_units_holding_a_typed_code_come_first(error_pages, minilm) -> None:  # type: ignore[no-untyped-def]
    """An encoder places "what does error E0382 mean" near any error page: among the 134 pages of Rust's error index
    the page of E0382 came 41st. A code that few units hold points at them: here its page and the index."""
    found_plain = found = 0
    for code in ERRORS:
        query = f"what does error {code} mean"
        vector = minilm.embed_query(query)
        plain = [Path(h.uri).stem for h in error_pages.search("paragraph", vector, k=3)]
        hits = error_pages.search("paragraph", vector, k=3, exact_terms=exact_terms(query))
        held = [h for h in hits if h.channel_scores.get("exact") == 1.0]
        assert {Path(h.uri).stem for h in held} == {code, "index"} and hits[:2] == held, code  # both first
        assert held[0].score >= held[1].score  # nearest first among them
        found_plain += code in plain
        found += code in [Path(h.uri).stem for h in hits]
    assert found == len(ERRORS) > found_plain  # the encoder alone missed E0382, E0277, E0502 and more


def test_a_name_many_units_hold_does_not_reorder(error_pages, minilm) -> None:  # type: ignore[no-untyped-def]
    """Every error page holds "the compiler stops": a name held by more units than the search returns tells them apart
    no better than their meaning, and the order stays that of similarity."""
    query = '"the compiler stops" when a value was moved'
    vector = minilm.embed_query(query)
    assert [(h.id, h.score) for h in error_pages.search("paragraph", vector, k=3, exact_terms=exact_terms(query))] == [
        (h.id, h.score) for h in error_pages.search("paragraph", vector, k=3)
    ]


def test_a_filter_holds_for_the_units_holding_a_name(error_pages, minilm) -> None:  # type: ignore[no-untyped-def]
    """The units found by the name they hold pass the search's metadata filter like every other hit."""
    query = "what does error E0382 mean"
    hits = error_pages.search(
        "paragraph",
        minilm.embed_query(query),
        k=3,
        exact_terms=exact_terms(query),
        filter={"title": {"$ne": "Error code E0382"}},
    )
    assert hits and all(h.metadata["title"] != "Error code E0382" for h in hits)
    assert [Path(h.uri).stem for h in hits if h.channel_scores.get("exact")] == ["index"]


def test_a_unit_both_channels_found_keeps_its_lexical_rank(error_pages, minilm) -> None:  # type: ignore[no-untyped-def]
    """With hybrid search, a unit the full-text ranking found and that holds the typed name keeps its lexical score."""
    query = "error E0382"
    hits = error_pages.search(
        "paragraph", minilm.embed_query(query), k=3, exact_terms=exact_terms(query), lexical_text=query
    )
    held = [h for h in hits if h.channel_scores.get("exact")]
    assert held and all(h.channel_scores.get("lexical", 0.0) > 0.0 for h in held)


# -- names only a program's text spells: options, dotfiles, dunder names ---------------------------------------------
PROGRAM_PAGES = {  # a tool's manual, one topic a page (our own wording); each page names one such thing
    "auth": "Credentials for a private index are read from ~/.netrc when the URL carries none.",
    "deps": "Installing with --no-deps leaves a package's requirements out: only the package itself is installed.",
    "magic": "A type marked `__NOGLOBS__` is never matched by its file name, only by the bytes the file begins with.",
    "cache": "Downloaded files are kept in the cache directory and reused when the same version is asked for again.",
    "config": "Settings are read from the user's configuration file, then from the environment, then from the "
    "command line, each overriding the one before.",
    "proxy": "A proxy server is given as scheme, host and port; the environment's proxy variables are honoured.",
}


@pytest.fixture(scope="module")
def program_rag(tmp_path_factory, database_url: str, minilm) -> Iterator[UniversalRAG]:  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("manual")
    for name, text in PROGRAM_PAGES.items():
        (folder / f"{name}.md").write_text(f"# {name.title()}\n\n{text}\n", encoding="utf-8")
    with ingested_store(database_url, minilm, [folder]) as store:
        rag = UniversalRAG(store=store, embedder=minilm, generator=None)
        yield rag
        rag.close()


@pytest.mark.parametrize(
    ("query", "page"),
    [
        ("__NOGLOBS__", "magic"),
        ("what does --no-deps do", "deps"),
        (".netrc", "auth"),
        ("where does it look for ~/.netrc", "auth"),
    ],
)
def test_a_name_spelled_as_programs_spell_it_finds_its_page(program_rag: UniversalRAG, query: str, page: str) -> None:
    """Found on real manuals: `retrieve("__NOGLOBS__")` returned nothing (the query held no name, so the router's
    `none` stood), "--no-deps" lost its dashes and ".netrc" its dot, so no page was found by what it holds. A passage
    holding the name comes first, found through the full-text index whatever stands before a dotfile."""
    hits = program_rag.retrieve(query, k=3)
    assert hits and Path(hits[0].uri or "").stem == page
    assert hits[0].channel_scores.get("exact") == 1.0


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("msft closing price on 2003-09-19", ("2003-09-19",)),
        ("Microsoft stock opening price on September 10, 2003", ("2003-09-10",)),  # one term, not "10" and "2003"
        ("S&P 500 index level in June 1996", ("1996-06", "500")),
        ("close on 19-Sep-03", ("2003-09-19",)),
        ("what happened on 16 July 1969?", ("1969-07-16",)),
        ("sales on 9/3/2003", ("9/3/2003",)),  # the 9th of March or September 3rd: as typed
        ("may I ask about 2020", ("2020",)),
    ],
)
def test_a_date_the_question_spells_is_one_iso_term(query: str, terms: tuple[str, ...]) -> None:
    assert exact_terms(query) == terms


# -- years: an exact term within a hit, never a name that pulls units forward ----------------------------------------
YEAR_PAGES = (
    "1967 24 Hours of Le Mans.html",
    "List of Football League Cup finals.html",
    "Alabama Crimson Tide baseball.html",
    "Cunard Line.html",
    "Andalusia.html",
    "1976 NFL Draft.html",
)


@skip_unless(WIKITABLES_PAGES)
def test_a_year_in_the_question_keeps_the_page_it_is_about(tmp_path: Path, database_url: str, minilm) -> None:  # type: ignore[no-untyped-def]
    """Real Wikipedia pages ingested as a folder, five of six holding "1967": as a name like any other, the year put
    the four pages that only mention it (similarity 0.17-0.32) before the Le Mans page (0.71), which fell out of the
    top 5. A number pulls forward only the units about as near as the best."""
    import shutil
    from urllib.parse import unquote

    folder = tmp_path / "wiki"
    folder.mkdir()
    for page in YEAR_PAGES:
        shutil.copy(WIKITABLES / "pages" / page, folder / page)
    with ingested_store(database_url, minilm, [folder]) as store:
        rag = UniversalRAG(store=store, embedder=minilm, generator=None, visual_encoder=None, log_decisions=False)
        try:
            for question, page in (
                ("which team completed only two laps at Le Mans in 1967", YEAR_PAGES[0]),
                ("Which NFL team drafted Lee Roy Selmon in 1976", YEAR_PAGES[5]),
            ):
                _, hits = rag.search(question, k=5)
                pages = [unquote(h.uri or "").rsplit("/", 1)[-1] for h in hits]
                assert pages[0] == page, (question, pages)
                pulled = {unquote(h.uri or "").rsplit("/", 1)[-1] for h in hits if h.channel_scores.get("exact")}
                assert pulled <= {page}, (question, pulled)  # no page far from the question pulled forward
        finally:
            rag.close()
