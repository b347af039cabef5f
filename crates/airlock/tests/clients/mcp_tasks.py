"""`browser_run_task` as an MCP task (the Tasks extension, SEP-2663), raw Streamable
HTTP in the stateless era against a real `airlock serve` whose model is
examples/scripted_model.py (it clicks "Delete account", which the default rules
hold, then finishes with the page's heading).

- The server declares the extension; a call from a client that declares it is
  answered at once with a task (`resultType: task`, a `taskId`), which `tasks/get`
  shows working while its held step waits for a person; approved, the task completes
  with the call's result inlined.
- `tasks/cancel` of a task whose step is held: acknowledged, the task settles
  `cancelled`, the held step is withdrawn, and the page never received the post.
- A call from a client that does not declare it runs as before (one result).
- An unknown task id is `-32602`.

Run by crates/airlock/tests/it/mcp_clients.rs:
  mcp_tasks.py MCP_URL PAGE_URL AGENT_TOKEN ADMIN_KEY
Prints one line per check.
"""

import asyncio
import sys

import httpx2
from common import TASKS, check, done, rpc


async def pending(admin):
    return (await admin.get("/api/v1/approvals", params={"status": "pending"})).json()["approvals"]


async def until(predicate, wait=30.0):
    for _ in range(int(wait / 0.05)):
        got = await predicate()
        if got:
            return got
        await asyncio.sleep(0.05)
    return None


async def main():
    mcp_url, page, token, admin_key = sys.argv[1:5]
    root = mcp_url.rsplit("/mcp", 1)[0]
    admin = httpx2.AsyncClient(base_url=root, headers={"Authorization": f"Bearer {admin_key}"}, timeout=30.0)
    task_args = {"instruction": 'click "Delete account", then say what the page shows', "start_url": page}
    async with httpx2.AsyncClient(timeout=60.0) as http:
        found = await rpc(http, mcp_url, token, "server/discover", {})
        check("discovery declares the Tasks extension",
              TASKS in (found["result"]["capabilities"].get("extensions") or {}), found)

        # Created, polled while held, approved, completed.
        made = await rpc(http, mcp_url, token, "tools/call",
                         {"name": "browser_run_task", "arguments": task_args}, name="browser_run_task")
        result = made.get("result", {})
        task_id = result.get("taskId")
        check("the call is answered at once with a task",
              result.get("resultType") == "task" and task_id and result.get("status") == "working", made)

        async def get():
            return (await rpc(http, mcp_url, token, "tasks/get", {"taskId": task_id}, name=task_id))["result"]

        held = await until(lambda: pending(admin))
        check("its click waits for a person", bool(held))
        now = await get()
        check("tasks/get says working while it waits", now.get("status") == "working", now)
        if held:
            r = await admin.post(f"/api/v1/approvals/{held[0]['id']}/approve")
            check("approved at the console", r.status_code == 200, r.text)

        async def settled():
            now = await get()
            return now if now.get("status") not in ("working", "input_required") else None

        final = await until(settled) or {}
        answer = ((final.get("result") or {}).get("structuredContent") or {}).get("answer")
        check("the task completes with the call's result inlined",
              final.get("status") == "completed" and answer == "Account deleted", final)

        # Cancelled while its step is held.
        made = await rpc(http, mcp_url, token, "tools/call",
                         {"name": "browser_run_task", "arguments": task_args}, name="browser_run_task")
        task_id = made.get("result", {}).get("taskId")
        held = await until(lambda: pending(admin))
        check("the second task's click waits too", bool(held))
        ack = await rpc(http, mcp_url, token, "tasks/cancel", {"taskId": task_id}, name=task_id)
        check("tasks/cancel is acknowledged", ack.get("result", {}).get("resultType") == "complete", ack)
        final = await until(settled) or {}
        check("the task settles cancelled", final.get("status") == "cancelled", final)
        still = await pending(admin)
        check("its held step does not stay pending", still == [], still)
        if held:
            r = await admin.post(f"/api/v1/approvals/{held[0]['id']}/approve")
            check("approving it afterwards is refused", r.status_code == 409, r.text)

        # Unknown ids; and a client without the extension gets one result.
        unknown = await rpc(http, mcp_url, token, "tasks/get", {"taskId": "no-such-task"}, name="no-such-task")
        check("an unknown task id is -32602", unknown.get("error", {}).get("code") == -32602, unknown)
        plain = await rpc(http, mcp_url, token, "tools/call",
                          {"name": "browser_run_task",
                           "arguments": {"instruction": "say what the page shows", "start_url": page,
                                         "max_steps": 1}},
                          tasks=False, name="browser_run_task")
        check("without the extension the call returns its result",
              plain.get("result", {}).get("resultType") == "complete"
              and "taskId" not in plain.get("result", {}), plain)
    await admin.aclose()
    done()


asyncio.run(main())
