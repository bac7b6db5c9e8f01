"""CSV/TSV files → tables, streamed from disk (JSON records are read by
:mod:`~universalrag.ingest.tables.json_records`).

The reader backs :func:`universalrag.ingest.tables.read_tables` (use that); the encoding and change
checks it relies on are in :mod:`~universalrag.ingest.files`. It makes one validating
pass over the whole file (counting rows, finding the header, rejecting bad input with
:class:`IngestError`) and returns a table whose rows re-open the file and stream it again, so neither
pass holds more than one row at a time.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

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
from ..limits import check_columns
from .model import (
    ParsedTable,
    filled_width,
    fit_row,
    is_label_column,
    leading_text,
    make_header,
    synthetic_header,
    table_start,
)

__all__ = ["read_csv"]

_SAMPLE_CHARS = 65536
_SAMPLE_ROWS = 200
_DELIMITERS = (",", ";", "\t", "|")


def _encoding(path: Path) -> TextEncoding:
    return file_encoding(path, what="a text table")


def _stem(path: Path) -> str:
    """``data`` for ``data.csv`` and ``data.csv.gz``."""
    return Path(path.name.removesuffix(".gz")).stem


# --------------------------------------------------------------------------- CSV and TSV


def _field_counts(sample: str, delimiter: str) -> list[int] | None:
    """Fields in each of the sample's first non-blank records read with ``delimiter`` (None when it is not
    readable CSV with it); trailing empty fields are not counted when ``delimiter`` is a space."""
    try:
        reader = csv.reader(io.StringIO(sample), delimiter=delimiter, skipinitialspace=True)
        records = [r for _, r in zip(range(_SAMPLE_ROWS), reader, strict=False) if any(c.strip() for c in r)]
    except csv.Error:
        return None
    return [filled_width(r) if delimiter == " " else len(r) for r in records]


def _sniff_delimiter(sample: str, default: str) -> str:
    """The delimiter (of , ; tab |) that splits the sample's records into the most consistent number
    of fields (at least two), then the most fields. When none does, a space if runs of spaces split every
    record into the same number (at least two) of fields, as in whitespace-aligned columns; else ``default``.
    """
    best, best_score = default, (0.0, 1)
    for delimiter in sorted(_DELIMITERS, key=lambda d: d != default):
        counts = _field_counts(sample, delimiter)
        if not counts:
            continue
        fields, frequency = Counter(counts).most_common(1)[0]
        score = (frequency / len(counts), fields)
        if fields >= 2 and score > best_score:
            best, best_score = delimiter, score
    if best_score[0] == 0:
        spaced = _field_counts(sample, " ")
        if spaced and min(spaced) >= 2 and len(set(spaced)) == 1:
            return " "
    return best


def _csv_records(path: Path, encoding: TextEncoding, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, trimmed cells) of every record, blank ones included; errors as IngestError."""
    line = 0
    try:
        with open_text(path, encoding, newline="") as fh:
            reader = csv.reader(fh, delimiter=delimiter, skipinitialspace=True)
            for row in reader:
                line = reader.line_num
                check_columns(path, len(row), where=f" on line {line}")
                yield line, [cell.strip() for cell in row]
    except UnicodeDecodeError as e:
        raise decode_error(path, encoding, f"after line {line}") from e
    except csv.Error as e:
        raise IngestError(path, f"is not well-formed CSV after line {line} ({e}); check its quoting.") from e
    except GZIP_ERRORS as e:
        raise gzip_error(path, e) from e


def read_csv(path: Path) -> list[ParsedTable]:
    """One table from a CSV or TSV file, gzip-compressed or not (delimiter sniffed; encoding from a BOM, else
    UTF-8, else detected: see :func:`~universalrag.ingest.files.file_encoding`).

    Lines that lead into the table (comments starting with "#", a title, a line of counts: see
    :func:`~universalrag.ingest.tables.model.table_start`, decided on the first 200 records) are not its header nor
    its rows: their text is kept in ``metadata["description"]`` (``leading_rows`` counts them). The table is as
    wide as the header or the widest row's last filled cell, whichever is wider: a filled cell is never dropped.
    Columns past the header are named like blank names (``column_<n>``); rows are padded with empty cells, never
    cut (``ragged_rows`` counts those shorter than the header or with filled cells past it); columns with a blank
    or missing header and no value are dropped (``empty_columns_dropped``), so trailing empty cells add no column.
    """
    encoding = _encoding(path)
    try:
        with open_text(path, encoding, newline="") as fh:
            sample = fh.read(_SAMPLE_CHARS)
    except UnicodeDecodeError as e:
        raise decode_error(path, encoding, "in its first 64 KB") from e
    if len(sample) == _SAMPLE_CHARS and "\n" in sample:
        sample = sample[: sample.rindex("\n")]  # drop a record cut in the middle
    tsv = path.name.lower().removesuffix(".gz").endswith(".tsv")
    delimiter = _sniff_delimiter(sample, "\t" if tsv else ",")
    signature = file_signature(path)

    head = list(islice((cells for _, cells in _csv_records(path, encoding, delimiter) if any(cells)), _SAMPLE_ROWS))
    if not head:
        raise IngestError(path, "contains only blank lines; add a header row and data rows.")
    lead, has_header = table_start(head)
    skip = lead + has_header  # records before the first row
    # a file that opens with "#" comments (tzdata's zone1970.tab) has them between and after its rows too
    comments = lead > 0 and head[0][0].startswith("#")
    commented = 0
    if comments and has_header and head[lead][0].startswith("#"):  # the header is a comment too: "#codes"
        head[lead] = [head[lead][0].lstrip("#").strip(), *head[lead][1:]]
    first = head[lead]
    blank_names = [i for i, c in enumerate(first) if not c] if has_header else []
    rows = ragged = blank = seen = 0
    width = len(first) if has_header else 0
    filled: set[int] = set()  # blank-named or past-the-header columns with a value
    for _, cells in _csv_records(path, encoding, delimiter):
        if not any(cells):
            blank += seen > lead
            continue
        seen += 1
        if seen <= skip:
            continue
        if comments and cells[0].startswith("#"):
            commented += 1
            continue
        rows += 1
        width = max(width, filled_width(cells))
        if len(cells) < len(first) or any(cells[len(first) :]):
            ragged += 1
        filled.update(i for i in blank_names if i < len(cells) and cells[i])
        filled.update(i for i, cell in enumerate(cells[len(first) :], len(first)) if cell)
    if rows == 0:
        raise IngestError(path, "has a header but no rows; add data rows below the header, or leave it out.")
    names = fit_row(first, width)  # blank past the header
    keep = [i for i in range(width) if not has_header or names[i] or i in filled]
    stub = keep[0] == 0 and is_label_column(row[0] for row in head[skip:] if row)
    header = make_header([names[i] for i in keep], stub=stub) if has_header else synthetic_header(width)

    def row_source() -> Iterator[list[str]]:
        check_unchanged(path, signature)
        seen = 0
        for _, cells in _csv_records(path, encoding, delimiter):
            if not any(cells):
                continue
            seen += 1
            if seen <= skip or (comments and cells[0].startswith("#")):
                continue
            cells = fit_row(cells, width)
            yield cells if len(keep) == width else [cells[i] for i in keep]

    metadata = {
        "format": "tsv" if tsv else "csv",
        "source": path.name,
        "index_in_file": 0,
        "row_count": rows,
        "column_count": len(header),
        "delimiter": delimiter,
        "encoding": encoding.stream_codec,
        "header_synthesized": not has_header,
        "ragged_rows": ragged,
        "blank_rows_skipped": blank,
        "empty_columns_dropped": width - len(keep),
    }
    if commented:
        metadata["comment_rows_skipped"] = commented
    if lead:
        metadata.update(description=leading_text(head[:lead]), leading_rows=lead)
    return [ParsedTable(_stem(path), header, metadata, row_source=row_source)]
