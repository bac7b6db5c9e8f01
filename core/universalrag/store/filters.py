"""Metadata filters compiled to SQL over a JSONB column.

The filter language is the one LangChain's and LlamaIndex's Postgres stores use, so filters move between
them unchanged::

    {"lang": "en"}                                   equality (a containment, served by the GIN index)
    {"year": {"$gte": 2020}}                         $eq $ne $lt $lte $gt $gte
    {"tag": {"$in": ["a", "b"]}}                     $in $nin
    {"tags": {"$contains": "a"}}                     an array field contains a value (or all values of a list)
    {"author": {"$exists": true}}                    the key is present
    {"title": {"$ilike": "%tram%"}}                  $like $ilike on strings
    {"$and": [...]}, {"$or": [...]}, {"$not": {...}} combinations; several keys in one dict are AND-ed
    {"tags": ["a", "b"]}                             a list value: the array field holds all of them
    {"meta.camera.model": "X100"}                    dots address nested objects
    {"uri": "file:///docs/zlib.html"}                the unit's URI (a column, not metadata): one file, or
    {"uri": {"$like": "file:///docs/api/%"}}         a folder's files

Values are always bound parameters; field names are validated and used only inside JSON paths.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

from ..errors import FilterError

__all__ = ["FIELDS", "Filter", "compile_filter", "mentions", "paths_as_uris"]

Filter = Mapping[str, Any]

#: Fields a filter may name that are a unit's columns rather than keys of its metadata (the caller merges them into
#: the JSON it filters, which the metadata's GIN index then no longer serves: only when a filter names them).
FIELDS = frozenset({"uri"})

_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}(\.[A-Za-z_][A-Za-z0-9_\-]{0,63}){0,7}$")
_Scalar = (str, int, float, bool)


def _path(field: str) -> tuple[str, ...]:
    if not isinstance(field, str) or not _FIELD.fullmatch(field):
        raise FilterError(
            f"Invalid metadata field {field!r} in filter: use letters, digits, '_' or '-', with '.' for nesting."
        )
    return tuple(field.split("."))


def _nest(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    doc: Any = value
    for key in reversed(path):
        doc = {key: doc}
    return doc


def _jsonb(value: Any) -> sa.ColumnElement[Any]:
    return sa.cast(sa.literal(value, type_=JSONB), JSONB)


def _element(column: sa.ColumnElement[Any], path: tuple[str, ...]) -> sa.ColumnElement[Any]:
    return column[path] if len(path) > 1 else column[path[0]]


def _text(column: sa.ColumnElement[Any], path: tuple[str, ...]) -> sa.ColumnElement[Any]:
    return _element(column, path).astext


def _scalar(op: str, value: Any) -> Any:
    if not isinstance(value, _Scalar) or value is None:
        raise FilterError(f"Operator {op} needs a string, number or boolean, got {type(value).__name__}.")
    if isinstance(value, str) and "\x00" in value:
        raise FilterError(f"The value of {op} holds a NUL character, which Postgres text cannot hold; remove it.")
    if isinstance(value, float) and not math.isfinite(value):
        raise FilterError(f"Operator {op} needs a finite number, got {value}.")
    return value


def _compare(
    compare: Callable[[sa.ColumnElement[Any], sa.ColumnElement[Any]], sa.ColumnElement[bool]],
) -> Callable[[sa.ColumnElement[Any], tuple[str, ...], Any, str], sa.ColumnElement[bool]]:
    # jsonb orders values of different types (numbers before booleans...), so compare only like with like.
    def build(column: sa.ColumnElement[Any], path: tuple[str, ...], value: Any, op: str) -> sa.ColumnElement[bool]:
        value = _scalar(op, value)
        element = _element(column, path)
        bound = _jsonb(value)
        return sa.and_(sa.func.jsonb_typeof(element) == sa.func.jsonb_typeof(bound), compare(element, bound))

    return build


def _eq(column: sa.ColumnElement[Any], path: tuple[str, ...], value: Any, op: str) -> sa.ColumnElement[bool]:
    return column.contains(_nest(path, _scalar(op, value)))


def _ne(column: sa.ColumnElement[Any], path: tuple[str, ...], value: Any, op: str) -> sa.ColumnElement[bool]:
    return sa.not_(_eq(column, path, value, op))


def _values(op: str, value: Any) -> list[Any]:
    if not isinstance(value, (list, tuple, set, frozenset)) or not value:
        raise FilterError(f"Operator {op} needs a non-empty list of values.")
    return [_scalar(op, v) for v in value]


def _in(column: sa.ColumnElement[Any], path: tuple[str, ...], value: Any, op: str) -> sa.ColumnElement[bool]:
    return sa.or_(*(_eq(column, path, v, op) for v in _values(op, value)))


def _nin(column: sa.ColumnElement[Any], path: tuple[str, ...], value: Any, op: str) -> sa.ColumnElement[bool]:
    return sa.not_(_in(column, path, value, op))


def _contains(column: sa.ColumnElement[Any], path: tuple[str, ...], value: Any, op: str) -> sa.ColumnElement[bool]:
    items = _values(op, value) if isinstance(value, (list, tuple, set, frozenset)) else [_scalar(op, value)]
    return column.contains(_nest(path, items))


def _exists(column: sa.ColumnElement[Any], path: tuple[str, ...], value: Any, op: str) -> sa.ColumnElement[bool]:
    if not isinstance(value, bool):
        raise FilterError("Operator $exists needs true or false.")
    present = sa.func.jsonb_exists(column[path[:-1]] if len(path) > 1 else column, path[-1])
    return present if value else sa.not_(sa.func.coalesce(present, False))


def _like(case_insensitive: bool) -> Callable[..., sa.ColumnElement[bool]]:
    def build(column: sa.ColumnElement[Any], path: tuple[str, ...], value: Any, op: str) -> sa.ColumnElement[bool]:
        if not isinstance(value, str):
            raise FilterError(f"Operator {op} needs a string pattern.")
        _scalar(op, value)
        text = _text(column, path)
        return text.ilike(value) if case_insensitive else text.like(value)

    return build


_OPERATORS: dict[str, Callable[[sa.ColumnElement[Any], tuple[str, ...], Any, str], sa.ColumnElement[bool]]] = {
    "$eq": _eq,
    "$ne": _ne,
    "$lt": _compare(lambda a, b: a < b),
    "$lte": _compare(lambda a, b: a <= b),
    "$gt": _compare(lambda a, b: a > b),
    "$gte": _compare(lambda a, b: a >= b),
    "$in": _in,
    "$nin": _nin,
    "$contains": _contains,
    "$exists": _exists,
    "$like": _like(False),
    "$ilike": _like(True),
}


def _field_condition(column: sa.ColumnElement[Any], field: str, condition: Any) -> sa.ColumnElement[bool]:
    path = _path(field)
    if not isinstance(condition, Mapping):
        if isinstance(condition, (list, tuple)):  # a list value means "the array field holds all of these"
            return _contains(column, path, condition, "$contains")
        return _eq(column, path, _scalar("$eq", condition), "$eq")
    if not condition:
        raise FilterError(f"Empty condition for field {field!r}.")
    clauses = []
    for op, value in condition.items():
        builder = _OPERATORS.get(op)
        if builder is None:
            raise FilterError(
                f"Unknown filter operator {op!r} for field {field!r}; use one of {', '.join(_OPERATORS)}."
            )
        clauses.append(builder(column, path, value, op))
    return sa.and_(*clauses)


#: Deepest nesting of ``$and``/``$or``/``$not`` accepted (real filters use a handful of levels).
MAX_DEPTH = 32
#: Most conditions in one filter (each becomes a clause of the SQL statement).
MAX_CONDITIONS = 1000


def compile_filter(column: sa.ColumnElement[Any], filter: Filter) -> sa.ColumnElement[bool]:
    """Compile ``filter`` (see the module docstring) to a boolean SQL expression over the JSONB ``column``.

    :class:`FilterError` for a malformed filter, one nested deeper than :data:`MAX_DEPTH` or holding more than
    :data:`MAX_CONDITIONS` conditions (checked before anything is built, so a hostile filter costs nothing)."""
    _check_size(filter)
    return _compile(column, filter)


def _nodes(filter: Any) -> Iterator[tuple[Any, int]]:
    """Every node of ``filter`` with its depth (1 at the top), through ``$and``/``$or``/``$not``, walked without
    recursion (a hostile filter nests thousands deep)."""
    pending: list[tuple[Any, int]] = [(filter, 1)]
    while pending:
        node, depth = pending.pop()
        yield node, depth
        if isinstance(node, Mapping):
            for key, value in node.items():
                if key in ("$and", "$or") and isinstance(value, (list, tuple)):
                    pending += [(f, depth + 1) for f in value]
                elif key == "$not":
                    pending.append((value, depth + 1))


def mentions(filter: Any, fields: frozenset[str] = FIELDS) -> bool:
    """Whether ``filter`` names one of ``fields`` at any depth of ``$and``/``$or``/``$not``."""
    return any(isinstance(node, Mapping) and not fields.isdisjoint(node) for node, _ in _nodes(filter))


def _file_uri(value: Any, op: str = "$eq") -> Any:
    """A local path as the ``file://`` URI ingestion stores (absolute, ``~`` expanded); a URI or a non-string as
    it is. A ``$like``/``$ilike`` pattern gets ``file://`` before its leading ``/`` and is otherwise left alone."""
    if not isinstance(value, str) or not value or "://" in value:
        return value
    if op in ("$like", "$ilike"):
        return "file://" + value if value.startswith("/") else value
    from pathlib import Path

    return Path(value).expanduser().absolute().as_uri()


def _file_name(value: Any) -> bool:
    """Whether ``value`` is a bare file name ("planets.csv"): no folder, no URI, not ``~``."""
    return (
        isinstance(value, str)
        and bool(value)
        and value not in (".", "..", "~")
        and "/" not in value
        and "\\" not in value
    )


def _named_like(name: str) -> str:
    """A ``$like`` pattern for the ``file://`` URIs of files called ``name`` in any folder (percent-encoded as
    ingestion stores URIs, LIKE's wildcards in the name escaped)."""
    from pathlib import PurePosixPath

    encoded = PurePosixPath("/", name).as_uri().removeprefix("file:///")
    return "%/" + encoded.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _uri_conditions(value: Any) -> list[dict[str, Any]]:
    """Conditions on ``uri`` meaning what a condition on a shown path ``value`` means (see :func:`paths_as_uris`)."""

    def named(names: list[Any]) -> dict[str, Any]:
        likes = [{"uri": {"$like": _named_like(n)}} for n in names]
        return likes[0] if len(likes) == 1 else {"$or": likes}

    if not isinstance(value, Mapping):
        return [named([value]) if _file_name(value) else {"uri": _file_uri(value)}]
    out: list[dict[str, Any]] = []
    for op, arg in value.items():
        if op in ("$eq", "$ne") and _file_name(arg):
            out.append(named([arg]) if op == "$eq" else {"$not": named([arg])})
        elif op in ("$in", "$nin") and isinstance(arg, (list, tuple)) and any(_file_name(x) for x in arg):
            either = [named([x]) for x in arg if _file_name(x)]
            paths = [_file_uri(x) for x in arg if not _file_name(x)]
            either += [{"uri": {"$in": paths}}] if paths else []
            match = either[0] if len(either) == 1 else {"$or": either}
            out.append(match if op == "$in" else {"$not": match})
        else:
            out.append(
                {"uri": {op: [_file_uri(x) for x in arg] if isinstance(arg, (list, tuple)) else _file_uri(arg, op)}}
            )
    return out


def paths_as_uris(filter: Filter, key: str, *, keep: bool = False) -> Filter:
    """``filter`` with the conditions on ``key`` — a field the frameworks show as a unit's local path or file name
    (LangChain's ``source``, LlamaIndex's ``file_path`` and ``file_name``) — turned into conditions on ``uri``, so
    that filtering on what a document shows finds it (it found nothing: no unit holds the key). A path becomes the
    ``file://`` URI ingestion stores; a bare file name ("planets.csv") matches that file in any folder (it was
    read as a path under the process's working directory, and a LangChain user's ``{"source": "planets.csv"}``
    found nothing). With ``keep`` a unit whose own metadata field ``key`` matches matches too (for ``$ne`` and
    ``$nin``: it must pass both), as :meth:`UniversalRAG.plan <universalrag.pipeline.UniversalRAG.plan>` reads
    ``source``: the file, or a metadata field of that name. A filter that does not name ``key`` is returned as it
    is; one that does and nests too deep is refused (:class:`FilterError`), as :func:`compile_filter` refuses it."""
    if not mentions(filter, frozenset({key})):
        return filter
    _check_size(filter)

    def turn(node: Any) -> Any:
        if not isinstance(node, Mapping):
            return node
        out: dict[str, Any] = {}
        more: list[dict[str, Any]] = []
        for k, v in node.items():
            if k in ("$and", "$or") and isinstance(v, (list, tuple)):
                out[k] = [turn(f) for f in v]
            elif k == "$not":
                out[k] = turn(v)
            elif k == key and keep:
                on_uri = _uri_conditions(v)
                either = on_uri[0] if len(on_uri) == 1 else {"$and": on_uri}
                negative = isinstance(v, Mapping) and bool(v) and set(v) <= {"$ne", "$nin"}
                more.append({"$and" if negative else "$or": [{key: v}, either]})
            elif k == key:
                more += _uri_conditions(v)
            else:
                out[k] = v
        for condition in more:  # one plain condition on uri stays a key; the rest are AND-ed
            if list(condition) == ["uri"] and "uri" not in out:
                out.update(condition)
            else:
                out["$and"] = [*out.get("$and", []), condition]
        return out

    return turn(filter)


def _check_size(filter: Any) -> None:
    """FilterError when ``filter`` nests too deep or holds too many conditions (each key of each object is one)."""
    conditions = 0
    for node, depth in _nodes(filter):
        if depth > MAX_DEPTH:
            raise FilterError(
                f"The filter nests $and/$or/$not more than {MAX_DEPTH} levels deep; flatten it "
                "(several keys in one object are AND-ed, $in takes a list of values)."
            )
        conditions += len(node) if isinstance(node, Mapping) else 0
        if conditions > MAX_CONDITIONS:
            raise FilterError(
                f"The filter holds more than {MAX_CONDITIONS} conditions; use $in with a list of values, or narrow it."
            )


def _compile(column: sa.ColumnElement[Any], filter: Filter) -> sa.ColumnElement[bool]:
    if not isinstance(filter, Mapping):
        raise FilterError(f"A filter must be a mapping, got {type(filter).__name__}.")
    clauses: list[sa.ColumnElement[bool]] = []
    for key, value in filter.items():
        if key in ("$and", "$or"):
            if not isinstance(value, (list, tuple)) or not value:
                raise FilterError(f"{key} needs a non-empty list of filters.")
            parts = [_compile(column, f) for f in value]
            clauses.append(sa.and_(*parts) if key == "$and" else sa.or_(*parts))
        elif key == "$not":
            clauses.append(sa.not_(_compile(column, value)))
        elif isinstance(key, str) and key.startswith("$"):
            raise FilterError(f"Unknown top-level filter operator {key!r}; use $and, $or or $not.")
        else:
            clauses.append(_field_condition(column, key, value))
    if not clauses:
        return sa.true()
    return sa.and_(*clauses)
