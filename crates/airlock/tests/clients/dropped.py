"""No ghost actions when a client goes away without cancelling: raw Streamable HTTP
(nothing in between to be lenient), a click the default rules hold, and its
connection dropped while it waits for a person.

- 2026-07-28, a named browser (`/mcp/b/NAME`) and a one-off call (plain `/mcp`, a
  navigation the test's own rule holds): the dropped stream is the caller gone; the approval closes withdrawn at once, approving
  it is refused, and the click never ran.
- 2025-11-25, an MCP session: a dropped stream alone is not the caller gone (the
  protocol lets a client resume it), so the call stays pending; the session's
  `DELETE` is, and withdraws it at once.

Run by crates/airlock/tests/it/approvals_rest.rs:
  dropped.py MCP_URL FIXTURE_BASE_URL AGENT_TOKEN ADMIN_KEY
Prints one line per check.
"""

import asyncio
import json
import sys

import httpx2
from common import DELETE, check, done

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}


class Raw:
    def __init__(self, url, token, era, session=None):
        self.url, self.era, self.session = url, era, session
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                        "Accept": "application/json, text/event-stream"}

    def request(self, id, method, params):
        headers = dict(self.headers)
        params = dict(params)
        if self.era == "2026-07-28":
            params["_meta"] = META
            headers.update({"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method})
            if method == "tools/call":
                headers["Mcp-Name"] = params["name"]
        else:
            headers["MCP-Protocol-Version"] = "2025-11-25"
            if self.session:
                headers["Mcp-Session-Id"] = self.session
        return headers, json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params})

    async def call(self, http, id, tool, args):
        headers, body = self.request(id, "tools/call", {"name": tool, "arguments": args})
        r = await http.post(self.url, headers=headers, content=body)
        return r.text

    async def held(self, http, id, tool, args):
        """Sends the call and reads its stream until cancelled (the drop)."""
        headers, body = self.request(id, "tools/call", {"name": tool, "arguments": args})
        async with http.stream("POST", self.url, headers=headers, content=body) as r:
            async for _ in r.aiter_raw():
                pass


async def approvals(admin, status):
    return (await admin.get("/api/v1/approvals", params={"status": status})).json()["approvals"]


async def wait_for(admin, status, wait=10.0):
    for _ in range(int(wait / 0.05)):
        found = await approvals(admin, status)
        if found:
            return found
        await asyncio.sleep(0.05)
    return []


async def drop_held_click(raw, admin, id):
    """Starts the held click on a connection of its own and drops it once the call
    waits for a person. The approval that was pending."""
    http = httpx2.AsyncClient(timeout=httpx2.Timeout(60.0, read=300.0))
    click = asyncio.create_task(raw.held(http, id, "browser_click", DELETE))
    pending = await wait_for(admin, "pending")
    click.cancel()
    await asyncio.gather(click, return_exceptions=True)
    await http.aclose()
    return pending[0] if pending else None


async def withdrawn(admin, approval, wait=5.0):
    for _ in range(int(wait / 0.05)):
        for a in await approvals(admin, "expired"):
            if a["id"] == approval["id"] and "withdrawn" in (a.get("note") or ""):
                return True
        await asyncio.sleep(0.05)
    return False


async def main():
    mcp_url, base, token, admin_key = sys.argv[1:5]
    root = mcp_url.rsplit("/mcp", 1)[0]
    admin = httpx2.AsyncClient(base_url=root, headers={"Authorization": f"Bearer {admin_key}"}, timeout=30.0)
    page = f"{base}/resolve.html"

    async with httpx2.AsyncClient(timeout=60.0) as http:
        # A named browser, stateless.
        named = Raw(mcp_url.rstrip("/") + "/b/dropper", token, "2026-07-28")
        said = await named.call(http, 1, "browser_navigate", {"url": page})
        check("navigate (named browser)", "deleted 0" in said, said[:500])
        approval = await drop_held_click(named, admin, 2)
        check("the click is held (named browser)", approval is not None)
        if approval:
            check("dropped: its approval closes withdrawn", await withdrawn(admin, approval),
                  await approvals(admin, "pending"))
            r = await admin.post(f"/api/v1/approvals/{approval['id']}/approve")
            check("approving it afterwards is refused", r.status_code == 409, r.text)
        said = await named.call(http, 3, "browser_snapshot", {})
        check("the click never ran (named browser)", "deleted 0" in said and "deleted 1" not in said, said[:800])

        # A one-off call (plain `/mcp`, no session): a navigation the test's own
        # rule holds, dropped.
        one_off = Raw(mcp_url, token, "2026-07-28")
        http2 = httpx2.AsyncClient(timeout=httpx2.Timeout(60.0, read=300.0))
        go = asyncio.create_task(one_off.held(http2, 5, "browser_navigate", {"url": page + "?one-off"}))
        pending = await wait_for(admin, "pending")
        check("the one-off navigation is held", bool(pending))
        go.cancel()
        await asyncio.gather(go, return_exceptions=True)
        await http2.aclose()
        if pending:
            check("dropped: the one-off's approval closes withdrawn", await withdrawn(admin, pending[0]),
                  await approvals(admin, "pending"))
            r = await admin.post(f"/api/v1/approvals/{pending[0]['id']}/approve")
            check("approving it afterwards is refused (one-off)", r.status_code == 409, r.text)

        # An MCP session, stateful.
        stateful = Raw(mcp_url, token, "2025-11-25")
        headers, body = stateful.request(10, "initialize", {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "dropped", "version": "1"}})
        r = await http.post(mcp_url, headers=headers, content=body)
        stateful.session = r.headers.get("mcp-session-id")
        check("an MCP session begins", bool(stateful.session), r.text[:300])
        headers, _ = stateful.request(0, "x", {})
        await http.post(mcp_url, headers=headers,
                        content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        said = await stateful.call(http, 11, "browser_navigate", {"url": page})
        check("navigate (MCP session)", "deleted 0" in said, said[:500])
        approval = await drop_held_click(stateful, admin, 12)
        check("the click is held (MCP session)", approval is not None)
        if approval:
            # Longer than the server looks for a dropped caller (250 ms).
            await asyncio.sleep(1.0)
            still = [a["id"] for a in await approvals(admin, "pending")]
            check("a dropped stream alone leaves it pending (the client may resume)",
                  approval["id"] in still, still)
            r = await http.delete(mcp_url, headers={"Authorization": f"Bearer {token}",
                                                    "Mcp-Session-Id": stateful.session,
                                                    "MCP-Protocol-Version": "2025-11-25"})
            check("DELETE ends the session", r.status_code in (200, 204), r.status_code)
            check("the session's end withdraws it at once", await withdrawn(admin, approval, wait=2.0),
                  await approvals(admin, "pending"))
            r = await admin.post(f"/api/v1/approvals/{approval['id']}/approve")
            check("approving it afterwards is refused (MCP session)", r.status_code == 409, r.text)
        check("nothing is left pending", await approvals(admin, "pending") == [])
    await admin.aclose()
    done()


asyncio.run(main())
