"""JSON records → tables, streamed from disk: a top-level array of objects, or an object holding such arrays.

The reader backs :func:`universalrag.ingest.tables.read_tables` (use that). Real-world JSON seldom puts its records
at the top level: it wraps them in an object, ``{"3166-1": [{"alpha_2": "AW", ...}, ...]}`` or
``{"version": 2, "data": [...]}``. Each member of such an object whose value is an array of objects is a table;
the other members (a version, a licence, an array of names) describe them, so nothing of the file is lost.

One validating pass over the whole file counts the records and gathers their keys; each table's rows then re-open
the file and stream it again. Neither pass holds more than one record at a time (the members that describe the
tables are kept whole, as they are small in the files this reads).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from types import GeneratorType
from typing import Any

from ...errors import IngestError
from ..files import (
    GZIP_ERRORS,
    TextEncoding,
    check_unchanged,
    decode_error,
    file_encoding,
    file_signature,
    gzip_error,
    open_text,
)
from .model import ParsedTable, format_value, records_table, titled, with_unique_titles

__all__ = ["JSON_RULES", "read_json", "records_in_object"]

#: What a JSON file becomes, in the identity of every such source (see :data:`TABLE_RULES
#: <universalrag.ingest.tables.read.TABLE_RULES>`): since v2 the arrays of records an object holds under its keys
#: are tables, its other members their description.
JSON_RULES = "json v2: records under an object's keys are tables, its other members their description"

_WHITESPACE = re.compile(r"[ \t\r\n]*")
_CHUNK = 1 << 16
_MAX_CHUNK = 1 << 22
#: Characters one array item may span before undecodable JSON is reported as such.
_MAX_ITEM = 1 << 24
#: An object whose first member is an array of objects: ``{"data": [{`` (what :func:`records_in_object` looks for).
_RECORDS_FIRST = re.compile(rb'\{\s*"(?:[^"\\]|\\.)*"\s*:\s*\[\s*\{')
#: No value at all (JSON's null is None).
_NONE = object()
_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
_TABLE_EXAMPLE = (
    'a JSON table must look like [{"team": "Lakers", "wins": 57}, ...] or hold such an array '
    'under a key, as in {"teams": [{"team": "Lakers", "wins": 57}, ...]}'
)


def records_in_object(head: bytes) -> bool:
    """True when ``head`` (a JSON file's first bytes, a byte-order mark and leading white space removed) opens an
    object whose first member is an array of objects: a table of records under a key, as ``{"data": [{...}, ...]}``.
    """
    return bool(_RECORDS_FIRST.match(head))


def _kind(value: Any) -> str:
    return _JSON_TYPES.get(type(value), "a number")


class _JsonStream:
    """The values of a JSON text decoded one at a time from a text stream: a top-level array's items, or a top-level
    object's members, of which arrays are themselves streamed item by item."""

    def __init__(self, fh: Any, name: Path) -> None:
        self.fh, self.name = fh, name
        self.decoder = json.JSONDecoder()
        self.buf, self.pos, self.offset, self.eof, self.chunk = "", 0, 0, False, _CHUNK

    def _fill(self) -> bool:
        if self.eof:
            return False
        data = self.fh.read(self.chunk)
        self.eof = not data
        self.offset += self.pos
        self.buf, self.pos = self.buf[self.pos :] + data, 0
        return bool(data)

    def peek(self) -> str:
        """The next character that is not white space (``""`` at the end), not consumed."""
        while True:
            self.pos = _WHITESPACE.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._fill():
                return ""

    def _invalid(self, at: int, what: str) -> IngestError:
        return IngestError(
            self.name,
            f"is not valid JSON near character {at} ({what}); "
            "fix it, for example by checking it with `python -m json.tool`.",
        )

    def _value(self) -> Any:
        first_error: tuple[int, str] | None = None
        self.peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
            except RecursionError as e:
                raise IngestError(
                    self.name,
                    f"nests arrays or objects deeper than the JSON reader follows (near character "
                    f"{self.offset + self.pos}); flatten it to records of a few levels.",
                ) from e
            except json.JSONDecodeError as e:
                # Either the value goes on past the buffer or it is invalid: read on, up to a bound.
                first_error = first_error or (self.offset + e.pos, e.msg)
                self.chunk = min(self.chunk * 2, _MAX_CHUNK)
                if len(self.buf) - self.pos < _MAX_ITEM and self._fill():
                    continue
                raise self._invalid(*first_error) from e
            if end == len(self.buf) and self._fill():
                continue  # a number at the end of the buffer may go on in the next chunk
            self.pos, self.chunk = end, _CHUNK
            return value

    def _separator(self, close: str, what: str) -> bool:
        """Consume the ``,`` or ``close`` after an item or member; True at ``close``."""
        sep = self.peek()
        self.pos += 1
        if sep not in (",", close):
            raise self._invalid(self.offset + self.pos - 1, f"expected ',' or '{close}' after {what}")
        return sep == close

    def _opened_empty(self, close: str) -> bool:
        """Consume the bracket that opens the array or object starting here; True (its ``close`` consumed too) when
        it is empty."""
        self.peek()
        self.pos += 1
        empty = self.peek() == close
        self.pos += empty
        return empty

    def items(self) -> Iterator[Any]:
        """The items of the array that starts here, decoded one at a time."""
        if self._opened_empty("]"):
            return
        while True:
            yield self._value()
            if self._separator("]", "an array item"):
                return

    def members(self) -> Iterator[tuple[str, Any]]:
        """(key, value) of the object that starts here; an array value is a generator of its items, to be
        streamed (what the caller leaves of it is skipped), any other value is decoded whole."""
        if self._opened_empty("}"):
            return
        while True:
            if self.peek() != '"':
                raise self._invalid(self.offset + self.pos, "expected a quoted key")
            key = self._value()
            if self.peek() != ":":
                raise self._invalid(self.offset + self.pos, "expected ':' after a key")
            self.pos += 1
            if self.peek() == "[":
                items = self.items()
                yield key, items
                for _ in items:  # the caller may stop early: the members after this one start past its end
                    pass
            else:
                yield key, self._value()
            if self._separator("}", "an object member"):
                return

    def end(self, close: str) -> None:
        """Refuse anything but white space after the top-level value, which ``close`` ends."""
        if self.peek():
            raise self._invalid(self.offset + self.pos, f"extra data after the closing '{close}'")


@dataclass(slots=True)
class _Records:
    """One array of records found by the validating pass: where it is (``member``, the index of the object's
    member holding it, or None for a top-level array), its ``key``, the union of its records' keys and their count.
    """

    member: int | None
    key: str = ""
    keys: dict[str, None] = field(default_factory=dict)
    count: int = 0

    def add(self, items: Iterator[Any], path: Path, first: Any = _NONE) -> None:
        """Count ``items`` (after ``first``, when given) and gather their keys; IngestError for one not an object."""
        where = f" under {self.key!r}" if self.member is not None else ""
        for item in items if first is _NONE else chain([first], items):
            if not isinstance(item, dict):
                raise IngestError(
                    path, f"item {self.count} of the array{where} is {_kind(item)}, not an object; {_TABLE_EXAMPLE}."
                )
            self.keys.update(dict.fromkeys(item))
            self.count += 1


@contextmanager
def _stream(path: Path, encoding: TextEncoding) -> Iterator[_JsonStream]:
    """The file's JSON stream, its reading errors worded for the user (the one place that opens the file)."""
    try:
        with open_text(path, encoding) as fh:
            yield _JsonStream(fh, path)
    except UnicodeDecodeError as e:
        raise decode_error(path, encoding, "somewhere in the file") from e
    except GZIP_ERRORS as e:
        raise gzip_error(path, e) from e


def _scan(path: Path, encoding: TextEncoding) -> tuple[list[_Records], list[str]]:
    """The validating pass: the arrays of records in the file, and the lines describing them (``key: value`` for
    each member of a top-level object that is not an array of records)."""
    found: list[_Records] = []
    described: list[str] = []
    with _stream(path, encoding) as stream:
        first = stream.peek()
        if first == "[":
            found.append(_Records(None))
            found[0].add(stream.items(), path)
        elif first == "{":
            for index, (key, value) in enumerate(stream.members()):
                if isinstance(value, GeneratorType):
                    head = next(value, _NONE)
                    if isinstance(head, dict):
                        found.append(_Records(index, key))
                        found[-1].add(value, path, head)
                        continue
                    value = [] if head is _NONE else [head, *value]
                described.append(f"{key}: {format_value(value)}")
            if not found:
                raise IngestError(
                    path, f"holds an object with no array of records under any of its keys; {_TABLE_EXAMPLE}."
                )
        else:
            what = "nothing" if not first else "a single value"
            raise IngestError(path, f"holds {what} at the top level, not an array of records; {_TABLE_EXAMPLE}.")
        stream.end("]" if first == "[" else "}")
    return found, described


def _title(stem: str, records: _Records, several: bool) -> str:
    """The file's stem, followed by the key holding the records when there are several arrays or the stem does not
    already name it ("iso_3166-1" for the records under "3166-1" of iso_3166-1.json, "users — data" for users.json).
    """

    def letters(text: str) -> str:
        return re.sub(r"\W+", "", text).casefold()

    if records.member is None or (not several and letters(records.key) in letters(stem)):
        return stem
    return titled(stem, records.key)


def read_json(path: Path) -> list[ParsedTable]:
    """The tables of a JSON file, streamed (the file is never loaded whole): a top-level array of objects is one
    table; a top-level object gives one table per member holding an array of objects, and its other members are
    written, ``key: value``, in each table's ``metadata["description"]`` (``metadata["key"]`` names the member).

    A table's header is the union of its objects' keys in first-seen order; missing keys give empty cells and
    nested values are JSON-encoded.
    """
    encoding = file_encoding(path, what="a text table")
    signature = file_signature(path)
    found, described = _scan(path, encoding)
    stem = Path(path.name.removesuffix(".gz")).stem

    def table(records: _Records) -> ParsedTable:
        order = list(records.keys)

        def row_source() -> Iterator[list[str]]:
            check_unchanged(path, signature)
            with _stream(path, encoding) as stream:
                items = (
                    stream.items()
                    if records.member is None
                    else next(value for index, (_, value) in enumerate(stream.members()) if index == records.member)
                )
                for item in items:
                    yield [format_value(item.get(k)) for k in order]

        parsed = records_table(
            order,
            records.count,
            row_source,
            title=_title(stem, records, len(found) > 1),
            name=path,
            source=path.name,
            fmt="json",
        )
        parsed.metadata.update(encoding=encoding.stream_codec, index_in_file=found.index(records))
        if records.member is not None:
            parsed.metadata["key"] = records.key
        if described:
            parsed.metadata["description"] = "\n".join(described)
        return parsed

    return with_unique_titles([table(records) for records in found])
