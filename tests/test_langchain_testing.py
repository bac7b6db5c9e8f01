"""langchain_universalrag.testing: a scripted tool-calling chat model that lets ``create_agent`` run over the
universalrag tools offline (LangChain's own fake chat models refuse ``bind_tools``). A real pipeline over a folder
with one real text file, the real bundled encoder, LangChain's real ``create_agent``."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import DATA
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from support.s5_agents import folder_rag

pytest.importorskip("langchain.agents")
from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402

from langchain_universalrag import create_corpus_tools  # noqa: E402
from langchain_universalrag.testing import ScriptedChatModel, answer_from_tool, search_with, tool_call  # noqa: E402

QUESTION = "Who walked on the Moon first?"


def test_langchains_fake_model_cannot_be_an_agents_model() -> None:
    agent = create_agent(GenericFakeChatModel(messages=iter([AIMessage(content="hi")])), [_a_tool()])
    with pytest.raises(NotImplementedError):
        agent.invoke({"messages": [HumanMessage("hello")]})


def test_an_agent_runs_a_search_tool_and_answers_from_it(database_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "apollo.txt").write_bytes((DATA / "corpus" / "apollo_11.txt").read_bytes())
    with folder_rag(database_url, folder) as rag:
        tools = create_corpus_tools(rag, k=2)
        model = ScriptedChatModel(script=[search_with("search_paragraph"), answer_from_tool()])
        agent = create_agent(model, tools, system_prompt="Answer with the search tools.")
        state = agent.invoke({"messages": [HumanMessage(QUESTION)]})
    assert "search_paragraph" in model.tool_names
    call = next(m for m in state["messages"] if isinstance(m, AIMessage) and m.tool_calls).tool_calls[0]
    assert call["name"] == "search_paragraph" and call["args"] == {"query": QUESTION}
    result = next(m for m in state["messages"] if isinstance(m, ToolMessage))
    assert result.artifact and "Armstrong" in str(result.content)
    answer = state["messages"][-1]
    assert answer.content.startswith("From search_paragraph: [paragraph 1] Apollo 11")
    assert len(model.received) == 2 and isinstance(model.received[1][-1], ToolMessage)


def test_a_call_of_a_tool_not_offered_and_a_script_run_out_say_so() -> None:
    model = ScriptedChatModel(script=[tool_call("search_nowhere", {"query": "x"})])
    agent = create_agent(model, [_a_tool()])
    with pytest.raises(ValueError, match="search_nowhere.*did not offer.*echo"):
        agent.invoke({"messages": [HumanMessage("hello")]})
    short = ScriptedChatModel(script=[tool_call("echo", {"text": "ping"})])
    with pytest.raises(ValueError, match="has 1 replies and reply 2"):
        create_agent(short, [_a_tool()]).invoke({"messages": [HumanMessage("hello")]})


def _a_tool():  # type: ignore[no-untyped-def]
    from langchain_core.tools import tool

    @tool
    def echo(text: str) -> str:
        """Repeat the text."""
        return text

    return echo
