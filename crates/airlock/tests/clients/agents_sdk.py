"""The OpenAI Agents SDK's own MCP client (pinned) against a real `airlock serve`, as
the README's recipe has it: one fixed URL, `/mcp/b/<name>`, no session to open first.

Run by crates/airlock/tests/it/mcp_clients.rs:
  agents_sdk.py MCP_URL FIXTURE_BASE_URL AGENT_TOKEN ADMIN_KEY
- navigate, then snapshot (a second call) sees the page: the browser lasts across
  calls; a second server object on the same URL sees it too; another name does not;
- the SDK's own strict conversion of every tool it lists (`convert_schemas_to_strict`)
  takes every tool with arguments;
- a click the rules hold is approved at the console and its result arrives.
Prints one line per check.
"""

import asyncio
import sys

from agents.mcp import MCPServerStreamableHttp, MCPUtil
from common import DELETE, check, done, held_click, text_of

TOKEN = sys.argv[3]


def server(url):
    # The SDK's default is 5 s: a call held for a person needs longer.
    return MCPServerStreamableHttp(
        params={"url": url, "headers": {"Authorization": f"Bearer {TOKEN}"}},
        client_session_timeout_seconds=120,
    )


async def main():
    mcp_url, base, _, admin_key = sys.argv[1:5]
    agent_url = mcp_url.rstrip("/") + "/b/research-agent"
    async with server(agent_url) as s:
        r = await s.call_tool("browser_navigate", {"url": base + "/login.html"})
        check("navigate", not r.is_error, text_of(r))
        r = await s.call_tool("browser_snapshot", {})
        check("the next call sees the page", 'heading "Sign in"' in text_of(r), text_of(r))
        tools = await s.list_tools()
        converted = [MCPUtil.to_function_tool(t, s, True) for t in tools]
        strict_names = {f.name for f in converted if f.strict_json_schema}
        with_args = {t.name for t in tools if (t.input_schema or {}).get("properties")}
        check("the SDK makes every tool with arguments strict", with_args <= strict_names,
              sorted(with_args - strict_names))
    async with server(agent_url) as again:
        r = await again.call_tool("browser_snapshot", {})
        check("a new client on the same URL finds the same browser", 'heading "Sign in"' in text_of(r), text_of(r))
    async with server(mcp_url.rstrip("/") + "/b/other-agent") as other:
        r = await other.call_tool("browser_snapshot", {})
        check("another name is another browser", "Sign in" not in text_of(r), text_of(r))
        await other.call_tool("browser_session_close", {})
    async with server(agent_url) as last:
        await last.call_tool("browser_navigate", {"url": base + "/resolve.html"})

        async def click():
            return text_of(await last.call_tool("browser_click", DELETE))

        await held_click(click, mcp_url, admin_key)
        await last.call_tool("browser_session_close", {})
    done()


asyncio.run(main())
