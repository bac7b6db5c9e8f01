"""An agent with one search tool per corpus — offline.

``create_corpus_tools(rag)`` gives a ``search_<corpus>`` tool for every corpus that holds data, described
from the corpus registry, returning text for the model and the ``Document``s as the tool message's
artifact. Here they go into LangChain's ``create_agent``; a scripted stand-in model makes the tool calls so
that the example runs without a key (``langchain_universalrag.testing.ScriptedChatModel``, made for testing
agents offline). With a real model (``create_agent("openai:gpt-4o-mini", tools)``) the model picks the tool
from the descriptions.

    python examples/langchain_agent_tools/main.py [--database-url URL] [--schema NAME]
"""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langchain_universalrag import create_corpus_tools
from langchain_universalrag.testing import ScriptedChatModel, answer_from_tool, search_with
from universalrag.demo import demo_arguments, demo_questions, open_demo


def main() -> None:
    parser = demo_arguments(description=__doc__.splitlines()[0])
    args = parser.parse_args()
    rag, _ = open_demo(database_url=args.database_url, schema=args.schema, generator=None)
    questions = {q.route: q.question for q in demo_questions()}

    tools = create_corpus_tools(rag, k=2)
    print("tools:")
    for tool in tools:
        print(f"  {tool.name}: {tool.description[:90]}")

    for route in ("table", "clip"):
        agent = create_agent(
            # calls search_<route> with the question, then answers from the first lines the tool returned
            ScriptedChatModel(script=[search_with(f"search_{route}"), answer_from_tool()]),
            tools,
            system_prompt="Answer with the search tools; cite what you used.",
        )
        state = agent.invoke({"messages": [HumanMessage(questions[route])]})
        print(f"\nQ: {questions[route]}")
        for message in state["messages"]:
            if isinstance(message, AIMessage) and message.tool_calls:
                call = message.tool_calls[0]
                print(f"   tool call: {call['name']}({call['args']})")
            elif isinstance(message, ToolMessage):
                print(f"   tool result: {len(message.artifact)} documents")
                for doc in message.artifact:
                    m = doc.metadata
                    print(f"     - [{m['corpus']}] {m['uri'].rsplit('/', 1)[-1]} score={m['score']:.3f}")
        print(f"   answer: {state['messages'][-1].content}")
    rag.close()


if __name__ == "__main__":
    main()
