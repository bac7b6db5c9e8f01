"""Hits → LlamaIndex nodes, and the one place that checks llama-index-core is installed.

Importing this module, or any name of the package, without llama-index-core raises
:class:`~universalrag.errors.MissingDependencyError` naming ``llama-index-retrievers-universalrag``.

A hit becomes a :class:`~llama_index.core.schema.TextNode` whose text is the hit's evidence text as the core
builds it for language models (a table's matched rows before its Markdown, a clip's transcript with its time
range, a long document's matched passages before its text), cut at about ``max_unit_tokens`` tokens
(:func:`universalrag.evidence.unit_text`: a whole manual in one node would flood an agent's context), and whose
metadata says where it came from, its ``rank`` in the returned order and, when the text was cut, ``truncated``.
Image hits become :class:`~llama_index.core.schema.ImageNode` objects (see :func:`hits_to_nodes`).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

from universalrag.errors import MissingDependencyError
from universalrag.evidence import (
    UNIT_TEXT_TOKENS,
    EvidenceBudget,
    build_evidence,
    check_unit_tokens,
    hit_file,
    hit_images,
    hit_path,
    unit_text,
)
from universalrag.plan import check_k
from universalrag.types import Hit, Modality, RouteDecision

try:
    from llama_index.core.schema import ImageNode, NodeRelationship, NodeWithScore, RelatedNodeInfo, TextNode
except ImportError as e:  # tested in a subprocess that hides llama_index.core
    raise MissingDependencyError(
        "llama-index-core", "", feature="the LlamaIndex integration", distribution="llama-index-retrievers-universalrag"
    ) from e

__all__ = [
    "LLM_METADATA_KEYS",
    "TOOL_PREFIX",
    "UNIT_TEXT_TOKENS",
    "ImageMode",
    "check_top_k",
    "cut_to_k",
    "hit_to_metadata",
    "hits_to_nodes",
]

#: How pictures travel in nodes: ``"path"`` — an image hit's local file as ``ImageNode.image_path`` (or its
#: ``http(s)`` URI as ``image_url``), clips and videos as text; ``"base64"`` — JPEG bytes as
#: ``ImageNode.image``: the image resized as the core does for models, and for clips and videos their middle
#: sampled frame.
ImageMode = Literal["path", "base64"]

#: Metadata keys shown to a language model with a node's text; the others (ids, scores, route decision, the
#: unit's raw metadata, ``rank``, ``truncated``, and ``uri``, which may be a local path) stay out of prompts and
#: embeddings.
#: ``description`` is an ImageNode's caption or transcript (its text), so that multimodal synthesis, which sends
#: pictures and metadata only, keeps it.
LLM_METADATA_KEYS: frozenset[str] = frozenset(
    {"corpus", "title", "start_s", "end_s", "frame_time_s", "description", "file_name", "page_label"}
)

#: Per-corpus tools are named this prefix and the corpus name (``search_table``); the selector maps them back.
TOOL_PREFIX = "search_"

_NO_TEXT_LIMIT = 10**9


def check_top_k(value: int | None, name: str = "similarity_top_k") -> int | None:
    """``value`` when it is ``None`` (the pipeline's ``k``) or an integer of at least 1; else the core's
    :class:`~universalrag.errors.InvalidInputError` naming ``name`` (:func:`universalrag.plan.check_k`: one rule
    and one sentence on every surface). LlamaIndex rejects ``similarity_top_k=0`` too: a retriever asked for
    nothing is a caller's mistake, not an empty result."""
    return None if value is None else check_k(value, name=name)


def cut_to_k(hits: Sequence[Hit], k: int) -> list[Hit]:
    """The first ``k`` of ``hits``. The core returns ``k`` hits per chosen corpus, fused best first; LlamaIndex's
    ``similarity_top_k`` is the total a retriever returns, so the fused order is kept and cut."""
    return list(hits[:k])


def hit_to_metadata(
    hit: Hit,
    *,
    decision: RouteDecision | None = None,
    label: str | None = None,
    rank: int | None = None,
    truncated: bool = False,
) -> dict[str, Any]:
    """A node's metadata for ``hit``: the unit's own metadata (title, columns, frame times, ...) overlaid with
    ``corpus``, ``modality``, ``granularity``, ``uri``, ``unit_id``, ``source_id``, ``parent_id``, ``score``,
    ``start_s``/``end_s`` (clips and videos), ``matched_parts`` (tables, long documents), ``channel_scores``,
    ``label``, ``rank`` (1-based position in the library's order: scores of different corpora and channels are not
    comparable, so a re-sort by score would lose that order), ``truncated: True`` when the node's text was cut and,
    when a router chose the corpora, ``routes`` and ``route_decision`` (:meth:`RouteDecision.to_dict`); a unit of a
    local file has ``file_path`` and ``file_name``, as LlamaIndex's file readers name them."""
    meta: dict[str, Any] = dict(hit.metadata)
    meta.update(
        {
            "corpus": hit.corpus,
            "modality": str(hit.modality) if hit.modality else None,
            "granularity": str(hit.granularity) if hit.granularity else None,
            "uri": hit.uri,
            "unit_id": hit.id,
            "source_id": hit.source_id,
            "parent_id": hit.parent_id,
            "score": float(hit.score),
        }
    )
    if hit.start_s is not None or hit.end_s is not None:
        meta["start_s"], meta["end_s"] = hit.start_s, hit.end_s
    local = hit_file(hit)
    if local:  # a local file, named as LlamaIndex's file readers name it
        meta["file_path"] = local
        meta["file_name"] = Path(local).name
    if meta.get("document_format") and meta.get("page") is not None:
        meta["page_label"] = str(meta.get("page_label") or meta["page"])
    if hit.matched_parts:
        meta["matched_parts"] = [{"index": i, "text": t, "score": float(s)} for i, t, s in hit.matched_parts]
    if hit.channel_scores:
        meta["channel_scores"] = {k: float(v) for k, v in hit.channel_scores.items()}
    if label:
        meta["label"] = label
    if rank is not None:
        meta["rank"] = rank
    if truncated:
        meta["truncated"] = True
    if decision is not None:
        meta["routes"] = list(decision.routes)
        meta["route_decision"] = decision.to_dict()
    return meta


def _image_source(hit: Hit, image_mode: ImageMode, budget: EvidenceBudget) -> dict[str, Any] | None:
    """``ImageNode`` keyword arguments carrying the hit's picture, or ``None`` when none can be reached."""
    if image_mode == "base64":
        images, times = hit_images(hit, max_images=1, budget=budget)
        if images:
            extra: dict[str, Any] = {
                "image": base64.b64encode(images[0]).decode("ascii"),
                "image_mimetype": "image/jpeg",
            }
            if times:
                extra["frame_time_s"] = float(times[0])
            return extra
    if hit.modality is not Modality.IMAGE:
        return None
    path = hit_path(hit)
    if path is not None:
        return {"image_path": str(path)}
    if hit.uri and urlparse(hit.uri).scheme in ("http", "https"):
        return {"image_url": hit.uri}
    return None


def _node(hit: Hit, text: str, metadata: dict[str, Any], image: dict[str, Any] | None) -> TextNode:
    relationships: dict[NodeRelationship, RelatedNodeInfo] = {}
    if hit.source_id:
        relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=str(hit.source_id))
    if hit.parent_id:
        relationships[NodeRelationship.PARENT] = RelatedNodeInfo(node_id=str(hit.parent_id))
    extra: dict[str, Any] = {}
    if image is not None:
        if "frame_time_s" in image:
            metadata["frame_time_s"] = image.pop("frame_time_s")
        # LlamaIndex's multimodal synthesis sends an ImageNode's LLM metadata and picture but not its text:
        # the caption or transcript travels as metadata, and the text template shows it only once.
        metadata["description"] = text
        extra["text_template"] = "{metadata_str}"
    hidden = sorted(k for k in metadata if k not in LLM_METADATA_KEYS)
    common: dict[str, Any] = {
        "id_": hit.id,
        "text": text,
        "metadata": metadata,
        "relationships": relationships,
        "excluded_llm_metadata_keys": hidden,
        "excluded_embed_metadata_keys": sorted(metadata),
        **extra,
    }
    return ImageNode(**common, **image) if image is not None else TextNode(**common)


def hits_to_nodes(
    hits: Sequence[Hit],
    *,
    decision: RouteDecision | None = None,
    image_mode: ImageMode = "path",
    budget: EvidenceBudget | None = None,
    max_unit_tokens: int | None = UNIT_TEXT_TOKENS,
) -> list[NodeWithScore]:
    """LlamaIndex nodes for ``hits``, in order, each scored with the hit's (fused) score and its metadata ``rank``
    set to its 1-based position (the order is the library's ranking; scores from different corpora need not
    decrease along it).

    Text, table, clip and video hits become ``TextNode``s; image hits become ``ImageNode``s carrying the
    picture as ``image_mode`` says (clips and videos too, with their middle frame, when ``image_mode`` is
    ``"base64"``; an image that is not a local file keeps its ``http(s)`` URI as ``image_url``). A hit whose
    picture cannot be reached (a remote URI that is not HTTP, a file moved since ingestion) falls back to a
    ``TextNode`` with its caption or transcript. ``budget`` sizes the JPEGs (the
    default :class:`~universalrag.evidence.EvidenceBudget`). Each node's text is cut at about ``max_unit_tokens``
    tokens (a long document's matched passages first; ``None`` keeps whole units), and a cut node has
    ``truncated: True`` in its metadata (kept, like ``rank``, out of what a model or an embedder sees).
    """
    if image_mode not in ("path", "base64"):
        raise ValueError(f"image_mode must be 'path' or 'base64', got {image_mode!r}.")
    check_unit_tokens(max_unit_tokens)
    budget = budget or EvidenceBudget()
    # build_evidence numbers the labels ("[document 2] fs"); the text itself comes from unit_text below.
    evidence = build_evidence(hits, budget=replace(budget, max_text_tokens=_NO_TEXT_LIMIT), with_media=False)
    out = []
    for rank, (hit, item) in enumerate(zip(hits, evidence, strict=False), 1):
        text, cut = unit_text(hit, max_tokens=max_unit_tokens)
        image = _image_source(hit, image_mode, budget)
        meta = hit_to_metadata(hit, decision=decision, label=item.label, rank=rank, truncated=cut)
        out.append(NodeWithScore(node=_node(hit, text, meta, image), score=float(hit.score)))
    return out
