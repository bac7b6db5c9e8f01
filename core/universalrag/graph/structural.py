"""The structural extractor: entities and relations that the units of a source already state, without a model.

Per source (see docs/graph.md for the whole list):

- the **source** itself — a page, a document, a video, a table file — named by its title (else its file name), with
  its URI as an alias, anchored on its document or video unit;
- **sections**: a passage's heading path (PDF, Word, slides) is a section entity that ``belongs_to`` the source;
- **tables**: a table is an entity anchored on its unit (its caption or title; a label such as "Table 1" is qualified
  by the source's title); each row whose label cell (the first mostly non-numeric column) names something is an
  entity that ``belongs_to`` the table, related to the names in its other cells by their column's header;
- **figures and images**: anchored on their unit; the names of its caption ``belong_to`` it, and so do the names of
  what the ingest joined to the caption (the sentences citing its label, a description), which also go with the
  caption's names (``co_occurs``: the photographer a note names and the bridge the caption names are one hop
  apart); a passage of the same source that cites its label ("Figure 1") mentions it, and the names of each of its
  sentences citing it ``belong_to`` it;
- **links** between pages: a link to another local page is a ``links_to`` relation to that page's entity (named by
  its URI until the page itself is ingested, which takes the URI as an alias);
- **videos**: each clip is an entity that ``belongs_to`` the video; the names its transcript says ``belong_to`` it;
- **names** in passages (:func:`~universalrag.graph.names.find_names`), mentioned by their unit, and the pairs of
  names one passage holds (``co_occurs``, weighted by how many passages hold both).

Every count is capped per unit, so the work is linear in the source's size.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from ..types import Unit
from .model import ANCHOR, BELONGS_TO, CO_OCCURS, EntityDraft, Extraction, MentionDraft, RelationDraft
from .names import LABEL, find_names, sentences

__all__ = ["CO_OCCURS", "LINKS_TO", "StructuralExtractor"]

#: Keywords of a link from one page to another.
LINKS_TO = "links_to"

_TABLE_ROW = re.compile(r"^\|(.*)\|\s*$")
_SEPARATOR = re.compile(r"^[\s|:-]+$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_HAS_LETTER = re.compile(r"[^\W\d_]")


@dataclass(slots=True)
class _Out:
    entities: list[EntityDraft]
    relations: list[RelationDraft]
    mentions: list[MentionDraft]

    def mention(self, name: str, unit: Unit, *, role: str = "mention", weight: float = 1.0) -> None:
        page = unit.metadata.get("page")
        self.mentions.append(
            MentionDraft(
                entity=name,
                corpus=unit.corpus,
                unit_id=unit.id,
                role=role,
                weight=weight,
                page=page if isinstance(page, int) and not isinstance(page, bool) else None,
                start_s=unit.start_s,
                end_s=unit.end_s,
            )
        )


def _kind(unit: Unit, parents: set[str]) -> str:
    md = unit.metadata
    if unit.start_s is not None:
        return "clip" if unit.parent_id is not None else "video"
    if "columns" in md and "row_count" in md:
        return "table"
    if unit.corpus == "image" or "alt_text" in md or ("caption" in md and "label" in md):
        return "image"
    if unit.id in parents or "chunks" in md or ("pages" in md and unit.parent_id is None and "heading_path" not in md):
        return "document"
    return "passage"


def _file_stem(uri: str) -> str:
    path = unquote(urlsplit(uri).path) or uri
    stem = posixpath.basename(path.rstrip("/")) or path
    return stem.rsplit(".", 1)[0] if "." in stem else stem


def _text(value: Any, limit: int = 300) -> str:
    return " ".join(str(value).split())[:limit] if isinstance(value, str) else ""


def table_rows(content: str, *, limit: int) -> Iterator[list[str]]:
    """The body rows of the first Markdown table in ``content`` (a table unit's preview), at most ``limit``."""
    seen_header = False
    n = 0
    for line in content.splitlines():
        m = _TABLE_ROW.match(line.strip())
        if m is None:
            if seen_header:
                return
            continue
        if _SEPARATOR.fullmatch(line):
            continue
        cells = [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(m.group(1))]
        if not seen_header:
            seen_header = True
            continue
        yield cells
        n += 1
        if n >= limit:
            return


class StructuralExtractor:
    """The default :class:`~universalrag.graph.model.Extractor`: what titles, headings, tables, captions, links,
    clips and names in the units say (module docstring). Pure Python; no model, no I/O."""

    name = "structural"

    def __init__(
        self,
        *,
        max_names_per_unit: int = 24,
        max_pairs_per_unit: int = 40,
        max_rows_per_table: int = 500,
        max_cells_per_row: int = 16,
        max_links: int = 200,
    ) -> None:
        self.max_names = max_names_per_unit
        self.max_pairs = max_pairs_per_unit
        self.max_rows = max_rows_per_table
        self.max_cells = max_cells_per_row
        self.max_links = max_links

    def extract(self, units: Sequence[Unit], *, source_uri: str) -> Extraction:
        """The :class:`Extraction` of one source's ``units``."""
        parents = {u.parent_id for u in units if u.parent_id is not None}
        kinds = {u.id: _kind(u, parents) for u in units}
        out = _Out([], [], [])
        anchor = next((u for u in units if kinds[u.id] in ("document", "video")), None)
        title = _text(anchor.metadata.get("title")) if anchor is not None else ""
        if not title:
            title = next(
                (_text(u.metadata.get("document_title")) for u in units if u.metadata.get("document_title")), ""
            )
        title = title or _file_stem(source_uri)
        source_type = {"document": "document", "video": "video"}.get(kinds[anchor.id], "") if anchor else ""
        if not source_type:
            source_type = "table" if any(k == "table" for k in kinds.values()) else "image" if units else "document"
        fmt = _text(anchor.metadata.get("format")) if anchor is not None else ""
        if fmt in ("html", "markdown", "md", "rst"):
            source_type = "page"
        out.entities.append(EntityDraft(name=title, type=source_type, aliases=(source_uri,)))
        if anchor is not None:
            out.mention(title, anchor, role=ANCHOR)
            self._links(anchor, title, source_uri, units, kinds, out)
        labels: dict[str, str] = {}  # label ("Figure 1") -> entity name
        for unit in units:
            kind = kinds[unit.id]
            if kind == "table":
                labels.update(self._table(unit, title, out))
            elif kind == "image":
                labels.update(self._image(unit, title, out, single=len(units) == 1))
            elif kind == "clip":
                self._clip(unit, title, out)
        for unit in units:
            kind = kinds[unit.id]
            if kind == "passage" or (kind in ("document", "video") and not parents & {unit.id}):
                self._passage(unit, title, labels, out)
        return Extraction(tuple(out.entities), tuple(out.relations), tuple(out.mentions))

    # -- rules ----------------------------------------------------------------------------------------------
    def _names(self, unit: Unit, text: str, out: _Out, *, anchor: str | None = None) -> list[str]:
        names = find_names(text, limit=self.max_names)
        for name in names:
            out.mention(name, unit)
            if anchor is not None:
                out.relations.append(RelationDraft(source=name, target=anchor, keywords=BELONGS_TO))
        pairs = 0
        for a, b in combinations(names, 2):
            if pairs >= self.max_pairs:
                break
            out.relations.append(RelationDraft(source=a, target=b, keywords=CO_OCCURS))
            pairs += 1
        return names

    def _qualified(self, label: str, title: str) -> str:
        return label if title.casefold() in label.casefold() else f"{label} ({title})"

    def _table(self, unit: Unit, title: str, out: _Out) -> dict[str, str]:
        md = unit.metadata
        label = _text(md.get("label"), 80)
        caption = _text(md.get("caption")) or _text(md.get("title"))
        index = md.get("index_in_file")
        if label:
            name = self._qualified(label, title)
        elif caption.casefold() == title.casefold():
            name = title  # a table file's only table, or a page's table titled as the page
        elif caption:
            name = self._qualified(caption, title) if len(caption) < 80 else caption
        else:
            name = f"Table {int(index) + 1 if isinstance(index, int) else ''} ({title})".replace("  ", " ")
        out.entities.append(
            EntityDraft(name=name, type="table", description=caption, aliases=(caption,) if label and caption else ())
        )
        out.mention(name, unit, role=ANCHOR)
        if name.casefold() != title.casefold():
            out.relations.append(RelationDraft(source=name, target=title, keywords=BELONGS_TO))
        columns = [_text(c, 60) for c in md.get("columns") or []]
        self._rows(unit, name, columns, out)
        if caption:
            self._names(unit, caption, out, anchor=name)
        return {label: name} if label else {}

    def _rows(self, unit: Unit, table: str, columns: list[str], out: _Out) -> None:
        rows = list(table_rows(unit.content, limit=self.max_rows))
        if not rows or not columns:
            return
        width = min(len(columns), self.max_cells)
        label_col = next(
            (
                c
                for c in range(min(3, width))
                if sum(1 for r in rows if c < len(r) and _HAS_LETTER.search(r[c])) * 2 > len(rows)
            ),
            None,
        )
        if label_col is None:
            return
        row_type = (columns[label_col] or "row").lower()[:40]
        for cells in rows:
            if label_col >= len(cells) or not _HAS_LETTER.search(cells[label_col]) or len(cells[label_col]) > 120:
                continue
            row = cells[label_col]
            facts = [f"{columns[c]}: {cells[c]}" for c in range(min(width, len(cells))) if c != label_col and cells[c]]
            out.entities.append(EntityDraft(name=row, type=row_type, description="; ".join(facts)[:400]))
            out.mention(row, unit)
            out.relations.append(RelationDraft(source=row, target=table, keywords=BELONGS_TO))
            for c in range(min(width, len(cells))):
                value = cells[c]
                if c == label_col or not value or len(value) > 80 or not _HAS_LETTER.search(value):
                    continue
                out.entities.append(EntityDraft(name=value, type=(columns[c] or "value").lower()[:40]))
                out.mention(value, unit)
                out.relations.append(RelationDraft(source=row, target=value, keywords=columns[c] or "value"))

    def _image(self, unit: Unit, title: str, out: _Out, *, single: bool) -> dict[str, str]:
        md = unit.metadata
        label = _text(md.get("label"), 80)
        caption = _text(md.get("caption")) or _text(md.get("alt_text")) or _text(md.get("title"))
        if single:
            name = title
        elif label:
            name = self._qualified(label, title)
        else:
            name = caption[:120] or f"Image ({title})"
        out.entities.append(
            EntityDraft(
                name=name,
                type="figure" if label else "image",
                description=caption,
                aliases=(caption,) if label and caption else (),
            )
        )
        out.mention(name, unit, role=ANCHOR)
        if name.casefold() != title.casefold():
            out.relations.append(RelationDraft(source=name, target=title, keywords=BELONGS_TO))
        if not caption:
            self._names(unit, unit.content, out, anchor=name)
            return {label: name} if label else {}
        named = {n.casefold(): n for n in self._names(unit, caption, out, anchor=name)}
        # what the ingest joined to the caption (the sentences citing its label, a description): its names belong to
        # the figure and go with the caption's, but are mentioned by the passages saying them, not by the figure
        joined = unit.content.replace(caption, " ")
        pairs = 0
        for other in find_names(joined, limit=self.max_names) if joined.strip() else ():
            if other.casefold() in named:
                continue
            out.relations.append(RelationDraft(source=other, target=name, keywords=BELONGS_TO))
            for known in named.values():
                if pairs >= self.max_pairs:
                    break
                out.relations.append(RelationDraft(source=known, target=other, keywords=CO_OCCURS))
                pairs += 1
        return {label: name} if label else {}

    def _clip(self, unit: Unit, title: str, out: _Out) -> None:
        index = unit.metadata.get("index")
        number = int(index) + 1 if isinstance(index, int) else None
        start, end = unit.start_s or 0.0, unit.end_s or 0.0
        name = f"{title}, clip {number}" if number is not None else f"{title}, {start:.0f}-{end:.0f} s"
        out.entities.append(EntityDraft(name=name, type="clip", description=f"{start:.1f}-{end:.1f} s of {title}"))
        out.mention(name, unit, role=ANCHOR)
        out.relations.append(RelationDraft(source=name, target=title, keywords=BELONGS_TO))
        self._names(unit, unit.content, out, anchor=name)

    def _passage(self, unit: Unit, title: str, labels: Mapping[str, str], out: _Out) -> None:
        path = [_text(h, 120) for h in unit.metadata.get("heading_path") or [] if _text(h, 120)]
        if path:
            section = self._qualified(" > ".join(path[-2:]), title)
            out.entities.append(EntityDraft(name=section, type="section"))
            out.mention(section, unit)
            out.relations.append(RelationDraft(source=section, target=title, keywords=BELONGS_TO))
        cited = sorted({m.group() for m in LABEL.finditer(unit.content)} & set(labels))
        for label in cited:
            out.mention(labels[label], unit)  # the passage cites the figure or table
        if cited:
            self._citing(unit.content, labels, out)
        self._names(unit, unit.content, out)

    def _citing(self, text: str, labels: Mapping[str, str], out: _Out) -> None:
        """The names of each sentence of ``text`` citing a label of ``labels`` ``belong_to`` what it labels (at most
        ``max_pairs`` relations a passage)."""
        added = 0
        for sentence in sentences(text):
            targets = sorted({labels[m.group()] for m in LABEL.finditer(sentence) if m.group() in labels})
            for name in find_names(sentence, limit=self.max_names) if targets else ():
                for target in targets:
                    if added >= self.max_pairs:
                        return
                    out.relations.append(RelationDraft(source=name, target=target, keywords=BELONGS_TO))
                    added += 1

    def _links(
        self, anchor: Unit, title: str, source_uri: str, units: Sequence[Unit], kinds: Mapping[str, str], out: _Out
    ) -> None:
        links = anchor.metadata.get("links")
        if not isinstance(links, list):
            return
        base = urlsplit(source_uri)
        passages = [u for u in units if kinds[u.id] == "passage"]
        seen: set[str] = set()
        for link in links[: self.max_links]:
            if not isinstance(link, Mapping):
                continue
            target, _ = urldefrag(urljoin(source_uri, str(link.get("href") or "")))
            parts = urlsplit(target)
            if (parts.scheme, parts.netloc) != (base.scheme, base.netloc) or target in seen or target == source_uri:
                continue  # a link to another site, or to this page
            seen.add(target)
            out.entities.append(EntityDraft(name=target, type="page"))
            out.mention(target, anchor)
            out.relations.append(RelationDraft(source=title, target=target, keywords=LINKS_TO))
            text = _text(link.get("text"), 200)
            for unit in passages if text else ():
                if text in unit.content:
                    out.mention(target, unit)
