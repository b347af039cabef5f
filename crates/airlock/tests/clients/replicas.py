"""Three control-plane replicas over one Postgres, driven as a backend and its agents
would: a session leased on replica A is driven through B and C (REST and
/mcp/s/{id}, both MCP protocol eras, on the official MCP Python SDK); racing leases
over all three get one session; after A is killed, B and C still serve it. And MCP
sessions behind a load balancer that sends each request to the next replica: a
stateful (2025-11-25) session keeps its browser, its nonce and its owner whichever
replica a request reaches, and its DELETE ends it on all of them; a stateless
session URL opened through one replica is served by the others.

Run by crates/airlock/tests/it/replicas.rs, in phases:
  replicas.py lease A_ROOT B_ROOT C_ROOT FIXTURE_BASE ACT_KEY   -> prints "session ID"
  replicas.py sessions A_ROOT B_ROOT C_ROOT FIXTURE_BASE ACT_KEY OTHER_KEY
  replicas.py approval A_ROOT C_ROOT FIXTURE_BASE ACT_KEY ADMIN_KEY
  replicas.py after-kill B_ROOT C_ROOT FIXTURE_BASE ACT_KEY ID
Prints one line per check, then "N passed, M failed".
"""

import asyncio
import re
import sys
import time

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from common import call, check, counts, text_of


def api(root, token):
    return httpx2.AsyncClient(base_url=root, headers={"Authorization": f"Bearer {token}"}, timeout=60.0)


async def lease_phase(roots, base, key):
    a, b, c = (api(r, key) for r in roots)
    r = await a.post("/api/v1/sessions", json={"user_id": "u1", "conversation_id": "c1", "ttl_secs": 600})
    check("leased on A -> 201", r.status_code == 201 and r.json().get("created") is True, r.text)
    sid = r.json()["session_id"]
    mcp_url = lambda root: f"{root}/mcp/s/{sid}"

    r = await call(mcp_url(roots[1]), key, "legacy", "browser_navigate", {"url": f"{base}/login.html"})
    check("[2025-11-25] B drives A's session", not r.is_error and "Sign in" in text_of(r), text_of(r))
    r = await call(mcp_url(roots[2]), key, "2026-07-28", "browser_snapshot", {})
    check("[2026-07-28] C sees the page B left", not r.is_error and "Sign in" in text_of(r), text_of(r))
    r = await call(mcp_url(roots[0]), key, "2026-07-28", "browser_navigate", {"url": f"{base}/resolve.html"})
    check("A drives it again", not r.is_error, text_of(r))
    r = await call(mcp_url(roots[1]), key, "legacy", "browser_snapshot", {})
    check("B sees where A went", not r.is_error and "Delete account" in text_of(r), text_of(r))

    r = await c.post("/api/v1/sessions", json={"user_id": "u1", "conversation_id": "c1"})
    check("the same conversation leased on C -> 200, the same session",
          r.status_code == 200 and r.json().get("created") is False and r.json().get("session_id") == sid, r.text)
    r = await b.get(f"/api/v1/sessions/{sid}")
    check("GET on B", r.status_code == 200 and r.json().get("session_id") == sid, r.text)
    r = await c.post(f"/api/v1/sessions/{sid}/heartbeat")
    check("heartbeat on C", r.status_code == 200, r.text)

    # Thirty racing leases of one new conversation over A, B and C: one session.
    clients = [a, b, c]
    answers = await asyncio.gather(*[
        clients[i % 3].post("/api/v1/sessions", json={"user_id": "u2", "conversation_id": "race"})
        for i in range(30)
    ])
    ids = {r.json().get("session_id") for r in answers if r.status_code in (200, 201)}
    created = sum(1 for r in answers if r.status_code == 201)
    check("30 racing leases over three replicas -> one session, created once",
          len(ids) == 1 and created == 1 and all(r.status_code in (200, 201) for r in answers),
          [(r.status_code, r.text[:200]) for r in answers])
    for client in clients:
        await client.aclose()
    print(f"session {sid}")


class Balancer(httpx2.AsyncBaseTransport):
    """A load balancer in front of the replicas: each request goes to the next one.
    Notes where each went and the session id the server gave."""

    def __init__(self, roots):
        self.targets = [httpx2.URL(r) for r in roots]
        self.inner = httpx2.AsyncHTTPTransport()
        self.n = 0
        self.seen = []
        self.session_id = None

    async def handle_async_request(self, request):
        i = self.n % len(self.targets)
        self.n += 1
        target = self.targets[i]
        request.url = request.url.copy_with(host=target.host, port=target.port)
        request.headers["Host"] = f"{target.host}:{target.port}"
        self.seen.append((i, request.method, "mcp-session-id" in request.headers))
        response = await self.inner.handle_async_request(request)
        self.session_id = response.headers.get("mcp-session-id", self.session_id)
        return response

    async def aclose(self):
        await self.inner.aclose()


async def raw_call(root, token, session_id, tool):
    """One tools/call in an existing stateful session, as plain HTTP."""
    async with httpx2.AsyncClient(timeout=60.0) as http:
        return await http.post(f"{root}/mcp", headers={
            "Authorization": f"Bearer {token}",
            "Mcp-Session-Id": session_id,
            "MCP-Protocol-Version": "2025-11-25",
            "Accept": "application/json, text/event-stream",
        }, json={"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                 "params": {"name": tool, "arguments": {}}})


async def sessions_phase(roots, base, key, other):
    balancer = Balancer(roots)
    headers = {"Authorization": f"Bearer {key}"}
    timeout = httpx2.Timeout(60.0, read=120.0)
    async with httpx2.AsyncClient(transport=balancer, headers=headers, timeout=timeout) as http:
        async with Client(streamable_http_client(f"{roots[0]}/mcp", http_client=http), mode="legacy") as client:
            told = re.search(r"nonce N is (\d{6})", client.instructions or "")
            check("[2025-11-25] initialize names a nonce", told, client.instructions)
            nonce = told.group(1) if told else "none"
            fenced = lambda r: f"<page {nonce}>" in text_of(r)
            r = await client.call_tool("browser_navigate", {"url": f"{base}/login.html"})
            check("navigate", not r.is_error and fenced(r), text_of(r))
            r = await client.call_tool("browser_snapshot", {})
            check("the next request, on another replica, sees the same page in the same fence",
                  not r.is_error and "Sign in" in text_of(r) and fenced(r), text_of(r))
            r = await client.call_tool("browser_navigate", {"url": f"{base}/resolve.html"})
            check("navigate again", not r.is_error, text_of(r))
            for _ in range(3):
                r = await client.call_tool("browser_snapshot", {})
                check("every replica shows where the session went",
                      not r.is_error and "Delete account" in text_of(r) and fenced(r), text_of(r))
            sid = balancer.session_id
            reached = {i for (i, method, named) in balancer.seen if method == "POST" and named}
            check("the session's requests reached all three replicas", reached == {0, 1, 2}, balancer.seen)
            unknown = [await raw_call(root, other, "7c9e6679-7425-40de-944b-e07fc1f90ae7", "browser_snapshot")
                       for root in roots]
            for root, nobody in zip(roots, unknown):
                r = await raw_call(root, other, sid, "browser_snapshot")
                check("another key with the session id gets what an unknown id gets, on every replica",
                      (r.status_code, r.text, r.headers.get("content-type"))
                      == (nobody.status_code, nobody.text, nobody.headers.get("content-type")) == (404, "Not Found: Session not found", None),
                      (r.status_code, r.text, nobody.status_code, nobody.text))
            async with httpx2.AsyncClient(timeout=60.0) as raw:
                for root in roots:
                    r = await raw.delete(f"{root}/mcp", headers={
                        "Authorization": f"Bearer {other}", "Mcp-Session-Id": sid,
                        "MCP-Protocol-Version": "2025-11-25"})
                    check("another key's DELETE is 404 on every replica", r.status_code == 404,
                          (r.status_code, r.text))
            r = await client.call_tool("browser_snapshot", {})
            check("and the session goes on", not r.is_error and "Delete account" in text_of(r), text_of(r))
        # Leaving the client sent DELETE (to whichever replica was next).
        deleted = [(i, m) for (i, m, _) in balancer.seen if m == "DELETE"]
        check("the client ended its session", len(deleted) == 1, balancer.seen)
    for root in roots:
        r = await raw_call(root, key, sid, "browser_snapshot")
        check("after DELETE every replica answers 404", r.status_code == 404, (r.status_code, r.text))

    # Stateless: a session URL named through A is served by B and C, for its caller.
    r = await call(f"{roots[0]}/mcp", key, "2026-07-28", "browser_session_open", {})
    url = re.search(r"mcp_url: \S+/mcp/s/(\w+)", text_of(r))
    check("[2026-07-28] a session URL opened on A", not r.is_error and url, text_of(r))
    path = f"/mcp/s/{url.group(1) if url else 'none'}"
    r = await call(f"{roots[1]}{path}", key, "2026-07-28", "browser_navigate", {"url": f"{base}/login.html"})
    check("B drives it", not r.is_error and "Sign in" in text_of(r), text_of(r))
    r = await call(f"{roots[2]}{path}", key, "2026-07-28", "browser_snapshot", {})
    check("C sees the page B left", not r.is_error and "Sign in" in text_of(r), text_of(r))
    r = await call(f"{roots[2]}{path}", other, "2026-07-28", "browser_snapshot", {})
    check("another key at the URL: no such session, no page",
          r.is_error and "session_expired" in text_of(r) and "Sign in" not in text_of(r), text_of(r))
    r = await call(f"{roots[1]}{path}", key, "2026-07-28", "browser_session_close", {})
    check("closed through B", not r.is_error, text_of(r))
    r = await call(f"{roots[0]}{path}", key, "2026-07-28", "browser_snapshot", {})
    check("then ended on A too", r.is_error and "session_expired" in text_of(r), text_of(r))

    # A named browser (`/mcp/b/NAME`, the stateless SDKs' one fixed URL) is one
    # browser whichever replica each call reaches; another key naming it gets its own.
    named = "/mcp/b/fleet-agent"
    r = await call(f"{roots[0]}{named}", key, "2026-07-28", "browser_navigate", {"url": f"{base}/login.html"})
    check("[named] A navigates", not r.is_error and "Sign in" in text_of(r), text_of(r))
    r = await call(f"{roots[1]}{named}", key, "2026-07-28", "browser_snapshot", {})
    check("[named] B sees A's page", not r.is_error and "Sign in" in text_of(r), text_of(r))
    r = await call(f"{roots[2]}{named}", key, "legacy", "browser_snapshot", {})
    check("[named] C too, in the other era", not r.is_error and "Sign in" in text_of(r), text_of(r))
    r = await call(f"{roots[2]}{named}", other, "2026-07-28", "browser_snapshot", {})
    check("[named] another key naming it gets a browser of its own",
          not r.is_error and "Sign in" not in text_of(r), text_of(r))
    await call(f"{roots[1]}{named}", other, "2026-07-28", "browser_session_close", {})
    r = await call(f"{roots[1]}{named}", key, "2026-07-28", "browser_session_close", {})
    check("[named] closed through B", not r.is_error, text_of(r))


async def approval_phase(roots, base, key, admin_key):
    """A click held for approval while served by A, decided through C: it runs on A
    within a second of the decision."""
    a = api(roots[0], key)
    admin = api(roots[1], admin_key)
    r = await a.post("/api/v1/sessions", json={"user_id": "u9", "conversation_id": "approve"})
    check("leased on A", r.status_code == 201, r.text)
    sid = r.json().get("session_id", "none")
    headers = {"Authorization": f"Bearer {key}"}
    timeout = httpx2.Timeout(60.0, read=120.0)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
        async with Client(streamable_http_client(f"{roots[0]}/mcp/s/{sid}", http_client=http),
                          mode="legacy") as agent:
            r = await agent.call_tool("browser_navigate", {"url": f"{base}/resolve.html"})
            check("navigate on A", not r.is_error, text_of(r))
            click = asyncio.create_task(
                agent.call_tool("browser_click", {"role": "button", "name": "Delete account"}))
            waiting = None
            for _ in range(300):
                if click.done():
                    break
                r = await admin.get("/api/v1/approvals", params={"status": "pending"})
                waiting = next(iter(r.json().get("approvals", [])), None)
                if waiting:
                    break
                await asyncio.sleep(0.1)
            check("C lists the approval A's call waits on", waiting is not None and not click.done(),
                  click.result() if click.done() else "none pending")
            if waiting:
                r = await admin.post(f"/api/v1/approvals/{waiting['id']}/approve", json={"note": "via C"})
                decided = time.monotonic()
                check("approved on C", r.status_code == 200, r.text)
                r = await click
                ran_after = time.monotonic() - decided
                check("the call on A ran within a second of C's decision",
                      not r.is_error and "deleted 1" in text_of(r) and ran_after < 1.0,
                      (ran_after, text_of(r)))
                r = await admin.post(f"/api/v1/approvals/{waiting['id']}/deny", json={"reason": "late"})
                check("a second decision, anywhere -> 409", r.status_code == 409, r.text)
    r = await a.delete(f"/api/v1/sessions/{sid}")
    check("ended", r.status_code == 204, r.text)
    await a.aclose()
    await admin.aclose()


async def after_kill_phase(roots, base, key, sid):
    b, c = (api(r, key) for r in roots)
    r = await call(f"{roots[0]}/mcp/s/{sid}", key, "2026-07-28", "browser_snapshot", {})
    check("after A was killed, B still serves the session on its page",
          not r.is_error and "Delete account" in text_of(r), text_of(r))
    r = await call(f"{roots[1]}/mcp/s/{sid}", key, "legacy", "browser_navigate", {"url": f"{base}/login.html"})
    check("and C drives it", not r.is_error and "Sign in" in text_of(r), text_of(r))
    r = await c.delete(f"/api/v1/sessions/{sid}")
    check("ended on C -> 204", r.status_code == 204, r.text)
    r = await b.get(f"/api/v1/sessions/{sid}")
    check("then gone on B too -> 404", r.status_code == 404, r.text)
    await b.aclose()
    await c.aclose()


async def main():
    phase = sys.argv[1]
    if phase == "lease":
        roots, base, key = sys.argv[2:5], sys.argv[5], sys.argv[6]
        await lease_phase(roots, base, key)
    elif phase == "approval":
        roots, base, key, admin_key = sys.argv[2:4], sys.argv[4], sys.argv[5], sys.argv[6]
        await approval_phase(roots, base, key, admin_key)
    elif phase == "sessions":
        roots, base, key, other = sys.argv[2:5], sys.argv[5], sys.argv[6], sys.argv[7]
        await sessions_phase(roots, base, key, other)
    else:
        roots, base, key, sid = sys.argv[2:4], sys.argv[4], sys.argv[5], sys.argv[6]
        await after_kill_phase(roots, base, key, sid)
    print(f"{counts['passed']} passed, {counts['failed']} failed")
    sys.exit(1 if counts["failed"] else 0)


asyncio.run(main())
