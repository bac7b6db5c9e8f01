"""Descriptions written by a chat model for the non-text units of each source, before the source is written.

Opt-in: ``UNIVERSALRAG_DESCRIBE=1``, ``universalrag ingest --describe`` or ``UniversalRAG.ingest(describe=True)``
(docs/descriptions.md).

:class:`Describer` takes one prepared source and asks the model about each of its images, figures, tables and
scenes (:mod:`.describe_context` says what the model is shown, :mod:`.describe_answer` what it must answer). It
returns the source with each described unit's text extended by the description and embedded again; the unit's
metadata holds the description, the entity summary and where its texts came from.

Requests of one source run concurrently (``concurrency``) within the run's
:class:`~universalrag.generate.call_limits.CallLimits`: a budget of calls, a rate and a deadline. Answers are cached
by what was asked (:class:`~universalrag.generate.response_cache.ResponseCache`), so ingesting the same picture in
the same place again makes no call. A call that fails (HTTP error, timeout, an answer that is not the JSON asked
for) is logged for its unit, which keeps the text it had; the source is still written.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, UniversalRAGError
from ..generate.call_limits import CallLimits
from ..generate.response_cache import ResponseCache, cache_path, request_key
from ..generate.structured import JsonChat
from ..types import CorpusSpec, Unit
from .describe_answer import PROMPT_VERSION, SYSTEM_PROMPT, EntitySummary, UnitDescription
from .describe_context import DescribeRequest, describe_requests, load_pictures, payload, request_messages
from .report import Progress

if TYPE_CHECKING:
    from ..config import Settings
    from ..embed.base import Embedder
    from .units import Prepared

__all__ = [
    "MODEL_ORIGIN",
    "PROMPT_VERSION",
    "DescribeStats",
    "Describer",
    "EntitySummary",
    "UnitDescription",
    "cache_path",
]

_log = logging.getLogger(__name__)

#: The origin recorded in ``description_sources`` for a text a model wrote.
MODEL_ORIGIN = "model"


@dataclass(slots=True)
class DescribeStats:
    """What a describer did so far: units ``described`` by a call, ``cached`` (no call), ``failed`` (logged) and
    ``skipped`` because the budget or the deadline was reached."""

    described: int = 0
    cached: int = 0
    failed: int = 0
    skipped: int = 0


class Describer:
    """Writes a description and an entity summary for each non-text unit with ``chat`` (see the module docstring).

    ``limits`` bounds the calls of every source this describer handles (one describer per ingest run: its budget is
    the run's). ``cache`` may be ``None`` (every answer asked for). The constructor does no I/O.
    """

    def __init__(
        self,
        chat: JsonChat,
        *,
        cache: ResponseCache | None = None,
        limits: CallLimits | None = None,
        concurrency: int = 4,
        image_max_side: int = 1024,
        frames_per_clip: int = 4,
        context_chars: int = 1500,
    ) -> None:
        if concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, got {concurrency}.")
        self.chat = chat
        self.cache = cache
        self.limits = limits or CallLimits()
        self.concurrency = concurrency
        self.image_max_side = image_max_side
        self.frames_per_clip = frames_per_clip
        self.context_chars = context_chars
        self.stats = DescribeStats()

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> Describer:
        """A describer with the chat model of ``settings`` (``UNIVERSALRAG_DESCRIBE_MODEL``, else
        ``UNIVERSALRAG_LLM_MODEL``), its budget (``UNIVERSALRAG_DESCRIBE_MAX_CALLS``) and rate
        (``UNIVERSALRAG_DESCRIBE_RATE``), caching under ``UNIVERSALRAG_HOME``. :class:`ConfigError` when no chat
        model is configured."""
        model = settings.describe_model or settings.llm_model
        if not model:
            raise ConfigError(
                "Model descriptions need a chat model that reads images: set UNIVERSALRAG_LLM_MODEL (or "
                "UNIVERSALRAG_DESCRIBE_MODEL) and UNIVERSALRAG_LLM_BASE_URL, or ingest without --describe."
            )
        chat = JsonChat(
            model,
            base_url=settings.llm_base_url,
            api_key=settings.llm_api_key,
            timeout=settings.llm_timeout,
        ).require()
        kwargs: dict[str, Any] = {
            "cache": ResponseCache(cache_path(settings)),
            "limits": CallLimits(max_calls=settings.describe_max_calls, per_minute=settings.describe_rate),
        }
        kwargs.update(overrides)
        return cls(chat, **kwargs)

    def __repr__(self) -> str:
        return f"Describer({self.chat!r}, cache={self.cache!r})"

    @property
    def identity(self) -> str:
        """What the descriptions depend on (the model and the prompt's version), in the identity of every source
        that holds images, tables or scenes: turning descriptions on, or changing the model, replaces such a source
        at its next ingest (its unchanged units' answers come from the cache)."""
        return f"described by {self.chat.name} with {PROMPT_VERSION}"

    # -- one source ------------------------------------------------------------------------------------------

    def _answer(
        self, request: DescribeRequest, key: str, should_stop: Callable[[], bool] | None
    ) -> UnitDescription | None:
        """The model's answer (cached), or ``None`` when no call may start (budget, deadline, a stop asked for)."""
        if (should_stop is not None and should_stop()) or self.limits.exhausted is not None:
            return None  # no picture read for a call that will not be made
        images, times = load_pictures(request, max_side=self.image_max_side)
        if not self.limits.acquire():
            return None
        answer = self.chat.ask(request_messages(request, SYSTEM_PROMPT, images, times), UnitDescription)
        if self.cache is not None:
            self.cache.put(key, answer.model_dump())
        return answer

    def describe(
        self,
        units: Sequence[Unit],
        spec_of: Callable[[str], CorpusSpec],
        *,
        path: str = "",
        source_hash: str = "",
        on_progress: Callable[[Progress], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> dict[int, UnitDescription]:
        """The answers for the non-text units of one source, by the unit's position in ``units``. Failures are logged
        and left out; ``on_progress`` hears how many of the source's units are described as they are. When
        ``should_stop`` says so (the ingest command's Ctrl-C), no further call starts and :class:`KeyboardInterrupt`
        is raised once the calls under way have answered (their answers are cached; the source is not written)."""
        requests = describe_requests(
            units,
            spec_of,
            source_hash=source_hash,
            frames_per_clip=self.frames_per_clip,
            context_chars=self.context_chars,
        )
        answers: dict[int, UnitDescription] = {}
        pending: list[tuple[DescribeRequest, str]] = []
        for request in requests:
            key = request_key(
                model=self.chat.name, prompt_version=PROMPT_VERSION, kind="describe", payload=payload(request)
            )
            cached = self.cache.get(key) if self.cache is not None else None
            if cached is not None:
                try:
                    answers[request.index] = UnitDescription.model_validate(cached)
                    self.stats.cached += 1
                    continue
                except ValueError:
                    pass  # an answer stored by another version: ask again
            pending.append((request, key))
        if not pending:
            return answers
        total, done = len(pending), 0
        skipped = 0
        with ThreadPoolExecutor(max_workers=min(self.concurrency, total), thread_name_prefix="describe") as pool:
            futures = {pool.submit(self._answer, request, key, should_stop): request for request, key in pending}
            for future in as_completed(futures):
                request = futures[future]
                unit = units[request.index]
                done += 1
                try:
                    answer = future.result()
                except UniversalRAGError as e:
                    self.stats.failed += 1
                    _log.warning(
                        "%s: no model description for its %s (%s); it keeps its text.", unit.uri, request.kind, e
                    )
                else:
                    if answer is None:
                        skipped += 1
                    else:
                        answers[request.index] = answer
                        self.stats.described += 1
                if on_progress is not None:
                    on_progress(
                        Progress(path=path, done=done, total=total, what="units", stage="described by the model")
                    )
        if should_stop is not None and should_stop():
            raise KeyboardInterrupt
        if skipped:
            self.stats.skipped += skipped
            _log.warning(
                "%s: %d units not described: the run's %s for model calls is reached (%d calls made).",
                path or "source",
                skipped,
                self.limits.exhausted or "limit",
                self.limits.calls,
            )
        return answers

    def enrich(
        self,
        prepared: Prepared,
        embedder: Embedder,
        spec_of: Callable[[str], CorpusSpec],
        *,
        path: str = "",
        on_progress: Callable[[Progress], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> Prepared:
        """``prepared`` with its non-text units described (see the module docstring and :meth:`describe`); the same
        object when none is."""
        answers = self.describe(
            prepared.units,
            spec_of,
            path=path,
            source_hash=prepared.source.content_hash,
            on_progress=on_progress,
            should_stop=should_stop,
        )
        if not answers:
            return prepared
        order = sorted(answers)
        texts = [_embedded_text(prepared.units[i], answers[i]) for i in order]
        vectors = embedder.embed(texts)
        units = list(prepared.units)
        for i, vector in zip(order, vectors, strict=True):
            units[i] = _described(units[i], answers[i], vector.tolist(), model=self.chat.name)
        return replace(prepared, units=units)


def _embedded_text(unit: Unit, answer: UnitDescription) -> str:
    """What a described unit's vector is made from: its document's or video's title, the description first (an
    encoder reads only the start of a long text), then the text the unit had."""
    meta = unit.metadata
    title = str(meta.get("document_title") or (meta.get("title") if unit.start_s is not None else "") or "")
    return "\n".join(t for t in (title, answer.entity.name, answer.description, unit.content) if t)


def _described(unit: Unit, answer: UnitDescription, vector: list[float], *, model: str) -> Unit:
    meta = dict(unit.metadata)
    first = meta.get("description_source") or meta.get("transcript_source")
    origins = [str(first)] if first else []
    meta["description_sources"] = [*origins, MODEL_ORIGIN]
    meta["model_description"] = answer.description
    meta["entity"] = answer.entity.model_dump()
    meta["description_model"] = model
    meta["description_prompt"] = PROMPT_VERSION
    if meta.get("description_source") == "filename":  # words of a file name: the model's name says more
        meta["title"] = answer.entity.name[:120]
    content = f"{unit.content}\n\n{answer.description}" if unit.content.strip() else answer.description
    return replace(unit, content=content, embedding=vector, metadata=meta)
