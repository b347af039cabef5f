"""LangChain's MCP adapters (pinned, in a venv of their own: they need the 1.x MCP SDK)
against a real `airlock serve`, as the README's recipe has it: `get_tools()` opens an
MCP session per call, and `/mcp/b/<name>` keeps one browser across them.

Run by crates/airlock/tests/it/mcp_clients.rs with .venv-langchain's Python:
  langchain_recipe.py MCP_URL FIXTURE_BASE_URL AGENT_TOKEN ADMIN_KEY
- navigate, then snapshot (a second call, a second MCP session) sees the page;
- a click the rules hold is approved at the console and its result arrives.
Prints one line per check.
"""

import asyncio
import sys

from langchain_mcp_adapters.client import MultiServerMCPClient
from common import DELETE, check, done, held_click


def said(output):
    """The text of a LangChain tool's output (a string, or content blocks)."""
    if isinstance(output, str):
        return output
    return "\n".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in output)


async def main():
    mcp_url, base, token, admin_key = sys.argv[1:5]
    client = MultiServerMCPClient({
        "browser": {
            "transport": "streamable_http",
            "url": mcp_url.rstrip("/") + "/b/langchain-agent",
            "headers": {"Authorization": f"Bearer {token}"},
            # A call held for a person takes as long as the person.
            "timeout": 120,
            "sse_read_timeout": 300,
        }
    })
    tools = {t.name: t for t in await client.get_tools()}
    check("get_tools lists the browser tools", "browser_navigate" in tools, sorted(tools))
    out = said(await tools["browser_navigate"].ainvoke({"url": base + "/login.html"}))
    check("navigate", "Sign in" in out, out)
    out = said(await tools["browser_snapshot"].ainvoke({}))
    check("the next call (its own MCP session) sees the page", 'heading "Sign in"' in out, out)
    await tools["browser_navigate"].ainvoke({"url": base + "/resolve.html"})

    async def click():
        return said(await tools["browser_click"].ainvoke(DELETE))

    await held_click(click, mcp_url, admin_key)
    await tools["browser_session_close"].ainvoke({})
    done()


asyncio.run(main())
