"""Pure query builders: SQLAlchemy statements, no connection, no I/O.

Plain SQL that Citus and read replicas accept: the query vector is cast explicitly
(``CAST(:q AS VECTOR(384))``), LIMIT is a literal, and index settings are applied with ``set_config(...,
true)`` (the function form of ``SET LOCAL``) inside the query's transaction — by :func:`with_settings`, inside
the search statement itself, so a search through the index is one statement and one round trip. Lists of ids
are array parameters (``= ANY(CAST(:ids AS UUID[]))``), so a statement's text does not depend on how many ids
it carries and can be prepared once.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from pgvector.sqlalchemy import BIT, HALFVEC, Vector
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, REGCONFIG, TSQUERY, UUID, aggregate_order_by

from ..exact_terms import defining_pattern, term_pattern
from ..types import Vector as QueryVector
from .filters import FIELDS, Filter, compile_filter, mentions
from .partitions import pruning
from .schema import CorpusTables
from .vectors import legacy_vector_index, rerank_window

__all__ = [
    "best_parts_exact",
    "clean_gin_pending",
    "holding_parameters",
    "holding_shape",
    "index_key",
    "index_order",
    "lexical_words",
    "nearest_parts",
    "nearest_units",
    "part_texts",
    "parts_by_unit",
    "parts_with_terms",
    "query_vector",
    "search_lexical",
    "set_local",
    "set_locals",
    "text_id",
    "unit_columns",
    "units_by_id",
    "units_holding",
    "units_with_similarity",
    "with_settings",
    "word_units",
]


def query_vector(vector: QueryVector, dimension: int, *, name: str = "query_vector") -> sa.ColumnElement[Any]:
    """The query vector as a bound parameter with an explicit ``vector(n)`` cast."""
    return sa.cast(sa.bindparam(name, list(map(float, vector)), type_=Vector(dimension)), Vector(dimension))


def index_key(vectors: sa.ColumnElement[Any], dimension: int, kind: str | None = None) -> sa.ColumnElement[Any]:
    """What an HNSW index of ``kind`` (``CorpusSpec.vector_index``; ``None``: what a corpus of ``dimension`` made
    before migration 0018 has) over vectors of ``dimension`` is built on: the vectors themselves, the vectors cast to
    ``halfvec``, or their binary quantisation (``binary_quantize(v)::bit(n)``)."""
    kind = kind or legacy_vector_index(dimension)
    if kind == "halfvec":
        return sa.cast(vectors, HALFVEC(dimension))
    if kind == "binary":
        return sa.cast(sa.func.binary_quantize(vectors), BIT(dimension))
    return vectors


def index_order(
    column: sa.ColumnElement[Any], query: sa.ColumnElement[Any], dimension: int, kind: str | None = None
) -> sa.ColumnElement[Any]:
    """The distance of ``column`` to ``query`` (a :func:`query_vector`) that the column's HNSW index orders by: of
    the :func:`index_key` of both, the expression its index is built on — the cosine distance, or the Hamming distance
    of a binary index. A search orders by it and reports the full-precision distance beside it."""
    if (kind or legacy_vector_index(dimension)) == "binary":
        return index_key(column, dimension, kind).op("<~>", return_type=sa.Float)(index_key(query, dimension, kind))
    return index_key(column, dimension, kind).cosine_distance(index_key(query, dimension, kind))


def _by_distance(
    column: sa.ColumnElement[Any],
    query: sa.ColumnElement[Any],
    dimension: int,
    *,
    exact_scan: bool = False,
    kind: str | None = None,
) -> sa.ColumnElement[Any]:
    """The ordering key of a statement whose ``distance`` column is the full-precision distance: that column, unless
    the statement goes through an index on other values than the vectors themselves (:func:`index_order`)."""
    if (kind or legacy_vector_index(dimension)) in ("halfvec", "binary") and not exact_scan:
        return index_order(column, query, dimension, kind)
    return sa.literal_column("distance")


def _reranked(
    candidates: sa.Select[Any],
    column_name: str,
    query: sa.ColumnElement[Any],
    limit: int,
    columns: Callable[[sa.Subquery, sa.ColumnElement[Any]], Sequence[sa.ColumnElement[Any]]],
) -> sa.Select[Any]:
    """The ``limit`` rows of ``candidates`` (the window a binary index found, nearest by Hamming distance first) nearest
    to ``query`` by the full-precision cosine distance of their column ``column_name``; ``columns(window, distance)``
    says what the statement returns of the window, the labelled ``distance`` among them."""
    window = candidates.subquery("candidates")
    distance = window.c[column_name].cosine_distance(query)
    return sa.select(*columns(window, distance.label("distance"))).order_by(distance).limit(_limit(limit))


def set_local(name: str, value: str | int) -> sa.Select[Any]:
    """``SELECT set_config(name, value, true)``: a transaction-local setting (what ``SET LOCAL`` does)."""
    return sa.select(sa.func.set_config(sa.literal(name), sa.literal(str(value)), sa.true()))


def set_locals(values: Mapping[str, str | int]) -> sa.Select[Any]:
    """Several transaction-local settings in one statement (one round trip)."""
    return sa.select(
        *(
            sa.func.set_config(sa.literal(name), sa.literal(str(value)), sa.true()).label(f"s{i}")
            for i, (name, value) in enumerate(values.items())
        )
    )


def with_settings(stmt: sa.Select[Any], values: Mapping[str, str | int]) -> sa.Select[Any]:
    """``stmt`` applying ``values`` transaction-locally before it reads a row: the ``set_config`` calls are an
    uncorrelated sub-select in a condition that holds no column, which PostgreSQL evaluates once, as a one-time
    filter, before the scan below it starts (pgvector reads ``hnsw.*`` when the index scan begins). One statement
    instead of two; in autocommit mode the statement is its own transaction, so nothing outlives it. The settings'
    values are literals: the statement's text names them, so a prepared statement keeps them. ``set_config`` is
    parallel-unsafe, so a statement carrying it runs without parallel workers (an index scan uses none)."""
    calls = [sa.func.set_config(sa.literal(name), sa.literal(str(value)), sa.true()) for name, value in values.items()]
    joined: sa.ColumnElement[Any] = calls[0]
    for call in calls[1:]:
        joined = joined.op("||")(call)
    return stmt.where(sa.select(joined).scalar_subquery().is_not(None))


def _ids(name: str, ids: Sequence[str]) -> sa.ColumnElement[Any]:
    """A list of unit ids as one array parameter (``CAST(:name AS UUID[])``)."""
    return sa.cast(sa.bindparam(name, [str(i) for i in ids], type_=ARRAY(sa.Text)), ARRAY(UUID(as_uuid=False)))


def _limit(n: int) -> sa.ColumnElement[Any]:
    # Rendered as a literal (some distributed planners refuse a parameterised LIMIT); n is an int by contract.
    return sa.literal_column(str(int(n)))


def text_id(column: sa.ColumnElement[Any], name: str | None = None) -> sa.ColumnElement[Any]:
    """A UUID column as its text (``CAST(id AS TEXT) AS id``): the server writes the text it would send anyway,
    and the client, which wants strings, builds no ``uuid.UUID`` per value to turn it back into one."""
    return sa.cast(column, sa.Text).label(name or column.name)


def unit_columns(tables: CorpusTables, source: sa.FromClause | None = None) -> list[sa.ColumnElement[Any]]:
    """The columns a search returns for each unit (ids as text, :func:`text_id`), of the unit table or of ``source``
    (a subquery holding its columns)."""
    u = tables.units if source is None else source
    return [
        text_id(u.c.id),
        text_id(u.c.source_id),
        text_id(u.c.parent_id),
        u.c.content,
        u.c.uri,
        u.c.start_s,
        u.c.end_s,
        u.c.metadata,
    ]


def unit_filter(units: sa.Table, filter: Filter) -> sa.ColumnElement[bool]:
    """``filter`` over a unit's metadata, with its ``uri`` as one more key when the filter names it
    (:data:`~.filters.FIELDS`; the column wins over a metadata key of the same name)."""
    column: sa.ColumnElement[Any] = units.c.metadata
    if mentions(filter):
        column = sa.type_coerce(
            units.c.metadata.op("||")(
                sa.func.jsonb_build_object(*(x for f in sorted(FIELDS) for x in (sa.literal(f), units.c[f])))
            ),
            JSONB,
        )
    compiled = compile_filter(column, filter)  # checks the filter's size and shape first
    return sa.and_(*pruning(units, filter), compiled)


def nearest_units(
    tables: CorpusTables,
    vector: QueryVector,
    *,
    limit: int,
    filter: Filter | None = None,
    visual: bool = False,
    exact_scan: bool = False,
    rows: bool = False,
    held: int = 0,
) -> sa.Select[Any]:
    """Ids (``unit_id``) and cosine distances of the ``limit`` units nearest to ``vector`` in the text column
    (``embedding``) or, with ``visual``, the visual column; with ``rows``, every column a search returns too. A binary
    index's window of candidates is sized for a table of ``held`` vectors (:func:`~.vectors.rerank_window`).

    Through the column's HNSW index, or with ``exact_scan`` by an exact scan: the ordering key is ``distance + 0``, an
    expression the index cannot serve, so the planner scans and sorts (no ``enable_indexscan`` setting to flip, no
    extra round trip; plain SQL that Citus accepts)."""
    u = tables.units
    column, dimension = (u.c.visual, tables.spec.visual_dimension) if visual else (u.c.embedding, tables.spec.dimension)
    assert dimension, "nearest_units(visual=True) needs a corpus with a visual channel"
    query = query_vector(vector, dimension)
    kind = None if visual else tables.spec.vector_index
    if kind == "binary" and not exact_scan:  # a window by Hamming distance, ranked again by the stored vectors
        raw = [u.c.id, column, *((u.c[c.name] for c in unit_columns(tables)[1:]) if rows else ())]
        candidates = sa.select(*raw).where(column.is_not(None))
        if filter:
            candidates = candidates.where(unit_filter(u, filter))
        candidates = candidates.order_by(index_order(column, query, dimension, kind)).limit(
            _limit(rerank_window(limit, held))
        )
        return _reranked(
            candidates,
            column.name,
            query,
            limit,
            lambda window, distance: [
                text_id(window.c.id, "unit_id"),
                distance,
                *(unit_columns(tables, window) if rows else ()),
            ],
        )
    distance = column.cosine_distance(query)
    if exact_scan:
        distance = distance + sa.literal_column("0")
    stmt = sa.select(text_id(u.c.id, "unit_id"), distance.label("distance"), *(unit_columns(tables) if rows else ()))
    stmt = stmt.where(column.is_not(None))
    if filter:
        stmt = stmt.where(unit_filter(u, filter))
    return stmt.order_by(_by_distance(column, query, dimension, exact_scan=exact_scan, kind=kind)).limit(_limit(limit))


def nearest_parts(
    tables: CorpusTables, vector: QueryVector, *, limit: int, filter: Filter | None = None, held: int = 0
) -> sa.Select[Any]:
    """The ``limit`` nearest parts (chunks, rows) of a multi-vector corpus through the parts table's HNSW index
    (``unit_id`` as the UUID it is: :func:`parts_by_unit` groups them by unit); a binary index's window sized for a
    parts table of ``held`` vectors."""
    assert tables.parts is not None, "nearest_parts needs a multi-vector corpus"
    p, u = tables.parts, tables.units
    dimension, kind = tables.spec.dimension, tables.spec.vector_index
    query = query_vector(vector, dimension)
    if kind == "binary":  # a window by Hamming distance, ranked again by the stored vectors
        candidates = sa.select(p.c.unit_id, p.c.ord, p.c.embedding)
        if filter:
            candidates = candidates.join(u, u.c.id == p.c.unit_id).where(unit_filter(u, filter))
        candidates = candidates.order_by(index_order(p.c.embedding, query, dimension, kind)).limit(
            _limit(rerank_window(limit, held))
        )
        return _reranked(
            candidates, "embedding", query, limit, lambda window, distance: [window.c.unit_id, window.c.ord, distance]
        )
    stmt = sa.select(p.c.unit_id, p.c.ord, p.c.embedding.cosine_distance(query).label("distance"))
    if filter:
        stmt = stmt.join(u, u.c.id == p.c.unit_id).where(*pruning(p, filter), unit_filter(u, filter))
    return stmt.order_by(_by_distance(p.c.embedding, query, dimension, kind=kind)).limit(_limit(limit))


def parts_by_unit(window: sa.Select[Any], *, units: int, per_unit: int) -> sa.Select[Any]:
    """The rows of ``window`` (a :func:`nearest_parts` or :func:`best_parts_exact` statement, with its settings)
    grouped by unit on the server, the ``units`` units of the nearest parts first: ``(unit_id, ords, distances,
    window_rows)`` — a unit's first ``per_unit`` parts, nearest first, as two arrays, and how many rows the window
    held. A window of 160 parts reaches the client as 20 rows, not 160 to be turned into dicts and grouped in
    Python. Ties go by part number and unit id, so the order is the same at every run."""
    w = window.subquery("window")
    order = (w.c.distance, w.c.ord)
    ords = sa.func.array_agg(aggregate_order_by(w.c.ord, *order), type_=ARRAY(sa.Integer))
    distances = sa.func.array_agg(aggregate_order_by(w.c.distance, *order), type_=ARRAY(sa.Float))
    return (
        sa.select(
            text_id(w.c.unit_id),
            ords[1:per_unit].label("ords"),
            distances[1:per_unit].label("distances"),
            sa.func.sum(sa.func.count()).over().label("window_rows"),
        )
        .group_by(w.c.unit_id)
        .order_by(sa.func.min(w.c.distance), w.c.unit_id)
        .limit(_limit(units))
    )


def best_parts_exact(
    tables: CorpusTables,
    vector: QueryVector,
    *,
    per_unit: int,
    limit: int,
    filter: Filter | None = None,
    unit_ids: Sequence[str] | None = None,
    near_units: int = 0,
) -> sa.Select[Any]:
    """The ``per_unit`` nearest parts of every unit (an exact scan: every part's distance is computed), best
    first, at most ``limit`` rows; restricted to ``unit_ids`` when given, and then also to the ``near_units``
    units whose own vectors are nearest (a sub-select). Because no unit has more than ``per_unit`` rows,
    ``limit = per_unit · k`` rows always span ``k`` units when there are that many (``unit_id`` as the UUID it is:
    :func:`parts_by_unit` groups them by unit)."""
    assert tables.parts is not None, "best_parts_exact needs a multi-vector corpus"
    p, u = tables.parts, tables.units
    distance = p.c.embedding.cosine_distance(query_vector(vector, tables.spec.dimension))
    inner = sa.select(
        p.c.unit_id,
        p.c.ord,
        distance.label("distance"),
        sa.func.row_number().over(partition_by=p.c.unit_id, order_by=distance).label("rn"),
    )
    if filter:
        inner = inner.join(u, u.c.id == p.c.unit_id).where(*pruning(p, filter), unit_filter(u, filter))
    if unit_ids is not None:
        if near_units:  # a union of both sets, which the planner joins to the parts' primary key (an OR scans)
            near = (
                sa.select(u.c.id)
                .where(u.c.embedding.is_not(None))
                .order_by(
                    index_order(
                        u.c.embedding,
                        query_vector(vector, tables.spec.dimension),
                        tables.spec.dimension,
                        tables.spec.vector_index,
                    )
                )
                .limit(_limit(near_units))
            )
            given = sa.select(sa.func.unnest(_ids("unit_ids", unit_ids)).label("id"))
            inner = inner.where(p.c.unit_id.in_(sa.union(given, sa.select(near.subquery().c.id))))
        else:
            inner = inner.where(p.c.unit_id == sa.any_(_ids("unit_ids", unit_ids)))
    ranked = inner.subquery()
    return (
        sa.select(ranked.c.unit_id, ranked.c.ord, ranked.c.distance)
        .where(ranked.c.rn <= per_unit)
        .order_by(ranked.c.distance)
        .limit(_limit(limit))
    )


def parts_with_terms(
    tables: CorpusTables,
    vector: QueryVector,
    unit_ids: Sequence[str],
    patterns: Sequence[str],
    *,
    per_unit: int,
    defining: Sequence[str] = (),
) -> sa.Select[Any]:
    """The parts of ``unit_ids`` whose text matches at least one of ``patterns`` (PostgreSQL regular expressions,
    case-insensitive), at most ``per_unit`` a unit: ``(unit_id, ord, distance, matched)`` — ``matched`` ranks the
    patterns a part matches: the most patterns first, of as many those matching the earlier patterns (a quoted
    phrase or a date before a bare number: for "S&P 500 index level in June 1996" the row of June 1996 before a row
    holding "500"), then the nearest. The patterns are parameters ``term0``, ``term1``, ... (a statement's text
    depends only on how many there are)."""
    assert tables.parts is not None, "parts_with_terms needs a multi-vector corpus"
    p = tables.parts
    distance = p.c.embedding.cosine_distance(query_vector(vector, tables.spec.dimension))
    n = len(patterns)
    matched = functools.reduce(
        operator.add,
        [  # each match counts 2^n, and 2^(n-1-i) for being the i-th pattern
            sa.case(
                (p.c.content.op("~*")(sa.bindparam(f"term{i}", pattern, type_=sa.Text)), (1 << n) + (1 << (n - 1 - i))),
                else_=0,
            )
            for i, pattern in enumerate(patterns)
        ]
        + [  # a part that defines a term (a row whose cell is the value typed) before any that only holds it
            sa.case((p.c.content.op("~*")(sa.bindparam(f"def{i}", pattern, type_=sa.Text)), 1 << (2 * n + 2)), else_=0)
            for i, pattern in enumerate(defining)
        ],
    )
    inner = (
        sa.select(
            p.c.unit_id,
            p.c.ord,
            distance.label("distance"),
            matched.label("matched"),
            sa.func.row_number().over(partition_by=p.c.unit_id, order_by=(matched.desc(), distance)).label("rn"),
        )
        .where(p.c.unit_id == sa.any_(_ids("unit_ids", unit_ids)))
        .where(matched > 0)
    )
    ranked = inner.subquery()
    return sa.select(text_id(ranked.c.unit_id), ranked.c.ord, ranked.c.distance, ranked.c.matched).where(
        ranked.c.rn <= per_unit
    )


def part_texts(tables: CorpusTables, keys: Sequence[tuple[str, int]]) -> sa.Select[Any]:
    """``(unit_id, ord, content)`` of the parts with these keys (two array parameters, unnested together)."""
    assert tables.parts is not None, "part_texts needs a multi-vector corpus"
    p = tables.parts
    wanted = (
        sa.func.unnest(
            _ids("part_units", [k[0] for k in keys]),
            sa.cast(sa.bindparam("part_ords", [int(k[1]) for k in keys], type_=ARRAY(sa.Integer)), ARRAY(sa.Integer)),
        )
        .table_valued("unit_id", "ord")
        .render_derived()
    )
    return sa.select(text_id(p.c.unit_id), p.c.ord, p.c.content).join(
        wanted, sa.and_(p.c.unit_id == wanted.c.unit_id, p.c.ord == wanted.c.ord)
    )


def units_with_similarity(
    tables: CorpusTables,
    ids: Sequence[str],
    vector: QueryVector,
    visual_vector: QueryVector | None,
) -> sa.Select[Any]:
    """The units with these ids, with their text similarity (``text_sim``, of the unit's own vector) and, when
    ``visual_vector`` is given, their visual similarity (``visual_sim``); NULL where a unit has no vector."""
    u = tables.units
    columns = [
        *unit_columns(tables),
        (1 - u.c.embedding.cosine_distance(query_vector(vector, tables.spec.dimension))).label("text_sim"),
    ]
    if visual_vector is not None:
        assert tables.spec.visual_dimension, "a visual similarity needs a corpus with a visual channel"
        visual_q = query_vector(visual_vector, tables.spec.visual_dimension, name="visual_vector")
        columns.append((1 - u.c.visual.cosine_distance(visual_q)).label("visual_sim"))
    return sa.select(*columns).where(u.c.id == sa.any_(_ids("unit_ids", ids)))


#: The most words of a query the full-text channel searches for. ``websearch_to_tsquery`` wants every word (AND), so
#: the first 64 words of a longer text find every unit the whole text finds, while the server's work grows faster
#: than the words: 4,000 characters of a repeated sentence took 90-140 ms a corpus, 128,000 of them 2.5 s, and 1 MB
#: exhausted the server's stack after 22 s.
LEXICAL_WORDS = 64


def lexical_words(text: str, limit: int = LEXICAL_WORDS) -> str:
    """``text`` as the full-text channel searches it: its first ``limit`` words (split at whitespace)."""
    words = text.split(maxsplit=limit)
    return text if len(words) <= limit else " ".join(words[:limit])


def search_lexical(
    tables: CorpusTables, text: str, *, limit: int, filter: Filter | None = None, language: str = "english"
) -> sa.Select[Any]:
    """Units matching ``text`` in Postgres full-text search (``websearch_to_tsquery``: quotes, OR, -word),
    ranked by ``ts_rank_cd`` over the generated ``tsv`` column (GIN index). The search passes a query's first
    :data:`LEXICAL_WORDS` words (:func:`lexical_words`)."""
    u = tables.units
    query = sa.func.websearch_to_tsquery(
        sa.cast(sa.literal(language), REGCONFIG), sa.bindparam("lexical_text", text, type_=sa.Text)
    )
    rank = sa.func.ts_rank_cd(u.c.tsv, query).label("rank")
    stmt = sa.select(*unit_columns(tables), rank).where(u.c.tsv.op("@@")(query))
    if filter:
        stmt = stmt.where(unit_filter(u, filter))
    return stmt.order_by(sa.desc("rank")).limit(_limit(limit))


@functools.lru_cache(maxsize=32)
def word_units(
    unit_tables: tuple[sa.Table, ...], *, cap: int, surface: bool = False, language: str = "english"
) -> sa.Select[Any]:
    """For each word of the array parameter ``words``: how many units of the corpora hold it (``unit_tables``: their
    unit tables), each corpus counted to ``cap``, found by the same full-text index as :func:`search_lexical` — so
    "exception" is held where a text says "exceptions", and so is "exceptioned", whose stem is the same. With
    ``surface`` a unit counts only when its text also spells the word itself, as a whole word in any case (a few
    texts are read, those the index found). Columns ``word``, ``units`` (0 when none holds it) and ``stop`` (a
    stop word, which the index never holds).

    One statement for all the corpora; each word's query is parsed once (``plainto_tsquery`` costs ~15 µs, more
    than an index lookup, and a small table scanned row by row would parse it once a row). Built once per set of
    corpora (cached): building and compiling it took 8 ms, running it 2."""
    unnested = sa.func.unnest(sa.bindparam("words", type_=ARRAY(sa.Text))).table_valued("word").render_derived("w")
    words = sa.select(
        unnested.c.word,
        sa.func.plainto_tsquery(sa.cast(sa.literal(language), REGCONFIG), unnested.c.word).label("q"),
        sa.func.concat(r"\m", unnested.c.word, r"\M").label("spelled"),
    ).cte("words")
    counts = []
    for u in unit_tables:
        held: sa.ColumnElement[Any] = u.c.tsv.op("@@")(words.c.q)
        if surface:
            held = sa.and_(held, u.c.content.op("~*")(words.c.spelled))
        found = sa.select(sa.literal_column("1").label("one")).where(held).limit(_limit(cap)).lateral()
        counts.append(
            sa.select(words.c.word, sa.func.count(found.c.one).label("units"))
            .select_from(words.outerjoin(found, sa.true()))
            .group_by(words.c.word)
        )
    every = (sa.union_all(*counts) if len(counts) > 1 else counts[0]).subquery("counts")
    stops = sa.select(words.c.word).where(sa.func.numnode(words.c.q) == 0)
    return sa.select(
        every.c.word, sa.func.sum(every.c.units).label("units"), every.c.word.in_(stops).label("stop")
    ).group_by(every.c.word)


def clean_gin_pending() -> sa.TextClause:
    """Merge the pending entries of every GIN index (full text, metadata) of the tables named by the array parameter
    ``tables`` in schema ``schema`` into the index proper (``gin_clean_pending_list``); one row, ``pages``: how many
    pending pages were merged. New rows wait in an index's pending list until autovacuum merges it or it outgrows
    ``gin_pending_list_limit`` (4 MB); a corpus of a few hundred documents reaches neither, and every lookup then
    reads the whole list: the planner, counting those pages, chose to scan the 276 whole Wikipedia pages of a
    document corpus row by row, reading each page's stored ``tsvector``, and a typo's 478 neighbour words took 655 ms
    to look up there instead of 2 ms."""
    return sa.text(
        "SELECT coalesce(sum(gin_clean_pending_list(i.indexrelid)), 0) AS pages FROM pg_index i "
        "JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_am am ON am.oid = ic.relam "
        "JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace "
        "WHERE am.amname = 'gin' AND n.nspname = :schema AND t.relname = ANY(:tables)"
    ).bindparams(sa.bindparam("tables", type_=ARRAY(sa.Text)))


#: The closing quote of a lexeme in a tsquery's text form (``'cmakelist' <-> 'txt'``), where ``:*`` makes it a
#: prefix (a quote inside a lexeme is doubled and so never followed by a space or the end).
_LEXEME_END = r"'(\s|$)"


def _spellings(term: str) -> tuple[str, ...]:
    """How the full-text parser may have read ``term`` in a text: a dotfile or a path under one (".netrc",
    ".cache/pip") is one token with what stands before it ("~/.netrc" is read as "/.netrc", and as "~/.netrc" at
    the start of a text), so it is looked up in each of those spellings."""
    return (term, f"/{term}", f"~/{term}") if term.startswith(".") else (term,)


def holding_shape(terms: Sequence[str]) -> tuple[int, ...]:
    """What the text of :func:`units_holding`'s statement depends on besides its table and limit: how many spellings
    each term is looked up in (its parameters, :func:`holding_parameters`, carry the terms themselves)."""
    return tuple(len(_spellings(t)) for t in terms)


def holding_parameters(terms: Sequence[str], *, defining: Sequence[str] = ()) -> dict[str, str]:
    """The parameters of :func:`units_holding`'s statement that vary with ``terms``: ``spelling0``, ``spelling1``,
    ... (what the full-text index is asked for), ``pattern0``, ``pattern1``, ... (what the text must match: the
    term as a whole word) and ``define0``, ... (where each of ``defining`` is defined,
    :func:`~universalrag.exact_terms.defining_pattern`)."""
    spellings = [s for term in terms for s in _spellings(term)]
    return {
        **{f"spelling{i}": s for i, s in enumerate(spellings)},
        **{f"pattern{i}": term_pattern(t) for i, t in enumerate(terms)},
        **{f"define{i}": defining_pattern(t) for i, t in enumerate(defining)},
    }


def units_holding(
    tables: CorpusTables,
    terms: Sequence[str],
    *,
    limit: int,
    filter: Filter | None = None,
    language: str = "english",
    defining: Sequence[str] = (),
) -> sa.Select[Any]:
    """Units whose text holds one of ``terms`` as a whole word (:func:`~universalrag.exact_terms.term_pattern`),
    found through the full-text index (each term as a phrase of its words, each word also as the start of a longer
    token: the parser reads "CMakeLists.txt" as one token, which the word "CMakeLists" alone would not find) and
    confirmed on the text. The terms are named parameters (:func:`holding_parameters`), so the statement's text
    depends on :func:`holding_shape` (and how many terms are ``defining``) alone and is compiled once per shape.
    With ``defining`` (some of ``terms``), a column ``defines`` says whether the unit defines one of them
    (:func:`~universalrag.exact_terms.defining_pattern`), and those units come first."""
    u = tables.units
    config = sa.cast(sa.literal(language), REGCONFIG)
    values = holding_parameters(terms, defining=defining)

    def value(name: str) -> sa.BindParameter[str]:
        return sa.bindparam(name, values[name], type_=sa.Text)

    spellings = sum(holding_shape(terms))
    phrases: list[sa.ColumnElement[Any]] = [
        sa.cast(
            sa.func.regexp_replace(
                sa.cast(sa.func.phraseto_tsquery(config, value(f"spelling{i}")), sa.Text),
                sa.literal(_LEXEME_END),
                sa.literal(r"':*\1"),
                sa.literal("g"),
            ),
            TSQUERY,
        )
        for i in range(spellings)
    ]
    query: sa.ColumnElement[Any] = functools.reduce(lambda a, b: a.op("||")(b), phrases)
    stmt = sa.select(*unit_columns(tables)).where(
        u.c.tsv.op("@@")(query), sa.or_(*(u.c.content.op("~*")(value(f"pattern{i}")) for i in range(len(terms))))
    )
    if defining:
        defines = sa.or_(*(u.c.content.op("~*")(value(f"define{i}")) for i in range(len(defining)))).label("defines")
        stmt = stmt.add_columns(defines).order_by(defines.desc())
    if filter:
        stmt = stmt.where(unit_filter(u, filter))
    return stmt.limit(_limit(limit))


def units_by_id(tables: CorpusTables, ids: Sequence[str]) -> sa.Select[Any]:
    """The units with these ids."""
    return sa.select(*unit_columns(tables)).where(tables.units.c.id.in_(list(ids)))
