"""What the MCP client scripts share: a check that counts, the text of a tool result,
a snapshot line's ref, the closing count, and one tool call in a client of its own (imported as `common`: a script's own
directory is on Python's path)."""

import re
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

counts = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    if ok:
        counts["passed"] += 1
        print(f"ok   {name}")
    else:
        counts["failed"] += 1
        print(f"FAIL {name}: {str(detail)[:2000]}")


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def ref_of(text, needle):
    """The ref on the first snapshot line containing `needle`."""
    for line in text.splitlines():
        if needle in line:
            m = re.match(r"\s*- ((?:t\d+)?(?:f\d+)?e\d+) ", line)
            if m:
                return m.group(1)
    raise AssertionError(f"no ref for {needle!r} in:\n{text}")


def done():
    """Prints the counts and exits non-zero if a check failed."""
    print(f"{counts['passed']} passed, {counts['failed']} failed")
    sys.exit(1 if counts["failed"] else 0)


async def call(url, token, mode, tool, args):
    """One tool call at `url` with `token`, in a client of its own."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0, read=120.0)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            return await client.call_tool(tool, args)
