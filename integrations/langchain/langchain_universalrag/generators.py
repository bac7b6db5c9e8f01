"""Any LangChain chat model as the core's :class:`~universalrag.generate.Generator`, so that
``UniversalRAG(generator=LangChainGenerator(llm))`` answers with it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._deps import require_langchain

require_langchain()

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from universalrag.errors import GenerationError
from universalrag.generate import Generation, build_messages, parse_citations
from universalrag.generate.base import check_inputs
from universalrag.types import Evidence

from .messages import openai_to_messages

__all__ = ["LangChainGenerator"]


def _model_name(llm: BaseChatModel) -> str:
    for attr in ("model_name", "model", "model_id"):
        value = getattr(llm, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(llm).__name__


class LangChainGenerator:
    """Answers from evidence with a LangChain chat model (multimodal models also see images and frames).

    The prompt and the citation parsing are the core's (:func:`~universalrag.generate.build_messages`,
    :func:`~universalrag.generate.parse_citations`); model errors become
    :class:`~universalrag.errors.GenerationError`.
    """

    def __init__(self, llm: BaseChatModel, *, system_prompt: str | None = None) -> None:
        self.llm = llm
        self.system_prompt = system_prompt
        self.name = f"langchain:{_model_name(llm)}"

    def __repr__(self) -> str:
        return f"LangChainGenerator({self.name!r})"

    def messages(self, query: str, evidence: Sequence[Evidence]) -> list[BaseMessage]:
        """The LangChain messages sent to the model."""
        question, items = check_inputs(query, evidence)
        return openai_to_messages(build_messages(question, items, system_prompt=self.system_prompt))

    def _finish(self, response: Any, evidence: Sequence[Evidence]) -> Generation:
        text = str(getattr(response, "text", response) or "")
        usage = dict(getattr(response, "usage_metadata", None) or {})
        tokens = (
            {
                "prompt_tokens": int(usage.get("input_tokens", 0)),
                "completion_tokens": int(usage.get("output_tokens", 0)),
                "total_tokens": int(usage.get("total_tokens", 0)),
            }
            if usage
            else {}
        )
        return Generation(
            text=text, citations=parse_citations(text, list(evidence)), model=_model_name(self.llm), usage=tokens
        )

    def generate(self, query: str, evidence: Sequence[Evidence]) -> Generation:
        """Answer ``query`` from ``evidence`` (empty: from the model's own knowledge)."""
        messages = self.messages(query, evidence)
        try:
            response = self.llm.invoke(messages)
        except GenerationError:
            raise
        except Exception as e:
            raise GenerationError(
                f"The chat model {self.name} failed: {e}. Check its configuration, and that it "
                "accepts images when the evidence has pictures."
            ) from e
        return self._finish(response, evidence)

    async def agenerate(self, query: str, evidence: Sequence[Evidence]) -> Generation:
        """Async twin of :meth:`generate`."""
        messages = self.messages(query, evidence)
        try:
            response = await self.llm.ainvoke(messages)
        except GenerationError:
            raise
        except Exception as e:
            raise GenerationError(
                f"The chat model {self.name} failed: {e}. Check its configuration, and that it "
                "accepts images when the evidence has pictures."
            ) from e
        return self._finish(response, evidence)
