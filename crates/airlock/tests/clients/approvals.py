"""Approvals end to end: an agent on the official MCP Python SDK clicks "Delete
account" through a real `airlock serve`; an operator decides over REST (/api/v1)
and from a second process (`airlock approvals`), and watches /api/v1/events.

Run by crates/airlock/tests/it/approvals_rest.rs:
  approvals.py MCP_URL FIXTURE_BASE_URL AGENT_TOKEN ADMIN_KEY AIRLOCK_BINARY
The binary's data dir comes from AIRLOCK_DATA_DIR. Prints one line per check.
"""

import asyncio
import json
import os
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
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name}: {str(detail)[:2000]}")


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


DELETE = {"role": "button", "name": "Delete account"}
# In-client approval is off here: a client that could answer is never asked.
questions = []


async def never_asked(context, params):
    questions.append(params)
    return None


async def pending(api, call, tries=200):
    """The one pending approval, once it shows (`call` is the held call's task)."""
    for _ in range(tries):
        if call.done():
            raise AssertionError(f"the call was not held: {text_of(call.result())}")
        r = await api.get("/api/v1/approvals", params={"status": "pending"})
        items = r.json().get("approvals", [])
        if items:
            return items[0]
        await asyncio.sleep(0.05)
    raise AssertionError("no approval request showed within 10 s")


async def watch(api, seen):
    """Collects /api/v1/events until cancelled."""
    async with api.stream("GET", "/api/v1/events", timeout=httpx2.Timeout(10.0, read=None)) as r:
        seen.append(("status", r.status_code, r.headers.get("content-type", "")))
        kind = None
        async for line in r.aiter_lines():
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:"):
                seen.append((kind, json.loads(line[5:].strip())))


async def main():
    mcp_url, base, agent_token, admin_key, binary = sys.argv[1:6]
    root = mcp_url.rsplit("/mcp", 1)[0]
    agent_headers = {"Authorization": f"Bearer {agent_token}"}
    admin = httpx2.AsyncClient(base_url=root, headers={"Authorization": f"Bearer {admin_key}"}, timeout=30.0)
    as_agent = httpx2.AsyncClient(base_url=root, headers=agent_headers, timeout=30.0)
    anonymous = httpx2.AsyncClient(base_url=root, timeout=30.0)

    # Only the approver's key opens the operator API.
    r = await as_agent.get("/api/v1/approvals")
    check("the agent's key is refused (403)", r.status_code == 403 and r.json()["error"]["code"] == "forbidden", r.text)
    r = await as_agent.post("/api/v1/approvals/apr_000000000000000000000000/approve")
    check("the agent's key cannot approve (403)", r.status_code == 403, r.text)
    r = await anonymous.get("/api/v1/approvals")
    check("no key -> 401 with WWW-Authenticate", r.status_code == 401 and "Bearer" in r.headers.get("www-authenticate", ""), r.text)
    r = await admin.get("/api/v1/approvals/apr_nope")
    check("unknown id -> 404 not_found", r.status_code == 404 and r.json()["error"]["code"] == "not_found", r.text)

    seen = []
    watcher = asyncio.create_task(watch(admin, seen))

    async with httpx2.AsyncClient(headers=agent_headers, timeout=httpx2.Timeout(60.0, read=300.0)) as http:
        async with Client(streamable_http_client(mcp_url, http_client=http), mode="legacy",
                          elicitation_callback=never_asked) as agent:
            r = await agent.call_tool("browser_navigate", {"url": f"{base}/resolve.html"})
            check("navigate", not r.is_error, text_of(r))

            # 1. Approved over REST: the click runs once, on the element approved.
            click = asyncio.create_task(agent.call_tool("browser_click", DELETE))
            a = await pending(admin, click)
            check("the request names rule, target, page and tool",
                  a["rule"] == "destructive" and a["risk"] == "high" and a["tool"] == "browser_click"
                  and a["target"]["name"] == "Delete account" and a["page_title"] == "Resolve"
                  and a["page_url"].endswith("/resolve.html"), a)
            r = await as_agent.post(f"/api/v1/approvals/{a['id']}/approve")
            check("the agent's key cannot approve its own call", r.status_code == 403, r.text)
            r = await admin.get(f"/api/v1/approvals/{a['id']}")
            check("GET one approval", r.status_code == 200 and r.json()["status"] == "pending", r.text)
            r = await admin.get(a["screenshot"])
            check("the screenshot is a JPEG, not cached",
                  r.status_code == 200 and r.headers["content-type"] == "image/jpeg"
                  and r.content[:3] == b"\xff\xd8\xff" and r.headers.get("cache-control") == "no-store",
                  (r.status_code, r.headers))
            # A second call of the same agent while one waits is refused, not queued.
            r = await agent.call_tool("browser_snapshot", {})
            check("a second call while one waits -> approval_pending",
                  r.is_error and text_of(r).startswith("approval_pending"), text_of(r))
            r = await admin.post(f"/api/v1/approvals/{a['id']}/approve", json={"note": "looks right"})
            check("approve over REST", r.status_code == 200 and r.json()["status"] == "approved", r.text)
            r = await click
            check("the approved click ran", not r.is_error and "deleted 1" in text_of(r), text_of(r))
            r = await admin.post(f"/api/v1/approvals/{a['id']}/deny", json={"reason": "too late"})
            check("a second decision -> 409 approval_closed",
                  r.status_code == 409 and r.json()["error"]["code"] == "approval_closed", r.text)
            first = a["id"]

            # 2. Denied over REST, with a reason the agent is told.
            click = asyncio.create_task(agent.call_tool("browser_click", DELETE))
            a = await pending(admin, click)
            r = await admin.post(f"/api/v1/approvals/{a['id']}/deny", json={"reason": "not this account"})
            check("deny over REST", r.status_code == 200 and r.json()["status"] == "denied", r.text)
            r = await click
            t = text_of(r)
            check("denied -> approval_denied with the reason",
                  r.is_error and t.startswith("approval_denied") and "not this account" in t and "api:admin_key" in t, t)
            denied = a["id"]

            # 3. Approved from a second process, through the shared store.
            click = asyncio.create_task(agent.call_tool("browser_click", DELETE))
            a = await pending(admin, click)
            proc = await asyncio.create_subprocess_exec(
                binary, "approvals", "approve", a["id"], "--note", "from a terminal",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                env={**os.environ, "USER": "operator-9"})
            out, err = await proc.communicate()
            check("`airlock approvals approve` decides", proc.returncode == 0 and out.decode().strip() == f"approved {a['id']}", err.decode())
            r = await click
            check("the CLI-approved click ran", not r.is_error and "deleted 2" in text_of(r), text_of(r))
            r = await admin.get(f"/api/v1/approvals/{a['id']}")
            check("the CLI decider is on the record", r.json()["decided_by"] == "cli:operator-9", r.text)

            # 4. Nobody decides: the call gives up after the configured timeout.
            r = await agent.call_tool("browser_click", DELETE)
            t = text_of(r)
            check("undecided -> approval_timeout", r.is_error and t.startswith("approval_timeout"), t)
            r = await admin.get("/api/v1/approvals", params={"status": "expired"})
            check("the timed-out request is expired", len(r.json()["approvals"]) == 1, r.text)
            r = await agent.call_tool("browser_snapshot", {})
            check("the page counted only the approved clicks", "deleted 2" in text_of(r), text_of(r))

    # The event stream announced every request and decision, in order.
    for _ in range(100):
        decided = [e for k, e in seen[1:] if k == "approval_decided"]
        if len(decided) >= 4:
            break
        await asyncio.sleep(0.05)
    watcher.cancel()
    try:
        await watcher
    except (asyncio.CancelledError, Exception):
        pass
    check("with in_client off, the agent's client is never asked", questions == [], questions)
    check("/api/v1/events is an SSE stream", seen and seen[0][1] == 200 and seen[0][2].startswith("text/event-stream"), seen[:1])
    requested = [e["approval"] for k, e in seen[1:] if k == "approval_requested"]
    decided = [(e["approval"], e["status"]) for k, e in seen[1:] if k == "approval_decided"]
    check("events announce each request", requested[:2] == [first, denied] and len(requested) == 4, requested)
    check("events announce each decision",
          decided[:2] == [(first, "approved"), (denied, "denied")] and [s for _, s in decided] == ["approved", "denied", "approved", "expired"],
          decided)
    kinds = [k for k, _ in seen[1:]]
    check("tool calls are on the stream too", "tool_call" in kinds, kinds)
    everything = json.dumps([e for _, e in seen[1:]])
    check("no key appears in any event", agent_token not in everything and admin_key not in everything)

    # A reader that resumes (`?after=SEQ`, or Last-Event-ID) first gets what it missed.
    replayed = []

    async def replay():
        async with admin.stream("GET", "/api/v1/events", params={"after": "0"},
                                timeout=httpx2.Timeout(10.0, read=None)) as r:
            kind = None
            async for line in r.aiter_lines():
                if line.startswith("event:"):
                    kind = line[6:].strip()
                elif line.startswith("data:"):
                    replayed.append((kind, json.loads(line[5:].strip())))
                    if sum(1 for k, _ in replayed if k == "approval_decided") == 4:
                        return

    try:
        await asyncio.wait_for(replay(), 10)
    except asyncio.TimeoutError:
        pass
    check("?after=0 replays the log from its start",
          [e["approval"] for k, e in replayed if k == "approval_requested"] == requested
          and replayed[0][0] == "auth_failure", [k for k, _ in replayed][:5])
    for c in (admin, as_agent, anonymous):
        await c.aclose()
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


asyncio.run(main())
