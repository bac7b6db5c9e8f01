"""The code blocks of the project's Markdown (the README and the documentation's pages), read with markdown-it-py,
and what they assume: the files their examples ingest and the chat models they call ``chat_model`` and ``llm``.

A block preceded by ``<!-- readme-test: skip REASON -->`` or ``<!-- docs-test: skip REASON -->`` is not run; the
reason must be given (a chat model, a network service, a second server).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

SKIP = re.compile(r"<!--\s*(?:readme|docs)-test:\s*skip\b(?P<reason>[^>]*?)-->")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language (``text`` when none is given), its code, why it is skipped, its first line."""

    lang: str
    code: str
    skip: str | None
    line: int


def code_blocks(markdown: str) -> list[Block]:
    """Every fenced block of ``markdown``, in order, with the skip reason of a marker just before it."""
    out: list[Block] = []
    previous = None
    for token in MarkdownIt("commonmark").parse(markdown):
        if token.type == "fence":
            marker = SKIP.search(previous.content) if previous is not None and previous.type == "html_block" else None
            lang = token.info.split()[0] if token.info.strip() else "text"
            line = token.map[0] + 1 if token.map else 0
            out.append(Block(lang, token.content, marker["reason"] if marker else None, line))
        previous = token
    return out


def example_files(root: Path) -> None:
    """The files the examples name (``docs/``, ``sales.xlsx``, ``photos/``, ``talk.mp4``, ``routing.jsonl``), made
    under ``root`` from the test knowledge base."""
    from support.kb import mixed_folder

    kb = root / "kb"
    mixed_folder(kb)
    (root / "docs").mkdir()
    shutil.copy(kb / "lighthouse.txt", root / "docs" / "lighthouse.txt")
    shutil.copy(kb / "ferries.xlsx", root / "sales.xlsx")
    (root / "photos").mkdir()
    for photo in kb.glob("IMG_*"):
        shutil.copy(photo, root / "photos" / photo.name)
    video = next(p for p in kb.iterdir() if p.suffix in {".mp4", ".mkv", ".webm"})
    shutil.copy(video, root / ("talk" + video.suffix))
    for sidecar in kb.glob(video.stem + ".*"):
        if sidecar != video:
            shutil.copy(sidecar, root / ("talk" + sidecar.suffix))
    shutil.rmtree(kb)
    # the labelled routing questions the commands read: the public sets when this machine has them, else the
    # project's own held-out questions, as the routing guide suggests
    from support.shared_data import ROUTING_TRAIN, present

    repo = Path(__file__).resolve().parents[2]
    routing = ROUTING_TRAIN if present(ROUTING_TRAIN) else repo / "core/universalrag/routing/data/heldout.jsonl"
    shutil.copy(routing, root / "routing.jsonl")


def chat_models() -> dict[str, Any]:
    """What the adapter examples call ``chat_model`` and ``llm``: offline fakes (no chat model here)."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from llama_index.core.llms import MockLLM

    return {"chat_model": FakeListChatModel(responses=["(fake answer)"] * 20), "llm": MockLLM()}
