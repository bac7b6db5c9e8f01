"""``UniversalRAGQueryEngine``: route → retrieve → answer, as a LlamaIndex query engine.

Two ways to answer:

- **with a LlamaIndex LLM** (``llm=``): the routed nodes go to a LlamaIndex response synthesizer (default:
  ``get_response_synthesizer(llm=llm)``, compact mode). That synthesizer is text-only: images, clips and videos
  enter the prompt as their text descriptions (caption, alt text, transcript with its time range). To send the
  pictures to a vision chat model, pass ``response_synthesizer=get_response_synthesizer(llm=..., multimodal=True)``
  (an image's file, or with ``image_mode="base64"`` also a clip's middle frame, goes as an image block, its
  description as text). When the router decides ``none``, the LLM answers the question directly.
- **without one**: the core's own generator answers (``UniversalRAG.query``, an OpenAI-compatible chat model
  configured by ``UNIVERSALRAG_LLM_*``, which sends images and clip frames itself). When the core has no
  generator either, the response text says so and lists the evidence.

In every case ``Response.source_nodes`` holds the retrieved nodes (at most ``similarity_top_k``, in the library's
order, each node's text cut at about ``max_unit_tokens`` tokens) and ``Response.metadata`` the route decision.
A query emits LlamaIndex's callback events and instrumentation events as ``RetrieverQueryEngine`` does: a ``query``
event around the whole query and a ``retrieve`` event around routing and retrieval (its end payload holds the
nodes), so ``LlamaDebugHandler`` and other handlers see them with or without an LLM.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import llama_index.core.instrumentation as instrument
from llama_index.core.base.response.schema import RESPONSE_TYPE, Response
from llama_index.core.bridge.pydantic import Field, model_validator
from llama_index.core.callbacks.schema import CBEventType, EventPayload
from llama_index.core.instrumentation.events.query import QueryEndEvent, QueryStartEvent
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent, RetrievalStartEvent
from llama_index.core.llms import LLM
from llama_index.core.prompts import PromptTemplate
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.response_synthesizers import BaseSynthesizer, get_response_synthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle, QueryType

from universalrag.errors import GenerationError
from universalrag.evidence import RETRIEVED_NOTE, build_evidence, check_unit_tokens
from universalrag.framing import neutralise
from universalrag.pipeline import UniversalRAG
from universalrag.types import NO_RETRIEVAL, Hit, RouteDecision

from .base import UNIT_TEXT_TOKENS, ImageMode, check_top_k
from .filters import to_core_filter
from .retriever import UniversalRAGRetriever

__all__ = ["UniversalRAGQueryEngine", "evidence_only_text"]

_PREVIEW_CHARS = 300
_log = logging.getLogger(__name__)
dispatcher = instrument.get_dispatcher(__name__)

#: Fields a deep copy shares instead of copying: the pipeline (pool, threads, locks), and the services the caller
#: handed in (a model client, a synthesizer, callback handlers), which a copy should keep using.
_SHARED_FIELDS = ("rag", "llm", "response_synthesizer", "callback_manager")


#: The default synthesizer's prompts: LlamaIndex's, with the retrieved context inside a <retrieved-data> frame that
#: the nodes cannot close (:func:`framed`) and the sentence that says what the frame holds.
QA_PROMPT = PromptTemplate(
    "Context information is below, inside <retrieved-data> tags. " + RETRIEVED_NOTE + "\n<retrieved-data>\n"
    "{context_str}\n</retrieved-data>\nGiven the context information and not prior knowledge, answer the query.\n"
    "Query: {query_str}\nAnswer: "
)
REFINE_PROMPT = PromptTemplate(
    "The original query is as follows: {query_str}\nWe have provided an existing answer: {existing_answer}\nWe have "
    "the opportunity to refine the existing answer (only if needed) with some more context below, inside "
    "<retrieved-data> tags. " + RETRIEVED_NOTE + "\n<retrieved-data>\n{context_msg}\n</retrieved-data>\nGiven the "
    "new context, refine the original answer to better answer the query. If the context isn't useful, return the "
    "original answer.\nRefined Answer: "
)


def framed(nodes: Sequence[NodeWithScore]) -> list[NodeWithScore]:
    """``nodes`` whose text and text metadata cannot open or close a ``<retrieved-data>`` frame
    (:func:`universalrag.framing.neutralise`); a node that spells no such tag is passed as it is."""
    out: list[NodeWithScore] = []
    for item in nodes:
        node = item.node
        text = node.get_content()
        meta = {k: neutralise(v) if isinstance(v, str) else v for k, v in node.metadata.items()}
        if neutralise(text) == text and meta == node.metadata:
            out.append(item)
            continue
        copy = node.model_copy(deep=True)
        copy.metadata = meta
        if hasattr(copy, "text"):
            copy.text = neutralise(text)
        out.append(NodeWithScore(node=copy, score=item.score))
    return out


def evidence_only_text(decision: RouteDecision, nodes: Sequence[NodeWithScore]) -> str:
    """The response text when nothing can write an answer: why, and a preview of each piece of evidence."""
    hint = "pass llm= (a LlamaIndex LLM) to the query engine or set UNIVERSALRAG_LLM_MODEL"
    if not decision.needs_retrieval:
        return (
            f"The router decided that this question needs no retrieval (route {NO_RETRIEVAL!r}), and no "
            f"language model is configured to answer it: {hint}."
        )
    routes = ", ".join(r for r in decision.routes if r != NO_RETRIEVAL)
    if not nodes:
        return f"No language model is configured ({hint}), and the search of {routes} found no evidence."
    lines = [
        (f"No language model is configured ({hint}), so here is the evidence found in {routes}, without an answer:")
    ]
    for item in nodes:
        text = " ".join(item.node.get_content().split())
        preview = text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS].rstrip() + " […]"
        lines.append(f"{item.node.metadata.get('label', item.node.node_id)}: {preview}")
    return "\n".join(lines)


def _metadata(decision: RouteDecision, **extra: Any) -> dict[str, Any]:
    return {"route_decision": decision.to_dict(), "routes": list(decision.routes), **extra}


class UniversalRAGQueryEngine(CustomQueryEngine):
    """Routed multimodal question answering over a :class:`~universalrag.pipeline.UniversalRAG`.

    Construct with keywords: ``UniversalRAGQueryEngine(rag=rag, llm=None)``. ``similarity_top_k`` (the most
    nodes retrieved in total, at least 1), ``routes`` (fixed corpora, no router), ``filter`` (LlamaIndex
    ``MetadataFilters`` or a core filter mapping), ``max_unit_tokens`` (each node's text cut at about that many
    tokens; ``None`` keeps whole units) and ``image_mode`` shape retrieval as in :class:`UniversalRAGRetriever`.
    Like ``UniversalRAG.query``, a question the router judges answerable without retrieval (``none``) is answered
    directly. See the module docstring for how answers are made and which callback events a query emits.

    ``copy.deepcopy`` copies the settings and shares ``rag``, ``llm``, ``response_synthesizer`` and the callback
    manager; pickling raises a ``TypeError`` (a live database pipeline cannot cross processes).
    """

    rag: UniversalRAG = Field(description="The UniversalRAG pipeline that routes and retrieves.")
    llm: LLM | None = Field(default=None, description="A LlamaIndex LLM; None uses the core's generator.")
    response_synthesizer: BaseSynthesizer | None = Field(
        default=None, description="Replaces the default synthesizer built from llm (needs llm)."
    )
    similarity_top_k: int | None = Field(default=None, description="Most nodes in total (None: rag.k).")
    routes: list[str] | None = Field(default=None, description="Fixed corpora; None asks the router.")
    filter: dict[str, Any] | None = Field(default=None, description="Metadata filter (MetadataFilters converted).")
    filters: dict[str, Any] | None = Field(default=None, description="Deprecated spelling of filter.")
    max_unit_tokens: int | None = Field(
        default=UNIT_TEXT_TOKENS, description="Cut each node's text at about this many tokens; None: whole."
    )
    image_mode: ImageMode = Field(default="path", description="How pictures travel in nodes.")

    def __init__(self, **data: Any) -> None:
        # Checked here, not in pydantic validators, so that callers get the core's error types (InvalidInputError,
        # FilterError) rather than a ValidationError wrapping them.
        check_top_k(data.get("similarity_top_k"))
        check_unit_tokens(data.get("max_unit_tokens", UNIT_TEXT_TOKENS))
        for key in ("filter", "filters"):
            if data.get(key) is not None:
                data[key] = dict(to_core_filter(data[key]) or {})
        super().__init__(**data)

    @model_validator(mode="after")
    def _check(self) -> UniversalRAGQueryEngine:
        if self.response_synthesizer is not None and self.llm is None:
            raise ValueError("response_synthesizer needs llm= as well (the LLM also answers 'none' questions).")
        return self

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> UniversalRAGQueryEngine:
        """A copy of the engine's settings sharing the pipeline and the caller's services (see ``_SHARED_FIELDS``):
        the pipeline's pool and locks cannot be copied, and a model client should not be duplicated."""
        memo = {} if memo is None else memo
        for name in _SHARED_FIELDS:
            value = getattr(self, name)
            memo[id(value)] = value
        return super().__deepcopy__(memo)

    @property
    def retriever(self) -> UniversalRAGRetriever:
        """The retriever this engine uses (built from its fields)."""
        return UniversalRAGRetriever(
            rag=self.rag,
            similarity_top_k=self.similarity_top_k,
            routes=self.routes,
            filter=self._filter(),
            allow_none=True,
            image_mode=self.image_mode,
            max_unit_tokens=self.max_unit_tokens,
            callback_manager=self.callback_manager,
        )

    def _filter(self) -> Mapping[str, Any] | None:
        return self.filter if self.filter is not None else self.filters

    def _synthesizer(self) -> BaseSynthesizer:
        return self.response_synthesizer or get_response_synthesizer(
            llm=self.llm,
            callback_manager=self.callback_manager,
            text_qa_template=QA_PROMPT,
            refine_template=REFINE_PROMPT,
        )

    # -- callback and instrumentation events, as RetrieverQueryEngine emits them ---------------------------------
    @dispatcher.span
    def query(self, str_or_query_bundle: QueryType) -> RESPONSE_TYPE:
        """Answer a query, inside a ``query`` callback event and instrumentation span."""
        dispatcher.event(QueryStartEvent(query=str_or_query_bundle))
        query_str = self._query_str(str_or_query_bundle)
        with (
            self.callback_manager.as_trace("query"),
            self.callback_manager.event(CBEventType.QUERY, payload={EventPayload.QUERY_STR: query_str}) as event,
        ):
            response = self._as_response(self.custom_query(query_str))
            event.on_end(payload={EventPayload.RESPONSE: response})
        dispatcher.event(QueryEndEvent(query=str_or_query_bundle, response=response))
        return response

    @dispatcher.span
    async def aquery(self, str_or_query_bundle: QueryType) -> RESPONSE_TYPE:
        """Async twin of :meth:`query`."""
        dispatcher.event(QueryStartEvent(query=str_or_query_bundle))
        query_str = self._query_str(str_or_query_bundle)
        with (
            self.callback_manager.as_trace("query"),
            self.callback_manager.event(CBEventType.QUERY, payload={EventPayload.QUERY_STR: query_str}) as event,
        ):
            response = self._as_response(await self.acustom_query(query_str))
            event.on_end(payload={EventPayload.RESPONSE: response})
        dispatcher.event(QueryEndEvent(query=str_or_query_bundle, response=response))
        return response

    @staticmethod
    def _query_str(query: QueryType) -> str:
        return query.query_str if isinstance(query, QueryBundle) else str(query)

    @staticmethod
    def _as_response(raw: Any) -> RESPONSE_TYPE:
        return Response(raw) if isinstance(raw, str) else raw

    @contextmanager
    def _retrieve_event(self, query_str: str) -> Iterator[list[NodeWithScore]]:
        """A ``retrieve`` callback event and retrieval instrumentation events around the block, which fills the
        yielded list with the nodes it retrieved (the events' end payload)."""
        dispatcher.event(RetrievalStartEvent(str_or_query_bundle=query_str))
        nodes: list[NodeWithScore] = []
        with self.callback_manager.event(CBEventType.RETRIEVE, payload={EventPayload.QUERY_STR: query_str}) as event:
            yield nodes
            event.on_end(payload={EventPayload.NODES: nodes})
        dispatcher.event(RetrievalEndEvent(str_or_query_bundle=query_str, nodes=nodes))

    def _retrieve(self, query_str: str) -> tuple[RouteDecision, list[Hit], list[NodeWithScore]]:
        retriever = self.retriever
        with self._retrieve_event(query_str) as nodes:
            decision, hits = retriever.search(query_str)
            nodes.extend(retriever.to_nodes(hits, decision))
        return decision, hits, nodes

    async def _aretrieve(self, query_str: str) -> tuple[RouteDecision, list[Hit], list[NodeWithScore]]:
        retriever = self.retriever
        with self._retrieve_event(query_str) as nodes:
            decision, hits = await retriever.asearch(query_str)
            nodes.extend(await asyncio.to_thread(retriever.to_nodes, hits, decision))  # base64 decodes media
        return decision, hits, nodes

    # -- the core's generator (or evidence only) ---------------------------------------------------------------
    def _generator_response(
        self,
        decision: RouteDecision,
        nodes: list[NodeWithScore],
        text: str | None,
        citations: Sequence[str],
        timings: Mapping[str, float],
        warning: str | None,
    ) -> Response:
        generator = self.rag.generator
        meta = _metadata(
            decision,
            citations=list(citations),
            timings_ms=dict(timings),
            answered_by=f"universalrag:{generator.name}" if text is not None and generator else None,
        )
        if warning:
            meta["warning"] = warning
        body = text if text is not None else evidence_only_text(decision, nodes)
        return Response(response=body, source_nodes=nodes, metadata=meta)

    def _core_answer(self, query_str: str, hits: Sequence[Hit]) -> tuple[str | None, tuple[str, ...], str | None]:
        """``(text, citations, warning)`` from the core's generator, as ``UniversalRAG.query`` makes them: no
        generator, no text; a failed model, no text and the reason (logged)."""
        generator = self.rag.generator
        if generator is None:
            return None, (), None
        try:
            generation = generator.generate(query_str, build_evidence(hits, budget=self.rag.budget))
        except GenerationError as e:
            _log.warning("No answer from the language model, returning the evidence only: %s", e)
            return None, (), str(e)
        return generation.text, tuple(generation.citations), None

    async def _acore_answer(
        self, query_str: str, hits: Sequence[Hit]
    ) -> tuple[str | None, tuple[str, ...], str | None]:
        generator = self.rag.generator
        if generator is None:
            return None, (), None
        evidence = await asyncio.to_thread(build_evidence, hits, budget=self.rag.budget)
        try:
            generation = await generator.agenerate(query_str, evidence)
        except GenerationError as e:
            _log.warning("No answer from the language model, returning the evidence only: %s", e)
            return None, (), str(e)
        return generation.text, tuple(generation.citations), None

    # -- a LlamaIndex LLM -------------------------------------------------------------------------------------
    def _llm_name(self) -> str:
        assert self.llm is not None
        return f"llamaindex:{self.llm.class_name()}"

    def _finish(self, response: Any, decision: RouteDecision) -> Any:
        response.metadata = {**(response.metadata or {}), **_metadata(decision, answered_by=self._llm_name())}
        return response

    def custom_query(self, query_str: str) -> Any:
        """Answer ``query_str``; returns a LlamaIndex ``Response`` (or the synthesizer's response type)."""
        started = time.perf_counter()
        decision, hits, nodes = self._retrieve(query_str)
        if self.llm is None:
            retrieved = time.perf_counter()
            text, citations, warning = self._core_answer(query_str, hits)
            timings = {"retrieve": (retrieved - started) * 1000, "generate": (time.perf_counter() - retrieved) * 1000}
            return self._generator_response(decision, nodes, text, citations, timings, warning)
        if not decision.needs_retrieval:
            text = self.llm.complete(query_str).text
            return self._finish(Response(response=text, source_nodes=[]), decision)
        return self._finish(self._synthesizer().synthesize(query_str, framed(nodes)), decision)

    async def acustom_query(self, query_str: str) -> Any:
        """Async twin of :meth:`custom_query`."""
        started = time.perf_counter()
        decision, hits, nodes = await self._aretrieve(query_str)
        if self.llm is None:
            retrieved = time.perf_counter()
            text, citations, warning = await self._acore_answer(query_str, hits)
            timings = {"retrieve": (retrieved - started) * 1000, "generate": (time.perf_counter() - retrieved) * 1000}
            return self._generator_response(decision, nodes, text, citations, timings, warning)
        if not decision.needs_retrieval:
            text = (await self.llm.acomplete(query_str)).text
            return self._finish(Response(response=text, source_nodes=[]), decision)
        return self._finish(await self._synthesizer().asynthesize(query_str, framed(nodes)), decision)
