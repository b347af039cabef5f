"""What the MCP client scripts share: a check that counts, the text of a tool result,
a snapshot line's ref, the closing count, and one tool call in a client of its own (imported as `common`: a script's own
directory is on Python's path)."""

import re
import sys

# The MCP SDK and httpx2 are imported where used: LangChain's adapters pin an older
# MCP SDK in a venv of their own (.venv-langchain), which has plain httpx.
try:
    import httpx2
except ImportError:
    import httpx as httpx2

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
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0, read=120.0)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            return await client.call_tool(tool, args)


DELETE = {"role": "button", "name": "Delete account"}

TASKS = "io.modelcontextprotocol/tasks"


def tasks_meta(tasks):
    """The stateless era's request `_meta`, declaring the Tasks extension or not."""
    caps = {"extensions": {TASKS: {}}} if tasks else {}
    return {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": caps}


async def rpc(http, url, token, method, params, tasks=True, name=None):
    """One raw JSON-RPC request of the stateless era (Streamable HTTP), its answer."""
    import json

    params = dict(params, _meta=tasks_meta(tasks))
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    r = await http.post(url, headers=headers, content=body)
    for line in r.text.splitlines():
        if line.startswith("data: ") and '"jsonrpc"' in line:
            return json.loads(line[6:])
    return json.loads(r.text)


async def approve_pending(mcp_url, admin_key, wait=20.0):
    """Approves the one pending approval over REST once it shows up (the person at
    the console); True if it was approved."""
    import asyncio

    root = mcp_url.rsplit("/mcp", 1)[0]
    headers = {"Authorization": f"Bearer {admin_key}"}
    async with httpx2.AsyncClient(base_url=root, headers=headers, timeout=30.0) as admin:
        for _ in range(int(wait / 0.05)):
            pending = (await admin.get("/api/v1/approvals", params={"status": "pending"})).json()["approvals"]
            if pending:
                r = await admin.post(f"/api/v1/approvals/{pending[0]['id']}/approve")
                return r.status_code == 200
            await asyncio.sleep(0.05)
    return False


async def held_click(call_click, mcp_url, admin_key):
    """Runs `call_click()` (a coroutine making the client's click call) while a person
    approves it; checks the approval and that the click's result arrived. Returns the
    result's text."""
    import asyncio

    click = asyncio.create_task(call_click())
    approved = await approve_pending(mcp_url, admin_key)
    check("the held click is approved at the console", approved)
    text = await click
    check("the approved click ran and its result arrived", "deleted 1" in text, text)
    return text
