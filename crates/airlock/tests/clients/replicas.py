"""Three control-plane replicas over one Postgres, driven as a backend and its agents
would: a session leased on replica A is driven through B and C (REST and
/mcp/s/{id}, both MCP protocol eras, on the official MCP Python SDK); racing leases
over all three get one session; after A is killed, B and C still serve it.

Run by crates/airlock/tests/it/replicas.rs, in two phases:
  replicas.py lease A_ROOT B_ROOT C_ROOT FIXTURE_BASE ACT_KEY   -> prints "session ID"
  replicas.py after-kill B_ROOT C_ROOT FIXTURE_BASE ACT_KEY ID
Prints one line per check, then "N passed, M failed".
"""

import asyncio
import sys

import httpx2

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
    else:
        roots, base, key, sid = sys.argv[2:4], sys.argv[4], sys.argv[5], sys.argv[6]
        await after_kill_phase(roots, base, key, sid)
    print(f"{counts['passed']} passed, {counts['failed']} failed")
    sys.exit(1 if counts["failed"] else 0)


asyncio.run(main())
