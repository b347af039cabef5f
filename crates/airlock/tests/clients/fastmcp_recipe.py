"""FastMCP's client (pinned) against a real `airlock serve`, as the README's recipe has
it: one fixed URL, `/mcp/b/<name>`, and its calls share one browser.

Run by crates/airlock/tests/it/mcp_clients.rs:
  fastmcp_recipe.py MCP_URL FIXTURE_BASE_URL
Prints one line per check.
"""

import asyncio
import sys

from fastmcp import Client

passed = 0
failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name}: {str(detail)[:2000]}")


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def main():
    mcp_url, base = sys.argv[1:3]
    url = mcp_url.rstrip("/") + "/b/fast-agent"
    async with Client(url) as client:
        r = await client.call_tool("browser_navigate", {"url": base + "/login.html"}, raise_on_error=False)
        check("navigate", not r.is_error, text_of(r))
        r = await client.call_tool("browser_snapshot", {}, raise_on_error=False)
        check("the next call sees the page", 'heading "Sign in"' in text_of(r), text_of(r))
    async with Client(url) as again:
        r = await again.call_tool("browser_snapshot", {}, raise_on_error=False)
        check("a new client on the same URL finds the same browser", 'heading "Sign in"' in text_of(r), text_of(r))
        await again.call_tool("browser_session_close", {}, raise_on_error=False)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


asyncio.run(main())
