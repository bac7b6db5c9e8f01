"""A scripted LangChain chat model for agent tests (no LLM runs here: LangChain's own fake, made to accept tools)."""

from __future__ import annotations

from typing import Any, ClassVar

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel


class ToolCallingFakeModel(GenericFakeChatModel):
    """A scripted chat model that accepts tools (as agents require) and records what it was sent."""

    seen: ClassVar[list[Any]] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFakeModel:
        return self

    def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)
