"""A session's running state over three replicas, driven with the official MCP Python
SDK, one client per call, each at the replica named (a load balancer with no
affinity does the same): what the agent read through one replica and sends toward
another origin through the next is refused as on one replica; the action budget
counts every replica's actions.

Run by crates/airlock/tests/it/fleet_state.rs, in phases:
  fleet_state.py read   ROOT BASE KEY NAME          read the bank page through ROOT
  fleet_state.py send   ROOT OTHER_BASE KEY NAME    carry its account number to OTHER
  fleet_state.py budget ROOTS(comma) BASE KEY NAME BUDGET
  fleet_state.py fence  ROOTS(comma) BASE KEY       a leased session's nonce on each
  fleet_state.py tasks  A_ROOT B_ROOT C_ROOT MODEL_PAGE KEY ADMIN_KEY
                                                    a REST task read, waited on, cancelled elsewhere
  fleet_state.py mcp-tasks A_ROOT B_ROOT C_ROOT MODEL_PAGE KEY OTHER_KEY ADMIN_KEY
                                                    an MCP task (Tasks extension) made on A,
                                                    polled, cancelled and finished elsewhere
  fleet_state.py dead-wait A_ROOT B_ROOT BASE MODEL_PAGE KEY ADMIN_KEY A_PID
  fleet_state.py fleet  ROOTS(comma) D_ROOT KEY     every replica lists every session;
                                                    D's own-worker session is elsewhere
                                                    a held call's replica killed -9
Prints one line per check, then "N passed, M failed".
"""

import asyncio
import base64
import re
import sys
import time

import httpx2

from common import call, check, done, rpc, text_of

ACCOUNT = "ACCT-4417-2290-8812"


def url(root, name):
    return f"{root}/mcp/b/{name}"


async def read(root, base, key, name):
    r = await call(url(root, name), key, "2026-07-28", "browser_navigate", {"url": f"{base}/flow/bank.html"})
    check(f"read through {root}: the bank page shows the account", not r.is_error and ACCOUNT in text_of(r), text_of(r))


async def send(root, other, key, name):
    b64 = base64.b64encode(ACCOUNT.encode()).decode()
    for sent in (f"{other}/collect?d={ACCOUNT}", f"{other}/collect?d={b64}"):
        r = await call(url(root, name), key, "2026-07-28", "browser_navigate", {"url": sent})
        text = text_of(r)
        check(f"sent through {root}: {sent[len(other):]} refused as data flow",
              r.is_error and "policy_denied" in text and "data-flow" in text, text)


async def budget(roots, base, key, name, budget):
    # Every action goes to the next replica; the budget's last one and the one past it
    # land wherever the round robin puts them.
    for i in range(budget):
        root = roots[i % len(roots)]
        r = await call(url(root, name), key, "2026-07-28", "browser_navigate", {"url": f"{base}/login.html"})
        check(f"action {i + 1} of {budget} through {root}", not r.is_error, text_of(r))
    for i in range(len(roots)):
        root = roots[(budget + i) % len(roots)]
        r = await call(url(root, name), key, "2026-07-28", "browser_navigate", {"url": f"{base}/login.html"})
        text = text_of(r)
        check(f"action {budget + 1} through {root}: budget_exhausted", r.is_error and "budget_exhausted" in text, text)
    # Reading is no action: the page can still be looked at.
    r = await call(url(roots[0], name), key, "2026-07-28", "browser_snapshot", {})
    check("a snapshot after the budget is spent still answers", not r.is_error and "Sign in" in text_of(r), text_of(r))


async def fence(roots, base, key):
    # A backend leases a session on the first replica; its agent's calls reach every
    # replica. The page fence's nonce is the session's, not each replica's.
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(base_url=roots[0], headers=headers, timeout=60.0) as api:
        r = await api.post("/api/v1/sessions", json={"user_id": "u-fence", "conversation_id": "c-fence"})
    check("leased on the first replica", r.status_code == 201, r.text)
    sid = r.json()["session_id"]
    r = await call(f"{roots[0]}/mcp/s/{sid}", key, "2026-07-28", "browser_navigate", {"url": f"{base}/login.html"})
    check("navigated", not r.is_error, text_of(r))
    nonces = []
    for root in roots:
        r = await call(f"{root}/mcp/s/{sid}", key, "2026-07-28", "browser_snapshot", {})
        found = re.findall(r"<page (\d{6})>", text_of(r))
        check(f"a fenced snapshot through {root}", not r.is_error and found, text_of(r))
        nonces.extend(found)
    check("one nonce on every replica", len(set(nonces)) == 1, nonces)


async def pending_of(admin, sid, within=30.0):
    """The pending approval of session `sid`, once it shows (None if it does not)."""
    for _ in range(int(within / 0.1)):
        pending = (await admin.get("/api/v1/approvals", params={"status": "pending"})).json()["approvals"]
        mine = [p for p in pending if p.get("session") == sid]
        if mine:
            return mine[0]
        await asyncio.sleep(0.1)
    return None


async def start_task(api, page):
    """A leased session on `api`'s replica and a task in it whose first step (a click
    the default rules hold) waits for a person: (session, task)."""
    r = await api.post("/api/v1/sessions", json={"user_id": "u-task", "conversation_id": f"c-{time.monotonic()}"})
    check("leased for a task", r.status_code == 201, r.text)
    sid = r.json()["session_id"]
    r = await api.post(f"/api/v1/sessions/{sid}/tasks",
                       json={"instruction": 'Click "Delete account"', "start_url": page, "max_steps": 3})
    check("the task started", r.status_code == 202 and r.json().get("status") == "running", r.text)
    return sid, r.json().get("task", "none")


async def tasks(a, b, c, page, key, admin_key):
    # A task started through A is read, waited on and cancelled through B and C.
    headers = {"Authorization": f"Bearer {key}"}
    apis = [httpx2.AsyncClient(base_url=r, headers=headers, timeout=60.0) for r in (a, b, c)]
    admin = httpx2.AsyncClient(base_url=c, headers={"Authorization": f"Bearer {admin_key}"}, timeout=30.0)
    try:
        sid, task = await start_task(apis[0], page)
        path = f"/api/v1/sessions/{sid}/tasks/{task}"
        waiting = await pending_of(admin, sid)
        check("its held step waits for a person (listed through C)", waiting is not None)
        r = await apis[1].get(path)
        check("B reads A's task: running", r.status_code == 200 and r.json().get("status") == "running", r.text)
        r = await apis[1].post(f"{path}/cancel")
        check("cancelled through B", r.status_code == 202, r.text)
        r = await apis[2].get(path, params={"wait_secs": 30})
        check("C waits for its end: cancelled", r.status_code == 200 and r.json().get("status") == "cancelled",
              r.text)
        r = await apis[0].get(path)
        check("A, which ran it, says the same", r.json().get("status") == "cancelled", r.text)
        left = await pending_of(admin, sid, within=0.2)
        check("its held step no longer waits", left is None, left)
        r = await apis[2].get(f"/api/v1/sessions/{sid}/tasks/task_nonesuch")
        check("an unknown task is 404 on any replica", r.status_code == 404, r.text)
        await apis[0].delete(f"/api/v1/sessions/{sid}")
    finally:
        for api in apis + [admin]:
            await api.aclose()


async def mcp_tasks(a, b, c, page, key, other_key, admin_key):
    # `browser_run_task` as an MCP task, made through A (stateless era, one-off
    # browser): B and C answer tasks/get and tasks/cancel for it; another key of the
    # same tenant gets what an unknown id gets.
    args = {"instruction": 'click "Delete account", then say what the page shows', "start_url": page}
    admin = httpx2.AsyncClient(base_url=c, headers={"Authorization": f"Bearer {admin_key}"}, timeout=30.0)
    http = httpx2.AsyncClient(timeout=60.0)

    async def on(root, method, params, token=key, name=None):
        return await rpc(http, f"{root}/mcp", token, method, params, name=name)

    async def pending():
        for _ in range(300):
            found = (await admin.get("/api/v1/approvals", params={"status": "pending"})).json()["approvals"]
            if found:
                return found[0]
            await asyncio.sleep(0.1)
        return None

    async def settled(root, task_id):
        for _ in range(600):
            now = (await on(root, "tasks/get", {"taskId": task_id}, name=task_id)).get("result", {})
            if now.get("status") not in (None, "working", "input_required"):
                return now
            await asyncio.sleep(0.1)
        return {}

    try:
        made = await on(a, "tools/call", {"name": "browser_run_task", "arguments": args}, name="browser_run_task")
        task_id = made.get("result", {}).get("taskId")
        check("A answers the call with a task", bool(task_id) and made["result"].get("resultType") == "task", made)
        held = await pending()
        check("its click waits for a person", held is not None)
        now = (await on(b, "tasks/get", {"taskId": task_id}, name=task_id)).get("result", {})
        check("B reads A's task: working, on A", now.get("status") == "working"
              and "replica" in (now.get("statusMessage") or ""), now)
        theirs = await on(b, "tasks/get", {"taskId": task_id}, token=other_key, name=task_id)
        none = await on(b, "tasks/get", {"taskId": "no-such-task"}, token=other_key, name="no-such-task")
        check("another key's tasks/get through B is an unknown task",
              theirs.get("error", {}).get("code") == -32602
              and theirs["error"]["message"].replace(task_id, "ID") == none.get("error", {}).get("message", "").replace("no-such-task", "ID"),
              (theirs, none))
        stopped = await on(b, "tasks/cancel", {"taskId": task_id}, token=other_key, name=task_id)
        check("another key cannot cancel it", stopped.get("error", {}).get("code") == -32602, stopped)
        ack = await on(b, "tasks/cancel", {"taskId": task_id}, name=task_id)
        check("cancelled through B", ack.get("result", {}).get("resultType") == "complete", ack)
        final = await settled(c, task_id)
        check("C sees it settle cancelled", final.get("status") == "cancelled", final)
        left = (await admin.get("/api/v1/approvals", params={"status": "pending"})).json()["approvals"]
        check("its held step no longer waits", left == [], left)

        made = await on(a, "tools/call", {"name": "browser_run_task", "arguments": args}, name="browser_run_task")
        task_id = made.get("result", {}).get("taskId")
        held = await pending()
        check("a second task's click waits", held is not None)
        if held:
            r = await admin.post(f"/api/v1/approvals/{held['id']}/approve")
            check("approved at the console", r.status_code == 200, r.text)
        final = await settled(c, task_id)
        answer = ((final.get("result") or {}).get("structuredContent") or {}).get("answer")
        check("C gives its result inlined: completed", final.get("status") == "completed"
              and answer == "Account deleted", final)
        here = await settled(a, task_id)
        check("as A, which ran it, does", here.get("status") == "completed"
              and here["result"]["structuredContent"]["answer"] == answer, here)
    finally:
        await http.aclose()
        await admin.aclose()


async def dead_wait(a, b, base, page, key, admin_key, a_pid):
    # A click the default rules hold waits on A; A is killed while it waits. Nothing
    # will run the click, so the approval closes as expired on every replica, and
    # approving it through B says so instead of answering "approved" for nothing.
    import os
    import signal

    # A client that keeps its MCP session (2025-11-25): its call waits for the decision.
    r = await call(url(a, "held"), key, "legacy", "browser_navigate", {"url": f"{base}/resolve.html"})
    check("navigated through A", not r.is_error, text_of(r))
    click = asyncio.create_task(
        call(url(a, "held"), key, "legacy", "browser_click", {"role": "button", "name": "Delete account"}))
    # And a REST task on A whose held step waits too.
    on_a = httpx2.AsyncClient(base_url=a, headers={"Authorization": f"Bearer {key}"}, timeout=60.0)
    on_b = httpx2.AsyncClient(base_url=b, headers={"Authorization": f"Bearer {key}"}, timeout=60.0)
    task_sid, task = await start_task(on_a, page)
    await on_a.aclose()
    headers = {"Authorization": f"Bearer {admin_key}"}
    async with httpx2.AsyncClient(base_url=b, headers=headers, timeout=30.0) as admin:
        check("the task's step waits too", await pending_of(admin, task_sid) is not None)
        waiting = None
        for _ in range(300):
            pending = (await admin.get("/api/v1/approvals", params={"status": "pending"})).json()["approvals"]
            pending = [p for p in pending if p.get("session") != task_sid]
            if pending:
                waiting = pending[0]
                break
            await asyncio.sleep(0.1)
        check("B lists the approval A's call waits on", waiting is not None and not click.done(),
              text_of(click.result()) if click.done() and not click.exception() else click)
        if waiting is None:
            return
        os.kill(a_pid, signal.SIGKILL)
        try:
            await click
            check("the click's client heard nothing but a dropped connection", False, "it got a result")
        except BaseException:
            check("the click's client lost its connection with A", True)
        closed = None
        # A replica is gone after 10 s of silence; then any replica closes its waits.
        for _ in range(400):
            one = (await admin.get(f"/api/v1/approvals/{waiting['id']}")).json()
            if one.get("status") != "pending":
                closed = one
                break
            await asyncio.sleep(0.1)
        check("the approval closed as expired, saying its replica stopped",
              closed is not None and closed.get("status") == "expired" and "replica" in (closed.get("note") or ""),
              closed)
        r = await admin.post(f"/api/v1/approvals/{waiting['id']}/approve", json={"note": "too late"})
        check("approving it answers that it expired, not 200",
              r.status_code == 409 and "expired" in r.text, (r.status_code, r.text))
        r = await on_b.get(f"/api/v1/sessions/{task_sid}/tasks/{task}", params={"wait_secs": 30})
        body = r.json()
        check("B reports the task ended in error: its replica stopped",
              r.status_code == 200 and body.get("status") == "error" and "replica" in (body.get("summary") or ""),
              r.text)
        left = await pending_of(admin, task_sid, within=0.2)
        check("the task's held step closed too", left is None, left)
    await on_b.aclose()


async def fleet_view(roots, d, key):
    headers = {"Authorization": f"Bearer {key}"}
    apis = [httpx2.AsyncClient(base_url=r, headers=headers, timeout=60.0) for r in roots + [d]]
    try:
        # A session D opens on its own worker: nobody else can reach it.
        r = await apis[-1].post("/api/v1/sessions", json={"user_id": "u-d", "conversation_id": "c-d"})
        check("leased on D (its own worker)", r.status_code == 201, r.text)
        sid = r.json()["session_id"]
        listings = [(await api.get("/api/v1/sessions")).json()["sessions"] for api in apis]
        ids = [sorted(s["session_id"] for s in listing) for listing in listings]
        check("every replica lists the same sessions", all(i == ids[0] for i in ids) and sid in ids[0],
              ids)
        d_row = next(s for s in listings[-1] if s["session_id"] == sid)
        b_row = next(s for s in listings[1] if s["session_id"] == sid)
        check("D lists it as its own, B as D's", d_row["here"] and not b_row["here"]
              and d_row.get("replica") and b_row.get("replica") == d_row.get("replica"), (d_row, b_row))
        replica = d_row.get("replica") or "none"
        r = await apis[1].get(f"/api/v1/sessions/{sid}")
        body = r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
        check("B answers 421 session_elsewhere naming D, not session_expired",
              r.status_code == 421 and body.get("error", {}).get("code") == "session_elsewhere"
              and replica in r.text, (r.status_code, r.text))
        r = await call(f"{roots[1]}/mcp/s/{sid}", key, "2026-07-28", "browser_snapshot", {})
        check("an MCP call through B says the same", r.is_error and text_of(r).startswith("session_elsewhere")
              and replica in text_of(r), text_of(r))
        r = await apis[-1].delete(f"/api/v1/sessions/{sid}")
        check("ended on D", r.status_code == 204, r.text)
    finally:
        for api in apis:
            await api.aclose()


async def main():
    phase = sys.argv[1]
    if phase == "read":
        await read(*sys.argv[2:6])
    elif phase == "send":
        await send(*sys.argv[2:6])
    elif phase == "budget":
        roots = sys.argv[2].split(",")
        await budget(roots, sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
    elif phase == "tasks":
        await tasks(*sys.argv[2:8])
    elif phase == "mcp-tasks":
        await mcp_tasks(*sys.argv[2:9])
    elif phase == "dead-wait":
        a, b, base, page, key, admin_key, pid = sys.argv[2:9]
        await dead_wait(a, b, base, page, key, admin_key, int(pid))
    elif phase == "fleet":
        await fleet_view(sys.argv[2].split(","), sys.argv[3], sys.argv[4])
    elif phase == "fence":
        await fence(sys.argv[2].split(","), sys.argv[3], sys.argv[4])
    else:
        raise SystemExit(f"unknown phase {phase}")
    done()


asyncio.run(main())
