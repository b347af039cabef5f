"""Keeps a gateway busy: N agents on the official MCP Python SDK, each in its own MCP
session, navigating, typing, clicking and reading in a loop until the server goes
away. Prints "busy" once every agent has finished a round, then "stopped N" when all
have stopped (by the server's going away, not by an error of ours).

Run by crates/airlock/tests/it/server.rs:  busy.py MCP_URL FIXTURE_BASE_URL N
"""

import asyncio
import sys

from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def agent(url, base, rounds_done, ready):
    try:
        async with Client(streamable_http_client(url), mode="legacy") as client:
            while True:
                await client.call_tool("browser_navigate", {"url": f"{base}/login.html", "snapshot": "none"})
                await client.call_tool("browser_type", {"role": "textbox", "name": "Username", "text": "bob"})
                await client.call_tool("browser_click", {"role": "button", "name": "Sign in"})
                await client.call_tool("browser_snapshot", {})
                rounds_done.add(id(asyncio.current_task()))
                if len(rounds_done) == ready[0] and not ready[1]:
                    ready[1] = True
                    print("busy", flush=True)
    except BaseException:
        # The server stopped under us: that is the point.
        return


async def main():
    url, base, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    done = set()
    ready = [n, False]
    await asyncio.gather(*[agent(url, base, done, ready) for _ in range(n)])
    print(f"stopped {n}", flush=True)


asyncio.run(main())
