"""A stored login that needs a person, offered at the agent's own client: on the
official MCP Python SDK (protocol 2025-11-25, URL-mode elicitation declared), the
agent opens a session with the login's secret; the open is refused with
login_needs_user, and the person at the client is asked to open the one-time link.
The link reaches the elicitation callback, never the tool result (the model).

Run by crates/airlock/tests/it/logins.rs:
  login_link.py MCP_URL AGENT_KEY
Prints the checks, then `link: URL` and "N passed, M failed" last.
"""

import asyncio
import sys

import httpx2
from common import check, done, text_of
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client

asked = []
arrived = asyncio.Event()


async def on_elicit(context, params):
    asked.append(params)
    arrived.set()
    # The person opens it: accepting says they will.
    return types.ElicitResult(action="accept")


async def main():
    mcp_url, key = sys.argv[1:3]
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0, read=300.0)) as http:
        async with Client(streamable_http_client(mcp_url, http_client=http), mode="legacy",
                          elicitation_callback=on_elicit) as agent:
            r = await agent.call_tool("browser_session_open", {"credentials": ["admin"]})
            t = text_of(r)
            check("the open is refused with login_needs_user", r.is_error and t.startswith("login_needs_user"), t)
            check("the result holds no link", "/console/logins/give" not in t, t)
            try:
                await asyncio.wait_for(arrived.wait(), 20)
            except asyncio.TimeoutError:
                pass
            check("the person at the client is asked once", len(asked) == 1, asked)
            if asked:
                q = asked[0]
                url = getattr(q, "url", "")
                check("as a URL elicitation", getattr(q, "mode", "") == "url" and "/console/logins/give#" in url, q)
                check("the message names the login", "admin" in getattr(q, "message", ""), q)
                print(f"link: {url}", flush=True)
            # Retried at once: refused again, and not asked again so soon.
            r = await agent.call_tool("browser_session_open", {"credentials": ["admin"]})
            check("a retry is refused too", r.is_error and text_of(r).startswith("login_needs_user"), text_of(r))
    check("no second question within a minute", len(asked) == 1, asked)
    done()


asyncio.run(main())
