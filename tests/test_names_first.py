"""A name the user typed ("CMAKE_BUILD_TYPE", "CMakeLists") puts the hits that hold it before those that do not.

Found on 80 pages of CMake's help ingested as a user would: "CMAKE_BUILD_TYPE" returned five table rows that only
resembled the name, and "how to add a subdirectory with its own CMakeLists" put first the one page that says
"CMakeLists" alone, because the full-text parser reads "CMakeLists.txt" as one token and the other 31 holders were
not counted (the units found by a name come first only when no more than ``k`` hold it). Real PostgreSQL, real MiniLM.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.schemas import ingested_store

from universalrag.exact_terms import exact_terms, holds_name
from universalrag.fusion import TABLE_OFFSET, similarity
from universalrag.store import Store
from universalrag.types import Granularity, Hit, Modality

#: Pages that say CMAKE_BUILD_TYPE in passing, among other things.
NAMING = {
    "install": "The install command copies targets at install time; with CONFIGURATIONS it installs only for the "
    "configurations listed, which for single-configuration generators follow CMAKE_BUILD_TYPE.",
    "presets": "A configure preset may set cache variables such as CMAKE_BUILD_TYPE and CMAKE_INSTALL_PREFIX, and "
    "may inherit them from another preset named in its inherits field.",
    "try_compile": "The try_compile command builds a test project; the configuration it uses is taken from "
    "CMAKE_TRY_COMPILE_CONFIGURATION, not from CMAKE_BUILD_TYPE of the calling project.",
    "ctest": "When ctest runs the tests of a multi-configuration build it needs -C; in a project generated for one "
    "configuration the value of CMAKE_BUILD_TYPE at generation time applies.",
    "packaging": "CPack packages what the install rules name. Packaging a debug tree is possible, although "
    "releases are usually made with CMAKE_BUILD_TYPE set to Release.",
}
#: Pages about build types that never spell the variable.
CLOSE = {
    "build-type": "The CMake build type selects compiler flags: Debug, Release, RelWithDebInfo or MinSizeRel, "
    "chosen once for a single-configuration generator.",
    "build-config": "A build configuration such as Debug or Release decides optimisation and debug information; "
    "multi-configuration generators hold several build configurations at once.",
}
#: Pages that say CMakeLists.txt (one token for the full-text parser), and one that says CMakeLists alone.
LISTS = {
    f"lists-{i}": f"Every source directory added with add_subdirectory holds a CMakeLists.txt file; case {i}."
    for i in range(4)
} | {"lists-bare": "Each directory of the tree has its own CMakeLists with its commands."}


@pytest.fixture(scope="module")
def build_docs(tmp_path_factory, database_url: str, minilm) -> Iterator[Store]:  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("cmake")
    for name, text in (NAMING | CLOSE | LISTS).items():
        (folder / f"{name}.md").write_text(f"# {name}\n\n{text}\n", encoding="utf-8")
    with ingested_store(database_url, minilm, [folder]) as store:
        yield store


def _holds(hit: Hit, name: str) -> bool:
    return holds_name(hit.content, (name,))


def test_hits_holding_a_common_name_come_before_the_others(build_docs, minilm) -> None:  # type: ignore[no-untyped-def]
    """Five passages hold the name, more than ``k``: none is forced in, but among the hits those holding it come
    first (channel ``named``), each group in its order of similarity."""
    query, k = "CMAKE_BUILD_TYPE", 4
    vector = minilm.embed_query(query)
    plain = build_docs.search("paragraph", vector, k=k)
    hits = build_docs.search("paragraph", vector, k=k, exact_terms=exact_terms(query))
    flags = [_holds(h, query) for h in plain]
    assert flags != sorted(flags, reverse=True)  # the encoder puts a page that never says it above one that does
    assert {h.id for h in hits} == {h.id for h in plain}  # the same hits, with the same scores ...
    assert [_holds(h, query) for h in hits] == sorted(flags, reverse=True)  # ... holders first
    assert all(bool(h.channel_scores.get("named")) == _holds(h, query) for h in hits)
    assert not any(h.channel_scores.get("exact") for h in hits)  # more than k hold it: none is forced in
    for group in (True, False):
        scores = [h.score for h in hits if _holds(h, query) is group]
        assert scores == sorted(scores, reverse=True)


def test_a_name_inside_a_longer_token_counts_its_holders(build_docs, minilm) -> None:  # type: ignore[no-untyped-def]
    """ "CMakeLists" is held by five passages, four of them as "CMakeLists.txt": more than ``k``, so the one saying it
    alone is not forced first (it was: the full-text index found only that one)."""
    query = "how to add a subdirectory with its own CMakeLists"
    hits = build_docs.search("paragraph", minilm.embed_query(query), k=3, exact_terms=exact_terms(query))
    assert hits and not any(h.channel_scores.get("exact") for h in hits)
    assert all(h.channel_scores.get("named") for h in hits)  # every hit holds it, as a word of its own or not
    few = build_docs.search("paragraph", minilm.embed_query(query), k=5, exact_terms=exact_terms(query))
    assert sorted(Path(h.uri).stem for h in few if h.channel_scores.get("exact")) == sorted(LISTS)  # all five


@pytest.mark.parametrize(
    ("text", "name", "holds"),
    [
        ("set CMAKE_BUILD_TYPE=Release", "cmake_build_type", True),  # case-insensitive
        ("MY_CMAKE_BUILD_TYPE", "CMAKE_BUILD_TYPE", False),  # "_" is part of a word, as for Postgres's \m
        ("edit CMakeLists.txt", "CMakeLists", True),
        ("the 1952\u201353 season", "1952-53", True),  # a typed hyphen matches any dash
        ("E03821", "E0382", False),
        ("call dns.lookup() first", "dns.lookup", True),
        ("dnsxlookup", "dns.lookup", False),  # the dot is literal
    ],
)
def test_holds_name_matches_as_the_database_pattern_does(text: str, name: str, holds: bool) -> None:
    assert holds_name(text, (name,)) is holds


def _hit(
    corpus: str,
    score: float,
    granularity: Granularity,
    named: bool = False,
    *,
    uri: str | None = None,
    content: str = "",
) -> Hit:
    return Hit(
        corpus,
        f"{corpus}-{score}",
        score,
        content or f"{corpus} {score}",
        uri,
        {},
        None,
        None,
        None,
        None,
        Modality.TEXT,
        granularity,
        (),
        {"named": 1.0} if named else {},
    )


def test_merging_puts_named_hits_before_lifted_tables() -> None:
    """Merged by similarity, a passage holding the typed name comes before a table row that does not, whatever the
    table's lift; the others keep the order of their (lifted) similarity."""
    table = [_hit("table", 0.74, Granularity.TABLE), _hit("table", 0.62, Granularity.TABLE)]
    text = [_hit("paragraph", 0.72, Granularity.PARAGRAPH, named=True), _hit("paragraph", 0.70, Granularity.PARAGRAPH)]
    merged = [h.id for h in similarity([table, text])]
    assert merged == ["paragraph-0.72", "table-0.74", "paragraph-0.7", "table-0.62"]
    assert 0.62 + TABLE_OFFSET < 0.70 < 0.74 + TABLE_OFFSET  # (the others keep their lifted order)


def test_a_document_holding_the_name_goes_by_similarity_when_its_passage_holds_it() -> None:
    """Found on a library's PDF manual: "is libtasn1 thread safe" put the whole manual first (it holds the product's
    name, like every page of it) above the passage on thread safety; 13 of 18 first hits were such documents. Then a
    user's trial found the product's short README (its passages not among the hits) first for five of six questions
    typing the name. Once a passage holding the name is among the hits, documents go by their similarity; with no
    such passage, a document holding the name keeps its place among the hits holding it."""
    manual, readme = "file:///docs/libtasn1.pdf", "file:///docs/README.md"
    documents = [
        _hit("document", 0.43, Granularity.DOCUMENT, named=True, uri=manual),
        _hit("document", 0.41, Granularity.DOCUMENT, named=True, uri=readme),
    ]
    passages = [
        _hit("paragraph", 0.66, Granularity.PARAGRAPH, uri=manual),
        _hit("paragraph", 0.52, Granularity.PARAGRAPH, named=True, uri=manual),
    ]
    merged = [h.id for h in similarity([documents, passages])]
    assert merged == ["paragraph-0.52", "paragraph-0.66", "document-0.43", "document-0.41"]
    unnamed = [_hit("paragraph", 0.66, Granularity.PARAGRAPH, uri=manual)]
    assert [h.id for h in similarity([documents, unnamed])] == ["document-0.43", "document-0.41", "paragraph-0.66"]


def test_merging_keeps_one_hit_of_each_text(build_docs, minilm) -> None:  # type: ignore[no-untyped-def]
    """A page that is one passage is a document and a paragraph with the same text: found on libffi's manual, the
    two filled two of five places with one answer. Merged, the text comes once: as the passage, in its own place
    (the unit a caller's gold or citation names; keeping the document lost three Python reference questions their
    answering passage in the routing benchmark)."""
    from universalrag.pipeline import UniversalRAG

    rag = UniversalRAG(store=build_docs, embedder=minilm, generator=None)
    query = "which compiler flags does the build type select"
    both = rag.retrieve(query, k=4, routes=["document", "paragraph"])
    texts = [" ".join(h.content.split()) for h in both]
    assert len(texts) == len(set(texts)) == 4
    documents, passages = (
        {" ".join(h.content.split()) for h in rag.retrieve(query, k=4, routes=[c])} for c in ("document", "paragraph")
    )
    assert documents & passages  # each corpus alone holds the same texts: the merge had repeats to drop
    assert all(h.corpus == "paragraph" for h, text in zip(both, texts, strict=True) if text in documents & passages)
    assert [h.score for h in both] == sorted((h.score for h in both), reverse=True)  # the merge's order stands


def test_a_document_as_similar_as_its_own_passage_comes_after_it() -> None:
    """A document's similarity is its best chunk's, mostly its best passage again: on pip's docs the same file's
    document beat the answering passage by 0.001 for most questions whose passage came second. Within
    ``PASSAGE_TIE`` the passage comes first; a document clearly more similar, or another file's, keeps its place."""
    from universalrag.fusion import PASSAGE_TIE

    guide, other = "file:///docs/user_guide.md", "file:///docs/other.md"
    documents = [
        _hit("document", 0.701, Granularity.DOCUMENT, uri=guide),
        _hit("document", 0.69, Granularity.DOCUMENT, uri=other),
    ]
    passages = [
        _hit("paragraph", 0.70, Granularity.PARAGRAPH, uri=guide),
        _hit("paragraph", 0.60, Granularity.PARAGRAPH, uri=other),
    ]
    assert [h.id for h in similarity([documents, passages])] == [
        "paragraph-0.7",
        "document-0.701",
        "document-0.69",
        "paragraph-0.6",
    ]
    clearly = [_hit("document", 0.70 + 2 * PASSAGE_TIE, Granularity.DOCUMENT, uri=guide)]
    assert similarity([clearly, passages])[0].corpus == "document"


def test_a_passage_holds_the_name_its_documents_title_holds(tmp_path: Path, database_url: str, minilm) -> None:  # type: ignore[no-untyped-def]
    """bzip2's manual names the program in its title and in most passages; the one listing its exit values does
    not. Found on the real manual: "what return values does bzip2 exit with" put a passage of similarity 0.71 that
    says "bzip2" before the answer at 0.78 that does not. A passage's title is part of what it holds (it is
    embedded with it), so the manual's passages are ranked by similarity among themselves."""
    filler = (
        "It reads each input file in blocks of up to nine hundred kilobytes, sorts every block with the "
        "Burrows-Wheeler transform, and codes the result with Huffman tables; a larger block compresses "
        "better and needs more memory, both when compressing and when decompressing the file again later."
    )
    (tmp_path / "manual.md").write_text(
        "# bzip2 and libbzip2\n\n## How it compresses\n\n"
        f"bzip2 compresses files with a block-sorting compressor. {filler} {filler}\n\n"
        "## Memory\n\n"
        f"bzip2 allocates its working memory when it starts on a file. {filler} {filler}\n\n"
        "## Recovery\n\n"
        f"bzip2recover, shipped with bzip2, writes each block of a damaged file to a file of its own. {filler}\n\n"
        "## Exit values\n\n"
        "The program exits with status 0 for a normal exit, 1 for environmental problems such as a file not "
        "found or an invalid flag, 2 to say that a compressed file was corrupt, and 3 for an internal "
        "consistency error, a bug which should be reported.\n",
        encoding="utf-8",
    )
    query = "what exit values does bzip2 return"
    with ingested_store(database_url, minilm, [tmp_path]) as store:
        vector = minilm.embed_query(query)
        plain = store.search("paragraph", vector, k=2)
        hits = store.search("paragraph", vector, k=2, exact_terms=exact_terms(query))
    assert len(plain) == 2 and "Exit values" in plain[0].content and not _holds(plain[0], "bzip2")
    assert _holds(plain[1], "bzip2")  # the passage that says the name is the less similar one (one of three: more
    # than k hold it, so none is forced first)
    assert [h.id for h in hits] == [h.id for h in plain]  # both hold the title's name: similarity decides
    assert all(h.channel_scores.get("named") for h in hits)


@pytest.mark.parametrize("names", [("CMAKE_BUILD_TYPE",), ("CMakeLists", "install"), (".txt", "CMakeLists")])
def test_a_names_statement_is_compiled_once_and_finds_what_sqlalchemy_finds(  # type: ignore[no-untyped-def]
    build_docs, names
) -> None:
    """A question typing a year or an identifier asks every probed corpus which units hold it: built and compiled by
    SQLAlchemy per query that cost ~1 ms of the GIL a corpus. The names are parameters of one statement compiled
    per shape (how many names, how many spellings each: a dotfile is looked up three ways), sent straight to the
    driver, and it finds the units SQLAlchemy's own statement finds."""
    from universalrag.store import queries
    from universalrag.store.batch import Raw, run_steps
    from universalrag.store.corpus_search import SearchRequest, _Sql, _units_holding
    from universalrag.store.engine import has_binary_vectors

    tables = build_docs.tables.corpus(build_docs.corpus("paragraph"))
    request = SearchRequest(vector=[1.0] * 384, k=10, visual_weight=0.0)
    with build_docs.engine.connect() as conn:
        sql = _Sql(conn.dialect, has_binary_vectors(conn))
        step = _units_holding(sql, tables, request, names, limit=20)
        other = _units_holding(sql, tables, request, tuple(n.upper() + "x" for n in names), limit=20)
        assert isinstance(step, Raw) and step.sql == other.sql  # the names are not written into the text

        def one() -> object:
            return (yield step)

        fast = run_steps(conn, [one()])[0]
        slow = conn.execute(queries.units_holding(tables, names, limit=20)).mappings().all()
    assert fast and sorted(r["id"] for r in fast) == sorted(str(r["id"]) for r in slow)
    assert all(any(holds_name(r["content"], (n,)) for n in names) for r in fast)
