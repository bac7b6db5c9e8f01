"""UniversalRAG as an MCP server, used by an MCP client — offline.

1. Opens the knowledge base of ``universalrag demo`` (built and ingested on the first run, reused afterwards) in
   embedded Postgres or ``UNIVERSALRAG_DATABASE_URL``.
2. Starts ``universalrag mcp`` the way a desktop client (Claude Desktop, an IDE, an agent runtime) does: as a
   subprocess speaking MCP over stdin/stdout.
3. Connects with the official MCP Python SDK's client, lists the tools, asks ``route`` and ``search``, and reads a
   retrieved unit back as a resource by its id.

    python examples/mcp_server/main.py [--database-url URL] [--schema NAME]
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from universalrag.demo import demo_arguments, demo_questions, open_demo


def _structured(result: Any) -> Any:
    """A tool result's structured content (``structured_content`` on SDK 2.x, ``structuredContent`` on 1.x)."""
    return getattr(result, "structured_content", None) or getattr(result, "structuredContent", None) or {}


async def talk(server: StdioServerParameters, questions: dict[str, str]) -> None:
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        print("tools:", ", ".join(tool.name for tool in tools))

        question = questions["table"]
        decision = _structured(await session.call_tool("route", {"query": question}))
        print(f"\nQ: {question}\n   routes: {decision['routes']}")

        question = questions["image"]
        found = await session.call_tool("search", {"query": question, "k": 2})
        data = _structured(found)
        print(f"\nQ: {question}\n   routes: {data['decision']['routes']}")
        for block in found.content:  # what a client shows its model: text, pictures, links
            if isinstance(block, types.TextContent):  # data comes inside <retrieved-data ...> tags: show its first line
                lines = block.text.splitlines()
                print("   text:", (lines[1] if lines[0].startswith("<retrieved-data") else lines[0])[:100])
            elif isinstance(block, types.ImageContent):
                print("   image:", getattr(block, "mime_type", None) or getattr(block, "mimeType", None))
            elif isinstance(block, types.ResourceLink):
                print("   link:", block.uri)

        first = data["hits"][0]
        unit = await session.read_resource(first["resource"])
        text = unit.contents[0].text if isinstance(unit.contents[0], types.TextResourceContents) else ""
        print(f"\nresource {first['resource']}:\n   {text.splitlines()[1][:100]}")


def main() -> None:
    args = demo_arguments(description=__doc__.splitlines()[0]).parse_args()
    rag, _ = open_demo(database_url=args.database_url, schema=args.schema, generator=None)
    rag.close()  # the server opens the knowledge base itself
    env = dict(os.environ)
    if args.database_url:
        env["UNIVERSALRAG_DATABASE_URL"] = args.database_url
    # what a client's configuration names: the command and its arguments (`universalrag --schema NAME mcp`)
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "universalrag.cli", "--schema", args.schema, "mcp"], env=env
    )
    asyncio.run(talk(server, {q.route: q.question for q in demo_questions()}))


if __name__ == "__main__":
    main()
