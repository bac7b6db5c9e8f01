"""The model-based extractor: entities and relations a chat model finds in the units of a source.

:class:`ModelExtractor` implements :class:`~universalrag.graph.model.Extractor`. It cuts a source's units into
pieces (passages as they are; a long text in windows; a non-text unit described at ingestion by its model-written
description, docs/descriptions.md), packs the pieces into batches of about ``batch_chars`` characters, and asks the
model once per batch (:mod:`.llm_answer`) for the entities and relations each piece states. Each entity is mentioned
by the units of the pieces that name it. Every non-text unit with an entity summary is an **anchor**: its summary
becomes an entity (role ``anchor``) and every entity found in its description gets a ``belongs_to`` relation to it,
as RAG-Anything builds its cross-modal graph. A unit that contains others (a document whose passages are there, a
video whose scenes are) is read through them, not twice.

Batches run concurrently (``concurrency``) within :class:`~universalrag.generate.call_limits.CallLimits`; answers are
cached by the hash of what was asked, so extracting the same text again makes no call. A failed call (HTTP error,
timeout, an answer that is not the JSON asked for) is logged and its batch yields nothing; anchors need no call and
are always returned. No database I/O.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from ..errors import ConfigError, UniversalRAGError
from ..generate.call_limits import CallLimits
from ..generate.response_cache import ResponseCache, cache_path, request_key
from ..generate.structured import JsonChat
from ..types import Unit
from .llm_answer import PROMPT_VERSION, SYSTEM_PROMPT, ExtractionAnswer
from .model import ANCHOR, BELONGS_TO, MENTION, EntityDraft, Extraction, MentionDraft, RelationDraft, normalise_key

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["ModelExtractor", "model_extractor_from_settings"]

_log = logging.getLogger(__name__)

#: A piece with fewer words says too little to extract from.
_MIN_WORDS = 4


@dataclass(frozen=True, slots=True)
class _Piece:
    unit: Unit
    text: str
    anchor: str | None  # the unit's anchor entity, for the description of a non-text unit


def _windows(text: str, size: int) -> list[str]:
    """``text`` in windows of at most ``size`` characters, cut at white space."""
    text = text.strip()
    out = []
    while len(text) > size:
        cut = text.rfind(" ", 0, size)
        cut = cut if cut > size // 2 else size
        out.append(text[:cut].strip())
        text = text[cut:].strip()
    return [*out, text] if text else out


def _qualified(name: str, title: str) -> str:
    """``name`` with its source's ``title`` beside it, unless it holds it: one figure, table or scene per name."""
    held = f" {normalise_key(title)} " in f" {normalise_key(name)} "
    return name if not normalise_key(title) or held else f"{name} ({title})"


def _anchor(unit: Unit, source_uri: str) -> EntityDraft | None:
    """The entity a described non-text unit is, from its model-written summary (``None`` without one). Its name is
    the summary's, qualified by the title of its document or video (else its file's name), so two sources' "Figure
    1: revenue" stay two anchors; its label so qualified ("Figure 1 (Annual report)") is an alias, the name the
    structural extractor gives the same unit, so that the two align."""
    summary = unit.metadata.get("entity")
    if not isinstance(summary, dict) or not str(summary.get("name") or "").strip():
        return None
    meta = unit.metadata
    title = str(meta.get("document_title") or (meta.get("title") if unit.start_s is not None else "") or "").strip()
    title = title or PurePosixPath(unquote(urlsplit(source_uri).path)).stem
    name = _qualified(str(summary["name"]).strip(), title)
    label = str(meta.get("label") or "").strip()
    alias = _qualified(label, title) if label else ""
    aliases = (alias,) if alias and normalise_key(alias) != normalise_key(name) else ()
    attributes = summary.get("attributes") or {}
    facts = "; ".join(f"{k}: {v}" for k, v in attributes.items()) if isinstance(attributes, dict) else ""
    description = " ".join(t for t in (str(summary.get("description") or ""), facts) if t)
    return EntityDraft(name=name, type=str(summary.get("type") or "concept"), description=description, aliases=aliases)


def _mention(entity: str, unit: Unit, role: str = MENTION) -> MentionDraft:
    page = unit.metadata.get("page")
    return MentionDraft(
        entity=entity,
        corpus=unit.corpus,
        unit_id=unit.id,
        role=role,
        page=page if isinstance(page, int) else None,
        start_s=unit.start_s,
        end_s=unit.end_s,
    )


class ModelExtractor:
    """Extracts entities and relations with ``chat`` (see the module docstring).

    ``limits`` bounds the calls of everything this extractor extracts (build one per run for a per-run budget);
    ``cache`` may be ``None``. ``batch_chars`` is the most text one call carries, ``piece_chars`` the longest piece (a
    longer text is cut into windows), ``max_pieces`` the most pieces one batch holds. The constructor does no I/O.
    """

    def __init__(
        self,
        chat: JsonChat,
        *,
        cache: ResponseCache | None = None,
        limits: CallLimits | None = None,
        concurrency: int = 4,
        batch_chars: int = 6000,
        piece_chars: int = 2500,
        max_pieces: int = 12,
    ) -> None:
        if concurrency < 1 or batch_chars < 200 or piece_chars < 100 or max_pieces < 1:
            raise ConfigError(
                "concurrency and max_pieces must be at least 1, batch_chars at least 200 and piece_chars at least 100."
            )
        self.chat = chat
        self.cache = cache
        self.limits = limits or CallLimits()
        self.concurrency = concurrency
        self.batch_chars = batch_chars
        self.piece_chars = min(piece_chars, batch_chars)
        self.max_pieces = max_pieces
        #: Batches whose call failed, and batches left without a call (budget, deadline), over every extraction.
        self.failed = 0
        self.calls_skipped = 0

    @property
    def name(self) -> str:
        """``model:<chat model>``."""
        return f"model:{self.chat.model}"

    def __repr__(self) -> str:
        return f"ModelExtractor({self.chat!r})"

    # -- pieces and batches ---------------------------------------------------------------------------------------

    def _pieces(self, units: Sequence[Unit], source_uri: str) -> tuple[list[_Piece], list[tuple[Unit, EntityDraft]]]:
        parents = {u.parent_id for u in units if u.parent_id}
        pieces: list[_Piece] = []
        anchors: list[tuple[Unit, EntityDraft]] = []
        for unit in units:
            if unit.id in parents:
                continue  # read through its passages or scenes
            anchor = _anchor(unit, source_uri)
            if anchor is not None:
                anchors.append((unit, anchor))
                meta = unit.metadata
                text = "\n".join(
                    str(t)
                    for t in (anchor.name, meta.get("caption"), meta.get("model_description") or unit.content)
                    if t
                )
                pieces += [_Piece(unit, w, anchor.name) for w in _windows(text, self.piece_chars)]
            elif len(unit.content.split()) >= _MIN_WORDS:
                pieces += [_Piece(unit, w, None) for w in _windows(unit.content, self.piece_chars)]
        return pieces, anchors

    def _batches(self, pieces: Sequence[_Piece]) -> list[list[_Piece]]:
        batches: list[list[_Piece]] = []
        size = 0
        for piece in pieces:
            if not batches or size + len(piece.text) > self.batch_chars or len(batches[-1]) >= self.max_pieces:
                batches.append([])
                size = 0
            batches[-1].append(piece)
            size += len(piece.text)
        return batches

    # -- calls --------------------------------------------------------------------------------------------------

    def _answer(self, batch: Sequence[_Piece], source_uri: str) -> ExtractionAnswer | str:
        """The answer for ``batch`` (from the cache, else a call), or why there is none: ``"skipped"`` (no call may
        start) or ``"failed"`` (logged)."""
        body = "\n\n".join(f"[P{i}] {p.text}" for i, p in enumerate(batch, 1))
        key = request_key(model=self.chat.name, prompt_version=PROMPT_VERSION, kind="extract", payload=body)
        if self.cache is not None and (cached := self.cache.get(key)) is not None:
            try:
                return ExtractionAnswer.model_validate(cached)
            except ValueError:
                pass
        if not self.limits.acquire():
            return "skipped"
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"{body}\n\nReply with the JSON object."},
        ]
        try:
            answer = self.chat.ask(messages, ExtractionAnswer)
        except UniversalRAGError as e:
            _log.warning(
                "%s: graph extraction of %d pieces failed (%s); they add no entities.", source_uri, len(batch), e
            )
            return "failed"
        if self.cache is not None:
            self.cache.put(key, answer.model_dump())
        return answer

    def extract(self, units: Sequence[Unit], *, source_uri: str) -> Extraction:
        """The entities, relations and mentions a model finds in ``units`` (one source's), with the anchors of its
        described non-text units; see the module docstring."""
        pieces, anchors = self._pieces(units, source_uri)
        batches = self._batches(pieces)
        if batches:
            with ThreadPoolExecutor(
                max_workers=min(self.concurrency, len(batches)), thread_name_prefix="extract"
            ) as pool:
                answers = list(pool.map(lambda b: self._answer(b, source_uri), batches))
        else:
            answers = []
        skipped = sum(a == "skipped" for a in answers)
        self.calls_skipped += skipped
        self.failed += sum(a == "failed" for a in answers)
        if skipped:
            _log.warning(
                "%s: graph extraction stopped at the %s for model calls (%d made); some text adds no entities.",
                source_uri,
                self.limits.exhausted or "limit",
                self.limits.calls,
            )
        entities: list[EntityDraft] = [a for _, a in anchors]
        relations: list[RelationDraft] = []
        mentions: list[MentionDraft] = [_mention(a.name, u, ANCHOR) for u, a in anchors]
        for batch, answer in zip(batches, answers, strict=True):
            if isinstance(answer, ExtractionAnswer):
                _read(answer, batch, entities, relations, mentions)
        return Extraction(tuple(entities), tuple(relations), tuple(mentions))


def _read(
    answer: ExtractionAnswer,
    batch: Sequence[_Piece],
    entities: list[EntityDraft],
    relations: list[RelationDraft],
    mentions: list[MentionDraft],
) -> None:
    """Add what one answer says about its ``batch`` to the lists: each entity with a mention per unit whose piece
    names it (the pieces it cites, else those whose text holds its name), ``belongs_to`` relations to anchors, and
    the relations between known entities."""
    labels = {f"P{i}": p for i, p in enumerate(batch, 1)}
    known: dict[str, str] = {}
    for found in answer.entities:
        key = normalise_key(found.name)
        if not key:
            continue
        cited = [labels[label.strip("[] ").upper()] for label in found.pieces if label.strip("[] ").upper() in labels]
        if not cited:
            pattern = re.compile(rf"\b{re.escape(found.name)}\b", re.IGNORECASE)
            cited = [p for p in batch if pattern.search(p.text)]
        if not cited:
            continue  # named by no piece: nothing ties it to a unit
        known[key] = found.name
        aliases = tuple(a for a in found.aliases if normalise_key(a) and normalise_key(a) != key)
        entities.append(EntityDraft(found.name, found.type, found.description, aliases))
        seen: set[tuple[str, str | None]] = set()
        for piece in cited:
            if (piece.unit.id, piece.anchor) in seen:
                continue
            seen.add((piece.unit.id, piece.anchor))
            mentions.append(_mention(found.name, piece.unit))
            if piece.anchor is not None and normalise_key(piece.anchor) != key:
                relations.append(
                    RelationDraft(found.name, piece.anchor, BELONGS_TO, f"{found.name} is shown in {piece.anchor}.")
                )
    anchors = {normalise_key(p.anchor): p.anchor for p in batch if p.anchor}
    for rel in answer.relations:
        source = known.get(normalise_key(rel.source)) or anchors.get(normalise_key(rel.source))
        target = known.get(normalise_key(rel.target)) or anchors.get(normalise_key(rel.target))
        if source and target and normalise_key(source) != normalise_key(target):
            relations.append(RelationDraft(source, target, rel.keywords, rel.description, rel.strength / 10.0))


def model_extractor_from_settings(settings: Settings, **overrides: Any) -> ModelExtractor | None:
    """A :class:`ModelExtractor` with the chat model of ``settings`` (``UNIVERSALRAG_LLM_MODEL`` at
    ``UNIVERSALRAG_LLM_BASE_URL``), its calls bounded like descriptions' (``UNIVERSALRAG_DESCRIBE_MAX_CALLS`` per
    extractor, ``UNIVERSALRAG_DESCRIBE_RATE`` per minute) and cached with them under ``UNIVERSALRAG_HOME``; ``None``
    when no chat model is configured. ``overrides`` go to the constructor."""
    chat = JsonChat.from_settings(settings, max_tokens=4096)  # a batch's entities and relations can be long
    if chat is None:
        return None
    chat.require()
    kwargs: dict[str, Any] = {
        "cache": ResponseCache(cache_path(settings)),
        "limits": CallLimits(max_calls=settings.describe_max_calls, per_minute=settings.describe_rate),
    }
    kwargs.update(overrides)
    return ModelExtractor(chat, **kwargs)
