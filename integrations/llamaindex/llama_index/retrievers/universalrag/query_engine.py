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

In every case ``Response.source_nodes`` holds the retrieved nodes and ``Response.metadata`` the route decision.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.response.schema import Response
from llama_index.core.bridge.pydantic import Field, model_validator
from llama_index.core.llms import LLM
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.response_synthesizers import BaseSynthesizer, get_response_synthesizer
from llama_index.core.schema import NodeWithScore

from universalrag.pipeline import UniversalRAG
from universalrag.types import NO_RETRIEVAL, Answer, RouteDecision

from .base import ImageMode, hits_to_nodes
from .retriever import UniversalRAGRetriever

__all__ = ["UniversalRAGQueryEngine", "evidence_only_text"]

_PREVIEW_CHARS = 300


def evidence_only_text(decision: RouteDecision, nodes: Sequence[NodeWithScore]) -> str:
    """The response text when nothing can write an answer: why, and a preview of each piece of evidence."""
    hint = "pass llm= (a LlamaIndex LLM) to the query engine or set UNIVERSALRAG_LLM_MODEL"
    if not decision.needs_retrieval:
        return (f"The router decided that this question needs no retrieval (route {NO_RETRIEVAL!r}), and no "
                f"language model is configured to answer it: {hint}.")
    routes = ", ".join(r for r in decision.routes if r != NO_RETRIEVAL)
    if not nodes:
        return f"No language model is configured ({hint}), and the search of {routes} found no evidence."
    lines = [(f"No language model is configured ({hint}), so here is the evidence found in {routes}, "
              "without an answer:")]
    for item in nodes:
        text = " ".join(item.node.get_content().split())
        preview = text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS].rstrip() + " […]"
        lines.append(f"{item.node.metadata.get('label', item.node.node_id)}: {preview}")
    return "\n".join(lines)


def _metadata(decision: RouteDecision, **extra: Any) -> dict[str, Any]:
    return {"route_decision": decision.to_dict(), "routes": list(decision.routes), **extra}


class UniversalRAGQueryEngine(CustomQueryEngine):
    """Routed multimodal question answering over a :class:`~universalrag.pipeline.UniversalRAG`.

    Construct with keywords: ``UniversalRAGQueryEngine(rag=rag, llm=None)``. ``similarity_top_k`` (hits per
    chosen corpus), ``routes`` (fixed corpora, no router), ``filter`` (core metadata filter) and ``image_mode``
    shape retrieval as in :class:`UniversalRAGRetriever`. Like ``UniversalRAG.query``, a question the router
    judges answerable without retrieval (``none``) is answered directly. See the module docstring for how answers are made.
    """

    rag: UniversalRAG = Field(description="The UniversalRAG pipeline that routes and retrieves.")
    llm: LLM | None = Field(default=None, description="A LlamaIndex LLM; None uses the core's generator.")
    response_synthesizer: BaseSynthesizer | None = Field(
        default=None, description="Replaces the default synthesizer built from llm (needs llm).")
    similarity_top_k: int | None = Field(default=None, ge=1, description="Hits per chosen corpus (rag.k).")
    routes: list[str] | None = Field(default=None, description="Fixed corpora; None asks the router.")
    filter: dict[str, Any] | None = Field(default=None, description="Metadata filter in the core's syntax.")
    filters: dict[str, Any] | None = Field(default=None, description="Deprecated spelling of filter.")
    image_mode: ImageMode = Field(default="path", description="How pictures travel in nodes.")

    @model_validator(mode="after")
    def _check(self) -> UniversalRAGQueryEngine:
        if self.response_synthesizer is not None and self.llm is None:
            raise ValueError("response_synthesizer needs llm= as well (the LLM also answers 'none' questions).")
        return self

    @property
    def retriever(self) -> UniversalRAGRetriever:
        """The retriever this engine uses (built from its fields)."""
        return UniversalRAGRetriever(rag=self.rag, similarity_top_k=self.similarity_top_k, routes=self.routes,
                                     filter=self._filter(), allow_none=True, image_mode=self.image_mode,
                                     callback_manager=self.callback_manager)

    def _filter(self) -> dict[str, Any] | None:
        return self.filter if self.filter is not None else self.filters

    def _synthesizer(self) -> BaseSynthesizer:
        return self.response_synthesizer or get_response_synthesizer(llm=self.llm,
                                                                     callback_manager=self.callback_manager)

    # -- the core's generator (or evidence only) ---------------------------------------------------------------
    def _from_answer(self, answer: Answer) -> Response:
        nodes = hits_to_nodes(answer.hits, decision=answer.decision, image_mode=self.image_mode,
                              budget=self.rag.budget)
        generator = self.rag.generator
        text = answer.text if answer.text is not None else evidence_only_text(answer.decision, nodes)
        meta = _metadata(answer.decision, citations=list(answer.citations), timings_ms=dict(answer.timings),
                         answered_by=(f"universalrag:{generator.name}" if answer.text is not None and generator
                                      else None))
        return Response(response=text, source_nodes=nodes, metadata=meta)

    def _core_kwargs(self) -> dict[str, Any]:
        return {"k": self.similarity_top_k, "routes": self.routes, "filter": self._filter()}

    # -- a LlamaIndex LLM -------------------------------------------------------------------------------------
    def _llm_name(self) -> str:
        assert self.llm is not None
        return f"llamaindex:{self.llm.class_name()}"

    def _finish(self, response: Any, decision: RouteDecision) -> Any:
        response.metadata = {**(response.metadata or {}), **_metadata(decision, answered_by=self._llm_name())}
        return response

    def custom_query(self, query_str: str) -> Any:
        """Answer ``query_str``; returns a LlamaIndex ``Response`` (or the synthesizer's response type)."""
        if self.llm is None:
            return self._from_answer(self.rag.query(query_str, **self._core_kwargs()))
        decision, nodes = self.retriever.retrieve_with_decision(query_str)
        if not decision.needs_retrieval:
            text = self.llm.complete(query_str).text
            return self._finish(Response(response=text, source_nodes=[]), decision)
        return self._finish(self._synthesizer().synthesize(query_str, nodes), decision)

    async def acustom_query(self, query_str: str) -> Any:
        """Async twin of :meth:`custom_query`."""
        if self.llm is None:
            answer = await self.rag.aquery(query_str, **self._core_kwargs())
            return await asyncio.to_thread(self._from_answer, answer)
        decision, nodes = await self.retriever.aretrieve_with_decision(query_str)
        if not decision.needs_retrieval:
            text = (await self.llm.acomplete(query_str)).text
            return self._finish(Response(response=text, source_nodes=[]), decision)
        return self._finish(await self._synthesizer().asynthesize(query_str, nodes), decision)
