"""The agent of the console test: on the official MCP Python SDK, it opens a page
whose title is markup, then clicks "Delete account" twice; the operator decides both
in the console (approve, then deny with a note), driven by tests/console/console.mjs.

Run by crates/airlock/tests/it/console.rs:
  console_agent.py MCP_URL FIXTURE_BASE_URL AGENT_TOKEN
Prints one line per check and "N passed, M failed" last.
"""

import asyncio
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

passed = 0
failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}", flush=True)
    else:
        failed += 1
        print(f"FAIL {name}: {str(detail)[:2000]}", flush=True)


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


DELETE = {"role": "button", "name": "Delete account"}


async def never_asked(context, params):
    return None


async def main():
    mcp_url, base, agent_token = sys.argv[1:4]
    headers = {"Authorization": f"Bearer {agent_token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0, read=300.0)) as http:
        async with Client(streamable_http_client(mcp_url, http_client=http), mode="legacy",
                          elicitation_callback=never_asked) as agent:
            r = await agent.call_tool("browser_navigate", {"url": f"{base}/console-xss.html"})
            check("navigate", not r.is_error, text_of(r))
            r = await agent.call_tool("browser_click", DELETE)
            check("approved in the console: the click ran", not r.is_error and "deleted 1" in text_of(r), text_of(r))
            r = await agent.call_tool("browser_click", DELETE)
            t = text_of(r)
            check("denied in the console: approval_denied with the note",
                  r.is_error and t.startswith("approval_denied") and "not today" in t and "console:admin_key" in t, t)
    print(f"{passed} passed, {failed} failed", flush=True)


asyncio.run(main())
