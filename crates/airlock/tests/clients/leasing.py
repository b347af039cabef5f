"""Leasing end to end through a real `airlock serve`: a backend leases browser sessions
per (user, conversation) over REST, and agents on the official MCP Python SDK (both
protocol eras) drive them at their mcp_url. Tenants are isolated; roles are enforced.

Run by crates/airlock/tests/it/leasing.rs:
  leasing.py ROOT_URL FIXTURE_BASE_URL ACME_ACT ACME_OBSERVE ACME_ADMIN BETA_ACT
Prints one line per check, then "N passed, M failed".
"""

import asyncio
import sys

import httpx2

from common import call, check, counts, text_of


async def main():
    root, base, acme_act, acme_observe, acme_admin, beta_act = sys.argv[1:7]

    def api(token):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx2.AsyncClient(base_url=root, headers=headers, timeout=60.0)

    acme, observer, admin, beta, anonymous = (
        api(acme_act), api(acme_observe), api(acme_admin), api(beta_act), api(None))

    # Leasing: get-or-create by (user, conversation).
    r = await acme.post("/api/v1/sessions", json={"user_id": "u1", "conversation_id": "c1", "ttl_secs": 300})
    first = r.json()
    check("a new lease -> 201 with session_id, mcp_url, status, expires_at",
          r.status_code == 201 and first.get("created") is True and len(first.get("session_id", "")) == 32
          and first["mcp_url"].endswith("/mcp/s/" + first["session_id"]) and first["status"] == "active"
          and first["expires_at"].endswith("Z") and first["ttl_secs"] == 300, r.text)
    sid = first["session_id"]
    r = await acme.post("/api/v1/sessions", json={"user_id": "u1", "conversation_id": "c1"})
    check("the same key again -> 200, the same session",
          r.status_code == 200 and r.json()["session_id"] == sid and r.json()["created"] is False, r.text)

    racing = await asyncio.gather(*[
        acme.post("/api/v1/sessions", json={"user_id": "u1", "conversation_id": "c2"}) for _ in range(100)])
    ids = {r.json().get("session_id") for r in racing}
    created = [r for r in racing if r.status_code == 201]
    check("100 racing leases of one key -> one session, created once",
          len(ids) == 1 and None not in ids and len(created) == 1
          and all(r.status_code in (200, 201) for r in racing),
          [(r.status_code, r.text[:200]) for r in racing if r.status_code not in (200, 201)][:3] or ids)
    second = ids.pop()

    r = await acme.post("/api/v1/sessions", json={"user_id": "u1", "conversation_id": "c3"})
    body = r.json()
    check("over the per-user cap -> 429 quota_exceeded with Retry-After",
          r.status_code == 429 and body["error"]["code"] == "quota_exceeded"
          and int(r.headers.get("retry-after", "0")) >= 1
          and body["error"]["retry_after_secs"] == int(r.headers["retry-after"])
          and "per user" in body["error"]["message"], (r.status_code, r.headers, r.text))
    r = await acme.post("/api/v1/sessions", json={"user_id": "u2", "conversation_id": "c1"})
    check("another user has places of their own", r.status_code == 201, r.text)
    other_user = r.json()["session_id"]

    r = await acme.get("/api/v1/sessions", params={"user_id": "u1"})
    listed = r.json()["sessions"]
    check("list by user", r.status_code == 200 and sorted(s["session_id"] for s in listed) == sorted([sid, second]),
          r.text)
    r = await acme.get("/api/v1/sessions")
    check("list the tenant's", len(r.json()["sessions"]) == 3, r.text)

    # Bad requests are clear errors.
    for bad, why in [({"user_id": "u1"}, "no conversation"),
                     ({"user_id": "", "conversation_id": "x"}, "empty user"),
                     ({"user_id": "u", "conversation_id": "x", "ttl_secs": 0}, "zero ttl"),
                     ({"user_id": "u", "conversation_id": "x", "isolation": "vm"}, "bad isolation"),
                     ({"user_id": "u", "conversation_id": "x", "surprise": 1}, "unknown field")]:
        r = await acme.post("/api/v1/sessions", json=bad)
        check(f"bad lease ({why}) -> 400 invalid_argument",
              r.status_code == 400 and r.json()["error"]["code"] == "invalid_argument", r.text)

    # Roles and keys.
    r = await observer.post("/api/v1/sessions", json={"user_id": "u9", "conversation_id": "c"})
    check("an observe key cannot lease -> 403 forbidden",
          r.status_code == 403 and r.json()["error"]["code"] == "forbidden", r.text)
    r = await anonymous.get("/api/v1/sessions")
    check("no key -> 401 with WWW-Authenticate",
          r.status_code == 401 and "Bearer" in r.headers.get("www-authenticate", ""), r.text)
    r = await acme.get("/api/v1/approvals")
    check("an act key is not an operator -> 403", r.status_code == 403, r.text)
    r = await admin.get("/api/v1/approvals")
    check("the tenant's admin key reads approvals", r.status_code == 200, r.text)

    # Another tenant: every route answers as for an id that does not exist.
    missing = "0" * 32
    for method, path in [("GET", "/api/v1/sessions/{}"), ("POST", "/api/v1/sessions/{}/heartbeat"),
                         ("DELETE", "/api/v1/sessions/{}")]:
        theirs = await beta.request(method, path.format(sid))
        nobody = await beta.request(method, path.format(missing))
        check(f"{method} {path} of another tenant's session -> 404 like a missing one",
              theirs.status_code == 404 and theirs.json() == nobody.json()
              and theirs.json()["error"]["code"] == "not_found", (theirs.text, nobody.text))
    r = await beta.get("/api/v1/sessions")
    check("another tenant lists none of them", r.json()["sessions"] == [], r.text)

    # Agents drive the leased session at its mcp_url, in both protocol eras.
    url = first["mcp_url"]
    for mode in ["legacy", "2026-07-28"]:
        r = await call(url, acme_act, mode, "browser_navigate", {"url": f"{base}/login.html"})
        check(f"[{mode}] an act key drives the leased session", not r.is_error, text_of(r))
    r = await call(url, acme_observe, "legacy", "browser_snapshot", {})
    check("an observe key of the tenant sees the same page",
          not r.is_error and "Sign in" in text_of(r), text_of(r))
    r = await call(url, acme_observe, "legacy", "browser_click", {"role": "button", "name": "Sign in"})
    check("an observe key cannot click -> forbidden",
          r.is_error and text_of(r).startswith("forbidden"), text_of(r))
    theirs = await call(url, beta_act, "legacy", "browser_snapshot", {})
    nobody = await call(url.replace(sid, missing), beta_act, "legacy", "browser_snapshot", {})
    check("another tenant's key at the mcp_url -> session_expired, like a missing session",
          theirs.is_error and text_of(theirs).startswith("session_expired")
          and text_of(theirs) == text_of(nobody), (text_of(theirs), text_of(nobody)))

    r = await acme.get(f"/api/v1/sessions/{sid}")
    check("the session counts its actions", r.status_code == 200 and r.json()["actions"] >= 2, r.text)
    r = await acme.post(f"/api/v1/sessions/{sid}/heartbeat")
    check("heartbeat -> 200, idle from now", r.status_code == 200 and r.json()["idle_secs"] == 0, r.text)

    # Ending it ends it for every agent.
    r = await acme.delete(f"/api/v1/sessions/{sid}")
    check("DELETE -> 204", r.status_code == 204, r.text)
    r = await acme.get(f"/api/v1/sessions/{sid}")
    check("then GET -> 404", r.status_code == 404, r.text)
    r = await call(url, acme_act, "legacy", "browser_snapshot", {})
    check("then its mcp_url -> session_expired",
          r.is_error and text_of(r).startswith("session_expired"), text_of(r))
    r = await acme.post("/api/v1/sessions", json={"user_id": "u1", "conversation_id": "c1"})
    check("leasing the key again gives a new session",
          r.status_code == 201 and r.json()["session_id"] != sid, r.text)

    for client in (acme, observer, admin, beta, anonymous):
        await client.aclose()
    print(f"{counts['passed']} passed, {counts['failed']} failed")
    sys.exit(1 if counts["failed"] else 0)


asyncio.run(main())
