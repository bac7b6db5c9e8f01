"""Core hits ↔ LangChain ``Document``s, and LangChain document ids ↔ the store's UUID unit ids."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from langchain_core.documents import Document

from universalrag.evidence import hit_content, hit_source, hit_text, unit_text
from universalrag.types import Granularity, GraphPath, Hit, Modality, RouteDecision

__all__ = [
    "CORE_KEYS",
    "ID_KEY",
    "decision_from_dict",
    "document_metadata",
    "document_to_hit",
    "documents_to_hits",
    "hit_from_dict",
    "hit_to_document",
    "hits_to_documents",
    "unit_id",
]

#: Unit metadata key holding a LangChain id that is not a UUID (the store keys units by UUID).
ID_KEY = "_langchain_id"

#: The metadata keys :func:`hit_to_document` adds on top of the unit's own metadata.
CORE_KEYS = frozenset(
    {
        "id",
        "corpus",
        "modality",
        "granularity",
        "score",
        "uri",
        "start_s",
        "end_s",
        "source_id",
        "parent_id",
        "matched_parts",
        "channel_scores",
        "routes",
        "route_scores",
        "router",
        "rank",
        "truncated",
    }
)

_NAMESPACE = uuid.UUID("5c1f3f0e-8d1b-4c53-9a4e-2b2f6a0c7d11")


def unit_id(doc_id: str) -> str:
    """The store's UUID for a LangChain document id: the id itself when it is a UUID, else a stable UUIDv5."""
    try:
        return str(uuid.UUID(doc_id))
    except (ValueError, AttributeError, TypeError):
        return str(uuid.uuid5(_NAMESPACE, str(doc_id)))


def decision_from_dict(data: Mapping[str, Any] | RouteDecision) -> RouteDecision:
    """A decision from its ``RouteDecision.to_dict()`` form, as graph states hold it (a :class:`RouteDecision`
    is returned as is)."""
    if isinstance(data, RouteDecision):
        return data
    return RouteDecision.from_dict(data)


def hit_from_dict(data: Mapping[str, Any]) -> Hit:
    """A hit from its :meth:`Hit.to_dict` form (how graph states carry the routing probe's hits and the knowledge
    graph's, with the path that reached them)."""
    parts = tuple((int(p["index"]), str(p["text"]), float(p["score"])) for p in data.get("matched_parts") or ())
    modality, granularity = data.get("modality"), data.get("granularity")
    path = data.get("path")
    return Hit(
        corpus=str(data["corpus"]),
        id=str(data["id"]),
        score=float(data["score"]),
        content=str(data["content"]),
        uri=data.get("uri"),
        metadata=dict(data.get("metadata") or {}),
        parent_id=data.get("parent_id"),
        start_s=data.get("start_s"),
        end_s=data.get("end_s"),
        source_id=data.get("source_id"),
        modality=Modality(modality) if modality else None,
        granularity=Granularity(granularity) if granularity else None,
        matched_parts=parts,
        channel_scores=dict(data.get("channel_scores") or {}),
        path=GraphPath(**path) if isinstance(path, Mapping) else None,
    )


def document_metadata(hit: Hit) -> tuple[str, dict[str, Any]]:
    """The LangChain id and the unit's own metadata of ``hit`` as LangChain's loaders spell it: ``source`` (the
    file's path, or a page's address) and, for PDF, Word and PowerPoint units, ``page`` from 0 with ``page_label``
    (the store's 1-based page as ``page_number``)."""
    meta = dict(hit.metadata)
    doc_id = meta.pop(ID_KEY, None)
    source = hit_source(hit)  # as every LangChain loader names the file or address a document came from
    if source is not None:
        meta["source"] = source
    if meta.get("document_format") and isinstance(meta.get("page"), int):
        # LangChain's PDF loaders: ``page`` counts from 0, ``page_label`` is the page as printed, ``source`` the
        # file; the store's 1-based page travels as ``page_number``
        meta["page_number"] = meta["page"]
        meta["page"] = meta["page_number"] - 1
        meta["page_label"] = str(meta.get("page_label") or meta["page_number"])
    return (str(doc_id) if doc_id is not None else hit.id), meta


def hit_to_document(
    hit: Hit, *, decision: RouteDecision | None = None, rank: int | None = None, max_tokens: int | None = None
) -> Document:
    """A hit as a ``Document``: the text a model should read (:func:`universalrag.evidence.unit_text`: a table's
    matched rows before its Markdown, so a chain that joins ``page_content`` shows the row that answers; a long
    document's matched passages first; a clip's transcript with its video and time range; any other unit's content
    as it is), within ``max_tokens`` (``None``: whole), the unit's own metadata with ``source`` as LangChain's
    loaders set it (the file's path, or the address of a page that is not a file), then the hit's fields (corpus,
    modality, granularity, score, uri, start_s/end_s, source_id, parent_id, matched_parts, channel_scores),
    ``truncated`` (whether ``page_content`` was cut, ending in ``" […]"``), ``rank`` when given (the 1-based
    position in the returned list: scores of different corpora and channels are not comparable, so the order, not
    the score, is the ranking) and, when given, the route decision (routes, route_scores, router)."""
    doc_id, meta = document_metadata(hit)
    text, cut = unit_text(hit, max_tokens=max_tokens)
    meta.update(
        {
            "id": doc_id,
            "corpus": hit.corpus,
            "modality": str(hit.modality) if hit.modality else None,
            "granularity": str(hit.granularity) if hit.granularity else None,
            "score": float(hit.score),
            "uri": hit.uri,
            "start_s": hit.start_s,
            "end_s": hit.end_s,
            "source_id": hit.source_id,
            "parent_id": hit.parent_id,
            "truncated": cut,
        }
    )
    if rank is not None:
        meta["rank"] = rank
    if hit.matched_parts:
        meta["matched_parts"] = [{"index": i, "text": t, "score": float(s)} for i, t, s in hit.matched_parts]
    if hit.channel_scores:
        meta["channel_scores"] = {k: float(v) for k, v in hit.channel_scores.items()}
    if decision is not None:
        meta.update(
            routes=list(decision.routes),
            route_scores={k: float(v) for k, v in decision.scores.items()},
            router=decision.router,
        )
    return Document(id=doc_id, page_content=text, metadata=meta)


def hits_to_documents(
    hits: Iterable[Hit], *, decision: RouteDecision | None = None, max_tokens: int | None = None
) -> list[Document]:
    """:func:`hit_to_document` for each hit, in order, each with its ``rank`` (1-based)."""
    return [hit_to_document(h, decision=decision, rank=i, max_tokens=max_tokens) for i, h in enumerate(hits, 1)]


def document_to_hit(doc: Document) -> Hit:
    """A ``Document`` made by :func:`hit_to_document` back as a :class:`Hit` (other documents become text hits
    of corpus ``"external"``, so that they can still be shown to a model). A ``truncated`` document gives a hit
    whose content is the cut text: what the model reads stays what the document showed."""
    meta = dict(doc.metadata)
    parts = tuple((int(p["index"]), str(p["text"]), float(p["score"])) for p in meta.get("matched_parts") or ())
    own = {k: v for k, v in meta.items() if k not in CORE_KEYS}
    if own.get("document_format") and isinstance(own.get("page_number"), int):
        own["page"] = own.pop("page_number")  # back to the store's 1-based page
    modality, granularity = meta.get("modality"), meta.get("granularity")
    hit = Hit(
        corpus=str(meta.get("corpus") or "external"),
        id=str(meta.get("id") or doc.id or ""),
        score=float(meta.get("score") or 0.0),
        content=doc.page_content,
        uri=meta.get("uri"),
        metadata=own,
        parent_id=meta.get("parent_id"),
        start_s=meta.get("start_s"),
        end_s=meta.get("end_s"),
        source_id=meta.get("source_id"),
        modality=Modality(modality) if modality else Modality.TEXT,
        granularity=Granularity(granularity) if granularity else None,
        matched_parts=parts,
        channel_scores=dict(meta.get("channel_scores") or {}),
    )
    own_content = replace(hit, content=hit_content(doc.page_content, hit))  # the unit's content, without its heading
    if meta.get("truncated") and hit_text(own_content) != doc.page_content:
        # cut inside the matched rows or passages: the text already shows them, so the hit must not add them again
        return replace(hit, content=doc.page_content, matched_parts=())
    return own_content


def documents_to_hits(docs: Sequence[Document]) -> list[Hit]:
    """:func:`document_to_hit` for each document."""
    return [document_to_hit(d) for d in docs]
