"""FastMCP's client (pinned) against a real `airlock serve`, as the README's recipe has
it: one fixed URL, `/mcp/b/<name>`, and its calls share one browser.

Run by crates/airlock/tests/it/mcp_clients.rs:
  fastmcp_recipe.py MCP_URL FIXTURE_BASE_URL AGENT_TOKEN ADMIN_KEY
A click the rules hold is approved at the console and its result arrives.
Prints one line per check.
"""

import asyncio
import sys

from fastmcp import Client
from common import DELETE, check, done, held_click, text_of


async def main():
    mcp_url, base, token, admin_key = sys.argv[1:5]
    url = mcp_url.rstrip("/") + "/b/fast-agent"
    async with Client(url, auth=token, timeout=120) as client:
        r = await client.call_tool("browser_navigate", {"url": base + "/login.html"}, raise_on_error=False)
        check("navigate", not r.is_error, text_of(r))
        r = await client.call_tool("browser_snapshot", {}, raise_on_error=False)
        check("the next call sees the page", 'heading "Sign in"' in text_of(r), text_of(r))
    async with Client(url, auth=token, timeout=120) as again:
        r = await again.call_tool("browser_snapshot", {}, raise_on_error=False)
        check("a new client on the same URL finds the same browser", 'heading "Sign in"' in text_of(r), text_of(r))
        await again.call_tool("browser_navigate", {"url": base + "/resolve.html"}, raise_on_error=False)

        async def click():
            return text_of(await again.call_tool("browser_click", DELETE, raise_on_error=False))

        await held_click(click, mcp_url, admin_key)
        await again.call_tool("browser_session_close", {}, raise_on_error=False)
    done()


asyncio.run(main())
