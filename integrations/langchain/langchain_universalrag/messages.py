"""Retrieved documents → chat messages for multimodal chat models.

Images and the frames sampled from clips and videos become LangChain's standard image content blocks
(``{"type": "image", "base64": ..., "mime_type": "image/jpeg"}``), which every multimodal chat model
integration translates to its provider's format. The prompt itself (evidence ids ``[E1]``…, labels, frame
timestamps ``t=12.5s``, the question last) is the core's :func:`universalrag.generate.build_messages`; this
module only changes its OpenAI-style parts into LangChain messages and blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._deps import require_langchain

require_langchain()

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from universalrag.evidence import EvidenceBudget, build_evidence
from universalrag.generate import build_messages
from universalrag.types import Evidence

from ._convert import documents_to_hits

__all__ = ["build_chat_messages", "documents_to_content_blocks", "documents_to_evidence", "openai_to_messages"]


def documents_to_evidence(
    documents: Sequence[Document], *, budget: EvidenceBudget | None = None, with_media: bool = True
) -> list[Evidence]:
    """Evidence for documents returned by this package's retrievers and tools, in order, within ``budget``:
    the text (table rows that matched, clip transcripts with their time range) and, with ``with_media``, the
    JPEG bytes of images and of frames sampled from clips and videos (local files only)."""
    return build_evidence(documents_to_hits(documents), budget=budget or EvidenceBudget(), with_media=with_media)


def _block(part: dict[str, Any]) -> dict[str, Any]:
    if part.get("type") == "image_url":
        url = str(part["image_url"]["url"])
        if url.startswith("data:") and ";base64," in url:
            header, data = url[5:].split(";base64,", 1)
            return {"type": "image", "base64": data, "mime_type": header or "image/jpeg"}
        return {"type": "image", "url": url}
    return {"type": "text", "text": str(part.get("text", ""))}


def openai_to_messages(messages: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """OpenAI-style chat messages (as the core builds them) as LangChain messages with standard content
    blocks."""
    kinds = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    out: list[BaseMessage] = []
    for message in messages:
        content = message["content"]
        blocks: Any = content if isinstance(content, str) else [_block(p) for p in content]
        out.append(kinds[message["role"]](content=blocks))
    return out


def documents_to_content_blocks(
    documents: Sequence[Document], *, budget: EvidenceBudget | None = None, include_text: bool = True
) -> list[dict[str, Any]]:
    """Content blocks for ``documents``: per document a text block (``[E1] label`` and its text), then its
    picture or sampled frames as base64 image blocks, each frame preceded by a ``t=12.5s`` text block.

    With ``include_text=False`` only the image blocks are returned (to add pictures to a prompt of your own).
    Put the blocks into a ``HumanMessage(content=[...])``.
    """
    evidence = documents_to_evidence(documents, budget=budget)
    if not evidence:
        return []
    parts = build_messages("-", evidence)[-1]["content"][:-1]  # the question part comes last: drop it
    blocks = [_block(p) for p in parts]
    return blocks if include_text else [b for b in blocks if b["type"] == "image"]


def build_chat_messages(
    question: str,
    documents: Sequence[Document] | Sequence[Evidence],
    *,
    system_prompt: str | None = None,
    budget: EvidenceBudget | None = None,
) -> list[BaseMessage]:
    """The messages that ask a chat model to answer ``question`` from ``documents`` (or core ``Evidence``): a
    system message asking for answers that cite ``[E1]``-style ids, and a human message holding the evidence
    as text and image blocks, then the question. Without documents: the bare question."""
    items = list(documents)
    evidence = items if all(isinstance(i, Evidence) for i in items) else documents_to_evidence(items, budget=budget)  # type: ignore[arg-type]
    return openai_to_messages(build_messages(question, evidence, system_prompt=system_prompt))  # type: ignore[arg-type]
