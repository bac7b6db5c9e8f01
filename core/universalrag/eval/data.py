"""Evaluation questions read from JSON lines, each with its gold answer, routes and evidence.

One JSON object a line::

    {"query": "Who designed the lighthouse?", "answer": ["Agnes Ferrow", "Ferrow"], "routes": ["paragraph"],
     "evidence": ["lighthouse.txt"], "source": "own"}

- ``query`` (required): the question.
- ``answer`` (optional): a string, or a list of accepted aliases; with ``choices`` (a list of option texts,
  lettered A, B, C…) the letter of the right option (multiple choice).
- ``routes`` (optional): the gold corpora (a name or a list; ``["none"]`` for a question that needs no retrieval).
- ``evidence`` (optional): the gold evidence, a list whose items are a unit id (a UUID string), a uri or path
  (a string; a relative path is taken relative to the data file's folder, or — when that names no ingested
  source and the path relative to the current folder does — relative to the current folder: see
  :func:`check_evidence`), or an object ``{"id": …}`` /
  ``{"uri": …, "table": N}`` (the ``N``-th table ingestion parsed from that file, ``metadata["index_in_file"]``)
  / ``{"uri": …, "start_s": S, "end_s": E}`` (a time range of a video or recording).
- ``source`` (optional, default ``"default"``): the question set; averages are taken within each source, then
  across sources.

A malformed line raises :class:`~universalrag.errors.InvalidInputError` naming the file and the line.
"""

from __future__ import annotations

import dataclasses
import json
import re
import uuid
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError
from ..types import Hit

__all__ = [
    "DEFAULT_SOURCE",
    "EvalExample",
    "EvidenceCheck",
    "GoldEvidence",
    "check_evidence",
    "examples_from",
    "parse_example",
    "read_examples",
]

DEFAULT_SOURCE = "default"
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_KNOWN = {"query", "answer", "choices", "routes", "evidence", "source", "id"}


@dataclass(frozen=True, slots=True)
class GoldEvidence:
    """One piece of gold evidence: a unit ``id``, or a source ``uri`` (optionally narrowed to one parsed
    ``table`` of the file, or to the time range ``start_s``–``end_s``). :meth:`matches` says whether a hit is it.
    ``written`` is the item as the data file gives it and ``cwd_uri`` the other reading of a relative path
    (against the current folder), so that :func:`check_evidence` can pick the one that was ingested and name the
    item in a warning; neither takes part in comparisons."""

    id: str | None = None
    uri: str | None = None
    table: int | None = None
    start_s: float | None = None
    end_s: float | None = None
    written: str | None = field(default=None, compare=False)
    cwd_uri: str | None = field(default=None, compare=False)

    def matches(self, hit: Hit) -> bool:
        """Whether ``hit`` is this evidence. A time range matches a hit whose span overlaps it, and a hit of the
        same source without a span (a whole video contains the range)."""
        if self.id is not None:
            return hit.id == self.id
        if hit.uri != self.uri:
            return False
        if self.table is not None and hit.metadata.get("index_in_file") != self.table:
            return False
        if self.start_s is not None or self.end_s is not None:
            if hit.start_s is None and hit.end_s is None:
                return True
            start = self.start_s if self.start_s is not None else float("-inf")
            end = self.end_s if self.end_s is not None else float("inf")
            hit_start = hit.start_s if hit.start_s is not None else float("-inf")
            hit_end = hit.end_s if hit.end_s is not None else float("inf")
            return hit_start < end and hit_end > start
        return True


@dataclass(frozen=True, slots=True)
class EvalExample:
    """A question with what counts as right: accepted ``answers`` (aliases), the right ``choice`` letter among
    ``choices`` (multiple choice), the gold ``routes`` and ``evidence``; ``source`` names its question set."""

    query: str
    answers: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    choice: str | None = None
    routes: tuple[str, ...] | None = None
    evidence: tuple[GoldEvidence, ...] = ()
    source: str = DEFAULT_SOURCE
    line: int = 0

    @property
    def multiple_choice(self) -> bool:
        """Whether the answer is a letter among ``choices``."""
        return bool(self.choices)

    @property
    def prompt(self) -> str:
        """The question as the model sees it: with the lettered options for a multiple-choice question."""
        if not self.choices:
            return self.query
        options = "\n".join(f"({_LETTERS[i]}) {text}" for i, text in enumerate(self.choices))
        return f"{self.query}\n{options}\nAnswer with the letter of the right option."


def read_examples(path: str | Path) -> list[EvalExample]:
    """The examples of a JSON-lines file (blank lines skipped); :class:`InvalidInputError` names the bad line."""
    file = Path(path)
    if not file.is_file():
        raise InvalidInputError(f"The evaluation data {str(file)!r} is not a file; pass a JSON-lines file.")
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InvalidInputError(f"{file} is not UTF-8 text ({e.reason}); save it as UTF-8 JSON lines.") from e
    out = []
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        where = f"{file}, line {number}"
        try:
            row = json.loads(raw)
        except json.JSONDecodeError as e:
            raise InvalidInputError(f"{where}: not valid JSON ({e.msg}); write one JSON object per line.") from e
        out.append(parse_example(row, where=where, base=file.parent, line=number))
    if not out:
        raise InvalidInputError(f"{file} holds no questions; write one JSON object per line with a 'query'.")
    return out


def parse_example(row: Any, *, where: str = "example", base: Path | None = None, line: int = 0) -> EvalExample:
    """One example from a decoded JSON object (``where`` prefixes error messages; relative paths in
    ``evidence`` are resolved against ``base``)."""
    if not isinstance(row, Mapping):
        raise InvalidInputError(f"{where}: expected a JSON object with a 'query', got {type(row).__name__}.")
    unknown = sorted(set(row) - _KNOWN)
    if unknown:
        raise InvalidInputError(f"{where}: unknown field(s) {unknown}; the fields are {sorted(_KNOWN)}.")
    query = row.get("query")
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError(f"{where}: 'query' must be a non-empty string.")
    choices = _strings(row.get("choices", []), "choices", where)
    answers: tuple[str, ...] = ()
    choice = None
    if "answer" in row:
        answers = _strings(row["answer"], "answer", where)
        if not answers:
            raise InvalidInputError(f"{where}: 'answer' is empty; give a string or a list of accepted answers.")
    if choices:
        if len(choices) > len(_LETTERS):
            raise InvalidInputError(f"{where}: at most {len(_LETTERS)} choices are supported.")
        allowed = _LETTERS[: len(choices)]
        if answers and (len(answers) != 1 or answers[0].strip().upper() not in allowed):
            raise InvalidInputError(f"{where}: with 'choices', 'answer' must be one letter among {', '.join(allowed)}.")
        choice = answers[0].strip().upper() if answers else None
    routes = _strings(row["routes"], "routes", where) if "routes" in row else None
    if routes is not None and not routes:
        raise InvalidInputError(f"{where}: 'routes' is empty; write [\"none\"] for a question that needs no retrieval.")
    evidence = tuple(_evidence(item, where, base) for item in _items(row.get("evidence", []), "evidence", where))
    source = row.get("source", DEFAULT_SOURCE)
    if not isinstance(source, str) or not source.strip():
        raise InvalidInputError(f"{where}: 'source' must be a non-empty string.")
    return EvalExample(
        query=query.strip(),
        answers=() if choices else answers,
        choices=choices,
        choice=choice,
        routes=routes,
        evidence=evidence,
        source=source.strip(),
        line=line,
    )


def _items(value: Any, name: str, where: str) -> list[Any]:
    if isinstance(value, (str, Mapping)):
        return [value]
    if not isinstance(value, list):
        raise InvalidInputError(f"{where}: '{name}' must be a list, got {type(value).__name__}.")
    return value


def _strings(value: Any, name: str, where: str) -> tuple[str, ...]:
    items = _items(value, name, where)
    if any(isinstance(v, Mapping) for v in items):
        raise InvalidInputError(f"{where}: '{name}' must be a string or a list of strings.")
    bad = [v for v in items if not isinstance(v, (str, int, float)) or isinstance(v, bool)]
    if bad:
        raise InvalidInputError(f"{where}: '{name}' must be a string or a list of strings, got {bad[0]!r}.")
    return tuple(str(v) for v in items)


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def _uri(text: str, base: Path | None) -> str:
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", text):
        return text
    path = Path(text).expanduser()
    if not path.is_absolute() and base is not None:
        path = base / path
    return path.resolve().as_uri()


def _cwd_uri(text: str, base: Path | None) -> str | None:
    """The current-folder reading of a relative path resolved against ``base``, when it differs."""
    if base is None or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", text) or Path(text).expanduser().is_absolute():
        return None
    here = _uri(text, None)
    return here if here != _uri(text, base) else None


def _number(value: Any, name: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{where}: evidence '{name}' must be a number, got {value!r}.")
    return float(value)


def _evidence(item: Any, where: str, base: Path | None) -> GoldEvidence:
    if isinstance(item, str):
        if not item.strip():
            raise InvalidInputError(f"{where}: an evidence item is an empty string.")
        text = item.strip()
        if _is_uuid(text):
            return GoldEvidence(id=text, written=text)
        return GoldEvidence(uri=_uri(text, base), written=text, cwd_uri=_cwd_uri(text, base))
    if not isinstance(item, Mapping):
        raise InvalidInputError(f"{where}: an evidence item must be a unit id, a uri or an object, got {item!r}.")
    extra = sorted(set(item) - {"id", "uri", "table", "start_s", "end_s"})
    if extra:
        raise InvalidInputError(
            f"{where}: unknown evidence field(s) {extra}; use id, or uri with table or start_s/end_s."
        )
    if ("id" in item) == ("uri" in item):
        raise InvalidInputError(f"{where}: an evidence object needs exactly one of 'id' or 'uri'.")
    if "id" in item:
        if not isinstance(item["id"], str) or not _is_uuid(item["id"]):
            raise InvalidInputError(f"{where}: evidence 'id' must be a unit id (a UUID), got {item['id']!r}.")
        if len(item) > 1:
            raise InvalidInputError(f"{where}: an evidence 'id' stands alone (table and times go with 'uri').")
        return GoldEvidence(id=item["id"], written=item["id"])
    if not isinstance(item["uri"], str) or not item["uri"].strip():
        raise InvalidInputError(f"{where}: evidence 'uri' must be a non-empty string.")
    table = item.get("table")
    if table is not None and (isinstance(table, bool) or not isinstance(table, int) or table < 0):
        raise InvalidInputError(f"{where}: evidence 'table' must be a table's 0-based index, got {table!r}.")
    if table is not None and ("start_s" in item or "end_s" in item):
        raise InvalidInputError(f"{where}: an evidence item has either a 'table' or a time range, not both.")
    start = _number(item["start_s"], "start_s", where) if "start_s" in item else None
    end = _number(item["end_s"], "end_s", where) if "end_s" in item else None
    if start is not None and end is not None and end <= start:
        raise InvalidInputError(f"{where}: evidence 'end_s' ({end}) must be after 'start_s' ({start}).")
    text = item["uri"].strip()
    return GoldEvidence(
        uri=_uri(text, base), table=table, start_s=start, end_s=end, written=text, cwd_uri=_cwd_uri(text, base)
    )


def examples_from(rows: Iterable[Mapping[str, Any]], *, base: Path | None = None) -> list[EvalExample]:
    """Examples from already decoded rows (``where`` in errors is the row's position, counted from 1)."""
    return [parse_example(row, where=f"row {i}", base=base, line=i) for i, row in enumerate(rows, 1)]


@dataclass(frozen=True)
class EvidenceCheck:
    """The examples with each relative evidence path read the way that names an ingested source, and the
    questions whose gold evidence names no ingested source or unit at all (recall and MRR count them as misses,
    which a user must be told rather than shown a silent 0)."""

    examples: list[EvalExample]
    unmatched: list[EvalExample]

    def unmatched_items(self) -> list[str]:
        """The unmatched evidence as written in the data file (each once, in file order)."""
        return list(dict.fromkeys(e.written or e.uri or e.id or "" for ex in self.unmatched for e in ex.evidence))

    def warning(self, *, show: int = 3) -> str | None:
        """One message naming the first ``show`` unmatched items and how many questions they affect."""
        if not self.unmatched:
            return None
        items = self.unmatched_items()
        named = ", ".join(repr(i) for i in items[:show]) + (
            f" and {len(items) - show} more" if len(items) > show else ""
        )
        with_evidence = sum(1 for ex in self.examples if ex.evidence)
        return (
            f"the gold evidence of {len(self.unmatched)} of {with_evidence} questions names no ingested source "
            f"or unit ({named}, first at line {self.unmatched[0].line}); their recall and MRR count as 0. "
            "A relative path is read against the data file's folder, then against the current folder; "
            "`universalrag sources list` shows the ingested sources."
        )

    def to_dict(self) -> dict[str, Any]:
        """``{"questions", "items", "lines"}`` of the unmatched evidence (for a JSON report's notes)."""
        return {
            "questions": len(self.unmatched),
            "items": self.unmatched_items(),
            "lines": [ex.line for ex in self.unmatched],
        }


def check_evidence(
    examples: Iterable[EvalExample], sources: Collection[str], units: Collection[str] = ()
) -> EvidenceCheck:
    """Match the examples' gold evidence against the ingested ``sources`` (uris) and ``units`` (ids): a relative
    path that names no ingested source against the data file's folder but does against the current folder is
    read against the current folder; questions none of whose evidence is ingested are listed as unmatched."""
    resolved = [_prefer_ingested(ex, sources) for ex in examples]
    unmatched = [ex for ex in resolved if ex.evidence and not any(_ingested(e, sources, units) for e in ex.evidence)]
    return EvidenceCheck(examples=resolved, unmatched=unmatched)


def _prefer_ingested(example: EvalExample, sources: Collection[str]) -> EvalExample:
    evidence = tuple(
        dataclasses.replace(e, uri=e.cwd_uri) if e.uri not in sources and e.cwd_uri in sources else e
        for e in example.evidence
    )
    return dataclasses.replace(example, evidence=evidence)


def _ingested(evidence: GoldEvidence, sources: Collection[str], units: Collection[str]) -> bool:
    return evidence.id in units if evidence.id is not None else evidence.uri in sources
