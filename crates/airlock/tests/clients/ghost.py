"""No ghost actions: an agent on the official MCP Python SDK gives up on a held click
(its read timeout, as the OpenAI Agents SDK's default 5 s does); the SDK tells the
server it cancelled, the approval closes withdrawn, an approver sees why, approving
it is refused, and the click never runs. A client that asks for progress hears, while
a call waits, that it waits for a person.

Run by crates/airlock/tests/it/approvals_rest.rs:
  ghost.py MCP_URL FIXTURE_BASE_URL AGENT_TOKEN ADMIN_KEY
Prints one line per check.
"""

import asyncio
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from common import check, done, text_of


DELETE = {"role": "button", "name": "Delete account"}


async def main():
    mcp_url, base, agent_token, admin_key = sys.argv[1:5]
    root = mcp_url.rsplit("/mcp", 1)[0]
    admin = httpx2.AsyncClient(base_url=root, headers={"Authorization": f"Bearer {admin_key}"}, timeout=30.0)
    headers = {"Authorization": f"Bearer {agent_token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0, read=300.0)) as http:
        async with Client(streamable_http_client(mcp_url, http_client=http), mode="legacy") as agent:
            r = await agent.call_tool("browser_navigate", {"url": f"{base}/resolve.html"})
            check("navigate", not r.is_error, text_of(r))
            try:
                r = await agent.call_tool("browser_click", DELETE, read_timeout_seconds=2)
                check("the client gave up on the held click", False, text_of(r))
            except Exception as e:
                check("the client gave up on the held click", True, repr(e))
            withdrawn = None
            for _ in range(100):
                r = await admin.get("/api/v1/approvals", params={"status": "expired"})
                found = [a for a in r.json()["approvals"] if "withdrawn" in (a.get("note") or "")]
                if found:
                    withdrawn = found[0]
                    break
                await asyncio.sleep(0.1)
            check("its approval closed withdrawn, and the card says why", withdrawn is not None,
                  (await admin.get("/api/v1/approvals")).text)
            if withdrawn:
                r = await admin.post(f"/api/v1/approvals/{withdrawn['id']}/approve")
                check("approving it afterwards is refused (approval_closed)",
                      r.status_code == 409 and r.json()["error"]["code"] == "approval_closed", r.text)
            r = await admin.get("/api/v1/approvals", params={"status": "pending"})
            check("nothing is left pending", r.json()["approvals"] == [], r.text)
            # The same agent goes on, and the page never saw the click.
            r = await agent.call_tool("browser_snapshot", {})
            t = text_of(r)
            check("the click never ran", not r.is_error and "deleted 1" not in t and "Delete account" in t, t)

            # A client that asked for progress hears, while the call waits, that it
            # waits for a person; approved, the click runs and its result arrives.
            notes = []

            async def heard(progress, total, message):
                notes.append((progress, message))

            click = asyncio.create_task(agent.call_tool("browser_click", DELETE, read_timeout_seconds=60,
                                                        progress_callback=heard))
            for _ in range(200):
                if len(notes) >= 2:
                    break
                await asyncio.sleep(0.05)
            check("progress notifications say it waits for a person",
                  len(notes) >= 2 and all("waiting for a person" in (m or "") for _, m in notes)
                  and notes[1][0] > notes[0][0], notes)
            r = await admin.get("/api/v1/approvals", params={"status": "pending"})
            pending = r.json()["approvals"]
            check("one approval is pending", len(pending) == 1, r.text)
            if pending:
                r = await admin.post(f"/api/v1/approvals/{pending[0]['id']}/approve")
                check("approve over REST", r.status_code == 200, r.text)
            r = await click
            check("the approved click ran and its result arrived", not r.is_error and "deleted 1" in text_of(r), text_of(r))
    await admin.aclose()
    done()


asyncio.run(main())
