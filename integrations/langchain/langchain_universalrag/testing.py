"""Test agents built over the universalrag tools offline: a scripted chat model that calls tools.

LangChain's fake chat models (``GenericFakeChatModel``, ``FakeListChatModel``) cannot stand in for the model of an
agent: ``create_agent`` binds the tools to its model, and those models raise ``NotImplementedError`` from
``bind_tools``. :class:`ScriptedChatModel` accepts the tools, plays a script — fixed replies, tool calls, or steps
that read the conversation — and records what it was sent, so a test can check which tool the agent ran and what the
tool returned, with no model, key or network::

    from langchain.agents import create_agent
    from langchain_universalrag import create_corpus_tools
    from langchain_universalrag.testing import ScriptedChatModel, answer_from_tool, search_with

    model = ScriptedChatModel(script=[search_with("search_table"), answer_from_tool()])
    agent = create_agent(model, create_corpus_tools(rag, k=3))
    state = agent.invoke({"messages": [{"role": "user", "content": "How many clear nights in August 2024?"}]})
    assert state["messages"][-1].content.startswith("From search_table:")
    assert model.tool_names == ["search_table", ...]   # the tools the agent offered

A script step is an ``AIMessage`` (a reply, or a tool call: :func:`tool_call`), a string (a plain reply), or a
callable taking the messages so far and returning either. A tool call naming a tool the model was not given is an
error, as is a reply asked for after the script ran out; both say what happened.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from ._deps import require_langchain

require_langchain()

from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.utils.function_calling import convert_to_openai_tool  # noqa: E402
from pydantic import PrivateAttr  # noqa: E402

__all__ = ["ScriptedChatModel", "Step", "answer_from_tool", "search_with", "tool_call"]

#: One reply of the script: a message, a plain text, or a function of the conversation so far returning either.
Step = AIMessage | str | Callable[[Sequence[BaseMessage]], AIMessage | str]

_ids = itertools.count(1)


def tool_call(name: str, args: dict[str, Any] | None = None, *, call_id: str | None = None) -> AIMessage:
    """An assistant message that calls tool ``name`` with ``args`` (``call_id`` default: a fresh ``call_<n>``)."""
    return AIMessage(
        content="",
        tool_calls=[
            {"name": name, "args": dict(args or {}), "id": call_id or f"call_{next(_ids)}", "type": "tool_call"}
        ],
    )


def search_with(tool: str, *, k: int | None = None) -> Callable[[Sequence[BaseMessage]], AIMessage]:
    """A step that calls ``tool`` (a ``search_<corpus>`` tool) with the user's latest question as ``query``
    (and ``k`` when given)."""

    def step(messages: Sequence[BaseMessage]) -> AIMessage:
        question = next((m.text for m in reversed(messages) if isinstance(m, HumanMessage)), None)
        if question is None:
            raise ValueError(f"search_with({tool!r}) found no user message to search with.")
        return tool_call(tool, {"query": question, **({"k": k} if k is not None else {})})

    return step


def answer_from_tool(*, chars: int = 200) -> Callable[[Sequence[BaseMessage]], AIMessage]:
    """A step that answers ``"From <tool>: <its first chars characters>"`` from the latest tool result."""

    def step(messages: Sequence[BaseMessage]) -> AIMessage:
        result = next((m for m in reversed(messages) if isinstance(m, ToolMessage)), None)
        if result is None:
            raise ValueError("answer_from_tool() found no tool result to answer from; call a tool first.")
        return AIMessage(content=f"From {result.name}: " + " ".join(str(result.content).split())[:chars])

    return step


class ScriptedChatModel(BaseChatModel):
    """A chat model that replies with ``script``, one step per call, and accepts tools (see the module docstring).

    ``received`` holds the messages of every call, ``tool_names`` the names of the tools last bound."""

    script: list[Any]

    _step: int = PrivateAttr(default=0)
    _received: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _tool_names: list[str] | None = PrivateAttr(default=None)

    @property
    def _llm_type(self) -> str:
        return "scripted-chat-model"

    @property
    def received(self) -> list[list[BaseMessage]]:
        """The messages of each call so far, in order."""
        return self._received

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools bound last (empty before :meth:`bind_tools`)."""
        return list(self._tool_names or [])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        """Record the tools' names (LangChain tools, functions or schemas) and return this model: the script, not
        the tools, decides the replies. ``tool_choice`` and other options are accepted and ignored."""
        self._tool_names = [convert_to_openai_tool(t)["function"]["name"] for t in tools]
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self._received.append(list(messages))
        if self._step >= len(self.script):
            raise ValueError(
                f"The script has {len(self.script)} replies and reply {self._step + 1} was asked for; add steps "
                "(the agent called the model once more than scripted)."
            )
        step = self.script[self._step]
        self._step += 1
        reply = step(messages) if callable(step) else step
        message = AIMessage(content=reply) if isinstance(reply, str) else reply
        for call in message.tool_calls:
            if self._tool_names is not None and call["name"] not in self._tool_names:
                raise ValueError(
                    f"Step {self._step} calls tool {call['name']!r}, which the agent did not offer "
                    f"(its tools: {', '.join(self._tool_names) or 'none'})."
                )
        return ChatResult(generations=[ChatGeneration(message=message)])
