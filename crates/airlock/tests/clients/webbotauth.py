"""One agent through Airlock to a page of a site that verifies Web Bot Auth: navigate,
then wait until the page's own requests ended. Run by crates/airlock/tests/it/identity.rs:
  webbotauth.py MCP_URL PAGE_URL
Prints one line per check and exits non-zero on failure."""

import asyncio
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from common import check, done, text_of


async def main(url, page):
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(60.0, read=120.0)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            r = await client.call_tool("browser_navigate", {"url": page})
            check("the page opens", not r.is_error, text_of(r))
            r = await client.call_tool("browser_wait_for", {"text": "done"})
            check("the page's requests ended", not r.is_error, text_of(r))


asyncio.run(main(sys.argv[1], sys.argv[2]))
done()
